"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR over the H and W axes of NHWC.

WebNN's resample2d maps output o to input c = clamp((o + 0.5) / scale - 0.5, 0, in - 1): the
half-pixel mapping. TFLite has it too (half_pixel_centers), and two more: the legacy one
(c = o * in / out) and align_corners (c = o * (in - 1) / (out - 1)). So each axis's taps are
computed as TFLite's kernel computes them, in float32; where resample2d picks the same taps
with the same weights it is used, else the axis is resampled exactly by gathering the taps
(and blending two of them with their weights, for bilinear).
"""
from __future__ import annotations

import numpy as np

from ....ir import Operand
from ..context import ImportContext
from ..model_file import Operator
from ..registry import Unsupported, tflite_op
from ._common import emit

_F = np.float32


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return _F(in_size - 1) / _F(out_size - 1)
    return _F(in_size) / _F(out_size)


def tflite_bilinear_taps(in_size: int, out_size: int, align_corners: bool):
    """(lower index, upper index, upper weight) per output position, as TFLite computes them
    for the legacy and align_corners mappings (half-pixel centers are resample2d's own), where
    the source coordinate o * scale is never negative."""
    scale = _scale(in_size, out_size, align_corners)
    v = np.arange(out_size, dtype=_F) * scale
    floor = np.floor(v)
    upper = np.minimum(np.ceil(v), in_size - 1).astype(np.int64)
    return floor.astype(np.int64), upper, (v - floor).astype(_F)


def tflite_nearest_taps(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    scale = _scale(in_size, out_size, align_corners)
    offset = _F(0.5) if half_pixel else _F(0)
    v = (np.arange(out_size, dtype=_F) + offset) * scale
    # TfLiteRound rounds halves away from zero; v >= 0 here, so floor(v + 0.5). (TFLite also
    # clamps half-pixel indices at 0, which v >= 0 never reaches.)
    index = np.floor(v + _F(0.5)) if align_corners else np.floor(v)
    return np.minimum(index.astype(np.int64), in_size - 1)


def webnn_nearest_taps(in_size: int, out_size: int) -> np.ndarray:
    """resample2d's nearest-neighbor index: ceil(c - 0.5) of the clamped half-pixel c."""
    scale = out_size / in_size
    c = np.clip((np.arange(out_size) + 0.5) / scale - 0.5, 0, in_size - 1)
    return np.ceil(c - 0.5).astype(np.int64)


def _sizes(ctx: ImportContext) -> list[int]:
    shape = ctx.shape(0)
    if len(shape) != 4:
        raise Unsupported(f"its input has rank {len(shape)}; it must be 4 (NHWC)")
    size = [int(s) for s in ctx.require_known(1, "size").reshape(-1)]
    if len(size) != 2 or min(size) < 1:
        raise Unsupported(f"its size {size} is not two positive numbers")
    ctx.claim([sum(size), 4], 8)  # the rules' float64 and int64 tables, a few per position
    return size


def _options(op: Operator) -> tuple[bool, bool]:
    o = op.options
    align, half = (bool(o.alignCorners), bool(o.halfPixelCenters)) if o is not None \
        else (False, False)
    if align and half:
        raise Unsupported("align_corners and half_pixel_centers are both set")
    return align, half


def _gather(ctx: ImportContext, x: Operand, index: np.ndarray, axis: int, what: str) -> Operand:
    indices = ctx.constant(index.astype(np.int32), "int32",
                           name=f"{ctx.out_tensor().name}/{what}")
    return emit(ctx, "gather", x, indices, axis=axis, suffix=what)


def _weights(ctx: ImportContext, w: np.ndarray, axis: int, data_type: str, what: str) -> Operand:
    shape = [1, 1, 1, 1]
    shape[axis] = w.size
    return ctx.constant(w.astype(np.dtype(data_type)).reshape(shape), data_type,
                        name=f"{ctx.out_tensor().name}/{what}")


@tflite_op("RESIZE_BILINEAR", webnn=("resample2d", "gather", "mul", "add"))
def resize_bilinear(ctx: ImportContext, op: Operator):
    size = _sizes(ctx)
    align, half = _options(op)
    x = ctx.real(0)
    if half and not align:
        return [emit(ctx, "resample2d", x, mode="linear", sizes=size, axes=[1, 2])]
    for axis, out in ((1, size[0]), (2, size[1])):
        lower, upper, frac = tflite_bilinear_taps(x.shape[axis], out, align)
        if out == x.shape[axis] and np.array_equal(lower, np.arange(out)) and not frac.any():
            continue  # this axis keeps its values
        low = _gather(ctx, x, lower, axis, f"lower{axis}")
        if not frac.any():
            x = low
            continue
        high = _gather(ctx, x, upper, axis, f"upper{axis}")
        dt = x.data_type
        x = emit(ctx, "add",
                 emit(ctx, "mul", low, _weights(ctx, 1 - frac, axis, dt, f"w_lower{axis}")),
                 emit(ctx, "mul", high, _weights(ctx, frac, axis, dt, f"w_upper{axis}")))
    return [x if x.kind == "intermediate" else emit(ctx, "identity", x)]


@tflite_op("RESIZE_NEAREST_NEIGHBOR", webnn=("resample2d", "gather"))
def resize_nearest(ctx: ImportContext, op: Operator):
    size = _sizes(ctx)
    align, half = _options(op)
    x = ctx.passthrough(0)  # picking values commutes with quantization
    taps = [tflite_nearest_taps(x.shape[1 + i], size[i], align, half) for i in range(2)]
    if all(np.array_equal(t, webnn_nearest_taps(x.shape[1 + i], size[i]))
           for i, t in enumerate(taps)):
        return [emit(ctx, "resample2d", x, mode="nearest-neighbor", sizes=size, axes=[1, 2])]
    # Some axis's taps differ from resample2d's, so from 0, 1, ... too: at least one gather.
    for i, index in enumerate(taps):
        if not np.array_equal(index, np.arange(x.shape[1 + i])):
            x = _gather(ctx, x, index, 1 + i, f"rows{1 + i}")
    return [x]
