"""GraphBuilder: a Python mirror of MLGraphBuilder that validates as it builds.

    b = GraphBuilder("tiny")
    x = b.input("x", "float32", [1, 3, 8, 8])
    w = b.constant(np.ones((4, 3, 3, 3), np.float32))
    y = b.conv2d(x, w, padding=[1, 1, 1, 1], bias=b.constant(np.zeros(4, np.float32)))
    graph = b.build({"y": b.relu(y)})

Op methods take the spec's arguments in the spec's order (operands first, then the other
positional arguments), and options as keyword arguments under their spec names, operand-valued
options (bias, scale, initialHiddenState ...) included. `name=` names the result. Each method is
generated from the op catalogue, so the builder knows exactly the ops the catalogue knows.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..errors import ConverterError, OpValidationError
from ..ir import ConstantData, Graph, Operand
from .registry import OpDef, all_ops

__all__ = ["GraphBuilder"]


class GraphBuilder:
    def __init__(self, name: str = "graph"):
        self.graph = Graph(name)
        self._built = False

    def input(self, name: str, data_type: str | dict, shape=None) -> Operand:
        """`input(name, "float32", [1, 3, 8, 8])` or `input(name, {"dataType":..., "shape":...})`."""
        if isinstance(data_type, dict):
            data_type, shape = data_type["dataType"], data_type["shape"]
        return self.graph.add_input(name, data_type, shape)

    def constant(self, *args, name: str | None = None) -> Operand:
        """A constant, in one of the spec's forms or from an ndarray:

        * `constant(array)`: the array's dtype and shape (the array is held, not copied);
        * `constant(data_type, shape, data)`: data is an ndarray, bytes or a nested list;
        * `constant({"dataType": ..., "shape": ...}, data)`: the MLOperandDescriptor form;
        * `constant(data_type, number)`: a scalar (shape []).
        """
        cname = name or self.graph.fresh_name("const")
        if len(args) == 1 and isinstance(args[0], np.ndarray):
            return self.graph.add_constant(cname, args[0])
        if len(args) == 2 and isinstance(args[0], dict):
            args = (args[0]["dataType"], args[0]["shape"], args[1])
        if len(args) == 2 and isinstance(args[0], str):
            data_type, value = args
            dtypes.info(data_type)
            return self.graph.add_constant(
                cname, ConstantData(data_type, (), fill=value, origin="scalar"))
        if len(args) == 3:
            data_type, shape, data = args
            info = dtypes.info(data_type)
            if isinstance(data, (bytes, bytearray, memoryview)):
                raw = np.frombuffer(data, dtype=np.uint8 if info.bits == 4 else info.numpy)
                if info.bits != 4:
                    raw = raw.reshape(shape)
                return self.graph.add_constant(cname, ConstantData(data_type, shape, array=raw))
            if info.bits == 4:
                from ..ir.operand import pack4

                arr = pack4(np.asarray(data))
            else:
                arr = np.asarray(data, dtype=info.numpy).reshape(shape)
            return self.graph.add_constant(cname, ConstantData(data_type, shape, array=arr))
        raise ConverterError("constant() takes (array), (dataType, shape, data), "
                             "(descriptor, data) or (dataType, number)")

    def build(self, outputs: dict[str, Operand]) -> Graph:
        """Name the outputs, verify the graph and return it (a builder builds once, as in the spec)."""
        if self._built:
            raise ConverterError("build() was already called on this builder")
        if not outputs:
            raise ConverterError("build() needs at least one output")
        for key, operand in outputs.items():
            self.graph.set_output(key, operand)
        self._built = True
        return self.graph.verify()


def _make_method(opdef: OpDef):
    n_operands = len(opdef.operands)
    returns_list = "output" not in opdef.limits

    def method(self: GraphBuilder, *args, name: str | None = None, **kwargs) -> Any:
        if len(args) < n_operands:
            raise OpValidationError(opdef.name, opdef.operands[len(args)], "is required")
        operands = list(args[:n_operands])
        if opdef.variadic:
            operands = list(operands[0])
        rest = args[n_operands:]
        if len(rest) > len(opdef.arguments):
            raise OpValidationError(opdef.name, "arguments",
                                    f"takes at most {n_operands + len(opdef.arguments)} "
                                    f"positional arguments, got {len(args)}")
        attrs = {p.name: v for p, v in zip(opdef.arguments, rest)}
        trailing = [kwargs.pop(o, None) for o in opdef.operand_options]
        for key, value in kwargs.items():
            if key in attrs:
                raise OpValidationError(opdef.name, key, "given twice")
            attrs[key] = value
        slots = opdef.operands if not opdef.variadic else (opdef.operands[0],) * len(operands)
        for slot, value in zip(slots + opdef.operand_options, operands + trailing):
            if value is not None and not isinstance(value, Operand):
                raise OpValidationError(opdef.name, slot, f"{type(value).__name__} is not an operand")
        op = self.graph.add_operation(opdef.name, operands + trailing, attrs, name=name)
        return list(op.outputs) if returns_list else op.outputs[0]

    method.__name__ = opdef.name
    method.__qualname__ = f"GraphBuilder.{opdef.name}"
    method.__doc__ = _signature_doc(opdef)
    return method


def _signature_doc(opdef: OpDef) -> str:
    positional = [*opdef.operands, *(p.name for p in opdef.arguments)]
    options = [f"{p.name}={p.default!r}" if p.default is not None else f"{p.name}=None"
               for p in opdef.options] + [f"{o}=None (operand)" for o in opdef.operand_options]
    head = f"{opdef.name}({', '.join(positional + options)})"
    return f"{head}\n\n{opdef.doc}" if opdef.doc else head


for _name, _opdef in all_ops().items():
    setattr(GraphBuilder, _name, _make_method(_opdef))
