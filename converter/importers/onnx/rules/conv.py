"""Convolutions: Conv, ConvTranspose and ConvInteger, as conv2d / convTranspose2d.

WebNN convolves exactly two spatial axes, so a 1-D ONNX convolution ([N, C, L], filter
[M, C/g, K]) runs as a 2-D one on [N, C, L, 1] with a [M, C/g, K, 1] filter and is reshaped
back. A 3-D one ([N, C, D, H, W]) is a sum over the depth taps k of 2-D convolutions of input
depth slices with filter slice k: each output depth o gathers the kD input slices it reads
(a zero slice where it reads padding), stacks them as channels, and one conv2d / convTranspose2d
with the filter's depth taps stacked the same way sums them all (see _depth_stacked). ONNX's
auto_pad is resolved here into explicit pads, since WebNN dropped autoPad. The padding helpers
are shared with pool.py.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import onnx

from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..registry import Invalid, Unsupported, onnx_op

__all__ = ["reshape", "reshaped_input", "spatial_pads", "webnn_padding", "dequantized",
           "largest_weight_sum", "check_exact_accumulation"]

# float32 represents every integer of magnitude below 2**24 exactly, so an integer convolution
# computed in float32 is exact while no partial sum can reach it.
_FLOAT32_EXACT = 2 ** 24
# 4-bit values are stored packed two to a byte, so their arrays cannot be reshaped here.
_PACKED = (onnx.TensorProto.INT4, onnx.TensorProto.UINT4)


def reshape(ctx: ImportContext, x: Operand, shape: Sequence[int], suffix: str = "reshape"):
    return ctx.emit("reshape", [x], {"newShape": [int(d) for d in shape]}, suffix=suffix)


def reshaped_input(ctx: ImportContext, name: str, shape: Sequence[int], suffix: str) -> Operand:
    """The ONNX value `name` reshaped to `shape`; a known value is reshaped here, not in the
    graph, so constant weights stay plain constants."""
    known = ctx.known(name)
    if known is not None and ctx.onnx_type(name) not in _PACKED:
        return ctx.constant(np.reshape(known, tuple(shape)), ctx.dtype(name))
    return reshape(ctx, ctx.operand(name), shape, suffix)


def spatial_rank(rank: int, allowed: tuple[int, ...]) -> int:
    spatial = rank - 2
    if spatial not in allowed:
        handled = "1 is handled by adding a unit axis" + (
            ", 3 as a sum over depth" if 3 in allowed else "")
        raise Unsupported(f"input has {spatial} spatial dimensions; WebNN convolves exactly 2 "
                          f"({handled})")
    return spatial


def spatial_pads(node: OnnxNode, in_sizes: Sequence[int], kernel: Sequence[int],
                 strides: Sequence[int], dilations: Sequence[int]) -> list[int]:
    """ONNX pads [b1, b2, ..., e1, e2, ...] with auto_pad resolved the way ONNX defines it:
    SAME_* pads so that output = ceil(input / stride), the odd pixel going at the end (UPPER)
    or the beginning (LOWER); VALID pads nothing; NOTSET uses the `pads` attribute."""
    n = len(in_sizes)
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        pads = list(node.attr("pads", [0] * 2 * n))
        if len(pads) != 2 * n:
            raise Unsupported(f"pads {pads} must have {2 * n} values")
        return pads
    if auto_pad == "VALID":
        return [0] * 2 * n
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise Unsupported(f"auto_pad '{auto_pad}' is not an ONNX auto_pad value")
    begins, ends = [], []
    for size, k, s, d in zip(in_sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, large = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else large)
        ends.append(large if auto_pad == "SAME_UPPER" else small)
    return begins + ends


def webnn_padding(onnx_pads: Sequence[int]) -> list[int]:
    """ONNX [beginH, beginW, endH, endW] (or [begin, end] in 1-D) -> WebNN [bH, eH, bW, eW]."""
    if len(onnx_pads) == 2:  # 1-D: the unit width axis is not padded
        return [int(onnx_pads[0]), int(onnx_pads[1]), 0, 0]
    b_h, b_w, e_h, e_w = onnx_pads
    return [int(b_h), int(e_h), int(b_w), int(e_w)]


def _two(values: Sequence[int]) -> list[int]:
    """Per-axis values for 2 axes; a 1-D list gets the unit axis's 1."""
    return [int(v) for v in values] + [1] * (2 - len(values))


def _conv_geometry(ctx: ImportContext, node: OnnxNode, allowed: tuple[int, ...] = (1, 2)):
    x_shape, w_shape = ctx.shape(node.input(0)), ctx.shape(node.input(1))
    spatial = spatial_rank(len(x_shape), allowed)
    if len(w_shape) != len(x_shape):
        raise Unsupported(f"filter rank {len(w_shape)} differs from input rank {len(x_shape)}")
    kernel = list(w_shape[2:])
    strides, dilations = window_steps(node, spatial)
    return x_shape, w_shape, spatial, kernel, strides, dilations


def window_steps(node: OnnxNode, spatial: int) -> tuple[list[int], list[int]]:
    """The node's strides and dilations (default 1), one positive value per spatial axis."""
    found = []
    for name in ("strides", "dilations"):
        values = [int(v) for v in node.attr(name, [1] * spatial)]
        if len(values) != spatial or any(v < 1 for v in values):
            raise Invalid(f"{name} {values} must hold {spatial} positive values, one per "
                          f"spatial axis")
        found.append(values)
    return found[0], found[1]


def _as_2d(ctx: ImportContext, x: Operand, spatial: int) -> Operand:
    return x if spatial == 2 else reshape(ctx, x, (*x.shape, 1), "reshape_input")


def _filter_2d(ctx: ImportContext, name: str, spatial: int) -> Operand:
    if spatial == 2:
        return ctx.operand(name)
    return reshaped_input(ctx, name, (*ctx.shape(name), 1), "reshape_filter")


def _back(ctx: ImportContext, y: Operand, spatial: int) -> Operand:
    return y if spatial == 2 else reshape(ctx, y, y.shape[:3], "reshape_output")


# -- 3-D: a sum over the depth taps of 2-D convolutions ------------------------------------
def _conv_reads(depth: int, out_depth: int, taps: int, stride: int, dilation: int,
                pad_begin: int) -> np.ndarray:
    """[out_depth, taps]: the input depth Conv's output depth o reads with filter depth tap
    k, or `depth` (a zero slice) where it reads padding."""
    o, k = np.arange(out_depth)[:, None], np.arange(taps)[None, :]
    i = o * stride - pad_begin + k * dilation
    return np.where((i >= 0) & (i < depth), i, depth)


def _transposed_reads(depth: int, out_depth: int, taps: int, stride: int, dilation: int,
                      pad_begin: int) -> np.ndarray:
    """[out_depth, taps]: the input depth i whose tap k lands on ConvTranspose's output depth
    o (i * stride + k * dilation = o + pad_begin), or `depth` (a zero slice) where none does."""
    o, k = np.arange(out_depth)[:, None], np.arange(taps)[None, :]
    landing = o + pad_begin - k * dilation
    i = landing // stride
    hit = (landing >= 0) & (landing % stride == 0) & (i < depth)
    return np.where(hit, i, depth)


def _depth_stacked(ctx: ImportContext, x: Operand, reads: np.ndarray, groups: int) -> Operand:
    """[N, C, D, H, W] -> [N * od, C * kD, H, W]: for output depth o, the input depth slices
    reads[o, k] stacked as channels, each group's channels together and ordered (k, c), so that
    one grouped 2-D convolution with the filter's depth taps stacked alike
    (_filter_depth_stacked) sums over k inside each group. Ranks stay within 5."""
    n, c, d, h, w = x.shape
    if c % groups:
        raise Unsupported(f"{c} input channels are not a multiple of group {groups}")
    out_depth, taps = reads.shape
    x = reshape(ctx, x, (n, c, d, h * w), "fold_hw")
    x = ctx.emit("transpose", [x], {"permutation": [2, 0, 1, 3]}, suffix="depth_first")
    if np.any(reads == d):
        x = ctx.emit("pad", [x], {"beginningPadding": [0, 0, 0, 0],
                                  "endingPadding": [1, 0, 0, 0]}, suffix="zero_slice")
    x = ctx.emit("gather", [x, ctx.constant(reads.reshape(-1).astype(np.int32))],
                 {"axis": 0}, suffix="depth_taps")
    x = reshape(ctx, x, (out_depth, taps, n, groups, c // groups * h * w), "split_taps")
    x = ctx.emit("transpose", [x], {"permutation": [2, 0, 3, 1, 4]}, suffix="taps_as_channels")
    return reshape(ctx, x, (n * out_depth, c * taps, h, w), "stacked")


def _filter_depth_stacked(ctx: ImportContext, name: str, transposed: bool,
                          groups: int) -> Operand:
    """Conv's filter [M, C/g, kD, kH, kW] -> [M, kD * C/g, kH, kW], channels ordered (k, c);
    ConvTranspose's [C, M/g, kD, kH, kW] -> [g * kD * C/g, M/g, kH, kW], rows ordered
    (group, k, c). A known filter is rearranged here and stays a plain constant."""
    a, b, taps, kh, kw = ctx.shape(name)
    if transposed:
        folded, order, stacked = (groups, a // groups, b, taps, kh * kw), [0, 3, 1, 2, 4], \
            (a * taps, b, kh, kw)
    else:
        folded, order, stacked = (a, b, taps, kh * kw), [0, 2, 1, 3], (a, taps * b, kh, kw)
    known = ctx.known(name)
    if known is not None:
        return ctx.constant(np.ascontiguousarray(
            known.reshape(folded).transpose(order)).reshape(stacked), ctx.dtype(name))
    w = reshape(ctx, ctx.operand(name), folded, "fold_filter")
    w = ctx.emit("transpose", [w], {"permutation": order}, suffix="filter_taps")
    return reshape(ctx, w, stacked, "stacked_filter")


def _depth_unstacked(ctx: ImportContext, y: Operand, n: int, out_depth: int) -> Operand:
    """[N * od, M, oH, oW] -> [N, M, od, oH, oW]."""
    _, m, oh, ow = y.shape
    y = reshape(ctx, y, (n, out_depth, m, oh * ow), "split_depth")
    y = ctx.emit("transpose", [y], {"permutation": [0, 2, 1, 3]}, suffix="channels_first")
    return reshape(ctx, y, (n, m, out_depth, oh, ow), "output")


_DEPTH_OPS = ("transpose", "pad", "gather")


@onnx_op("Conv", webnn=("conv2d", "reshape") + _DEPTH_OPS)
def conv(ctx: ImportContext, node: OnnxNode):
    x_shape, w_shape, spatial, kernel, strides, dilations = _conv_geometry(ctx, node, (1, 2, 3))
    pads = spatial_pads(node, x_shape[2:], kernel, strides, dilations)
    if spatial == 3:
        return [_conv_3d(ctx, node, kernel, strides, dilations, pads)]
    x = _as_2d(ctx, ctx.operand(node.input(0)), spatial)
    w = _filter_2d(ctx, node.input(1), spatial)
    bias = ctx.operand(node.input(2)) if node.input(2) else None
    y = ctx.emit("conv2d", [x, w, bias], {
        "padding": webnn_padding(pads), "strides": _two(strides),
        "dilations": _two(dilations), "groups": int(node.attr("group", 1))})
    return [_back(ctx, y, spatial)]


def _conv_3d(ctx: ImportContext, node: OnnxNode, kernel, strides, dilations, pads) -> Operand:
    x = ctx.operand(node.input(0))
    n, depth = x.shape[0], x.shape[2]
    groups = int(node.attr("group", 1))
    out_depth = (depth + pads[0] + pads[3] - (kernel[0] - 1) * dilations[0] - 1) \
        // strides[0] + 1
    if out_depth <= 0:
        raise Unsupported(f"the output depth {out_depth} is not positive")
    reads = _conv_reads(depth, out_depth, kernel[0], strides[0], dilations[0], pads[0])
    stacked = _depth_stacked(ctx, x, reads, groups)
    w = _filter_depth_stacked(ctx, node.input(1), False, groups)
    bias = ctx.operand(node.input(2)) if node.input(2) else None
    y = ctx.emit("conv2d", [stacked, w, bias], {
        "padding": webnn_padding([pads[1], pads[2], pads[4], pads[5]]),
        "strides": [int(s) for s in strides[1:]],
        "dilations": [int(d) for d in dilations[1:]], "groups": groups})
    return _depth_unstacked(ctx, y, n, out_depth)


def _transpose_pads(node: OnnxNode, in_sizes, kernel, strides, dilations, out_padding):
    """ONNX ConvTranspose's pads and output padding (begin, end, extra end) per axis.

    With output_shape (or SAME_* auto_pad, whose output is input * stride) ONNX derives the
    total padding from the wanted size; SAME_UPPER puts the larger half at the end, anything
    else at the beginning (the ONNX operator text). A negative total means the output is
    larger than the unpadded result: the surplus is WebNN's outputPadding, which must stay
    below the stride.
    """
    n = len(in_sizes)
    auto_pad = node.attr("auto_pad", "NOTSET")
    output_shape = node.attr("output_shape")
    if output_shape is not None:
        if len(output_shape) < n:
            raise Invalid(f"output_shape {list(output_shape)} has fewer than {n} values")
        output_shape = list(output_shape)[-n:]
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        output_shape = [size * s for size, s in zip(in_sizes, strides)]
    if output_shape is None:
        if auto_pad not in ("NOTSET", "VALID"):
            raise Unsupported(f"auto_pad '{auto_pad}' is not an ONNX auto_pad value")
        pads = [0] * 2 * n if auto_pad == "VALID" else list(node.attr("pads", [0] * 2 * n))
        if len(pads) != 2 * n:
            raise Invalid(f"pads {pads} must have {2 * n} values")
        return pads[:n], pads[n:], list(out_padding)
    begins, ends, extras = [], [], []
    for size, k, s, d, op_, want in zip(in_sizes, kernel, strides, dilations, out_padding,
                                        output_shape):
        total = s * (size - 1) + op_ + (k - 1) * d + 1 - want
        if total >= 0:
            small, large = total // 2, total - total // 2
            begin, end = (small, large) if auto_pad == "SAME_UPPER" else (large, small)
            begins.append(begin)
            ends.append(end)
            extras.append(op_)
        else:
            begins.append(0)
            ends.append(0)
            extras.append(op_ - total)
    return begins, ends, extras


@onnx_op("ConvTranspose", webnn=("convTranspose2d", "reshape") + _DEPTH_OPS)
def conv_transpose(ctx: ImportContext, node: OnnxNode):
    x_shape, w_shape, spatial, kernel, strides, dilations = _conv_geometry(ctx, node, (1, 2, 3))
    out_padding = [int(v) for v in node.attr("output_padding", [0] * spatial)]
    if len(out_padding) != spatial or any(v < 0 for v in out_padding):
        raise Invalid(f"output_padding {out_padding} must hold {spatial} non-negative values")
    begins, ends, extras = _transpose_pads(node, x_shape[2:], kernel, strides, dilations,
                                           out_padding)
    planar = slice(1, None) if spatial == 3 else slice(None)  # depth is not convTranspose2d's
    for extra, s in zip(extras[planar], strides[planar]):
        if extra >= s:
            raise Unsupported(f"output padding {extra} is not smaller than the stride {s}, "
                              f"which WebNN's convTranspose2d requires")
    if spatial == 3:
        return [_conv_transpose_3d(ctx, node, kernel, strides, dilations, begins, ends,
                                   extras)]
    x = _as_2d(ctx, ctx.operand(node.input(0)), spatial)
    w = _filter_2d(ctx, node.input(1), spatial)
    bias = ctx.operand(node.input(2)) if node.input(2) else None
    y = ctx.emit("convTranspose2d", [x, w, bias], {
        "padding": webnn_padding(begins + ends), "strides": _two(strides),
        "dilations": _two(dilations),
        "outputPadding": [int(e) for e in extras] + [0] * (2 - spatial),
        "groups": int(node.attr("group", 1))})
    return [_back(ctx, y, spatial)]


def _conv_transpose_3d(ctx: ImportContext, node: OnnxNode, kernel, strides, dilations,
                       begins, ends, extras) -> Operand:
    x = ctx.operand(node.input(0))
    n, depth = x.shape[0], x.shape[2]
    groups = int(node.attr("group", 1))
    # the full result has stride * (depth - 1) + extra + (kD - 1) * dilation + 1 depths,
    # cropped by the pads
    out_depth = strides[0] * (depth - 1) + extras[0] + (kernel[0] - 1) * dilations[0] + 1 \
        - begins[0] - ends[0]
    if out_depth <= 0:
        raise Unsupported(f"the output depth {out_depth} is not positive")
    reads = _transposed_reads(depth, out_depth, kernel[0], strides[0], dilations[0],
                              begins[0])
    stacked = _depth_stacked(ctx, x, reads, groups)
    w = _filter_depth_stacked(ctx, node.input(1), True, groups)
    bias = ctx.operand(node.input(2)) if node.input(2) else None
    y = ctx.emit("convTranspose2d", [stacked, w, bias], {
        "padding": webnn_padding([begins[1], begins[2], ends[1], ends[2]]),
        "strides": [int(s) for s in strides[1:]],
        "dilations": [int(d) for d in dilations[1:]],
        "outputPadding": [int(e) for e in extras[1:]], "groups": groups})
    return _depth_unstacked(ctx, y, n, out_depth)


# -- ConvInteger ---------------------------------------------------------------------------
def _integer_range(dtype: str) -> tuple[int, int]:
    ranges = {"uint8": (0, 255), "int8": (-128, 127)}
    if dtype not in ranges:
        raise Unsupported(f"an input is {dtype}; integer convolution and matmul take uint8 "
                          f"or int8")
    return ranges[dtype]


def dequantized(ctx: ImportContext, name: str, zero_point: str | None, rank: int,
                axis_size: tuple[int, int] | None = None) -> Operand:
    """dequantizeLinear(value, scale 1, zero point) as float32: the integers themselves, minus
    the zero point. WebNN wants scale and zero point at the input's rank, so a per-axis
    (1-D) zero point becomes [1, .., size, .., 1] along `axis_size` = (axis, size)."""
    dtype = ctx.dtype(name)
    if dtype not in ("uint8", "int8"):
        raise Unsupported(f"input '{name}' is {dtype}; integer convolution and matmul take "
                          f"uint8 or int8")
    shape = [1] * rank
    if zero_point is not None:
        zp_shape = ctx.shape(zero_point)
        if ctx.dtype(zero_point) != dtype:
            raise Unsupported(f"zero point '{zero_point}' is {ctx.dtype(zero_point)} but its "
                              f"input is {dtype}")
        if len(zp_shape) == 1 and zp_shape[0] > 1:
            if axis_size is None:
                raise Unsupported(f"zero point '{zero_point}' is per-axis where ONNX allows "
                                  f"only a scalar")
            axis, size = axis_size
            if zp_shape[0] != size:
                raise Unsupported(f"zero point '{zero_point}' has {zp_shape[0]} values for an "
                                  f"axis of {size}")
            shape[axis] = size
        elif int(np.prod(zp_shape)) != 1:
            raise Unsupported(f"zero point '{zero_point}' shape {list(zp_shape)} is neither "
                              f"a scalar nor per-axis")
        zp = reshaped_input(ctx, zero_point, shape, "reshape_zero_point")
    else:
        zp = ctx.constant(np.zeros(shape, dtype=np.dtype(dtype)), dtype)
    scale = ctx.constant(np.ones(shape, dtype=np.float32), "float32")
    return ctx.emit("dequantizeLinear", [ctx.operand(name), scale, zp],
                    suffix=f"dequantize_{name}")


def largest_weight_sum(ctx: ImportContext, w: str, w_zp: str | None, reduce_axes: tuple,
                       zp_axis: int, terms: int) -> int:
    """The largest sum of |w - w_zp| over the weights feeding one output element (over
    `reduce_axes`), from the actual weights when known, else from their data type's range."""
    wk, wz = ctx.known(w), ctx.known(w_zp)
    if wk is None or (w_zp is not None and wz is None):
        lo, hi = _integer_range(ctx.dtype(w))
        return terms * (hi - lo)
    zp = np.zeros(1, np.int64) if wz is None else wz.astype(np.int64)
    if zp.ndim == 1 and zp.size > 1:  # per-axis: one zero point per output channel / column
        if zp.size != wk.shape[zp_axis]:
            raise Unsupported(f"zero point '{w_zp}' has {zp.size} values for an axis of "
                              f"{wk.shape[zp_axis]}")
        shape = [1] * wk.ndim
        shape[zp_axis] = zp.size
        zp = zp.reshape(shape)
    centered = np.abs(wk.astype(np.int64) - zp)
    return int(centered.sum(axis=reduce_axes).max())


def check_exact_accumulation(ctx: ImportContext, x: str, x_zp: str | None,
                             weight_sum: int) -> None:
    """Refuse when a float32 accumulation of the integer products might not be exact: the
    bound is max|x - x_zp| times the largest weight sum (see largest_weight_sum)."""
    lo, hi = _integer_range(ctx.dtype(x))
    xz = ctx.known(x_zp)
    if xz is None:
        x_span = hi - lo
    else:
        x_span = max(abs(hi - int(xz.min())), abs(int(xz.max()) - lo))
    if x_span * weight_sum > _FLOAT32_EXACT:  # every integer up to 2^24 itself is exact
        raise Unsupported(f"its int32 sums may reach {x_span * weight_sum}, beyond the "
                          f"integers float32 holds exactly (2^24), and WebNN computes it in "
                          f"float32")


@onnx_op("ConvInteger", since=10, webnn=("dequantizeLinear", "conv2d", "cast", "reshape"))
def conv_integer(ctx: ImportContext, node: OnnxNode):
    x_shape, w_shape, spatial, kernel, strides, dilations = _conv_geometry(ctx, node)
    x_name, w_name = node.input(0), node.input(1)
    x_zp, w_zp = node.input(2), node.input(3)
    group = int(node.attr("group", 1))
    terms = int(np.prod(w_shape[1:]))
    check_exact_accumulation(ctx, x_name, x_zp, largest_weight_sum(
        ctx, w_name, w_zp, tuple(range(1, len(w_shape))), 0, terms))
    pads = spatial_pads(node, x_shape[2:], kernel, strides, dilations)
    x = dequantized(ctx, x_name, x_zp, len(x_shape))
    w = dequantized(ctx, w_name, w_zp, len(w_shape), axis_size=(0, w_shape[0]))
    x = _as_2d(ctx, x, spatial)
    if spatial == 1:
        w = reshape(ctx, w, (*w_shape, 1), "reshape_filter")
    y = ctx.emit("conv2d", [x, w, None], {
        "padding": webnn_padding(pads), "strides": _two(strides),
        "dilations": _two(dilations), "groups": group})
    y = ctx.emit("cast", [_back(ctx, y, spatial)], {"dataType": "int32"})
    return [y]
