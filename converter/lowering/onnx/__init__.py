"""WebNN graph -> ONNX model: the lowering the executor runs on ONNX Runtime.

`to_onnx(graph)` gives a self-contained ModelProto whose inputs and outputs carry the graph's
input and output names. Two cases cannot keep them as they are: an output named like an input
or constant (WebNN keeps the two namespaces apart, ONNX has one) is renamed `<name>_output`,
and `LoweredModel.outputs` maps it; int4/uint4 inputs and outputs are int8/uint8 in the model,
one value per byte, since numpy has no 4-bit type.

`lower(graph, external_min_bytes=...)` gives the same model with large constants left out of
the proto (marked as external data) plus the arrays that hold them, which
`converter.runtimes.execute` hands to ONNX Runtime without copying them.

Each WebNN operation is lowered by the rule registered for its op type (registry.py; one
module per op family), through the emitter in context.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper

from ... import dtypes
from ...errors import ConverterError, UnsupportedError
from ...ir import Graph, Operand
from .context import ONNX_TYPES, LoweringContext
from .registry import lowering_for

__all__ = ["to_onnx", "lower", "LoweredModel", "DEFAULT_OPSET", "MIN_OPSET"]

DEFAULT_OPSET = 21
# Reduce* take axes as an input, Split takes num_outputs, Resize takes axes: from opset 18 on.
MIN_OPSET = 18
# Fill constants (`@scalar`) with more elements than this become ConstantOfShape nodes, so a
# filled [4096, 4096] tensor costs one number in the model instead of 64 MiB.
_FILL_AS_NODE = 16
# Graph inputs and outputs of these types are int8/uint8 in the model, one value per byte.
_BYTE_CARRIED = {"int4": "int8", "uint4": "uint8"}


@dataclass
class LoweredModel:
    model: onnx.ModelProto
    # Initializers left out of `model` (data_location EXTERNAL), by name. Feed them to ORT with
    # SessionOptions.add_external_initializers.
    external: dict[str, np.ndarray] = field(default_factory=dict)
    # Graph output name -> ONNX output name. They are equal unless an output shares its name
    # with a graph input or constant (separate namespaces in WebNN, one namespace in ONNX).
    outputs: dict[str, str] = field(default_factory=dict)


def to_onnx(graph: Graph, opset: int | None = None) -> onnx.ModelProto:
    """The ONNX model computing `graph`; every constant is inside the model."""
    return lower(graph, opset).model


def lower(graph: Graph, opset: int | None = None, *,
          external_min_bytes: int | None = None) -> LoweredModel:
    """Lower `graph` to ONNX at `opset` (default DEFAULT_OPSET).

    external_min_bytes: constants of at least this many bytes are not copied into the proto;
    they are returned in `LoweredModel.external` (the arrays themselves, not copies).
    """
    opset = DEFAULT_OPSET if opset is None else int(opset)
    newest = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= opset <= newest:
        raise ConverterError(f"ONNX opset {opset} is not supported",
                             fix=f"use an opset from {MIN_OPSET} to {newest}")
    if opset < 21:  # INT4/UINT4 tensors exist from opset 21 on
        packed = sorted(o.name for o in graph.operands() if o.data_type in _BYTE_CARRIED)
        if packed:
            raise UnsupportedError([f"4-bit operand '{n}' needs ONNX opset 21 or later"
                                    for n in packed[:3]], fix="lower at opset 21+")
    ctx = LoweringContext(opset)
    for name in (*graph.inputs, *graph.constants):
        ctx.reserve(name)
    output_names = {key: ctx.fresh(key if key not in graph.inputs and key not in graph.constants
                                   else f"{key}_output") for key in graph.outputs}

    inputs = []
    for name, operand in graph.inputs.items():
        inputs.append(_value_info(name, operand))
        if operand.data_type in _BYTE_CARRIED:
            # int4/uint4 values cross the model boundary one per byte (numpy has no 4-bit
            # type); inside, they are cast to the 4-bit type at once.
            name = ctx.node("Cast", [name], to=ONNX_TYPES[operand.data_type],
                            dtype=operand.data_type)
        ctx.bind(operand, name)

    external: dict[str, np.ndarray] = {}
    for name, operand in graph.constants.items():
        if not operand.uses():  # (a graph output is always an operation's result)
            continue  # an unused constant would only make ORT warn
        _emit_constant(ctx, name, operand, external, external_min_bytes)
        ctx.bind(operand, name)

    output_keys: dict[int, str] = {}
    for key, operand in graph.outputs.items():
        if operand.data_type not in _BYTE_CARRIED:  # those get a Cast to the output name
            output_keys.setdefault(id(operand), output_names[key])

    for op in graph.operations:
        ctx.op = op
        start = len(ctx.nodes)
        results = lowering_for(op.op_type)(ctx, op)
        if len(results) != len(op.outputs):
            raise ConverterError(f"the lowering gave {len(results)} results, the op has "
                                 f"{len(op.outputs)}", where=f"{op.op_type} '{op.name}'")
        claimed: dict[str, str] = {}  # a value this op made -> its name after renaming
        for operand, value in zip(op.outputs, results):
            wanted = output_keys.get(id(operand))
            if value in claimed:
                value = claimed[value]  # one value given for two results: the same name
                ctx.bind(operand, value)
            elif not _made_since(ctx, value, start):
                ctx.bind(operand, value)  # an alias of an earlier value
            else:
                final = wanted or ctx.fresh(operand.name)
                _rename(ctx, value, final, start)
                ctx.bind(operand, final)
                claimed[value] = final
                value = final
            ctx.types[value] = operand.data_type
    ctx.op = None

    outputs = []
    for key, operand in graph.outputs.items():
        value, name = ctx.name_of(operand), output_names[key]
        if operand.data_type in _BYTE_CARRIED:
            carrier = _BYTE_CARRIED[operand.data_type]
            ctx.node("Cast", [value], outputs=[name], to=ONNX_TYPES[carrier])
        elif value != name:
            ctx.node("Identity", [value], outputs=[name])
        outputs.append(_value_info(name, operand))

    onnx_graph = helper.make_graph(ctx.nodes, graph.name, inputs, outputs,
                                   initializer=ctx.initializers)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(onnx_graph, opset_imports=opsets,
                              ir_version=helper.find_min_ir_version_for(opsets),
                              producer_name="webnn-converter")
    return LoweredModel(model, external, output_names)


def _value_info(name: str, operand: Operand):
    dt = _BYTE_CARRIED.get(operand.data_type, operand.data_type)
    return helper.make_tensor_value_info(name, ONNX_TYPES[dt], list(operand.shape))


def _made_since(ctx: LoweringContext, value: str, start: int) -> bool:
    return any(value in n.output for n in ctx.nodes[start:])


def _rename(ctx: LoweringContext, old: str, new: str, start: int) -> None:
    """Rename a value made by this operation's nodes (only they can read it so far)."""
    if old == new:
        return
    for n in ctx.nodes[start:]:
        for seq in (n.input, n.output):
            for i, v in enumerate(seq):
                if v == old:
                    seq[i] = new
    # (`new` came from ctx.fresh, so it is already taken; the caller records its type)


def _emit_constant(ctx: LoweringContext, name: str, operand: Operand,
                   external: dict[str, np.ndarray], external_min_bytes: int | None) -> None:
    data = operand.constant
    onnx_type = ONNX_TYPES[operand.data_type]
    count = int(np.prod(operand.shape, dtype=np.int64))
    if data.fill is not None and count > _FILL_AS_NODE and not data.packed:
        value = helper.make_tensor("value", onnx_type, [1],
                                   [np.asarray(data.fill, dtypes.numpy_dtype(data.data_type))
                                    .item()])
        ctx.node("ConstantOfShape", [ctx.int64s(operand.shape)], outputs=[name], value=value)
        return
    tensor = TensorProto()
    tensor.name = name
    tensor.data_type = onnx_type
    tensor.dims.extend(operand.shape)
    big = external_min_bytes is not None and data.nbytes >= external_min_bytes
    if big and data.fill is None and not data.packed:
        arr = data.numpy()
        if not arr.flags.c_contiguous or arr.dtype.byteorder == ">":
            arr = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
        external[name] = arr
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", f"<in-memory>/{name}"), ("offset", "0"),
                           ("length", str(arr.nbytes))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
    else:
        tensor.raw_data = bytes(data.raw_bytes())
    ctx.initializers.append(tensor)
    ctx.types[name] = operand.data_type
