"""Reference kernels for averagePool2d, l2Pool2d and maxPool2d.

A window slides over the two spatial axes; only elements inside the input count: padding (and,
with ceil rounding or outputSizes, window positions past the padded input) is excluded from
the average's count, adds nothing to the l2 sum, and never wins the max.
"""
from __future__ import annotations

import numpy as np

from ...errors import UnsupportedError
from .conv import from_nchw, pad_hw, to_nchw, window_views
from .core import kernel


def _windows(op, x):
    """The strided views of x (nchw, padded) for each window offset, plus for each a mask of
    which output positions read a real input element there. Returns (views, masks, nchw)."""
    layout = op.attr("layout")
    x = to_nchw(x, layout)
    _, _, h, w = x.shape
    window = op.attr("windowDimensions") or [h, w]
    strides, dilations = op.attr("strides"), op.attr("dilations")
    top, bottom, left, right = op.attr("padding")
    out_shape = op.output.shape
    oh, ow = (out_shape[2], out_shape[3]) if layout == "nchw" else (out_shape[1], out_shape[2])
    # Windows of the last output row/column may run past the padded input (ceil rounding).
    need_h = (oh - 1) * strides[0] + (window[0] - 1) * dilations[0] + 1
    need_w = (ow - 1) * strides[1] + (window[1] - 1) * dilations[1] + 1
    extra = (max(0, need_h - (top + h + bottom)), max(0, need_w - (left + w + right)))
    inside = pad_hw(np.ones((1, 1, h, w), dtype=bool), (top, bottom, left, right), extra, False)
    xp = pad_hw(x, (top, bottom, left, right), extra, 0)
    args = (window, (oh, ow), strides, dilations)
    masks = window_views(inside, *args)
    empty = ~np.logical_or.reduce(masks)[0, 0]
    if empty.any():
        # Ceil rounding or outputSizes can start a window past the input's end; the spec
        # gives such a window no value (an average of nothing), so none is made up here.
        r, c = (int(i) for i in np.argwhere(empty)[0])
        raise UnsupportedError(
            [f"{op.op_type} '{op.name}': output window ({r}, {c}) holds no input element, and "
             f"the spec defines no value for an empty window"], where="reference",
            fix="use floor rounding, or padding/strides that keep every window on the input")
    return window_views(xp, *args), masks, layout


@kernel("averagePool2d")
def average_pool2d(op, ins, env):
    views, masks, layout = _windows(op, ins[0])
    total = sum(np.where(m, v, 0) for v, m in zip(views, masks))
    count = sum(m.astype(np.int64) for m in masks)
    return from_nchw(total / count, layout)


@kernel("l2Pool2d")
def l2_pool2d(op, ins, env):
    views, masks, layout = _windows(op, ins[0])
    total = sum(np.where(m, v * v, 0) for v, m in zip(views, masks))
    return from_nchw(np.sqrt(total), layout)


@kernel("maxPool2d")
def max_pool2d(op, ins, env):
    views, masks, layout = _windows(op, ins[0])
    best = None
    for v, m in zip(views, masks):
        if best is None:
            best, seen = v.copy(), np.broadcast_to(m, v.shape).copy()
            continue
        take = m & (~seen | (v > best))
        best = np.where(take, v, best)
        seen = seen | m
    return from_nchw(best, layout)
