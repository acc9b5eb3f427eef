"""Quantization ONNX ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearConv
and QLinearMatMul.

WebNN's quantizeLinear/dequantizeLinear take a scale and zero point of the input's own rank,
each input dimension a whole multiple of theirs ("blockwise broadcastable"). ONNX gives them as a
scalar (per tensor), a 1-D vector along `axis` (per axis) or a tensor blocked along `axis`
(block_size, opset 21+), so every form is reshaped to the input's rank here. WebNN has no
optional zero point: a missing one becomes zeros of the quantized type.

QLinearConv and QLinearMatMul follow the ONNX definition's integer arithmetic: (x - x_zero_point)
and (w - w_zero_point) are exact small integers in float32, their conv/matmul sums stay exact
integers, and one multiplication by x_scale * w_scale / y_scale precedes the rounding, as in
ONNX's own definition (a dequantize -> float op -> quantize chain would round differently).
"""
from __future__ import annotations

import numpy as np
import onnx

from ....ir import ConstantData, Operand
from ....ir.operand import pack4
from ..context import ImportContext, OnnxNode, unpack_known
from ..registry import Unsupported, onnx_op, rule_for
from ..tensor_data import onnx_dtype_name

__all__ = ["reshape", "to_input_rank", "zeros", "dynamic_quantize"]

# ONNX quantized element types WebNN can hold (int4/uint4 as Chromium's packed extension).
_QUANTIZED = {onnx.TensorProto.INT8: "int8", onnx.TensorProto.UINT8: "uint8",
              onnx.TensorProto.INT32: "int32", onnx.TensorProto.INT4: "int4",
              onnx.TensorProto.UINT4: "uint4"}
_FLOATS = {onnx.TensorProto.FLOAT: "float32", onnx.TensorProto.FLOAT16: "float16"}


def _type_name(elem: int) -> str:
    return onnx_dtype_name(elem)


def reshape(ctx: ImportContext, operand: Operand, shape) -> Operand:
    """`operand` with `shape` (same element count); no op when it already has it."""
    shape = tuple(int(d) for d in shape)
    if operand.shape == shape:
        return operand
    if operand.data_type in ("int4", "uint4"):
        raise Unsupported(f"'{operand.name}' ({operand.data_type}, shape {list(operand.shape)}) "
                          f"must become shape {list(shape)}, and WebNN cannot reshape 4-bit "
                          f"operands; it must be known at conversion time")
    return ctx.emit("reshape", [operand], {"newShape": list(shape)})


def zeros(ctx: ImportContext, data_type: str, shape) -> Operand:
    """A constant of zeros (stored as one fill value, whatever its size or type)."""
    name = ctx.graph.fresh_name(f"{ctx.node.name}_zero_point")
    return ctx.graph.add_constant(name, ConstantData(data_type, tuple(shape), fill=0))


def _target_shape(ctx: ImportContext, name: str, x_shape, axis: int, block_size: int,
                  what: str) -> tuple[tuple[int, ...], bool]:
    """The input-rank shape `name` takes, and whether its values must be repeated first (a
    partial last block, which blockwise broadcasting cannot express)."""
    shape, rank = ctx.shape(name), len(x_shape)
    if int(np.prod(shape, dtype=np.int64)) == 1 and not block_size:
        return (1,) * rank, False
    if not -rank <= axis < rank:
        raise Unsupported(f"axis {axis} is out of range for the input's rank {rank}")
    axis %= rank
    if not block_size:
        if len(shape) != 1 or shape[0] != x_shape[axis]:
            raise Unsupported(f"{what} has shape {list(shape)}; per-axis quantization needs "
                              f"[{x_shape[axis]}] (input dimension {axis})")
        target = [1] * rank
        target[axis] = shape[0]
        return tuple(target), False
    blocks = -(-x_shape[axis] // block_size)
    expected = tuple(blocks if i == axis else d for i, d in enumerate(x_shape))
    if tuple(shape) != expected:
        raise Unsupported(f"{what} has shape {list(shape)}; blocked quantization with "
                          f"block_size {block_size} on axis {axis} needs {list(expected)}")
    return tuple(shape), x_shape[axis] % block_size != 0


def to_input_rank(ctx: ImportContext, name: str, x_shape, axis: int, block_size: int,
                  what: str = "scale") -> Operand:
    """ONNX's scalar / per-axis / blocked scale or zero point as WebNN's input-rank operand."""
    target, repeat = _target_shape(ctx, name, x_shape, axis, block_size, what)
    if repeat:
        # A partial last block: repeat every value over its block and cut to the input's size,
        # which needs the values now (WebNN scales must divide the input's dimensions).
        value = ctx.value(name)
        if value.known is None:
            raise Unsupported(f"{what} must be known at conversion time: input dimension "
                              f"{axis % len(x_shape)} ({x_shape[axis]}) is not a multiple of "
                              f"block_size {block_size}", needs=ctx.inputs_feeding(name))
        # A block longer than the axis is one block: repeat no more than the axis holds.
        full = np.repeat(unpack_known(value), min(block_size, x_shape[axis]), axis=axis)
        full = np.take(full, np.arange(x_shape[axis]), axis=axis)
        dtype = ctx.dtype(name)
        return ctx.constant(pack4(full) if dtype in ("int4", "uint4") else full, dtype,
                            shape=tuple(x_shape))
    value = ctx.value(name)
    if value.known is not None and value.operand is None:
        # Reshape the array itself: no reshape op for a constant (4-bit stays packed).
        dtype = ctx.dtype(name)
        if dtype in ("int4", "uint4"):
            return ctx.constant(value.known, dtype, shape=target)
        return ctx.constant(ctx.known(name).reshape(target), dtype)
    return reshape(ctx, ctx.operand(name), target)


def _axis_and_block(node: OnnxNode) -> tuple[int, int]:
    return int(node.attr("axis", 1)), int(node.attr("block_size", 0) or 0)


@onnx_op("DequantizeLinear", since=10, webnn=("dequantizeLinear", "reshape", "cast"))
def dequantize_linear(ctx: ImportContext, node: OnnxNode):
    x_name, scale_name, zp_name = node.input(0), node.input(1), node.input(2)
    x_type = ctx.onnx_type(x_name)
    if x_type not in _QUANTIZED:
        raise Unsupported(f"input type {_type_name(x_type)}: WebNN dequantizes int8, uint8, "
                          f"int32, int4 and uint4 only")
    scale_type = ctx.onnx_type(scale_name)
    if scale_type not in _FLOATS:
        raise Unsupported(f"scale type {_type_name(scale_type)}: WebNN scales are float32 or "
                          f"float16")
    x = ctx.operand(x_name)
    axis, block_size = _axis_and_block(node)
    scale = to_input_rank(ctx, scale_name, x.shape, axis, block_size)
    if zp_name is None:
        zero_point = zeros(ctx, x.data_type, scale.shape)
    else:
        zero_point = to_input_rank(ctx, zp_name, x.shape, axis, block_size, "zero point")
    output_type = node.attr("output_dtype", 0)
    if output_type and output_type != scale_type:
        if output_type not in _FLOATS:
            raise Unsupported(f"output_dtype {_type_name(output_type)}: WebNN dequantizes to "
                              f"float32 or float16")
        # ONNX multiplies in float32 and casts the product: cast the scale up first, the
        # product down last, so a float16 scale with float32 output loses nothing.
        scale = ctx.emit("cast", [scale], {"dataType": "float32"}) \
            if scale.data_type != "float32" else scale
        result = ctx.emit("dequantizeLinear", [x, scale, zero_point])
        if _FLOATS[output_type] != "float32":
            result = ctx.emit("cast", [result], {"dataType": _FLOATS[output_type]})
        return [result]
    return [ctx.emit("dequantizeLinear", [x, scale, zero_point])]


def _quantized_type(node: OnnxNode, ctx: ImportContext, zp_name: str | None) -> str:
    """The result type: the zero point's, else output_dtype (opset 21+), else uint8."""
    elem = ctx.onnx_type(zp_name) if zp_name is not None else \
        (node.attr("output_dtype", 0) or onnx.TensorProto.UINT8)
    if elem not in _QUANTIZED or elem == onnx.TensorProto.INT32:
        raise Unsupported(f"quantizing to {_type_name(elem)}: WebNN quantizes to int8, uint8, "
                          f"int4 and uint4 only")
    return _QUANTIZED[elem]


@onnx_op("QuantizeLinear", since=10, webnn=("quantizeLinear", "reshape", "cast"))
def quantize_linear(ctx: ImportContext, node: OnnxNode):
    x_name, scale_name, zp_name = node.input(0), node.input(1), node.input(2)
    x = ctx.operand(x_name)
    if x.data_type not in ("float32", "float16"):
        raise Unsupported(f"input type {x.data_type}: WebNN quantizes float32 or float16")
    q_type = _quantized_type(node, ctx, zp_name)
    axis, block_size = _axis_and_block(node)
    scale = to_input_rank(ctx, scale_name, x.shape, axis, block_size)
    if zp_name is None:
        zero_point = zeros(ctx, q_type, scale.shape)
    else:
        zero_point = to_input_rank(ctx, zp_name, x.shape, axis, block_size, "zero point")
    precision = node.attr("precision", 0)
    work = _FLOATS.get(precision) if precision else scale.data_type
    if work is None:
        raise Unsupported(f"precision {_type_name(precision)}: WebNN divides in float32 or "
                          f"float16 only")
    # WebNN divides in the input's type, so input and scale share the `precision` type.
    if x.data_type != work:
        x = ctx.emit("cast", [x], {"dataType": work})
    if scale.data_type != work:
        scale = ctx.emit("cast", [scale], {"dataType": work})
    return [ctx.emit("quantizeLinear", [x, scale, zero_point])]


@onnx_op("DynamicQuantizeLinear", since=11,
         webnn=("reduceMin", "reduceMax", "min", "max", "sub", "div", "neg", "equal", "where",
                "clamp", "roundEven", "cast", "reshape", "quantizeLinear"))
def dynamic_quantize_linear(ctx: ImportContext, node: OnnxNode):
    """ONNX's definition for uint8: the range [min(x, 0), max(x, 0)] spread over 0..255."""
    x = ctx.operand(node.input(0))
    if x.data_type != "float32":
        raise Unsupported(f"input type {x.data_type}: DynamicQuantizeLinear takes float32")
    return list(dynamic_quantize(ctx, x))


def dynamic_quantize(ctx: ImportContext, x: Operand, per_row: bool = False
                     ) -> tuple[Operand, Operand, Operand]:
    """(uint8 x, scale, zero point) as DynamicQuantizeLinear computes them at run time: over
    the whole tensor (scalar scale and zero point), or for a matrix each row on its own
    ([rows, 1] scale and zero point)."""
    f32 = lambda v: ctx.scalar(v, "float32")  # noqa: E731
    over = {"axes": [1], "keepDimensions": True} if per_row else {}
    low = ctx.emit("min", [ctx.emit("reduceMin", [x], over), f32(0.0)])
    high = ctx.emit("max", [ctx.emit("reduceMax", [x], over), f32(0.0)])
    span = ctx.emit("sub", [high, low])
    # An all-zero input has an empty range; ONNX takes 1 there so the scale is never 0.
    span = ctx.emit("where", [ctx.emit("equal", [span, f32(0.0)]), f32(1.0), span])
    scale = ctx.emit("div", [span, f32(255.0)])
    zero = ctx.emit("neg", [ctx.emit("div", [low, scale])])
    zero = ctx.emit("roundEven", [ctx.emit("clamp", [zero], {"minValue": 0, "maxValue": 255})])
    zero = ctx.emit("cast", [zero], {"dataType": "uint8"})
    if per_row:
        return ctx.emit("quantizeLinear", [x, scale, zero]), scale, zero
    ones = (1,) * x.rank
    y = ctx.emit("quantizeLinear", [x, reshape(ctx, scale, ones), reshape(ctx, zero, ones)])
    return y, scale, zero


# -- QLinearConv / QLinearMatMul ----------------------------------------------------------------
def _centered(ctx: ImportContext, q_name: str, zp_name: str | None, zp_shape) -> Operand:
    """(q - zero_point) as float32: exact integers, through dequantizeLinear with scale 1."""
    q = ctx.operand(q_name)
    if q.data_type not in ("int8", "uint8"):
        raise Unsupported(f"quantized input '{q_name}' is {q.data_type}; QLinear ops take "
                          f"int8 or uint8")
    if zp_name is None:
        zero = zeros(ctx, q.data_type, zp_shape)
    else:
        if ctx.dtype(zp_name) != q.data_type:
            raise Unsupported(f"zero point '{zp_name}' is {ctx.dtype(zp_name)}, its input "
                              f"'{q_name}' is {q.data_type}")
        zero = _shaped(ctx, zp_name, zp_shape)
    one = ctx.constant(np.broadcast_to(np.ones((), np.float32), zero.shape), "float32")
    return ctx.emit("dequantizeLinear", [q, one, zero])


def _shaped(ctx: ImportContext, name: str, shape) -> Operand:
    value = ctx.value(name)
    if value.known is not None and value.operand is None:
        return ctx.constant(ctx.known(name).reshape(shape), ctx.dtype(name))
    return reshape(ctx, ctx.operand(name), shape)


def _size(ctx: ImportContext, name: str) -> int:
    return int(np.prod(ctx.shape(name), dtype=np.int64))


def _requantize(ctx: ImportContext, acc: Operand, multiplier: Operand, y_zp: str | None,
                zp_type: str) -> Operand:
    """round(acc * multiplier) + y_zero_point, saturated: quantizeLinear with scale 1."""
    scaled = ctx.emit("mul", [acc, multiplier])
    ones = (1,) * acc.rank
    if y_zp is None:
        zero = zeros(ctx, zp_type, ones)
    else:
        if _size(ctx, y_zp) != 1:
            raise Unsupported("y_zero_point must be one value (per-tensor)")
        zero = _shaped(ctx, y_zp, ones)
    one = ctx.constant(np.ones(ones, np.float32), "float32")
    return ctx.emit("quantizeLinear", [scaled, one, zero])


def _multiplier(ctx: ImportContext, a_scale: str, b_scale: str, y_scale: str,
                a_shape, b_shape) -> Operand:
    """a_scale * b_scale / y_scale computed in the scales' own type (as ONNX does), then
    float32 for the exact-integer accumulator."""
    a = _shaped(ctx, a_scale, a_shape)
    b = _shaped(ctx, b_scale, b_shape)
    if _size(ctx, y_scale) != 1:
        raise Unsupported("y_scale must be one value (per-tensor)")
    y = _shaped(ctx, y_scale, (1,) * len(a_shape))
    if len({a.data_type, b.data_type, y.data_type}) != 1 or a.data_type not in _FLOATS.values():
        raise Unsupported("the three scales must share one float type")
    m = ctx.emit("div", [ctx.emit("mul", [a, b]), y])
    return m if m.data_type == "float32" else ctx.emit("cast", [m], {"dataType": "float32"})


def _per_tensor_or(ctx: ImportContext, name: str | None, rank: int, axis: int,
                   length: int, what: str) -> tuple[int, ...]:
    """The shape a per-tensor (one value) or per-`axis` (length values) parameter takes."""
    ones = [1] * rank
    if name is None or _size(ctx, name) == 1:
        return tuple(ones)
    if ctx.rank(name) != 1 or _size(ctx, name) != length:
        raise Unsupported(f"{what} has shape {list(ctx.shape(name))}; it must be one value or "
                          f"{length} values")
    ones[axis] = length
    return tuple(ones)


@onnx_op("QLinearMatMul", since=10,
         webnn=("dequantizeLinear", "matmul", "mul", "div", "cast", "quantizeLinear",
                "reshape"))
def qlinear_matmul(ctx: ImportContext, node: OnnxNode):
    a_name, a_scale, a_zp, b_name, b_scale, b_zp, y_scale, y_zp = \
        (node.input(i) for i in range(8))
    a_shape, b_shape = ctx.shape(a_name), ctx.shape(b_name)
    if len(a_shape) < 2 or len(b_shape) < 2:
        raise Unsupported("1-D operands: WebNN's matmul takes matrices (rank 2 or more)")
    # a is per tensor or per row (its second-to-last axis), b per tensor or per column.
    a_param = _per_tensor_or(ctx, a_scale, len(a_shape), -2, a_shape[-2], "a_scale")
    b_param = _per_tensor_or(ctx, b_scale, len(b_shape), -1, b_shape[-1], "b_scale")
    a_zshape = _per_tensor_or(ctx, a_zp, len(a_shape), -2, a_shape[-2], "a_zero_point")
    b_zshape = _per_tensor_or(ctx, b_zp, len(b_shape), -1, b_shape[-1], "b_zero_point")
    a = _centered(ctx, a_name, a_zp, a_zshape)
    b = _centered(ctx, b_name, b_zp, b_zshape)
    acc = ctx.emit("matmul", [a, b])
    rank = acc.rank
    pad = lambda s: (1,) * (rank - len(s)) + tuple(s)  # noqa: E731
    m = _multiplier(ctx, a_scale, b_scale, y_scale, pad(a_param), pad(b_param))
    zp_type = ctx.dtype(y_zp) if y_zp is not None else ctx.dtype(a_name)
    return [_requantize(ctx, acc, m, y_zp, zp_type)]


@onnx_op("QLinearConv", since=10,
         webnn=("dequantizeLinear", "conv2d", "cast", "mul", "div", "quantizeLinear",
                "reshape"))
def qlinear_conv(ctx: ImportContext, node: OnnxNode):
    x_name, x_scale, x_zp, w_name, w_scale, w_zp, y_scale, y_zp = \
        (node.input(i) for i in range(8))
    bias_name = node.input(8)
    w_shape = ctx.shape(w_name)
    rank, channels = len(w_shape), w_shape[0]
    x = _centered(ctx, x_name, x_zp, (1,) * ctx.rank(x_name))
    w_zshape = _per_tensor_or(ctx, w_zp, rank, 0, channels, "w_zero_point")
    w = _centered(ctx, w_name, w_zp, w_zshape)
    names = [_fresh_value(ctx, node, "x_int", x), _fresh_value(ctx, node, "w_int", w)]
    if bias_name is not None:
        if ctx.dtype(bias_name) != "int32":
            raise Unsupported(f"bias is {ctx.dtype(bias_name)}; QLinearConv's bias is int32")
        bias = ctx.emit("cast", [ctx.operand(bias_name)], {"dataType": "float32"})
        names.append(_fresh_value(ctx, node, "bias_int", bias))
    acc = _run_float_rule(ctx, node, "Conv", names)
    out_rank = acc.rank
    w_param = _per_tensor_or(ctx, w_scale, out_rank, 1, channels, "w_scale")
    m = _multiplier(ctx, x_scale, w_scale, y_scale, (1,) * out_rank, w_param)
    zp_type = ctx.dtype(y_zp) if y_zp is not None else ctx.dtype(x_name)
    return [_requantize(ctx, acc, m, y_zp, zp_type)]


def _fresh_value(ctx: ImportContext, node: OnnxNode, what: str, operand: Operand) -> str:
    """Register `operand` under a new ONNX value name, for the float rule to read."""
    name = f"{node.name}::{what}"
    while name in ctx.values:
        name += "_"
    ctx.set(name, operand, onnx.TensorProto.FLOAT)
    return name


def _run_float_rule(ctx: ImportContext, node: OnnxNode, op_type: str, inputs: list[str]):
    """Import the float op (Conv) with the quantized node's attributes through its own rule, so
    auto_pad, 1-D and grouped convolutions work exactly as they do for Conv (at the quantized
    node's opset: Conv's meaning has not changed since opset 1)."""
    rule = rule_for("", op_type, node.opset)  # Conv's rule is registered from opset 1
    proto = onnx.helper.make_node(op_type, inputs, [f"{node.name}::{op_type}_out"],
                                  name=node.name)
    proto.attribute.extend(node.proto.attribute)
    results = rule(ctx, OnnxNode(proto, node.opset, 0))
    return results[0]


# -- com.microsoft MatMulNBits ------------------------------------------------------------------
@onnx_op("MatMulNBits", domain="com.microsoft",
         webnn=("dequantizeLinear", "gemm", "reshape", "slice", "sub", "expand", "mul"))
def matmul_nbits(ctx: ImportContext, node: OnnxNode):
    """A [..., K] times the block-quantized B^T: B's bytes are already WebNN's packed uint4 (or
    uint8) layout for an [N, blocks * block_size] tensor, low nibble first, so the weights stay
    4-bit constants dequantized by one blockwise dequantizeLinear."""
    bits, k, n = int(node.attr("bits", 4)), int(node.attr("K")), int(node.attr("N"))
    block = int(node.attr("block_size"))
    if bits not in (4, 8):
        raise Unsupported(f"bits={bits}: WebNN holds 4- and 8-bit weights only")
    a = ctx.operand(node.input(0))
    packed = ctx.require_known(node.input(1), "B (the packed weights)")
    blocks = -(-k // block)
    if packed.size * 8 != n * blocks * block * bits:
        raise Unsupported(f"B has {packed.size} bytes; N={n}, K={k}, block_size={block} and "
                          f"bits={bits} need {n * blocks * block * bits // 8}")
    q_type = "uint4" if bits == 4 else "uint8"
    q = ctx.constant(packed.reshape(-1) if bits == 4 else packed.reshape(n, blocks * block),
                     q_type, shape=(n, blocks * block))
    scale = _shaped(ctx, node.input(2), (n, blocks))
    if scale.data_type != a.data_type:
        raise Unsupported(f"scales are {scale.data_type}, A is {a.data_type}")
    zp_name = node.input(3)
    _check_g_idx(ctx, node.input(4), zp_name, k, block)
    float_zero_point = zp_name is not None and ctx.dtype(zp_name) == a.data_type
    if zp_name is None or float_zero_point:
        middle = 0 if float_zero_point else 2 ** (bits - 1)
        zero = ctx.graph.add_constant(ctx.graph.fresh_name(f"{node.name}_zero_point"),
                                      ConstantData(q_type, (n, blocks), fill=middle))
    else:
        zero = _nbits_zero_points(ctx, zp_name, n, blocks, bits, q_type)
    w = ctx.emit("dequantizeLinear", [q, scale, zero])
    if float_zero_point:  # (q - zp) * s = q * s - zp * s, zp * s repeated over each block
        shift = ctx.emit("mul", [_shaped(ctx, zp_name, (n, blocks, 1)),
                                 reshape(ctx, scale, (n, blocks, 1))])
        shift = ctx.emit("expand", [shift], {"newShape": [n, blocks, block]})
        w = ctx.emit("sub", [w, reshape(ctx, shift, (n, blocks * block))])
    if blocks * block != k:  # the last block is padded
        w = ctx.emit("slice", [w], {"starts": [0, 0], "sizes": [n, k]})
    rows = int(np.prod(a.shape[:-1], dtype=np.int64))
    bias = ctx.operand(node.input(5)) if node.input(5) is not None else None
    y = ctx.emit("gemm", [reshape(ctx, a, (rows, k)), w, bias], {"bTranspose": True})
    return [reshape(ctx, y, (*a.shape[:-1], n))]


def _nbits_zero_points(ctx: ImportContext, name: str, n: int, blocks: int, bits: int,
                       q_type: str) -> Operand:
    """uint8 zero points, packed per row of B (4-bit: two a byte, each row padded to whole
    bytes), as an [N, blocks] constant of B's type."""
    packed = ctx.require_known(name, "zero_points")
    if packed.dtype != np.uint8:
        raise Unsupported(f"zero_points of type {packed.dtype}: packed uint8 or A's float type")
    per_row = blocks if bits == 8 else -(-blocks // 2)  # bytes a row of B holds
    if packed.size != n * per_row:  # ONNX Runtime refuses such a model too
        raise Unsupported(f"zero_points has {packed.size} bytes; N={n} rows of {blocks} "
                          f"blocks at {bits} bits need {n * per_row}")
    if bits == 8:
        return ctx.constant(packed.reshape(n, blocks), "uint8")
    rows = packed.reshape(n, per_row)
    # low nibble first; no np.empty: an element left unwritten would hold stale bytes
    values = np.stack([rows & 0x0F, rows >> 4], axis=-1).reshape(n, per_row * 2)
    return ctx.constant(pack4(values[:, :blocks]), q_type, shape=(n, blocks))


def _check_g_idx(ctx: ImportContext, name: str | None, zp_name: str | None, k: int,
                 block: int) -> None:
    """g_idx (act-order) is only accepted when it is the plain order k // block_size."""
    if name is None:
        return
    if zp_name is not None:
        # ONNX Runtime (which defines the op) then dequantizes with the default zero point,
        # ignoring the given ones: no single meaning to reproduce.
        raise Unsupported("g_idx together with zero_points: ONNX Runtime ignores the zero "
                          "points in that case, so the op has no one meaning to convert")
    g_idx = ctx.require_known(name, "g_idx")
    if not np.array_equal(g_idx.reshape(-1), np.arange(k) // block):
        raise Unsupported("g_idx reorders the weight blocks (act-order), which WebNN's "
                          "blockwise dequantizeLinear cannot express")
