"""Lowerings of batchNormalization, instanceNormalization and layerNormalization.

All three are written out as the spec's formula,
    scale * (x - mean) / sqrt(variance + epsilon) + bias,
because the ONNX ops fix what WebNN leaves open (BatchNormalization wants the channel on axis 1
and both scale and bias; InstanceNormalization wants nchw; LayerNormalization wants trailing
axes), and because ONNX Runtime's BatchNormalization kernel computes another formula:
x * a + (bias - mean * a) with a = scale / sqrt(variance + epsilon), which cancels where x is
near the mean (40 ULP from the float64 value for a mean of 30, where the spec's order keeps
within its 6-ULP budget: x - mean is exact there). Mean and variance come from ReduceMean for
the instance and layer forms, with variance = mean((x - mean)^2) as in the spec's emulation.
For the executor (lower(..., exact=True), the runtime of every verdict) each is computed in a
wider type than its operands (_WIDE) and rounded back once. A model written for people to run
(`-o model.onnx`) keeps ONNX BatchNormalization where the channel is on axis 1 (ONNX Runtime
folds it into the Conv before it) and computes in the operands' type: float64 kernels are slow,
and many execution providers have none.
"""
from __future__ import annotations

import numpy as np

from ... import dtypes
from ...ir import Operation
from .context import LoweringContext, spec_cast
from .registry import lowers


# The type each is computed in: wider than the operands', cast back at the end. In float32 the
# mean of a row far from zero keeps a rounding error that x - mean turns into thousands of ULP
# of the result (a row of mean 300 and spread 0.5: 20,000 ULP); in float64 the result is the
# formula's value rounded once or twice. Float16 goes through float32, as ONNX Runtime
# computes its float16 normalizations.
_WIDE = {"float32": "float64", "float16": "float32"}


def _wide(ctx: LoweringContext, dt: str) -> str:
    """The type to compute in: wider for the executor (ctx.exact), the operands' own in a
    model written for people to run (float64 kernels are slow and many providers lack them)."""
    return _WIDE.get(dt, dt) if ctx.exact else dt


def _normalize(ctx: LoweringContext, x: str, mean: str, variance: str, epsilon: float,
               scale: str | None, bias: str | None, dt: str, wide: str | None = None) -> str:
    """The spec's formula on operands of `dt`, computed in `wide` (default: `dt`) and cast
    back to `dt`; epsilon as the spec casts it, to `dt`."""
    wide = wide or dt
    x, mean, variance, scale, bias = (None if v is None else ctx.cast(v, wide)
                                      for v in (x, mean, variance, scale, bias))
    eps = ctx.scalar(float(spec_cast(epsilon, dt)), wide)
    centered = ctx.typed("Sub", [x, mean], wide)
    std = ctx.typed("Sqrt", [ctx.typed("Add", [variance, eps], wide)], wide)
    y = ctx.typed("Div", [centered, std], wide)
    if scale:
        y = ctx.typed("Mul", [scale, y], wide)
    if bias:
        y = ctx.typed("Add", [y, bias], wide)
    return ctx.cast(y, dt, wide)


def _along(ctx: LoweringContext, value: str, rank: int, axis: int, size: int) -> str:
    """A 1-D tensor of `size` reshaped to broadcast along `axis` of a rank-`rank` tensor."""
    shape = [1] * rank
    shape[axis] = size
    return ctx.reshape(value, shape) if rank != 1 else value


@lowers("batchNormalization")
def batch_normalization(ctx: LoweringContext, op: Operation) -> list[str]:
    x = op.input("input")
    axis, rank, dt = int(op.attr("axis")), x.rank, x.data_type
    size = x.shape[axis]
    if axis == 1 and rank >= 2 and not ctx.exact:
        # For people to run: ONNX BatchNormalization, which ONNX Runtime folds into the Conv
        # before it (written out, it runs ~2x slower), within its kernel's rounding.
        def param(name: str, fill: float) -> str:
            operand = op.input(name)
            if operand is not None:
                return ctx.name_of(operand)
            return ctx.constant(np.full(size, fill, dtype=dtypes.numpy_dtype(dt)))

        return [ctx.node("BatchNormalization",
                         [ctx.name_of(x), param("scale", 1.0), param("bias", 0.0),
                          ctx.name_of(op.input("mean")), ctx.name_of(op.input("variance"))],
                         epsilon=float(op.attr("epsilon")))]

    def per_channel(name: str) -> str | None:
        operand = op.input(name)
        return _along(ctx, ctx.name_of(operand), rank, axis, size) if operand else None

    return [_normalize(ctx, ctx.name_of(x), per_channel("mean"), per_channel("variance"),
                       op.attr("epsilon"), per_channel("scale"), per_channel("bias"), dt,
                       _wide(ctx, dt))]


def _moments(ctx: LoweringContext, x: str, axes: list[int], dt: str) -> tuple[str, str]:
    mean = ctx.reduce("ReduceMean", x, axes, True, dt)
    centered = ctx.typed("Sub", [x, mean], dt)
    variance = ctx.reduce("ReduceMean", ctx.typed("Mul", [centered, centered], dt), axes, True,
                          dt)
    return mean, variance


@lowers("instanceNormalization")
def instance_normalization(ctx: LoweringContext, op: Operation) -> list[str]:
    x = op.input("input")
    dt = x.data_type
    nhwc = op.attr("layout") == "nhwc"
    channel, spatial = (3, [1, 2]) if nhwc else (1, [2, 3])
    wide = _wide(ctx, dt)
    xv = ctx.cast(ctx.name_of(x), wide, dt)
    mean, variance = _moments(ctx, xv, spatial, wide)
    size = x.shape[channel]

    def per_channel(name: str) -> str | None:
        operand = op.input(name)
        return _along(ctx, ctx.name_of(operand), 4, channel, size) if operand else None

    return [_normalize(ctx, xv, mean, variance, op.attr("epsilon"), per_channel("scale"),
                       per_channel("bias"), dt, wide)]


@lowers("layerNormalization")
def layer_normalization(ctx: LoweringContext, op: Operation) -> list[str]:
    x = op.input("input")
    dt, rank = x.data_type, x.rank
    axes = op.attr("axes")
    axes = list(range(1, rank)) if axes is None else [int(a) for a in axes]
    wide = _wide(ctx, dt)
    xv = ctx.cast(ctx.name_of(x), wide, dt)
    if axes:
        mean, variance = _moments(ctx, xv, axes, wide)
    else:
        # Nothing reduced: each element is its own mean, with variance 0.
        mean, variance = xv, ctx.scalar(0, wide)

    def along_axes(name: str) -> str | None:
        # scale/bias have shape [input.shape[a] for a in axes], in the order of `axes`: permute
        # their dimensions into increasing axis order, then reshape to broadcast over input.
        operand = op.input(name)
        if operand is None:
            return None
        value = ctx.name_of(operand)
        order = sorted(range(len(axes)), key=lambda i: axes[i])
        value = ctx.transpose(value, order)
        shape = [x.shape[a] if a in axes else 1 for a in range(rank)]
        return ctx.reshape(value, shape) if list(operand.shape) != shape else value

    return [_normalize(ctx, xv, mean, variance, op.attr("epsilon"), along_axes("scale"),
                       along_axes("bias"), dt, wide)]
