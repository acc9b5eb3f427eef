"""Operations: one MLGraphBuilder call each.

`inputs` holds operands in the spec's order: the op's positional operands first (for concat, all
of its inputs), then its operand-valued options (conv2d bias, gru initialHiddenState ...) in the
order the spec's options dictionary declares them, None where absent. `attrs` holds every other
argument and option under its spec name, as given (defaults are not stored; `attr()` supplies
them).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .semantics import get_op

if TYPE_CHECKING:
    from ..ops.registry import OpDef
    from .graph import Graph
    from .operand import Operand

__all__ = ["Operation"]


class Operation:
    __slots__ = ("op_type", "inputs", "attrs", "outputs", "name", "graph")

    def __init__(self, op_type: str, name: str, attrs: dict[str, Any] | None = None):
        self.op_type = op_type
        self.name = name
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.inputs: list[Operand | None] = []
        self.outputs: list[Operand] = []
        self.graph: Graph | None = None

    @property
    def opdef(self) -> "OpDef":
        return get_op(self.op_type)

    def attr(self, name: str) -> Any:
        """An argument or option's value, the spec's default where it was not given."""
        if name in self.attrs:
            return self.attrs[name]
        return self.opdef.default(name)

    def input(self, name: str) -> "Operand | None":
        """An operand by its spec name (`input`, `filter`, `bias` ...)."""
        return self.inputs[self.opdef.slot(name, len(self.inputs))]

    @property
    def output(self) -> "Operand":
        if len(self.outputs) != 1:
            raise ValueError(f"{self.op_type} '{self.name}' has {len(self.outputs)} outputs")
        return self.outputs[0]

    def set_inputs(self, inputs) -> None:
        for i, old in enumerate(self.inputs):
            if old is not None:
                old._remove_use(self, i)
        self.inputs = list(inputs)
        for i, new in enumerate(self.inputs):
            if new is not None:
                new._add_use(self, i)

    def replace_input(self, index: int, operand: "Operand | None") -> None:
        old = self.inputs[index]
        if old is not None:
            old._remove_use(self, index)
        self.inputs[index] = operand
        if operand is not None:
            operand._add_use(self, index)

    def __repr__(self) -> str:
        ins = ", ".join(o.name if o is not None else "None" for o in self.inputs)
        outs = ", ".join(o.name for o in self.outputs)
        return f"Operation({self.op_type} '{self.name}': [{outs}] = ({ins}))"
