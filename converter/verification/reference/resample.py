"""Reference kernel for resample2d (spec: resample2d, MLInterpolationMode).

Per resized axis: scale = outputSize / inputSize (the output size, from sizes or from
floor(inputSize * scales), not the scales option itself); output coordinate o maps to input
coordinate c = clamp((o + 0.5) / scale - 0.5, 0, inputSize - 1). Nearest-neighbor reads
ceil(c - 0.5) (halves go down); linear interpolates between floor(c) and ceil(c), one axis
after the other, as the spec's bilinear formula does.
"""
from __future__ import annotations

import numpy as np

from .core import kernel


def source_coordinates(in_size: int, out_size: int) -> np.ndarray:
    """The clamped input coordinate of every output position along one axis (float64)."""
    scale = out_size / in_size
    c = (np.arange(out_size, dtype=np.float64) + 0.5) / scale - 0.5
    return np.clip(c, 0, in_size - 1)


@kernel("resample2d")
def resample2d(op, ins, env):
    x = ins[0]
    linear = op.attr("mode") == "linear"
    integer = x.dtype.kind in "iu"
    if integer and linear:
        x = x.astype(np.float64)  # interpolated in float, rounded (half to even) at the end
    for axis in op.attr("axes"):
        in_size, out_size = x.shape[axis], op.output.shape[axis]
        c = source_coordinates(in_size, out_size)
        if not linear:
            x = np.take(x, np.ceil(c - 0.5).astype(np.int64), axis=axis)
            continue
        lo, hi = np.floor(c).astype(np.int64), np.ceil(c).astype(np.int64)
        shape = [1] * x.ndim
        shape[axis] = out_size
        t = (c - lo).astype(x.dtype).reshape(shape)
        x = np.take(x, lo, axis=axis) * (1 - t) + np.take(x, hi, axis=axis) * t
    return np.rint(x).astype(np.int64) if integer and linear else x
