"""Decompositions of the activations and other element-wise ops.

Each follows the spec's emulation code for the op (index.bs), constants cast to the input's
data type as the spec's option casting does.
"""
from __future__ import annotations

import math

from ..ir import Operand, Operation
from ..ops.activation import cast_number
from .decompositions import Emitter, decomposition


@decomposition("gelu")
def gelu(e: Emitter, op: Operation) -> Operand:
    """0.5 * x * (1 + erf(x / sqrt(2))). sqrt(2) is taken at conversion time: the square root
    is correctly rounded either way."""
    x = op.input("input")
    dt = x.data_type
    return e.mul(e.mul(x, e.scalar(0.5, dt)),
                 e.add(e.scalar(1, dt), e.erf(e.div(x, e.scalar(math.sqrt(2), dt)))))


@decomposition("hardSwish")
def hard_swish(e: Emitter, op: Operation) -> Operand:
    """x * max(0, min(6, x + 3)) / 6."""
    x = op.input("input")
    dt = x.data_type
    gate = e.max(e.scalar(0, dt), e.min(e.scalar(6, dt), e.add(x, e.scalar(3, dt))))
    return e.div(e.mul(x, gate), e.scalar(6, dt))


@decomposition("hardSigmoid")
def hard_sigmoid(e: Emitter, op: Operation) -> Operand:
    """max(min(alpha * x + beta, 1), 0)."""
    x = op.input("input")
    dt = x.data_type
    linear = e.add(e.mul(e.scalar(op.attr("alpha"), dt), x), e.scalar(op.attr("beta"), dt))
    return e.max(e.min(linear, e.scalar(1, dt)), e.scalar(0, dt))


@decomposition("linear")
def linear(e: Emitter, op: Operation) -> Operand:
    """alpha * x + beta."""
    x = op.input("input")
    dt = x.data_type
    return e.add(e.mul(x, e.scalar(op.attr("alpha"), dt)), e.scalar(op.attr("beta"), dt))


@decomposition("softplus")
def softplus(e: Emitter, op: Operation) -> Operand:
    """log(exp(x) + 1)."""
    x = op.input("input")
    return e.log(e.add(e.exp(x), e.scalar(1, x.data_type)))


@decomposition("softsign")
def softsign(e: Emitter, op: Operation) -> Operand:
    """x / (1 + |x|)."""
    x = op.input("input")
    return e.div(x, e.add(e.scalar(1, x.data_type), e.abs(x)))


@decomposition("elu")
def elu(e: Emitter, op: Operation) -> Operand:
    """max(0, x) + alpha * (exp(min(0, x)) - 1)."""
    x = op.input("input")
    dt = x.data_type
    negative = e.sub(e.exp(e.min(e.scalar(0, dt), x)), e.scalar(1, dt))
    return e.add(e.max(e.scalar(0, dt), x), e.mul(e.scalar(op.attr("alpha"), dt), negative))


@decomposition("leakyRelu")
def leaky_relu(e: Emitter, op: Operation) -> Operand:
    """max(0, x) + alpha * min(0, x)."""
    x = op.input("input")
    dt = x.data_type
    return e.add(e.max(e.scalar(0, dt), x),
                 e.mul(e.scalar(op.attr("alpha"), dt), e.min(e.scalar(0, dt), x)))


@decomposition("prelu")
def prelu(e: Emitter, op: Operation) -> Operand:
    """max(0, x) + slope * min(0, x), broadcast bidirectionally."""
    x, slope = op.input("input"), op.input("slope")
    zero = e.scalar(0, x.data_type)
    return e.add(e.max(zero, x), e.mul(slope, e.min(zero, x)))


@decomposition("sigmoid")
def sigmoid(e: Emitter, op: Operation) -> Operand:
    """1 / (exp(-x) + 1)."""
    x = op.input("input")
    dt = x.data_type
    return e.div(e.scalar(1, dt), e.add(e.exp(e.neg(x)), e.scalar(1, dt)))


@decomposition("clamp")
def clamp(e: Emitter, op: Operation) -> Operand:
    """min(max(x, minValue), maxValue), each bound only when given, cast to the input's type
    as the spec casts an MLNumber (an integer bound rounds half to even and saturates: 1.5 is
    2, -Infinity the type's lowest value)."""
    x = op.input("input")
    dt = x.data_type
    low, high = op.attrs.get("minValue"), op.attrs.get("maxValue")
    y = x
    if low is not None:
        y = e.max(y, e.scalar(cast_number(low, dt), dt))
    if high is not None:
        y = e.min(y, e.scalar(cast_number(high, dt), dt))
    return y if y is not x else e.identity(x)


@decomposition("sign")
def sign(e: Emitter, op: Operation) -> Operand:
    """where(x > 0, 1, where(x < 0, -1, 0))."""
    x = op.input("input")
    dt = x.data_type
    zero = e.scalar(0, dt)
    return e.where(e.greater(x, zero), e.scalar(1, dt),
                   e.where(e.lesser(x, zero), e.scalar(-1, dt), zero))


@decomposition("softmax")
def softmax(e: Emitter, op: Operation) -> Operand:
    """exp(x - max) / sum(exp(x - max)) along `axis` (the max keeps exp from overflowing)."""
    x = op.input("input")
    axes = [int(op.attr("axis"))]
    shifted = e.exp(e.sub(x, e.reduceMax(x, axes=axes, keepDimensions=True)))
    return e.div(shifted, e.reduceSum(shifted, axes=axes, keepDimensions=True))
