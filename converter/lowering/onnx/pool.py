"""Lowerings of averagePool2d, l2Pool2d and maxPool2d.

The output size comes from the operation's result (the shape rule already applied
outputShapeRounding or outputSizes). ONNX's ceil_mode drops a last window that would start in
the end padding, which the spec's ceil formula keeps, so instead of ceil_mode the lowering
always uses floor mode and widens the end padding until floor mode gives the spec's size.
Padding never counts: averagePool2d divides by the number of input elements in the window
(count_include_pad=0), maxPool2d ignores it and l2Pool2d adds nothing for it.

ONNX pools take pads smaller than the window only. Where the padding (as given, or widened
for the rounding) reaches the window's size, the input is padded by a Pad node first: with the
type's lowest value for maxPool2d, zeros for l2Pool2d, and zeros for averagePool2d, whose sums
are then divided by each window's count of real input elements (a constant of the geometry).
"""
from __future__ import annotations

import numpy as np

from ...errors import UnsupportedError
from ...ir import Operation
from .context import NUMPY_TYPES, Keep, LoweringContext
from .conv import NCHW_TO_NHWC, NHWC_TO_NCHW
from .registry import lowers, opt

_ONNX = {"averagePool2d": "AveragePool", "l2Pool2d": "LpPool", "maxPool2d": "MaxPool"}


def _geometry(op: Operation):
    x = op.input("input")
    nhwc = op.attr("layout") == "nhwc"
    in_hw = list(x.shape[1:3] if nhwc else x.shape[2:4])
    out_hw = list(op.output.shape[1:3] if nhwc else op.output.shape[2:4])
    window = list(opt(op, "windowDimensions", in_hw))
    strides = list(op.attr("strides"))
    dilations = list(op.attr("dilations"))
    padding = list(op.attr("padding"))
    begin = [padding[0], padding[2]]
    end = []
    for i in range(2):
        effective = (window[i] - 1) * dilations[i] + 1
        needed = (out_hw[i] - 1) * strides[i] + effective - in_hw[i] - begin[i]
        end.append(max(padding[2 * i + 1], needed))
    return x, nhwc, in_hw, out_hw, window, strides, dilations, begin, end


@lowers("averagePool2d", "l2Pool2d", "maxPool2d")
def pool2d(ctx: LoweringContext, op: Operation) -> list[str]:
    x, nhwc, in_hw, out_hw, window, strides, dilations, begin, end = _geometry(op)
    xv = ctx.name_of(x)
    if nhwc:
        xv = ctx.transpose(xv, NHWC_TO_NCHW)
    onnx_op = _ONNX[op.op_type]
    dt = x.data_type
    attrs = dict(kernel_shape=window, strides=strides, dilations=dilations,
                 pads=begin + end, ceil_mode=0)
    if op.op_type == "averagePool2d" and ctx.opset < 19:
        if dilations != [1, 1]:  # AveragePool has dilations from opset 19 on
            raise UnsupportedError(["averagePool2d with dilations needs ONNX opset 19 or later"],
                                   where=f"averagePool2d '{op.name}'", fix="lower at opset 19+")
        del attrs["dilations"]
    if op.op_type == "averagePool2d":
        attrs["count_include_pad"] = 0
    if op.op_type == "l2Pool2d":
        attrs["p"] = 2
    if op.op_type == "maxPool2d" and dt in ("int64", "uint64"):
        # No MaxPool kernel and no wider type holds them: take the max of the window's taps.
        y = _max_by_taps(ctx, xv, dt, out_hw, window, strides, dilations, begin, end)
    elif any(p >= k for p, k in zip(begin + end, window + window)):
        y = _pool_padded_first(ctx, op.op_type, xv, dt, attrs, in_hw, out_hw, window, strides,
                               dilations, begin, end)
    else:
        y = ctx.typed(onnx_op, [xv], dt, **attrs)
    return [ctx.transpose(y, NCHW_TO_NHWC) if nhwc else y]


def _pool_padded_first(ctx: LoweringContext, op_type: str, xv: str, dt: str, attrs: dict,
                       in_hw, out_hw, window, strides, dilations, begin, end) -> str:
    """The pool on an input padded by a Pad node (ONNX refuses pads >= the window)."""
    if op_type == "maxPool2d":
        kind = np.dtype(NUMPY_TYPES[dt]).kind
        fill = -np.inf if kind == "f" else np.iinfo(NUMPY_TYPES[dt]).min
    else:
        fill = 0
    pads = ctx.int64s([0, 0, begin[0], begin[1], 0, 0, end[0], end[1]])
    padded = ctx.typed("Pad", [xv, Keep(pads), ctx.scalar(fill, dt)], dt, widen="bits",
                       mode="constant")
    attrs = dict(attrs, pads=[0, 0, 0, 0])
    if op_type != "averagePool2d":
        return ctx.typed(_ONNX[op_type], [padded], dt, **attrs)
    attrs["count_include_pad"] = 1  # everything is input now: the mean over the whole window
    mean = ctx.typed("AveragePool", [padded], dt, **attrs)
    # mean * window size / real elements = the sum over the real elements / their count
    counts = np.ones(out_hw, np.float64)
    for i in range(2):
        starts = np.arange(out_hw[i]) * strides[i] - begin[i]
        taps = starts[:, None] + np.arange(window[i])[None, :] * dilations[i]
        real = ((taps >= 0) & (taps < in_hw[i])).sum(axis=1)
        counts = counts * (real[:, None] if i == 0 else real[None, :])
    scale = (window[0] * window[1]) / np.maximum(counts, 1)
    return ctx.typed("Mul", [mean, ctx.constant(scale.astype(NUMPY_TYPES[dt]), dt)], dt,
                     widen="modular")


def _max_by_taps(ctx: LoweringContext, xv: str, dt: str, out_hw, window, strides, dilations,
                 begin, end) -> str:
    lowest = np.iinfo(NUMPY_TYPES[dt]).min
    pads = ctx.int64s([0, 0, begin[0], begin[1], 0, 0, end[0], end[1]])
    padded = ctx.typed("Pad", [xv, Keep(pads), ctx.scalar(lowest, dt)], dt, mode="constant")
    taps = []
    for kh in range(window[0]):
        for kw in range(window[1]):
            starts = [kh * dilations[0], kw * dilations[1]]
            ends = [s + (o - 1) * st + 1 for s, o, st in zip(starts, out_hw, strides)]
            taps.append(ctx.node("Slice", [padded, ctx.int64s(starts), ctx.int64s(ends),
                                           ctx.int64s([2, 3]), ctx.int64s(strides)], dtype=dt))
    if len(taps) == 1:
        return taps[0]
    return ctx.node("Max", taps, dtype=dt)
