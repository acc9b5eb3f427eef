"""Export of dequantizeLinear and quantizeLinear, with blockwise scale and zero point.

dequantizeLinear of a constant int8 (or int4) input with one scale per tensor or per channel
is TFLite's own form of quantized weights: the constant carries its quantization parameters
and DEQUANTIZE computes (input - zeroPoint) * scale. Its per-channel kernel rounds once, as the
spec does, but its per-tensor kernel computes input * scale - zeroPoint * scale (which can
round differently), so one scale per tensor is written as the same scale repeated along an
axis. Otherwise
the spec's emulation is written out,
    dequantize: (cast(input) - cast(zeroPoint)) * scale
    quantize:   clamp(roundEven(input / scale) + zeroPoint, lowest, highest) cast to the type
with scale and zeroPoint upsampled blockwise to the input's shape (each element repeated
input_dim / scale_dim times along each axis). quantizeLinear adds the zero point and clamps in
int64, which holds every value of every output type exactly; a float16 input rounds its
quotient to float16 first, as a float16 division would.

4-bit tensors exist in TFLite only as constants here: a 4-bit input is unpacked to int8 or
uint8 values at export time, and 4-bit results (quantizeLinear to int4) cannot be expressed.
"""
from __future__ import annotations

import numpy as np

from ...ir import Operand, Operation
from .context import ExportContext, compute_type
from .registry import exports
from .schema import NUMPY, fb

_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int32": (-2**31, 2**31 - 1),
           "uint32": (0, 2**32 - 1)}
# 4-bit values are held one per byte once unpacked.
_UNPACKED = {"int4": "int8", "uint4": "uint8"}
_FLOAT_SAFE = float(2**62)  # every float32 beyond this saturates anyway; int64 holds it


def _blockwise(ctx: ExportContext, tensor: int, target) -> int:
    """Repeat each element of `tensor` target/shape times along every axis.

    Axes of size 1 are left to ordinary broadcasting. A constant is repeated now; a computed
    tensor axis by axis: [s] becomes [s, 1], is broadcast to [s, t/s] and merged back.
    """
    shape = list(ctx.desc(tensor).shape)
    value = ctx.constant_value(tensor)
    if value is not None:
        for axis, (s, t) in enumerate(zip(shape, target)):
            if s not in (1, t):
                value = np.repeat(value, t // s, axis=axis)
        return ctx.const(np.ascontiguousarray(value), ctx.desc(tensor).data_type)
    current = list(shape)
    for axis, (s, t) in enumerate(zip(shape, target)):
        if s in (1, t):
            continue
        split = current[:axis] + [s, 1] + current[axis + 1:]
        grown = current[:axis] + [s, t // s] + current[axis + 1:]
        tensor = ctx.reshape(tensor, split)
        tensor = ctx.emit("BROADCAST_TO", [tensor, ctx.int32s(grown)],
                          (ctx.desc(tensor).data_type, grown))
        current[axis] = t
        tensor = ctx.reshape(tensor, current)
    return tensor


def _integers(ctx: ExportContext, operand: Operand) -> int:
    """An integer operand's tensor; a 4-bit constant unpacked to one value a byte."""
    if operand.data_type in _UNPACKED:
        held = _UNPACKED[operand.data_type]
        return ctx.const(np.ascontiguousarray(ctx.array(operand), NUMPY[held]), held)
    return ctx.get(operand)


def _per_axis(scale: Operand, x: Operand) -> int | None:
    """The one axis along which `scale` varies element by element (-1 for one scale per
    tensor), or None when it varies in blocks or along several axes."""
    varying = [a for a, s in enumerate(scale.shape) if s != 1]
    if not varying:
        return -1
    if len(varying) == 1 and scale.shape[varying[0]] == x.shape[varying[0]]:
        return varying[0]
    return None


def _dequantize_problem(op: Operation) -> str | None:
    for name in ("input", "zeroPoint"):
        operand = op.input(name)
        if operand.data_type in _UNPACKED and not operand.is_constant:
            return f"a 4-bit {name} must be a constant (TFLite computes no 4-bit tensors)"
    return None


@exports("dequantizeLinear", types=("int8", "uint8", "int32", "uint32", "int4", "uint4"),
         check=_dequantize_problem)
def dequantize_linear(ctx: ExportContext, op: Operation) -> list[int]:
    x, scale, zero = op.input("input"), op.input("scale"), op.input("zeroPoint")
    form = _constant_form(ctx, op)
    if form is not None:
        return [_dequantize_constant(ctx, op, *form)]
    ft = compute_type(scale.data_type)
    xv = ctx.cast(_integers(ctx, x), ft)
    zp = _blockwise(ctx, ctx.cast(_integers(ctx, zero), ft), x.shape)
    sv = _blockwise(ctx, ctx.value(scale), x.shape)
    return [ctx.mul(ctx.sub(xv, zp), sv)]


def _constant_form(ctx: ExportContext, op: Operation):
    """(axis, scale, zero point, result type) when the op is TFLite's own form of quantized
    weights (a constant int8 input with one scale per tensor or per channel); else None."""
    x, scale, zero = op.input("input"), op.input("scale"), op.input("zeroPoint")
    axis = _per_axis(scale, x)
    if axis == -1:  # one scale: repeated along the first axis longer than 1, if any
        axis = next((a for a, d in enumerate(x.shape) if d > 1), None)
    scale_value, zero_value = ctx.array(scale), ctx.array(zero)
    if (x.is_constant and scale_value is not None and zero_value is not None
            and axis is not None and _UNPACKED.get(x.data_type, x.data_type) == "int8"):
        return axis, scale_value, zero_value, compute_type(scale.data_type)
    return None


def stored_weight_permuted(ctx: ExportContext, operand: Operand, perm) -> int | None:
    """A weight stored in another type (`--weights`: an int8 constant dequantized per axis,
    a float16 constant cast to float32) read with its axes permuted by `perm`: the stored
    constant permuted now under a DEQUANTIZE of its own, so a filter in TFLite's layout needs
    no TRANSPOSE at run time. None for any other operand. The DEQUANTIZE that the producing
    operation emitted is dropped at the end if nothing else reads it (prune_dequantize)."""
    op = operand.producer
    if op is None:
        return None
    source = op.inputs[0]
    if op.op_type == "cast" and source.is_constant and source.data_type == "float16" \
            and operand.data_type == "float32":
        return ctx.permuted(source, perm)  # float16 in the file, under its DEQUANTIZE
    if op.op_type == "dequantizeLinear":
        form = _constant_form(ctx, op)
        if form is not None:
            return _dequantize_constant(ctx, op, *form, perm=tuple(perm))
    return None


def _dequantize_constant(ctx: ExportContext, op: Operation, axis: int, scale: np.ndarray,
                         zero: np.ndarray, ft: str, perm: tuple[int, ...] | None = None) -> int:
    """DEQUANTIZE of the input as an int8 constant quantized along `axis` (permuted by
    `perm` when given, its quantized axis moving with it)."""
    x = op.input("input")
    values = ctx.array(x)
    count = x.shape[axis]
    shape = x.shape
    name = f"{x.name}/quantized"
    if perm is not None:
        values, axis = values.transpose(perm), perm.index(axis)
        shape, name = tuple(x.shape[p] for p in perm), f"{x.name}/quantized/permuted"
    q = ctx.const(np.ascontiguousarray(values, np.int8), "int8", name=name)
    params = fb.QuantizationParametersT()
    params.scale = [float(s) for s in np.broadcast_to(
        np.asarray(scale, np.float32).reshape(-1), (count,))]
    params.zeroPoint = [int(z) for z in np.broadcast_to(np.asarray(zero).reshape(-1), (count,))]
    params.quantizedDimension = axis
    ctx.tensors[q].quantization = params
    return ctx.emit("DEQUANTIZE", [q], (ft, shape))


def _quantize_problem(op: Operation) -> str | None:
    out = op.input("zeroPoint").data_type
    if out in _UNPACKED:
        return f"{out} results: TFLite computes no 4-bit tensors"
    return None


@exports("quantizeLinear", types=("float32", "float16"), check=_quantize_problem)
def quantize_linear(ctx: ExportContext, op: Operation) -> list[int]:
    x, scale, zero = op.input("input"), op.input("scale"), op.input("zeroPoint")
    qt = zero.data_type
    quotient = ctx.div(ctx.value(x), _blockwise(ctx, ctx.value(scale), x.shape))
    if x.data_type == "float16":  # the quotient of a float16 division is a float16
        quotient = ctx.cast(ctx.cast(quotient, "float16"), "float32")
    rounded = ctx.unary("ROUND", quotient)  # halves to even
    rounded = ctx.maximum(ctx.minimum(rounded, ctx.number(_FLOAT_SAFE, rounded)),
                          ctx.number(-_FLOAT_SAFE, rounded))
    shifted = ctx.add(ctx.cast(rounded, "int64"),
                      _blockwise(ctx, ctx.cast(ctx.get(zero), "int64"), x.shape))
    lo, hi = _RANGES[qt]
    clamped = ctx.maximum(ctx.minimum(shifted, ctx.scalar(hi, "int64")), ctx.scalar(lo, "int64"))
    return [ctx.cast(clamped, qt)]
