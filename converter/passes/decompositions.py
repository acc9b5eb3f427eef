"""The decomposition table: how each WebNN op is written with other WebNN ops.

One rule per op, registered with `@decomposition("gelu")`. A rule receives an Emitter anchored
at the operation it replaces and the operation itself, builds the replacement with calls named
like MLGraphBuilder's (`e.mul(x, e.scalar(0.5, dt))`, `e.reshape(x, [1, c, 1, 1])`), and
returns the operands that take the place of the operation's results, in order:

    @decomposition("softsign")
    def softsign(e: Emitter, op: Operation) -> Operand:
        x = op.input("input")
        return e.div(x, e.add(e.scalar(1, x.data_type), e.abs(x)))

Rules follow the spec's emulation code (index.bs, "can be EMULATED") where it has one, extended
to every option the op takes; where it has none the rule says how it computes the op.

`@detaching("conv2d", operands=("bias",))` registers a second kind of rule: the same op without
some operand-valued options, with their effect applied by ops after it (conv2d without bias,
then add). The constant_operands pass uses them to keep a fused op whose bias is not constant.

A rule only builds; the pass drivers (decompose.py) decide which ops to replace, check that the
target can run what a rule built, and undo a replacement that it cannot.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .. import dtypes
from ..errors import ConverterError
from ..ir import ConstantData, Graph, Operand, Operation
from ..ops.registry import get_op

__all__ = ["Emitter", "decomposition", "detaching", "get_decomposition",
           "get_detaching", "decomposable_ops", "foldable"]

Rule = Callable[["Emitter", Operation], "Operand | Sequence[Operand]"]


@dataclass(frozen=True)
class Detaching:
    operands: tuple[str, ...]
    rule: Rule


_TABLE: dict[str, Rule] = {}
_DETACHING: dict[str, Detaching] = {}


def decomposition(*op_types: str):
    """Register the decorated function as the decomposition of each of `op_types`."""

    def register(rule: Rule) -> Rule:
        for op_type in op_types:
            get_op(op_type)  # a typo in a table entry is an error at import time
            if op_type in _TABLE:
                raise ValueError(f"decomposition of {op_type} registered twice")
            _TABLE[op_type] = rule
        return rule

    return register


def detaching(*op_types: str, operands: tuple[str, ...]):
    """Register a rule that rebuilds each of `op_types` without the operand-valued options
    `operands`, applying them with ops after it."""

    def register(rule: Rule) -> Rule:
        for op_type in op_types:
            slots = get_op(op_type).operand_options
            unknown = [name for name in operands if name not in slots]
            if unknown:
                raise ValueError(f"{op_type} has no operand-valued option {unknown}")
            _DETACHING[op_type] = Detaching(tuple(operands), rule)
        return rule

    return register


def get_decomposition(op_type: str) -> Rule | None:
    return _TABLE.get(op_type)


def get_detaching(op_type: str) -> Detaching | None:
    return _DETACHING.get(op_type)


def decomposable_ops() -> list[str]:
    return sorted(_TABLE)


# -- building replacements ----------------------------------------------------------------------
class Emitter:
    """Builds the replacement of one operation (the anchor), inserting every new operation just
    before it so the graph stays in topological order.

    `e.<op>(operands..., arguments..., **options)` adds one MLGraphBuilder op (operand-valued
    options such as bias are keyword arguments too) and returns its result, or the list of its
    results for ops that return a sequence. `available(op_type)` says whether the target can
    run an op, for rules that have a choice (lstm per step as lstmCell or as primitives).
    Everything created is recorded, so a driver can remove it again.
    """

    def __init__(self, graph: Graph, anchor: Operation, *,
                 available: Callable[[str], bool] = lambda op_type: True,
                 cache: dict | None = None):
        self.graph = graph
        self.anchor = anchor
        self.available = available
        self.ops: list[Operation] = []
        self.constants: list[Operand] = []
        # Constants made here, shared by the Emitters of one pass run: scalars by value, and
        # parts of constants by (source, how), so a weight cut for each of many steps or
        # cells is stored once.
        self._cache = cache if cache is not None else {}

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            get_op(name)
        except ConverterError:
            raise AttributeError(name) from None
        return functools.partial(self.op, name)

    # -- operations ----------------------------------------------------------------------------
    def op(self, op_type: str, *args, **kwargs):
        opdef = get_op(op_type)
        if opdef.variadic:
            operands, rest = list(args[0]), args[1:]
        else:
            count = len(opdef.operands)
            operands, rest = list(args[:count]), args[count:]
        if len(rest) > len(opdef.arguments):
            raise ConverterError(f"{op_type} takes {len(opdef.arguments)} arguments after its "
                                 f"operands, got {len(rest)}", where="decomposition rule")
        attrs = {p.name: value for p, value in zip(opdef.arguments, rest)}
        trailing = [kwargs.pop(name, None) for name in opdef.operand_options]
        attrs.update({k: v for k, v in kwargs.items() if v is not None})
        name = self.graph.fresh_name(f"{self.anchor.name}_{op_type}")
        new = self.graph.add_operation(op_type, operands + trailing, attrs, name=name,
                                       before=self.anchor)
        self.ops.append(new)
        return new.outputs[0] if "output" in opdef.limits else list(new.outputs)

    # -- constants -----------------------------------------------------------------------------
    def scalar(self, value: float | int, data_type: str) -> Operand:
        """A rank-0 constant (the spec's `constant(dataType, value)`), shared within a pass."""
        key = ("scalar", data_type, repr(value))
        cached = self._cache.get(key)
        if cached is not None and cached.graph is self.graph:
            return cached
        fill = value if dtypes.info(data_type).is_float else int(value)
        operand = self._add_constant(ConstantData(data_type, (), fill=fill, origin="scalar"))
        self._cache[key] = operand
        return operand

    def derived(self, how: tuple, sources: tuple[Operand, ...], make) -> Operand:
        """The constant `make()` computes from constant `sources`, made once per pass run for
        the same sources and `how`."""
        key = ("derived", how, tuple(id(s) for s in sources))
        cached = self._cache.get(key)
        # The entry holds the sources themselves, so their ids cannot be reused meanwhile.
        if cached is not None and cached[1].graph is self.graph:
            return cached[1]
        operand = make()
        self._cache[key] = (sources, operand)
        return operand

    def filled(self, value: float | int, data_type: str, shape: Sequence[int]) -> Operand:
        """A constant of `shape` whose elements all are `value` (stored as one number)."""
        fill = value if dtypes.info(data_type).is_float else int(value)
        return self._add_constant(ConstantData(data_type, tuple(shape), fill=fill,
                                               origin="scalar"))

    def tensor(self, array: np.ndarray, data_type: str) -> Operand:
        """A constant holding `array` (converted to `data_type`'s numpy type)."""
        arr = np.ascontiguousarray(np.asarray(array, dtype=dtypes.numpy_dtype(data_type)))
        return self._add_constant(ConstantData(data_type, arr.shape, array=arr))

    def _add_constant(self, data: ConstantData) -> Operand:
        name = self.graph.fresh_name(f"{self.anchor.name}_const")
        operand = self.graph.add_constant(name, data)
        self.constants.append(operand)
        return operand

    # -- shape helpers that work on constants at conversion time -------------------------------
    def reshape_to(self, x: Operand, shape: Sequence[int]) -> Operand:
        """x reshaped to `shape`: x itself when it has that shape, a new constant when x is a
        constant (nothing left for the target to compute), else a reshape op."""
        shape = [int(d) for d in shape]
        if list(x.shape) == shape:
            return x
        if foldable(x):
            if x.constant.fill is not None:
                return self.derived(("reshape", tuple(shape)), (x,), lambda: self.filled(
                    x.constant.fill, x.data_type, shape))
            return self.derived(("reshape", tuple(shape)), (x,), lambda: self.tensor(
                x.constant.numpy().reshape(shape), x.data_type))
        return self.reshape(x, shape)

    def transpose_to(self, x: Operand, permutation: Sequence[int]) -> Operand:
        permutation = [int(p) for p in permutation]
        if permutation == list(range(x.rank)):
            return x
        if foldable(x):
            return self.derived(("transpose", tuple(permutation)), (x,), lambda: self.tensor(
                np.transpose(x.constant.numpy(), permutation), x.data_type))
        return self.transpose(x, permutation=permutation)

    def part(self, x: Operand, starts: Sequence[int], sizes: Sequence[int]) -> Operand:
        """slice(x, starts, sizes), taken from a constant at conversion time."""
        starts, sizes = [int(s) for s in starts], [int(s) for s in sizes]
        if starts == [0] * x.rank and sizes == list(x.shape):
            return x
        if foldable(x):
            index = tuple(slice(s, s + n) for s, n in zip(starts, sizes))
            return self.derived(("slice", tuple(starts), tuple(sizes)), (x,), lambda: self.tensor(
                x.constant.numpy()[index], x.data_type))
        return self.slice(x, starts, sizes)

    def along(self, x: Operand, rank: int, axis: int) -> Operand:
        """A 1-D tensor reshaped to broadcast along `axis` of a rank-`rank` tensor."""
        shape = [1] * rank
        shape[axis] = x.shape[0]
        return self.reshape_to(x, shape)


def foldable(x: Operand) -> bool:
    """Whether x's value can be rearranged here (a constant of a byte-addressable type)."""
    return x.is_constant and dtypes.info(x.data_type).bits >= 8


# The family modules fill the table (they import the names above, so they come last).
from . import (  # noqa: E402,F401
    decompositions_activation,
    decompositions_indexing,
    decompositions_normalization,
    decompositions_recurrent,
    decompositions_reduction,
)
