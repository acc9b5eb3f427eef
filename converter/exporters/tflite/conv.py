"""Export of conv2d and convTranspose2d.

TFLite's convolutions are NHWC: CONV_2D takes OHWI filters (and groups, as filters with
inputChannels / groups channels), DEPTHWISE_CONV_2D takes [1, H, W, outputChannels] filters,
TRANSPOSE_CONV takes OHWI filters. An nchw input is transposed to nhwc on the way in and the
result back on the way out; a constant filter is permuted here, at export time.

TFLite pads only "SAME" or "VALID". Padding that is neither becomes a PAD before the
convolution. TRANSPOSE_CONV has neither padding amounts, dilations nor groups, so a
convTranspose2d computes the whole VALID result, then crops the padding (and, for
outputPadding, appends zeros) and adds the bias; a dilated filter is spread out with zeros
here (a constant filter only), and groups are computed one by one and concatenated.
"""
from __future__ import annotations

import numpy as np

from ...ir import Operation
from .context import ExportContext, Permuted, compute_type
from .registry import FLOATS, exports
from .schema import NUMPY, fb, options

NCHW_TO_NHWC = (0, 2, 3, 1)


def to_nhwc(ctx: ExportContext, operand, nhwc: bool) -> int:
    """An operand in its compute type, nhwc (an nchw one transposed, unless it is held so)."""
    return ctx.value(operand) if nhwc else ctx.value_as(operand, NCHW_TO_NHWC)


def from_nhwc(tensor: int, nhwc: bool) -> int | Permuted:
    """An nhwc result; for an nchw operation it stays nhwc, held permuted (layout.py)."""
    return tensor if nhwc else Permuted(tensor, NCHW_TO_NHWC)


def layout_perm(layout: str, target: str) -> list[int]:
    """The permutation taking a tensor in `layout` (e.g. "oihw") to `target` (e.g. "ohwi")."""
    return [layout.index(c) for c in target]


def padding_mode(in_hw, out_hw, window, strides, dilations, padding) -> str | None:
    """"VALID" or "SAME" when TFLite's own padding is exactly `padding`
    ([beginH, endH, beginW, endW]) and gives `out_hw`; None when neither does."""
    if list(padding) == [0, 0, 0, 0]:
        return "VALID"
    for i in range(2):
        effective = (window[i] - 1) * dilations[i] + 1
        out = -(-in_hw[i] // strides[i])
        total = max((out - 1) * strides[i] + effective - in_hw[i], 0)
        if out != out_hw[i] or [total // 2, total - total // 2] != list(padding[2 * i:2 * i + 2]):
            return None
    return "SAME"


def pad_nhwc(ctx: ExportContext, x: int, padding, value: float | None = None) -> int:
    """x (nhwc) padded by [beginH, endH, beginW, endW] with zeros, or with `value`."""
    b_h, e_h, b_w, e_w = (int(p) for p in padding)
    d = ctx.desc(x)
    pads = ctx.const(np.array([[0, 0], [b_h, e_h], [b_w, e_w], [0, 0]], np.int32), "int32")
    shape = [d.shape[0], d.shape[1] + b_h + e_h, d.shape[2] + b_w + e_w, d.shape[3]]
    if value is None:
        return ctx.emit("PAD", [x, pads], (d.data_type, shape))
    return ctx.emit("PADV2", [x, pads, ctx.number(value, x)], (d.data_type, shape))


_PADDING = {"SAME": fb.Padding.SAME, "VALID": fb.Padding.VALID}


def _conv_args(op: Operation):
    """What both convolutions read: operands, layouts and the spatial options (`attr` gives
    the spec's default for an option not set)."""
    return (op.input("input"), op.input("filter"), op.input("bias"),
            op.attr("inputLayout") == "nhwc", op.attr("filterLayout"), int(op.attr("groups")),
            [int(s) for s in op.attr("strides")], [int(d) for d in op.attr("dilations")],
            [int(p) for p in op.attr("padding")])


@exports("conv2d", types=FLOATS, max_rank=4)
def conv2d(ctx: ExportContext, op: Operation) -> list[int]:
    x, w, bias, nhwc, layout, groups, strides, dilations, padding = _conv_args(op)
    xt = to_nhwc(ctx, x, nhwc)
    n, in_h, in_w, in_c = ctx.desc(xt).shape
    out_shape = list(op.output.shape)
    out_nhwc = out_shape if nhwc else [out_shape[p] for p in NCHW_TO_NHWC]
    window = [w.shape[layout.index("h")], w.shape[layout.index("w")]]
    mode = padding_mode([in_h, in_w], out_nhwc[1:3], window, strides, dilations, padding)
    if mode is None:
        xt = pad_nhwc(ctx, xt, padding)
        mode = "VALID"
    out_c = out_nhwc[3]
    ct = compute_type(x.data_type)
    # LiteRT's builtin convolution kernels require the bias input: zeros stand in for none.
    bt = ctx.value(bias) if bias is not None else ctx.const(np.zeros(out_c, NUMPY[ct]), ct)
    depthwise = groups > 1 and groups == in_c and w.shape[layout.index("i")] == 1
    if depthwise:
        wt = ctx.permuted(w, layout_perm(layout, "ihwo"))  # [1, H, W, outputChannels]
        opts = options("DepthwiseConv2DOptions", padding=_PADDING[mode], strideH=strides[0],
                       strideW=strides[1], depthMultiplier=out_c // in_c,
                       dilationHFactor=dilations[0], dilationWFactor=dilations[1])
        y = ctx.emit("DEPTHWISE_CONV_2D", [xt, wt, bt], (ct, out_nhwc), opts)
    else:
        wt = ctx.permuted(w, layout_perm(layout, "ohwi"))  # [O, H, W, I / groups]
        opts = options("Conv2DOptions", padding=_PADDING[mode], strideH=strides[0],
                       strideW=strides[1], dilationHFactor=dilations[0],
                       dilationWFactor=dilations[1])
        y = ctx.emit("CONV_2D", [xt, wt, bt], (ct, out_nhwc), opts)
    return [from_nhwc(y, nhwc)]


def _transpose_problem(op: Operation) -> str | None:
    dilations = list(op.attr("dilations"))
    if dilations != [1, 1] and not op.input("filter").is_constant:
        return ("TRANSPOSE_CONV has no dilations, and a dilated filter can only be spread out "
                "at export time when it is a constant")
    return None


@exports("convTranspose2d", types=FLOATS, max_rank=4, check=_transpose_problem)
def conv_transpose2d(ctx: ExportContext, op: Operation) -> list[int]:
    x, w, bias, nhwc, layout, groups, strides, dilations, padding = _conv_args(op)
    ct = compute_type(x.data_type)
    xt = to_nhwc(ctx, x, nhwc)
    n, in_h, in_w, in_c = ctx.desc(xt).shape
    out_shape = list(op.output.shape)
    out_nhwc = out_shape if nhwc else [out_shape[p] for p in NCHW_TO_NHWC]
    perm = layout_perm(layout, "ohwi")  # [O / groups, H, W, I]
    arr = ctx.array(w)
    if arr is not None:
        filt = np.ascontiguousarray(arr.transpose(perm)).astype(NUMPY[ct])
        filt = _dilated(filt, dilations)
        filters = [ctx.const(f, ct) for f in np.split(filt, groups, axis=3)]
    else:
        whole = ctx.permuted(w, perm)
        filters = [whole] if groups == 1 else _split(ctx, whole, 3, groups)
    inputs = [xt] if groups == 1 else _split(ctx, xt, 3, groups)
    k_h, k_w = ctx.desc(filters[0]).shape[1:3]
    full = [n, (in_h - 1) * strides[0] + k_h, (in_w - 1) * strides[1] + k_w,
            ctx.desc(filters[0]).shape[0]]
    opts = options("TransposeConvOptions", padding=fb.Padding.VALID, strideH=strides[0],
                   strideW=strides[1])
    parts = [ctx.emit("TRANSPOSE_CONV", [ctx.int32s(full), f, xi, None], (ct, full), opts)
             for f, xi in zip(filters, inputs)]
    y = parts[0] if len(parts) == 1 else ctx.emit(
        "CONCATENATION", parts, (ct, full[:3] + [full[3] * groups]),
        options("ConcatenationOptions", axis=3))
    y = _crop(ctx, y, [padding[0], padding[2]], out_nhwc)
    if bias is not None:
        y = ctx.add(y, ctx.value(bias))
    return [from_nhwc(y, nhwc)]


def _dilated(filt: np.ndarray, dilations) -> np.ndarray:
    """An OHWI filter with dilations - 1 zeros between its taps (the same convolution)."""
    d_h, d_w = dilations
    if (d_h, d_w) == (1, 1):
        return filt
    o, k_h, k_w, i = filt.shape
    spread = np.zeros((o, (k_h - 1) * d_h + 1, (k_w - 1) * d_w + 1, i), filt.dtype)
    spread[:, ::d_h, ::d_w, :] = filt
    return spread


def _split(ctx: ExportContext, tensor: int, axis: int, count: int) -> list[int]:
    d = ctx.desc(tensor)
    part = list(d.shape)
    part[axis] //= count
    return ctx.emit("SPLIT", [ctx.scalar(axis, "int32"), tensor], [(d.data_type, part)] * count,
                    options("SplitOptions", numSplits=count))


def _crop(ctx: ExportContext, y: int, begin, out_nhwc) -> int:
    """The window of `y` (nhwc) that starts `begin` rows/columns in and has out_nhwc's size;
    where it runs past y's end (outputPadding), zeros are appended."""
    d = ctx.desc(y)
    available = [max(0, min(out_nhwc[1 + i], d.shape[1 + i] - begin[i])) for i in range(2)]
    if begin != [0, 0] or available != list(d.shape[1:3]):
        size = [d.shape[0], available[0], available[1], d.shape[3]]
        y = ctx.emit("SLICE", [y, ctx.int32s([0, begin[0], begin[1], 0]), ctx.int32s(size)],
                     (d.data_type, size))
    missing = [out_nhwc[1 + i] - available[i] for i in range(2)]
    if missing != [0, 0]:
        y = pad_nhwc(ctx, y, [0, missing[0], 0, missing[1]])
    return y
