"""Reference kernels for the activations: clamp, elu, gelu, hardSigmoid, hardSwish, leakyRelu,
linear, prelu, relu, sigmoid, softmax, softplus, softsign, tanh.

Each follows the spec's formula for the op. Scalar options (alpha, beta, minValue, maxValue) are
cast to the input's data type first, as the spec casts them, so a float32 graph's alpha 0.3 is
float32(0.3) here too.
"""
from __future__ import annotations

import math

import numpy as np

from .core import kernel, wide
from .elementwise import erf


def _opt(op, name, env):
    """A scalar option cast to the input's data type."""
    return env.number(op.attr(name), op.inputs[0].data_type)


@kernel("clamp")
def clamp(op, ins, env):
    """min(max(x, minValue), maxValue); an absent bound does not clamp."""
    x = ins[0]
    if op.attrs.get("minValue") is not None:
        x = np.maximum(x, np.asarray(_opt(op, "minValue", env), dtype=x.dtype))
    if op.attrs.get("maxValue") is not None:
        x = np.minimum(x, np.asarray(_opt(op, "maxValue", env), dtype=x.dtype))
    return x


@kernel("elu")
def elu(op, ins, env):
    """x if x > 0, else alpha * (exp(x) - 1)."""
    x, alpha = ins[0], _opt(op, "alpha", env)
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


@kernel("gelu")
def gelu(op, ins, env):
    """0.5 * x * (1 + erf(x / sqrt(2)))."""
    x = ins[0]
    return 0.5 * x * (1 + erf(x / x.dtype.type(math.sqrt(2))))


@kernel("hardSigmoid")
def hard_sigmoid(op, ins, env):
    """max(0, min(1, alpha * x + beta))."""
    x = ins[0]
    return np.clip(_opt(op, "alpha", env) * x + _opt(op, "beta", env), 0, 1)


@kernel("hardSwish")
def hard_swish(op, ins, env):
    """x * max(0, min(6, x + 3)) / 6."""
    x = ins[0]
    return x * np.clip(x + 3, 0, 6) / 6


@kernel("leakyRelu")
def leaky_relu(op, ins, env):
    """x if x >= 0, else alpha * x."""
    x = ins[0]
    return np.where(x >= 0, x, _opt(op, "alpha", env) * x)


@kernel("linear")
def linear(op, ins, env):
    """alpha * x + beta."""
    return _opt(op, "alpha", env) * ins[0] + _opt(op, "beta", env)


@kernel("prelu")
def prelu(op, ins, env):
    """x if x >= 0, else slope * x, with slope broadcast against x."""
    x, slope = wide(ins[0]), wide(ins[1])
    return np.where(x >= 0, x, slope * x)


@kernel("relu")
def relu(op, ins, env):
    """max(0, x)."""
    return np.maximum(ins[0], 0)


@kernel("sigmoid")
def sigmoid(op, ins, env):
    """1 / (1 + exp(-x))."""
    return 1 / (1 + np.exp(-ins[0]))


@kernel("softmax")
def softmax(op, ins, env):
    """exp(x - max) / sum(exp(x - max)) along axis (the shift cancels; it avoids overflow)."""
    x, axis = ins[0], op.attr("axis")
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@kernel("softplus")
def softplus(op, ins, env):
    """ln(1 + exp(x)), computed as logaddexp(0, x), which is the same function without the
    overflow of exp for large x."""
    return np.logaddexp(0, ins[0])


@kernel("softsign")
def softsign(op, ins, env):
    """x / (1 + |x|)."""
    x = ins[0]
    return x / (1 + np.abs(x))


@kernel("tanh")
def tanh(op, ins, env):
    return np.tanh(ins[0])
