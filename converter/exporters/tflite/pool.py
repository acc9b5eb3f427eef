"""Export of averagePool2d, l2Pool2d and maxPool2d.

TFLite's pools are NHWC and pad only "SAME" or "VALID"; they have no dilations. The output size
comes from the operation's result (the shape rule already applied outputShapeRounding or
outputSizes): the end padding is widened until the VALID window count gives it, as ceil
rounding asks. Padding never counts in WebNN, so:
  * maxPool2d pads with -infinity (PADV2), where TFLite's SAME does not fit;
  * averagePool2d pads with zeros and runs AVERAGE_POOL_2D VALID, which divides by the whole
    window, then multiplies each output by window / (input elements in its window), a
    constant made here (no multiply where no window touches the padding);
  * l2Pool2d, sqrt(sum of x^2) in WebNN, is sqrt(window * AVERAGE_POOL_2D(x^2)) on zero
    padding (TFLite's L2_POOL_2D is a root mean square, a different function).
"""
from __future__ import annotations

import numpy as np

from ...ir import Operation
from .context import ExportContext
from .conv import NCHW_TO_NHWC, from_nhwc, pad_nhwc, padding_mode, to_nhwc
from .registry import FLOATS, exports
from .schema import fb, options


def _geometry(op: Operation):
    x = op.input("input")
    nhwc = op.attr("layout") == "nhwc"
    in_hw = list(x.shape[1:3] if nhwc else x.shape[2:4])
    out_shape = list(op.output.shape)
    out_nhwc = out_shape if nhwc else [out_shape[p] for p in NCHW_TO_NHWC]
    window = [int(v) for v in op.attr("windowDimensions") or in_hw]
    strides = [int(s) for s in op.attr("strides")]  # attr gives the spec's default if unset
    padding = [int(p) for p in op.attr("padding")]
    for i in range(2):  # widen the end padding until the VALID window count is the output's
        needed = (out_nhwc[1 + i] - 1) * strides[i] + window[i] - in_hw[i] - padding[2 * i]
        padding[2 * i + 1] = max(padding[2 * i + 1], needed)
    return nhwc, in_hw, out_nhwc, window, strides, padding


def _pool_problem(op: Operation) -> str | None:
    if list(op.attr("dilations")) != [1, 1]:
        return "TFLite's pools have no dilations"
    return None


def _pool(ctx: ExportContext, code: str, x: int, mode: str, window, strides, out_nhwc) -> int:
    opts = options("Pool2DOptions", padding={"SAME": fb.Padding.SAME,
                                              "VALID": fb.Padding.VALID}[mode],
                   strideH=strides[0], strideW=strides[1], filterHeight=window[0],
                   filterWidth=window[1])
    return ctx.emit(code, [x], (ctx.desc(x).data_type, out_nhwc), opts)


@exports("maxPool2d", types=FLOATS, max_rank=4, check=_pool_problem)
def max_pool2d(ctx: ExportContext, op: Operation) -> list[int]:
    nhwc, in_hw, out_nhwc, window, strides, padding = _geometry(op)
    x = to_nhwc(ctx, op.input("input"), nhwc)
    mode = padding_mode(in_hw, out_nhwc[1:3], window, strides, [1, 1], padding)
    if mode is None:
        x = pad_nhwc(ctx, x, padding, value=-np.inf)
        mode = "VALID"
    return [from_nhwc(_pool(ctx, "MAX_POOL_2D", x, mode, window, strides, out_nhwc), nhwc)]


def _window_counts(in_hw, out_hw, window, strides, padding) -> np.ndarray:
    """How many input (not padding) elements each output's window covers, [1, H, W, 1]; a
    window of padding only (padding wider than the window) counts 1, so its average is its zero
    sum, as the ONNX lowering answers, not 0/0."""
    per_axis = []
    for i in range(2):
        start = np.arange(out_hw[i]) * strides[i] - padding[2 * i]
        covered = np.minimum(start + window[i], in_hw[i]) - np.maximum(start, 0)
        per_axis.append(np.maximum(covered, 1))
    return np.outer(per_axis[0], per_axis[1]).reshape(1, out_hw[0], out_hw[1], 1)


@exports("averagePool2d", types=FLOATS, max_rank=4, check=_pool_problem)
def average_pool2d(ctx: ExportContext, op: Operation) -> list[int]:
    nhwc, in_hw, out_nhwc, window, strides, padding = _geometry(op)
    x = to_nhwc(ctx, op.input("input"), nhwc)
    mode = padding_mode(in_hw, out_nhwc[1:3], window, strides, [1, 1], padding)
    if mode is not None:  # TFLite's SAME averages over the input elements only, as WebNN does
        y = _pool(ctx, "AVERAGE_POOL_2D", x, mode, window, strides, out_nhwc)
        return [from_nhwc(y, nhwc)]
    y = _pool(ctx, "AVERAGE_POOL_2D", pad_nhwc(ctx, x, padding), "VALID", window, strides,
              out_nhwc)
    counts = _window_counts(in_hw, out_nhwc[1:3], window, strides, padding)
    if (counts != window[0] * window[1]).any():
        y = ctx.mul(y, ctx.const((window[0] * window[1] / counts).astype(np.float32)))
    return [from_nhwc(y, nhwc)]


@exports("l2Pool2d", types=FLOATS, max_rank=4, check=_pool_problem)
def l2_pool2d(ctx: ExportContext, op: Operation) -> list[int]:
    nhwc, in_hw, out_nhwc, window, strides, padding = _geometry(op)
    x = to_nhwc(ctx, op.input("input"), nhwc)
    squares = ctx.mul(x, x)
    if padding != [0, 0, 0, 0]:
        squares = pad_nhwc(ctx, squares, padding)
    mean = _pool(ctx, "AVERAGE_POOL_2D", squares, "VALID", window, strides, out_nhwc)
    total = ctx.mul(mean, ctx.number(float(window[0] * window[1]), mean))
    return [from_nhwc(ctx.unary("SQRT", total), nhwc)]
