"""The decompose pass: ops a target lacks, or lists as emulated, become ops it has.

Each such operation is replaced by its rule from the decomposition table (decompositions.py).
What a rule builds is checked op by op: an op the target cannot take is decomposed in turn, up
to MAX_DEPTH levels; if some op of the replacement can be neither run nor decomposed, the whole
replacement is undone and the original op stays, with a note saying what is missing. An op the
target emulates stays when its replacement cannot be built (the target runs it, just slowly).

The Expander does the replacing for this pass and for constant_operands, which differ only in
what they accept: here an op is fine when the target has it natively; there, when every operand
the target wants constant is constant.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..errors import ConverterError
from ..ir import Graph, Operand, Operation
from . import PassContext, PassResult, graph_pass
from .decompositions import Emitter, Rule, get_decomposition

__all__ = ["Expander", "CannotExpand", "MAX_DEPTH"]

# How many times a replacement's own ops may be decomposed again (gru -> gruCell -> matmul ...).
MAX_DEPTH = 4


class CannotExpand(Exception):
    """An operation cannot be replaced by ops the target takes; the message says why."""


@dataclass
class _Built:
    ops: list[Operation] = field(default_factory=list)
    constants: list[Operand] = field(default_factory=list)
    replaced: dict[int, Operand] = field(default_factory=dict)  # id(old result) -> new one


class Expander:
    """Replaces operations by their decompositions, transactionally.

    Args:
        graph: the graph to edit.
        acceptable: whether the target takes an operation as it is.
        available: whether the target has an op type (for rules that choose between forms).
        tolerable: whether an operation that is not acceptable may stay when it cannot be
            decomposed (an op the target emulates).
    """

    def __init__(self, graph: Graph, *, acceptable: Callable[[Operation], bool],
                 available: Callable[[str], bool],
                 tolerable: Callable[[Operation], bool] = lambda op: False,
                 max_depth: int = MAX_DEPTH):
        self.graph = graph
        self.acceptable = acceptable
        self.available = available
        self.tolerable = tolerable
        self.max_depth = max_depth
        self._cache: dict = {}  # constants the Emitters share
        self.added: dict[str, int] = {}  # op type -> operations added, over all expansions

    def expand(self, op: Operation, rule: Rule | None = None) -> list[Operation]:
        """Replace `op` (by `rule`, default its decomposition) and return the operations that
        replaced it; raise CannotExpand, with the graph unchanged, when that is impossible."""
        built = self._expand(op, rule, 1)
        for new in built.ops:
            self.added[new.op_type] = self.added.get(new.op_type, 0) + 1
        return built.ops

    def _expand(self, op: Operation, rule: Rule | None, depth: int) -> _Built:
        rule = rule or get_decomposition(op.op_type)
        if rule is None:
            raise CannotExpand(f"there is no decomposition of {op.op_type}")
        if depth > self.max_depth:
            raise CannotExpand(f"its decomposition nests deeper than {self.max_depth} levels")
        e = Emitter(self.graph, op, available=self.available, cache=self._cache)
        try:
            results = rule(e, op)
            results = [results] if isinstance(results, Operand) else list(results)
            results = self._own(e, op, results)
            for new in list(e.ops):
                if self.acceptable(new):
                    continue
                try:
                    child = self._expand(new, None, depth + 1)
                except CannotExpand as why:
                    if self.tolerable(new):
                        continue
                    raise CannotExpand(f"its replacement needs {new.op_type}, and {why}") \
                        from None
                e.ops.remove(new)
                e.ops.extend(child.ops)
                e.constants.extend(child.constants)
                results = [child.replaced.get(id(r), r) for r in results]
        except BaseException:
            _undo(self.graph, e)
            raise
        replaced = {id(old): new for old, new in zip(op.outputs, results)}
        _commit(self.graph, op, results, e)
        return _Built(e.ops, e.constants, replaced)

    @staticmethod
    def _own(e: Emitter, op: Operation, results: list[Operand]) -> list[Operand]:
        """Check the rule's results against the op's; a result the rule did not compute (an
        operand passed through) goes through identity, so each stays an op's result."""
        if len(results) != len(op.outputs):
            raise ConverterError(f"the decomposition of {op.op_type} gave {len(results)} "
                                 f"results for {len(op.outputs)} (a bug in the rule)",
                                 where=f"{op.op_type} '{op.name}'")
        owned = []
        made = {id(new) for new in e.ops}
        for old, new in zip(op.outputs, results):
            if new.desc != old.desc:
                raise ConverterError(f"the decomposition of {op.op_type} gave {new.desc} for "
                                     f"{old.desc} (a bug in the rule)",
                                     where=f"{op.op_type} '{op.name}'")
            if new.producer is None or id(new.producer) not in made:
                new = e.identity(new)
            owned.append(new)
        return owned


def _commit(graph: Graph, op: Operation, results: list[Operand], e: Emitter) -> None:
    """Readers of op's results read the replacements; op goes; the replacements take the
    names of the results they replace (what users and reports know them by)."""
    names = [out.name for out in op.outputs]
    for old, new in zip(op.outputs, results):
        graph.replace_operand(old, new)
    graph.remove_operation(op)
    for name, new in zip(names, results):
        if not graph.has_operand(name):
            graph.rename(new, name)
    # Constants cut from constants on the way (a direction's weights, before the gate blocks
    # were cut from them) are read by nothing once the final ones exist.
    for const in e.constants:
        if const.graph is graph and not const.uses():
            graph.remove_operand(const)
    e.constants[:] = [c for c in e.constants if c.graph is graph]


def _undo(graph: Graph, e: Emitter) -> None:
    """Remove what an Emitter added (readers come after what they read, so reverse order)."""
    made = {id(new) for new in e.ops}
    for new in reversed(list(graph.operations)):
        if id(new) in made:
            graph.remove_operation(new)
    for const in e.constants:
        if const.graph is graph and not const.uses() and not const.is_graph_output():
            graph.remove_operand(const)


# -- the pass -----------------------------------------------------------------------------------
@graph_pass("decompose")
def run(graph: Graph, ctx: PassContext) -> PassResult:
    """Decompose every operation whose op the target lacks or emulates."""
    target = ctx.target
    if target is None:
        return PassResult(False)

    def wanted(op_type: str) -> bool:
        return not target.supports(op_type) or op_type in target.emulated

    expander = Expander(graph, acceptable=lambda op: not wanted(op.op_type),
                        available=lambda op_type: not wanted(op_type),
                        tolerable=lambda op: target.supports(op.op_type))
    counts: dict[str, int] = {}
    notes: list[str] = []
    for op in list(graph.operations):
        if not wanted(op.op_type):  # (an expansion replaces only its own op)
            continue
        try:
            expander.expand(op)
        except CannotExpand as why:
            if not target.supports(op.op_type):
                notes.append(f"{op.op_type} '{op.name}' stays: {target.name} lacks "
                             f"{op.op_type} and {why}")
            continue
        counts[f"decomposed {op.op_type}"] = counts.get(f"decomposed {op.op_type}", 0) + 1
    decomposed = sum(counts.values())
    if decomposed:
        counts["decomposed"] = decomposed
        counts["operations added"] = sum(expander.added.values())
    return PassResult(bool(decomposed), counts, notes)
