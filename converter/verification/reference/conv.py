"""Reference kernels for conv2d and convTranspose2d (spec: conv2d, convTranspose2d).

Both work in nchw with the filter as [out, in, h, w] per group; other layouts are transposed in
and out. conv2d is im2col: each kernel offset's strided view of the padded input becomes one
column block, and one matrix product per group does the sums. convTranspose2d scatters: each
kernel offset adds input x filter tap into the strided output positions it reaches.
"""
from __future__ import annotations

import numpy as np

from .core import kernel

# Where (out, in, height, width) sit in each filter layout. conv2d's "in" holds
# inputChannels / groups; convTranspose2d's "out" holds outputChannels / groups.
FILTER_AXES = {
    "oihw": (0, 1, 2, 3), "hwio": (3, 2, 0, 1), "ohwi": (0, 3, 1, 2), "ihwo": (3, 0, 1, 2),
    "iohw": (1, 0, 2, 3), "hwoi": (2, 3, 0, 1),
}


def to_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    return x if layout == "nchw" else x.transpose(0, 3, 1, 2)


def from_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    return x if layout == "nchw" else x.transpose(0, 2, 3, 1)


def filter_oihw(w: np.ndarray, layout: str) -> np.ndarray:
    """The filter as [out, in, h, w] (for convTranspose2d: [out/groups, in, h, w])."""
    return w.transpose(FILTER_AXES[layout])


def window_views(xp: np.ndarray, kernel_hw, out_hw, strides, dilations):
    """For each kernel offset (row-major), the strided view of the padded nchw input `xp` that
    the offset reads for every output position: each view is [N, C, outH, outW]."""
    (kh, kw), (oh, ow) = kernel_hw, out_hw
    views = []
    for i in range(kh):
        top = i * dilations[0]
        for j in range(kw):
            left = j * dilations[1]
            views.append(xp[:, :, top:top + (oh - 1) * strides[0] + 1:strides[0],
                            left:left + (ow - 1) * strides[1] + 1:strides[1]])
    return views


def pad_hw(x: np.ndarray, padding, extra=(0, 0), value=0.0) -> np.ndarray:
    """Pad the two spatial axes of an nchw tensor: [top, bottom, left, right] (+ extra at the
    bottom and right, for windows that run past the padded input)."""
    top, bottom, left, right = padding
    if not any((top, bottom, left, right, *extra)):
        return x
    return np.pad(x, ((0, 0), (0, 0), (top, bottom + extra[0]), (left, right + extra[1])),
                  constant_values=value)


@kernel("conv2d")
def conv2d(op, ins, env):
    x, w, bias = ins
    layout = op.attr("inputLayout")
    x = to_nchw(x, layout)
    w = filter_oihw(w, op.attr("filterLayout"))
    groups = op.attr("groups")
    strides, dilations = op.attr("strides"), op.attr("dilations")
    n, c, _, _ = x.shape
    out_c, in_per_group, kh, kw = w.shape
    out_shape = op.output.shape
    oh, ow = (out_shape[2], out_shape[3]) if layout == "nchw" else (out_shape[1], out_shape[2])
    xp = pad_hw(x, op.attr("padding"))
    views = window_views(xp, (kh, kw), (oh, ow), strides, dilations)
    # cols: [N, groups, inPerGroup * kh * kw, outH * outW], rows in w's [in, kh, kw] order;
    # stacking the views after the channel axis gives that order without a transpose.
    cols = views[0][:, :, None] if len(views) == 1 else np.stack(views, axis=2)
    cols = cols.reshape(n, groups, in_per_group * kh * kw, oh * ow)
    wg = w.reshape(groups, out_c // groups, in_per_group * kh * kw)
    out = np.matmul(wg[None], cols).reshape(n, out_c, oh, ow)  # [N, groups, outPerGroup, ...]
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return from_nchw(out, layout)


@kernel("convTranspose2d")
def conv_transpose2d(op, ins, env):
    x, w, bias = ins
    layout = op.attr("inputLayout")
    x = to_nchw(x, layout)
    w = filter_oihw(w, op.attr("filterLayout"))  # [outPerGroup, in, kh, kw]
    groups = op.attr("groups")
    strides, dilations = op.attr("strides"), op.attr("dilations")
    top, _, left, _ = op.attr("padding")
    n, c, h, wd = x.shape
    out_per_group, _, kh, kw = w.shape
    in_per_group = c // groups
    out_shape = op.output.shape
    oh, ow = (out_shape[2], out_shape[3]) if layout == "nchw" else (out_shape[1], out_shape[2])
    # The full (uncropped) result; outputPadding / outputSizes may reach past it (zeros there).
    full_h = max((h - 1) * strides[0] + (kh - 1) * dilations[0] + 1, top + oh)
    full_w = max((wd - 1) * strides[1] + (kw - 1) * dilations[1] + 1, left + ow)
    full = np.zeros((n, groups, out_per_group, full_h, full_w), dtype=x.dtype)
    xg = x.reshape(n, groups, in_per_group, h, wd).transpose(0, 1, 3, 4, 2)  # [N, G, h, w, Cg]
    wg = w.reshape(out_per_group, groups, in_per_group, kh, kw)
    for i in range(kh):
        for j in range(kw):
            tap = wg[:, :, :, i, j].transpose(1, 2, 0)  # [G, Cg, outPerGroup]
            contribution = np.matmul(xg, tap[None, :, None])  # [N, G, h, w, outPerGroup]
            r, s = i * dilations[0], j * dilations[1]
            rows = slice(r, r + (h - 1) * strides[0] + 1, strides[0])
            cols = slice(s, s + (wd - 1) * strides[1] + 1, strides[1])
            full[:, :, :, rows, cols] += contribution.transpose(0, 1, 4, 2, 3)
    out = full.reshape(n, groups * out_per_group, full_h, full_w)[:, :, top:top + oh,
                                                                   left:left + ow]
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return from_nchw(out, layout)
