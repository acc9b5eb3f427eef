"""Graph -> GraphDoc: the writing rules both forms share.

1. A constant is written the way it was made: a fill as `scalar` (a non-finite fill, which
   has no number literal, as inline bytes when small, else as weights), inline bytes as
   `bytes`, every other array as `weights` under a key derived from its name.
2. A node's operands are written positionally: the op's operands, then its operand-valued
   options up to the last one present. Positions never shift, so a skipped option before a
   present one (a bias without a scale) is written as a constant holding the spec's default
   (scale of ones; biases, peepholes and initial states of zeros), as formats.md requires.
3. Every other argument and option is written under its spec name, in the order the op's
   signature declares them.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..errors import ConverterError
from ..ir import ConstantData, Graph, Operation
from ..ir.operand import TensorDesc
from .document import (ConstDecl, GraphDoc, InputDecl, NodeDecl, OutputDecl, non_finite_name,
                       unique_name)
from ..ir.io_permutations import described
from .state_doc import StateDecl
from .weights import safe_key

__all__ = ["doc_from_graph", "INLINE_LIMIT"]

# A non-finite fill this small is written inline rather than as a weights-file entry.
INLINE_LIMIT = 256


def doc_from_graph(graph: Graph) -> GraphDoc:
    doc = GraphDoc(name=graph.name, path=f"graph '{graph.name}'", version=2,
                   quantized=bool(graph.metadata.get("quantized")))
    keys: set[str] = set()
    for name, operand in graph.inputs.items():
        doc.inputs.append(InputDecl(name, operand.data_type, operand.shape))
    for name, operand in graph.constants.items():
        doc.consts.append(_constant(name, operand.constant, keys))
    taken = {o.name for o in graph.operands()}
    for op in graph.operations:
        doc.nodes.append(_node(op, doc, taken))
    for key, operand in graph.outputs.items():
        doc.outputs.append(OutputDecl(key, operand.name))
    doc.state = doc_state(graph, keys)
    doc.permuted = described(graph)
    return doc


def _constant(name: str, data: ConstantData | None, keys: set[str]) -> ConstDecl:
    if data is None:
        raise ConverterError(f"constant '{name}' has no data")
    decl = ConstDecl(name, data.data_type, data.shape, "weights")
    if data.fill is not None:
        value = data.fill.item() if isinstance(data.fill, np.generic) else data.fill
        if isinstance(value, float) and not math.isfinite(value):
            # Neither the text form nor JSON has a number literal for inf/nan.
            if data.nbytes <= INLINE_LIMIT:
                decl.kind, decl.data = "bytes", bytes(data.raw_bytes())
                return decl
        else:
            decl.kind, decl.value = "scalar", value
            return decl
    elif data.origin == "bytes":
        decl.kind, decl.data = "bytes", bytes(data.raw_bytes())
        if len(decl.data) != data.nbytes:
            raise ConverterError(f"{len(decl.data)} bytes of data, its shape needs {data.nbytes}",
                                 where=f"constant '{name}'")
        return decl
    decl.key = unique_name(safe_key(name), keys)
    decl.source = data
    return decl


def doc_state(graph, keys: set[str]) -> list[StateDecl]:
    """The graph's state as declarations; constant initial values get weights keys from `keys`
    (shared with the constants, so no key is used twice)."""
    decls = []
    for var in graph.state:
        init = None
        if var.initial is not None:
            init = _constant(f"{var.input}/initial", var.initial, keys)
        decls.append(StateDecl(var.input, var.output, init))
    return decls


def _node(op: Operation, doc: GraphDoc, taken: set[str]) -> NodeDecl:
    opdef = op.opdef
    where = f"{op.op_type} '{op.name}'"
    if opdef.variadic:
        # concat's operands are one list argument: concat([a, b], axis=1).
        inputs: list[Any] = [[o.name for o in op.inputs]]
    else:
        slots = opdef.pad_inputs(list(op.inputs))
        for name, operand in zip(opdef.operands, slots):
            if operand is None:
                raise ConverterError(f"operand '{name}' is missing", where=where)
        last = max(i for i, o in enumerate(slots) if o is not None)
        inputs = []
        for i, operand in enumerate(slots[:last + 1]):
            if operand is None:
                inputs.append(_default_operand(op, opdef.slots[i], doc, taken))
            else:
                inputs.append(operand.name)
    params = opdef.params()
    unknown = [k for k in op.attrs if k not in params]
    if unknown:
        raise ConverterError(f"'{unknown[0]}' is not an argument or option of {op.op_type}",
                             where=where)
    options = {k: _json_value(op.attrs[k]) for k in params if op.attrs.get(k) is not None}
    outputs = [o.name for o in op.outputs]
    node_id = outputs[0] if len(outputs) == 1 else op.name
    return NodeDecl(op.op_type, inputs, options, outputs, node_id)


def _json_value(v: Any) -> Any:
    """A value as JSON holds it: plain types, lists, non-finite numbers as strings."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return non_finite_name(v)
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise ConverterError(f"cannot write the value {v!r} ({type(v).__name__}) to a graph file")


# -- defaults for skipped operand-valued options ---------------------------------------------------
def _default_operand(op: Operation, slot: str, doc: GraphDoc, taken: set[str]) -> str:
    """Add a constant holding the spec's default for a skipped option; return its name."""
    rule = _DEFAULTS.get((op.op_type, slot))
    if rule is None:
        raise ConverterError(f"'{slot}' is missing before a later operand, and the spec's "
                             f"default for it is not known to the writer",
                             where=f"{op.op_type} '{op.name}'")
    desc, fill = rule(op)
    name = unique_name(f"{op.name}_default_{slot}", taken)
    doc.consts.append(ConstDecl(name, desc.data_type, desc.shape, "scalar", value=fill))
    return name


def _input(op: Operation) -> TensorDesc:
    return op.inputs[0].desc


def _feature(axis_of: Callable[[Operation], int], fill: int):
    def rule(op: Operation):
        x = _input(op)
        return TensorDesc(x.data_type, (x.shape[axis_of(op)],)), fill
    return rule


def _layer_norm(fill: int):
    def rule(op: Operation):
        x = _input(op)
        axes = op.attr("axes")
        axes = list(range(1, x.rank)) if axes is None else axes
        return TensorDesc(x.data_type, tuple(x.shape[a] for a in axes)), fill
    return rule


def _recurrent(gates: int, kind: str):
    """bias/recurrentBias [dirs, gates*hidden], peepholeWeight [dirs, 3*hidden], states
    [dirs, batch, hidden]; cells drop the leading dirs."""
    def rule(op: Operation):
        x = _input(op)
        hidden = int(op.attr("hiddenSize"))
        cell = op.op_type.endswith("Cell")
        dirs = () if cell else (2 if op.attr("direction") == "both" else 1,)
        if kind == "bias":
            shape = (*dirs, gates * hidden)
        elif kind == "peephole":
            shape = (*dirs, 3 * hidden)
        else:
            shape = (*dirs, x.shape[1], hidden)
        return TensorDesc(x.data_type, shape), 0
    return rule


_NORM_AXES = {
    "batchNormalization": lambda op: int(op.attr("axis")),
    "instanceNormalization": lambda op: 1 if op.attr("layout") == "nchw" else 3,
}
_DEFAULTS: dict[tuple[str, str], Callable[[Operation], tuple[TensorDesc, int]]] = {
    **{(name, "scale"): _feature(axis, 1) for name, axis in _NORM_AXES.items()},
    **{(name, "bias"): _feature(axis, 0) for name, axis in _NORM_AXES.items()},
    ("layerNormalization", "scale"): _layer_norm(1),
    ("layerNormalization", "bias"): _layer_norm(0),
    ("gru", "bias"): _recurrent(3, "bias"),
    ("gru", "recurrentBias"): _recurrent(3, "bias"),
    ("gru", "initialHiddenState"): _recurrent(3, "state"),
    ("gruCell", "bias"): _recurrent(3, "bias"),
    ("gruCell", "recurrentBias"): _recurrent(3, "bias"),
    ("lstm", "bias"): _recurrent(4, "bias"),
    ("lstm", "recurrentBias"): _recurrent(4, "bias"),
    ("lstm", "peepholeWeight"): _recurrent(4, "peephole"),
    ("lstm", "initialHiddenState"): _recurrent(4, "state"),
    ("lstm", "initialCellState"): _recurrent(4, "state"),
    ("lstmCell", "bias"): _recurrent(4, "bias"),
    ("lstmCell", "recurrentBias"): _recurrent(4, "bias"),
    ("lstmCell", "peepholeWeight"): _recurrent(4, "peephole"),
}
