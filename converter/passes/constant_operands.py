"""The constant_operands pass: operands the target requires constant become constant.

Backends such as CoreML build some operands into the compiled model (batchNormalization's
mean, variance, scale and bias; lstm's weights and biases; conv2d's bias ...) and refuse a
graph where those are computed at run time. For each such operand that is not a constant:
  1. if it depends on constants only, it is computed now (the subgraph that produces it runs on
     the executor) and becomes a constant;
  2. otherwise the op is rewritten so that nothing needs the operand constant: a detaching rule
     when only operand-valued options are involved (conv2d without bias, then add), else the
     op's decomposition into primitives (batchNormalization -> sub/div/mul/add, lstm -> matmul,
     add, sigmoid, tanh, mul per step ...), which take any operand;
  3. otherwise a note says which operand of which op stays computed.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir import Graph, Operand, Operation
from . import PassContext, PassResult, graph_pass
from .decompose import CannotExpand, Expander
from .decompositions import get_detaching

if TYPE_CHECKING:
    from ..targets import Target

__all__ = ["run", "computed_operands", "constant_rooted", "fold_operand"]


def computed_operands(op: Operation, target: "Target") -> list[str]:
    """The operands of `op` the target wants constant that are not (absent ones are fine)."""
    slots = op.opdef.slots if not op.opdef.variadic else ()
    names = [n for n in target.must_be_constant(op.op_type) if n in slots]
    return [n for n in names if op.input(n) is not None and not op.input(n).is_constant]


def _ancestors(operand: Operand) -> list[Operation] | None:
    """The operations `operand` is computed by, or None when it depends on a graph input."""
    seen: dict[int, Operation] = {}
    stack = [operand]
    while stack:
        value = stack.pop()
        if value.is_input:
            return None
        op = value.producer
        if op is None or id(op) in seen:
            continue
        seen[id(op)] = op
        stack.extend(i for i in op.inputs if i is not None)
    return list(seen.values())


def constant_rooted(operand: Operand) -> bool:
    """Whether `operand` depends on constants only (so folding can make it a constant)."""
    return _ancestors(operand) is not None


def fold_operand(graph: Graph, operand: Operand) -> Operand | None:
    """Compute an operand that depends on constants only and make the ops that read it read a
    new constant with its value; the ops that computed it go when nothing else reads them.
    Returns the constant, or None when the operand depends on a graph input."""
    ancestors = _ancestors(operand)
    if ancestors is None:
        return None
    value = _evaluate(graph, operand, ancestors)
    constant = graph.add_constant(graph.fresh_name(f"{operand.name}_folded"), value,
                                  data_type=operand.data_type, shape=operand.shape)
    # A graph output keeps its producer: an output must be an op's result.
    operand.replace_all_uses_with(constant, replace_graph_outputs=False)
    order = {id(op): i for i, op in enumerate(graph.operations)}
    inputs = {id(i): i for op in ancestors for i in op.inputs if i is not None}
    for op in sorted(ancestors, key=lambda o: -order[id(o)]):
        if all(not out.uses() and not out.is_graph_output() for out in op.outputs):
            graph.remove_operation(op)
    for value_in in inputs.values():
        if value_in.is_constant and value_in.graph is graph and not value_in.uses():
            graph.remove_operand(value_in)
    if not graph.has_operand(operand.name):
        graph.rename(constant, operand.name)
    return constant


def _evaluate(graph: Graph, operand: Operand, ancestors: list[Operation]):
    """Run the operations that compute `operand` (all fed by constants) on the executor."""
    from ..lowering.onnx.executor import run_on_ort as execute

    sub = Graph(f"{graph.name}_fold")
    order = {id(op): i for i, op in enumerate(graph.operations)}
    for op in sorted(ancestors, key=lambda o: order[id(o)]):
        for value in op.inputs:
            if value is not None and value.is_constant and not sub.has_operand(value.name):
                sub.add_constant(value.name, value.constant)
        sub.add_operation(op.op_type, [sub.operand(i.name) if i is not None else None
                                       for i in op.inputs],
                          dict(op.attrs), name=op.name, output_names=[o.name for o in op.outputs])
    sub.set_output("value", sub.operand(operand.name))
    return execute(sub, {})["value"]


@graph_pass("constant_operands")
def run(graph: Graph, ctx: PassContext) -> PassResult:
    target = ctx.target
    if target is None or not target.constant_operands:
        return PassResult(False)

    def acceptable(op: Operation) -> bool:
        return target.supports(op.op_type) and not computed_operands(op, target)

    # A replacement never uses an op with constant-only operands: the operands it would get
    # (slices of computed weights ...) are computed too.
    expander = Expander(graph, acceptable=acceptable,
                        available=lambda t: target.supports(t) and not target.must_be_constant(t))
    counts: dict[str, int] = {}
    notes: list[str] = []

    def count(key: str) -> None:
        counts[key] = counts.get(key, 0) + 1

    # Folding removes only ops before `op` (what computed its operand), already visited.
    for op in list(graph.operations):
        pending = computed_operands(op, target)
        for name in pending:
            if fold_operand(graph, op.input(name)) is not None:
                count("folded")
        pending = computed_operands(op, target)
        if not pending:
            continue
        detach = get_detaching(op.op_type)
        rule = detach.rule if detach and set(pending) <= set(detach.operands) else None
        try:
            expander.expand(op, rule)
        except CannotExpand as why:
            notes.append(f"{op.op_type} '{op.name}': {', '.join(pending)} must be constant on "
                         f"{target.name} but {'is' if len(pending) == 1 else 'are'} computed "
                         f"from graph inputs, and the op cannot be rewritten: {why}")
            continue
        count(f"{'detached' if rule else 'decomposed'} {op.op_type}")
    changed = bool(counts)
    if changed:
        counts["operations added"] = sum(expander.added.values())
    return PassResult(changed, counts, notes)

