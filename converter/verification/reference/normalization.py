"""Reference kernels for batchNormalization, instanceNormalization and layerNormalization.

Each is (x - mean) / sqrt(variance + epsilon) * scale + bias; they differ in where mean and
variance come from: given per feature along `axis` (batch), computed per sample and channel
over the spatial dimensions (instance), or computed per sample over `axes` (layer). The
variance computed here is the population variance, mean((x - mean)^2).
"""
from __future__ import annotations

import numpy as np

from .core import kernel


def _along(v: np.ndarray, axis: int, rank: int) -> np.ndarray:
    """A 1-D per-feature tensor shaped to broadcast along `axis` of a rank-`rank` tensor."""
    shape = [1] * rank
    shape[axis] = v.shape[0]
    return v.reshape(shape)


def _epsilon(op, env):
    return env.number(op.attr("epsilon"), op.inputs[0].data_type)


@kernel("batchNormalization")
def batch_normalization(op, ins, env):
    x, mean, variance, scale, bias = ins
    axis = op.attr("axis")
    out = (x - _along(mean, axis, x.ndim)) / np.sqrt(_along(variance, axis, x.ndim)
                                                     + _epsilon(op, env))
    if scale is not None:
        out = out * _along(scale, axis, x.ndim)
    if bias is not None:
        out = out + _along(bias, axis, x.ndim)
    return out


def _normalize(x, axes, epsilon):
    mean = np.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    variance = np.mean(centered * centered, axis=axes, keepdims=True)
    return centered / np.sqrt(variance + epsilon)


@kernel("instanceNormalization")
def instance_normalization(op, ins, env):
    x, scale, bias = ins
    nchw = op.attr("layout") == "nchw"
    channel = 1 if nchw else 3
    out = _normalize(x, (2, 3) if nchw else (1, 2), _epsilon(op, env))
    if scale is not None:
        out = out * _along(scale, channel, 4)
    if bias is not None:
        out = out + _along(bias, channel, 4)
    return out


@kernel("layerNormalization")
def layer_normalization(op, ins, env):
    """Normalized over `axes` (default: every dimension but the first); scale and bias have
    one dimension per axis, in axes order, and broadcast to the input at those axes."""
    x, scale, bias = ins
    axes = op.attr("axes")
    axes = list(range(1, x.ndim)) if axes is None else list(axes)
    out = _normalize(x, tuple(axes), _epsilon(op, env))

    def placed(v):
        # Reorder v's dimensions to ascending axis order, then insert the missing axes as 1.
        order = sorted(range(len(axes)), key=lambda i: axes[i])
        v = v.transpose(order) if order else v
        shape = [1] * x.ndim
        for a in axes:
            shape[a] = x.shape[a]
        return v.reshape(shape)

    if scale is not None:
        out = out * placed(scale)
    if bias is not None:
        out = out + placed(bias)
    return out
