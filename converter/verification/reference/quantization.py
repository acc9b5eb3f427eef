"""Reference kernels for quantizeLinear and dequantizeLinear.

scale and zeroPoint are blockwise broadcast to the input: each has input's rank, and a value
at index i covers input.shape[d] / scale.shape[d] consecutive elements along every dimension d.
"""
from __future__ import annotations

import numpy as np

from ... import dtypes
from .core import kernel, wide

# The integer range of each quantized type, for saturation.
_RANGES = {"int4": (-8, 7), "uint4": (0, 15)}


def blockwise(v: np.ndarray, shape) -> np.ndarray:
    """v repeated along each dimension until it has `shape` (blocks of shape / v.shape)."""
    for axis, (size, target) in enumerate(zip(v.shape, shape)):
        if size != target:
            v = np.repeat(v, target // size, axis=axis)
    return v


@kernel("dequantizeLinear")
def dequantize_linear(op, ins, env):
    """(input - zeroPoint) * scale."""
    x, scale, zero_point = ins
    diff = wide(x) - wide(blockwise(zero_point, x.shape))
    return diff.astype(scale.dtype) * blockwise(scale, x.shape)


@kernel("quantizeLinear")
def quantize_linear(op, ins, env):
    """saturate(roundEven(input / scale) + zeroPoint) into zeroPoint's type."""
    x, scale, zero_point = ins
    out_type = op.inputs[2].data_type
    if out_type in _RANGES:
        lo, hi = _RANGES[out_type]
    else:
        info = np.iinfo(dtypes.numpy_dtype(out_type))
        lo, hi = int(info.min), int(info.max)
    q = np.rint(x / blockwise(scale, x.shape)) + blockwise(zero_point, x.shape).astype(x.dtype)
    q = np.where(np.isnan(q), 0, q)  # NaN has no integer value; 0 as the cast table gives
    return np.clip(q, lo, hi).astype(np.int64)
