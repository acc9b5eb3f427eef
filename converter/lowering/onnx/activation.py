"""Lowerings of the activation ops: clamp, elu, gelu, hardSigmoid, hardSwish, leakyRelu, linear,
prelu, relu, sigmoid, softmax, softplus, softsign, tanh.

Where ONNX has the same function it is used directly; float32 sigmoid, hardSwish, linear and
(for integers or
bidirectional broadcasting) prelu are written out from the spec's own expressions, so the
rounding happens in the spec's order.
"""
from __future__ import annotations

import math

from ...ir import Operation
from ...ops.registry import unidirectionally_broadcastable
from .context import LoweringContext, spec_cast
from .registry import lowers

# ONNX ops with the spec's exact function and attribute names.
_SAME = {"tanh": "Tanh", "softplus": "Softplus", "softsign": "Softsign"}


@lowers(*_SAME)
def same_function(ctx: LoweringContext, op: Operation) -> list[str]:
    x = op.inputs[0]
    return [ctx.typed(_SAME[op.op_type], [ctx.name_of(x)], x.data_type)]


@lowers("sigmoid")
def sigmoid(ctx: LoweringContext, op: Operation) -> list[str]:
    x = op.inputs[0]
    dt = x.data_type
    if dt != "float32":
        return [ctx.typed("Sigmoid", [ctx.name_of(x)], dt)]
    # The spec's 1 / (1 + exp(-x)), written out: ONNX Runtime's float32 Sigmoid kernel (MLAS's
    # logistic approximation) is up to 91 ULP from it near x = -5.3, past the 34-ULP budget.
    e = ctx.typed("Exp", [ctx.typed("Neg", [ctx.name_of(x)], dt)], dt)
    return [ctx.typed("Reciprocal", [ctx.typed("Add", [ctx.scalar(1, dt), e], dt)], dt)]


@lowers("relu")
def relu(ctx: LoweringContext, op: Operation) -> list[str]:
    x = op.inputs[0]
    if ctx.supports("Relu", x.data_type):
        return [ctx.node("Relu", [ctx.name_of(x)], dtype=x.data_type)]
    # relu(x) = max(x, 0): int64 has no Relu kernel, and Max is exact for every type.
    zero = ctx.scalar(0, x.data_type)
    return [ctx.typed("Max", [ctx.name_of(x), zero], x.data_type)]


@lowers("clamp")
def clamp(ctx: LoweringContext, op: Operation) -> list[str]:
    x = op.inputs[0]
    dt = x.data_type
    lo, hi = op.attr("minValue"), op.attr("maxValue")
    if lo is None and hi is None:
        return [ctx.node("Identity", [ctx.name_of(x)], dtype=dt)]
    if dt not in ("float32", "float16"):
        # Integers: the bounds cast to the type's range (+-Infinity to its ends, NaN to 0) and
        # ONNX's empty Clip bound is the type's end, so Clip is the spec's clamp exactly.
        lo_v = ctx.scalar(spec_cast(lo, dt), dt) if lo is not None else ""
        hi_v = ctx.scalar(spec_cast(hi, dt), dt) if hi is not None else ""
        return [ctx.typed("Clip", [ctx.name_of(x), lo_v, hi_v], dt)]
    # Floats: the spec's min(max(x, minValue), maxValue), bound by bound. ONNX Clip would
    # differ twice: an empty bound is the largest finite float (an infinite input came out as
    # +-3.4e38, not unclamped), and ORT's Clip ignores a NaN bound where max and min give NaN.
    v = ctx.name_of(x)
    if lo is not None:
        v = ctx.typed("Max", [v, ctx.scalar(spec_cast(lo, dt), dt)], dt)
    if hi is not None:
        v = ctx.typed("Min", [v, ctx.scalar(spec_cast(hi, dt), dt)], dt)
    return [v]


@lowers("elu")
def elu(ctx: LoweringContext, op: Operation) -> list[str]:
    x = op.inputs[0]
    return [ctx.typed("Elu", [ctx.name_of(x)], x.data_type, alpha=float(op.attr("alpha")))]


@lowers("hardSigmoid")
def hard_sigmoid(ctx: LoweringContext, op: Operation) -> list[str]:
    x = op.inputs[0]
    # alpha and beta are cast to the input's type first, as the spec casts an MLNumber
    # (float16: 0.3 is 0.2998): ONNX's float attributes would keep them in float32.
    return [ctx.typed("HardSigmoid", [ctx.name_of(x)], x.data_type,
                      alpha=float(spec_cast(op.attr("alpha"), x.data_type)),
                      beta=float(spec_cast(op.attr("beta"), x.data_type)))]


@lowers("leakyRelu")
def leaky_relu(ctx: LoweringContext, op: Operation) -> list[str]:
    x = op.inputs[0]
    return [ctx.typed("LeakyRelu", [ctx.name_of(x)], x.data_type, alpha=float(op.attr("alpha")))]


@lowers("gelu")
def gelu(ctx: LoweringContext, op: Operation) -> list[str]:
    x = op.inputs[0]
    if ctx.opset >= 20:  # ONNX Gelu's default (approximate="none") is the spec's erf form
        return [ctx.typed("Gelu", [ctx.name_of(x)], x.data_type)]
    dt = x.data_type
    v = ctx.name_of(x)
    scaled = ctx.typed("Div", [v, ctx.scalar(math.sqrt(2.0), dt)], dt)
    one_plus = ctx.typed("Add", [ctx.scalar(1, dt), ctx.typed("Erf", [scaled], dt)], dt)
    half_x = ctx.typed("Mul", [v, ctx.scalar(0.5, dt)], dt)
    return [ctx.typed("Mul", [half_x, one_plus], dt)]


@lowers("hardSwish")
def hard_swish(ctx: LoweringContext, op: Operation) -> list[str]:
    # x * max(0, min(6, x + 3)) / 6, in the spec's order (ONNX HardSwish divides first).
    x = op.inputs[0]
    dt, v = x.data_type, ctx.name_of(x)
    shifted = ctx.typed("Add", [v, ctx.scalar(3, dt)], dt)
    clipped = ctx.typed("Clip", [shifted, ctx.scalar(0, dt), ctx.scalar(6, dt)], dt)
    return [ctx.typed("Div", [ctx.typed("Mul", [v, clipped], dt), ctx.scalar(6, dt)], dt)]


@lowers("linear")
def linear(ctx: LoweringContext, op: Operation) -> list[str]:
    # alpha * x + beta
    x = op.inputs[0]
    dt = x.data_type
    alpha = ctx.scalar(spec_cast(op.attr("alpha"), dt), dt)
    beta = ctx.scalar(spec_cast(op.attr("beta"), dt), dt)
    return [ctx.typed("Add", [ctx.typed("Mul", [alpha, ctx.name_of(x)], dt), beta], dt)]


@lowers("prelu")
def prelu(ctx: LoweringContext, op: Operation) -> list[str]:
    x, slope = op.inputs[0], op.inputs[1]
    dt = x.data_type
    out_shape = op.output.shape
    if (ctx.supports("PRelu", dt) and dt in ("float32", "float16") and tuple(x.shape) == out_shape
            and unidirectionally_broadcastable(slope.shape, x.shape)):
        return [ctx.node("PRelu", [ctx.name_of(x), ctx.name_of(slope)], dtype=dt)]
    # max(0, x) + slope * min(0, x): integers, or a slope that widens the result's shape.
    zero = ctx.scalar(0, dt)
    v = ctx.name_of(x)
    pos = ctx.typed("Max", [v, zero], dt)
    neg = ctx.typed("Mul", [ctx.name_of(slope), ctx.typed("Min", [v, zero], dt)], dt,
                    widen="modular")
    return [ctx.typed("Add", [pos, neg], dt, widen="modular")]


@lowers("softmax")
def softmax(ctx: LoweringContext, op: Operation) -> list[str]:
    x = op.inputs[0]
    return [ctx.typed("Softmax", [ctx.name_of(x)], x.data_type, axis=int(op.attr("axis")))]
