"""Ops that move image regions around: CenterCropPad and Col2Im.

CenterCropPad crops (a centred window, the odd element cut from the end) or zero-pads (the
odd element added at the end) each listed axis to its target size: one slice and one pad.

Col2Im sums sliding blocks back into an image, the inverse layout of im2col: input
[N, C * prod(block), L] holds, for each block position l on the output grid and each offset k
inside the block, the value landing at l * stride + k * dilation - pad_begin. Per offset k the
L values are spread `stride` apart (a pad inserting stride - 1 zeros after each), shifted to
k * dilation - pad_begin, cut or padded to the image size, and the prod(block) such images
are added: exact (only additions), and for any number of spatial axes.
"""
from __future__ import annotations

import numpy as np

from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..registry import Unsupported, onnx_op
from ._emit import emit
from .shape_ops import known_ints, normalize_axes


def _fit(ctx: ImportContext, x: Operand, begin: list[int], size: list[int]) -> Operand | None:
    """x moved so that its element 0 lands at `begin` (negative: cut from the start) along
    each axis, then cut or zero-padded at the end to `size`; None when nothing of x lands
    inside."""
    pad_begin = [max(b, 0) for b in begin]
    cut_begin = [max(-b, 0) for b in begin]
    after_cut = [d - c for d, c in zip(x.shape, cut_begin)]
    keep = [min(d, s - p) for d, s, p in zip(after_cut, size, pad_begin)]
    if any(k <= 0 for k in keep):
        return None
    if cut_begin != [0] * x.rank or keep != list(x.shape):
        x = emit(ctx, "slice", x, starts=cut_begin, sizes=keep)
    pad_end = [s - p - k for s, p, k in zip(size, pad_begin, keep)]
    if any(pad_begin) or any(pad_end):
        x = emit(ctx, "pad", x, beginningPadding=pad_begin, endingPadding=pad_end)
    return x


@onnx_op("CenterCropPad", since=18, webnn=("slice", "pad"))
def center_crop_pad(ctx: ImportContext, node: OnnxNode):
    x = ctx.operand(node.input(0))
    target = known_ints(ctx, node, 1, None, "the shape input")
    axes = normalize_axes(node.attr("axes", list(range(x.rank))), x.rank)
    if target is None or len(target) != len(axes):
        raise Unsupported(f"shape has {len(target or [])} values for {len(axes)} axes")
    begin, size = [0] * x.rank, list(x.shape)
    for axis, want in zip(axes, target):
        if want <= 0:
            raise Unsupported(f"target size {want}: WebNN has no empty tensors")
        # a crop starts (dim - want) // 2 in; a pad puts (want - dim) // 2 zeros first
        begin[axis] = -((x.shape[axis] - want) // 2) if want < x.shape[axis] \
            else (want - x.shape[axis]) // 2
        size[axis] = want
    if size == list(x.shape):
        return [emit(ctx, "identity", x)]
    return [_fit(ctx, x, begin, size)]


@onnx_op("Col2Im", since=18, webnn=("reshape", "slice", "pad", "add"))
def col2im(ctx: ImportContext, node: OnnxNode):
    x = ctx.operand(node.input(0))
    image = known_ints(ctx, node, 1, None, "image_shape")
    block = known_ints(ctx, node, 2, None, "block_shape")
    n_axes = len(image)
    if len(block) != n_axes or x.rank != 3:
        raise Unsupported(f"input {list(x.shape)}, image_shape {image} and block_shape "
                          f"{block} do not fit [N, C * prod(block), L]")
    strides = node.attr("strides", [1] * n_axes)
    dilations = node.attr("dilations", [1] * n_axes)
    pads = node.attr("pads", [0] * 2 * n_axes)
    kernel = int(np.prod(block))
    n, rows, length = x.shape
    if rows % kernel:
        raise Unsupported(f"{rows} rows do not split into blocks of {kernel}")
    channels = rows // kernel
    grid = [(image[i] + pads[i] + pads[i + n_axes] - (dilations[i] * (block[i] - 1) + 1))
            // strides[i] + 1 for i in range(n_axes)]
    if int(np.prod(grid)) != length:
        raise Unsupported(f"L = {length}, but the blocks fit the padded image "
                          f"{' x '.join(map(str, grid))} times")
    by_offset = emit(ctx, "reshape", x, newShape=[n, channels, kernel, length])
    total = None
    for flat, offset in enumerate(np.ndindex(*block)):
        part = emit(ctx, "slice", by_offset, starts=[0, 0, flat, 0],
                    sizes=[n, channels, 1, length])
        # [N, C, g1, 1, g2, 1, ...] padded to [N, C, g1, s1, g2, s2, ...]: stride-spaced
        spaced_shape = [n, channels] + [d for g in grid for d in (g, 1)]
        part = emit(ctx, "reshape", part, newShape=spaced_shape)
        if any(s > 1 for s in strides):
            part = emit(ctx, "pad", part, beginningPadding=[0] * len(spaced_shape),
                        endingPadding=[0, 0] + [p for s in strides for p in (0, s - 1)])
        part = emit(ctx, "reshape", part,
                    newShape=[n, channels] + [g * s for g, s in zip(grid, strides)])
        begin = [0, 0] + [o * d - p for o, d, p in zip(offset, dilations, pads[:n_axes])]
        placed = _fit(ctx, part, begin, [n, channels] + list(image))
        if placed is not None:  # None: this offset lands wholly in the padding
            total = placed if total is None else emit(ctx, "add", total, placed)
    if total is None:
        raise Unsupported("every block lies wholly in the padding")
    return [total]
