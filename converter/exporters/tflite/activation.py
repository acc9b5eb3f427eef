"""Export of the activation ops: clamp, elu, gelu, hardSigmoid, hardSwish, leakyRelu, linear,
prelu, relu, sigmoid, softmax, softplus, softsign, tanh.

Where TFLite has the spec's function it is used (RELU, ELU, GELU, HARD_SWISH, LEAKY_RELU,
PRELU, LOGISTIC, SOFTMAX, TANH); the rest are written out from the spec's expressions.
Fused activations do not exist in WebNN, so none is fused here either.
"""
from __future__ import annotations

import math

from ...ir import Operation
from ...lowering.onnx.context import spec_cast
from ...ops.registry import unidirectionally_broadcastable
from .context import ExportContext, compute_type
from .registry import FLOATS, exports
from .schema import options

_INTS = ("int32", "int64", "int8", "uint8")


def param(op: Operation, name: str, *, cast: bool = False) -> float:
    """A float option's value. With `cast` (linear's alpha and beta, as clamp's bounds) it is
    first cast to the input's data type the way the spec casts an MLNumber, so a float16
    op's alpha is the float16 nearest to it; the other options are float32 in the
    computation, as ONNX Runtime's kernels take them."""
    value = float(op.attr(name))
    return float(spec_cast(value, op.inputs[0].data_type)) if cast else value
_SAME = {"sigmoid": "LOGISTIC", "tanh": "TANH", "hardSwish": "HARD_SWISH"}


@exports(*_SAME, types=FLOATS, pointwise=True)
def _same_function(ctx: ExportContext, op: Operation) -> list[int]:
    # HARD_SWISH is x * relu6(x + 3) / 6, the spec's order of operations.
    return [ctx.unary(_SAME[op.op_type], ctx.value(op.inputs[0]))]


@exports("relu", types=FLOATS + ("int32", "int64", "int8"), pointwise=True)
def _relu(ctx: ExportContext, op: Operation) -> list[int]:
    x = ctx.value(op.inputs[0])
    if ctx.desc(x).data_type == "float32":
        return [ctx.unary("RELU", x)]
    # TFLite's integer RELU is the quantized one; max(x, 0) is exact for every integer type.
    return [ctx.maximum(x, ctx.number(0, x))]


@exports("clamp", types=FLOATS + _INTS + ("uint32",), pointwise=True)
def _clamp(ctx: ExportContext, op: Operation) -> list[int]:
    operand = op.inputs[0]
    dt = operand.data_type
    ct = compute_type(dt)
    if dt == "uint32":
        ct = "int64"  # MINIMUM/MAXIMUM have no uint32 kernel; int64 holds every uint32
    x = ctx.read(operand, ct)
    lo, hi = op.attr("minValue"), op.attr("maxValue")
    # The bounds are cast to the input's type the way the spec casts an MLNumber.
    lo = None if lo is None else spec_cast(lo, dt).item()
    hi = None if hi is None else spec_cast(hi, dt).item()
    if any(b is not None and math.isnan(b) for b in (lo, hi)):
        # A NaN bound makes every element NaN (max and min give NaN with a NaN side), where
        # LiteRT's MAXIMUM and MINIMUM keep x: x + NaN is NaN for every x.
        return [ctx.cast(ctx.add(x, ctx.number(math.nan, x)), compute_type(dt))]
    if ct == "float32":
        fused = {(0.0, 6.0): "RELU6", (-1.0, 1.0): "RELU_N1_TO_1", (0.0, None): "RELU"}
        code = fused.get((lo, hi))
        if code is not None:
            return [ctx.unary(code, x)]
    if lo is not None:
        x = ctx.maximum(x, ctx.number(lo, x))
    if hi is not None:
        x = ctx.minimum(x, ctx.number(hi, x))
    return [ctx.cast(x, compute_type(dt))]


@exports("elu", types=FLOATS, max_rank=5, pointwise=True)
def _elu(ctx: ExportContext, op: Operation) -> list[int]:
    x = ctx.value(op.inputs[0])
    elu = ctx.unary("ELU", x)  # x where x > 0, exp(x) - 1 elsewhere
    alpha = param(op, "alpha")
    if alpha == 1.0:
        return [elu]
    positive = ctx.binary("GREATER", x, ctx.number(0, x), "bool")
    return [ctx.select(positive, x, ctx.mul(elu, ctx.number(alpha, x)))]


@exports("gelu", types=FLOATS, pointwise=True)
def _gelu(ctx: ExportContext, op: Operation) -> list[int]:
    # approximate=False is the spec's 0.5 * x * (1 + erf(x / sqrt(2))).
    return [ctx.unary("GELU", ctx.value(op.inputs[0]),
                      opts=options("GeluOptions", approximate=False))]


@exports("hardSigmoid", types=FLOATS, max_rank=6, pointwise=True)
def _hard_sigmoid(ctx: ExportContext, op: Operation) -> list[int]:
    # max(0, min(1, alpha * x + beta))
    x = ctx.value(op.inputs[0])
    y = ctx.add(ctx.mul(x, ctx.number(param(op, "alpha"), x)), ctx.number(param(op, "beta"), x))
    return [ctx.maximum(ctx.minimum(y, ctx.number(1, x)), ctx.number(0, x))]


@exports("leakyRelu", types=FLOATS, pointwise=True)
def _leaky_relu(ctx: ExportContext, op: Operation) -> list[int]:
    return [ctx.unary("LEAKY_RELU", ctx.value(op.inputs[0]),
                      opts=options("LeakyReluOptions", alpha=param(op, "alpha")))]


@exports("linear", types=FLOATS, max_rank=6, pointwise=True)
def _linear(ctx: ExportContext, op: Operation) -> list[int]:
    # alpha * x + beta
    x = ctx.value(op.inputs[0])
    scaled = ctx.mul(ctx.number(param(op, "alpha", cast=True), x), x)
    return [ctx.add(scaled, ctx.number(param(op, "beta", cast=True), x))]


@exports("prelu", types=FLOATS + ("int32", "int64", "int8"), max_rank=5)
def _prelu(ctx: ExportContext, op: Operation) -> list[int]:
    operand, slope_operand = op.inputs[0], op.inputs[1]
    x, slope = ctx.value(operand), ctx.value(slope_operand)
    if (ctx.desc(x).data_type == "float32" and operand.rank <= 4
            and unidirectionally_broadcastable(slope_operand.shape, operand.shape)):
        return [ctx.emit("PRELU", [x, slope], (ctx.desc(x).data_type, op.output.shape))]
    # x where x >= 0, slope * x elsewhere (integers, or a slope that widens the shape)
    dt = ctx.desc(x).data_type
    wide = "int32" if dt == "int8" else dt  # MUL's int8 kernel is the quantized one
    xw, sw = ctx.cast(x, wide), ctx.cast(slope, wide)
    negative = ctx.binary("LESS", xw, ctx.number(0, xw), "bool")
    return [ctx.cast(ctx.select(negative, ctx.mul(sw, xw), xw), dt)]


@exports("softmax", types=FLOATS, max_rank=6)
def _softmax(ctx: ExportContext, op: Operation) -> list[int]:
    # SOFTMAX works on the last axis: any other axis is moved there and back.
    operand = op.inputs[0]
    axis, rank = int(op.attr("axis")), operand.rank
    x = ctx.value(operand)
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    x = ctx.transpose(x, perm)
    y = ctx.unary("SOFTMAX", x, opts=options("SoftmaxOptions", beta=1.0))
    return [ctx.transpose(y, perm)]  # a swap is its own inverse


# softplus: log(1 + exp(x)) = max(x, 0) + log1p(e) with e = exp(-|x|) in (0, 1], which never
# overflows. TFLite has no LOG1P, and log(1 + e) loses e's digits when e is small, so below
# 0.25 the series e - e^2/2 + e^3/3 ... runs (13 terms: relative error near 1e-9); above,
# log(1 + e) > 0.22 and the rounding of 1 + e and LOG's absolute error stay small against it.
_SOFTPLUS_SERIES_BELOW = 0.25
_SOFTPLUS_TERMS = 13


@exports("softplus", types=FLOATS, max_rank=6, pointwise=True)
def _softplus(ctx: ExportContext, op: Operation) -> list[int]:
    x = ctx.value(op.inputs[0])
    e = ctx.unary("EXP", ctx.unary("NEG", ctx.unary("ABS", x)))
    series = ctx.number((-1) ** (_SOFTPLUS_TERMS + 1) / _SOFTPLUS_TERMS, x)
    for n in range(_SOFTPLUS_TERMS - 1, 0, -1):  # e * (1 - e/2 + e^2/3 ...) by Horner
        series = ctx.add(ctx.mul(series, e), ctx.number((-1) ** (n + 1) / n, x))
    series = ctx.mul(series, e)
    logarithm = ctx.unary("LOG", ctx.add(ctx.number(1, x), e))
    small = ctx.binary("LESS", e, ctx.number(_SOFTPLUS_SERIES_BELOW, x), "bool")
    return [ctx.add(ctx.maximum(x, ctx.number(0, x)), ctx.select(small, series, logarithm))]


@exports("softsign", types=FLOATS, max_rank=6, pointwise=True)
def _softsign(ctx: ExportContext, op: Operation) -> list[int]:
    # x / (1 + |x|)
    x = ctx.value(op.inputs[0])
    return [ctx.div(x, ctx.add(ctx.number(1, x), ctx.unary("ABS", x)))]
