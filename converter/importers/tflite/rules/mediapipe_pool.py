"""MediaPipe's pooling custom ops: MaxPoolingWithArgmax2D and MaxUnpooling2D (its segmentation
models pool with argmax on the way down and unpool with those indices on the way up).

Both kernels (mediapipe/util/tflite/operations/max_pool_argmax.cc and max_unpooling.cc) read
their custom options as a raw TfLitePoolParams struct, not a flexbuffer: int32 padding (1 SAME,
2 VALID), stride width, stride height, filter width, filter height, fused activation. The
indices are float32 and count within the window, row by row: max_y * filter_width + max_x,
plus 0.1 so that truncating them back to an integer is safe.
"""
from __future__ import annotations

import struct

import numpy as np

from ....ir import Operand
from ..context import ImportContext
from ..model_file import Operator
from ..registry import Unsupported, tflite_op
from ._common import emit, positive, reshape

# TfLitePadding in the struct: kTfLitePaddingSame = 1, kTfLitePaddingValid = 2.
_SAME, _VALID = 1, 2
_MAX_WINDOW = 1024


def _pool_params(op: Operator) -> tuple[int, list[int], list[int], int]:
    """(padding code, [stride h, stride w], [filter h, filter w], activation code)."""
    raw = op.custom_options or b""
    if len(raw) < 24:
        raise Unsupported(f"its custom options have {len(raw)} bytes; a TfLitePoolParams "
                          f"needs 24 (padding, strides, filter size, activation)")
    padding, stride_w, stride_h, filter_w, filter_h, activation = struct.unpack_from("<6i", raw)
    if padding not in (_SAME, _VALID):
        raise Unsupported(f"its padding code {padding} is neither SAME (1) nor VALID (2)")
    strides = [positive(stride_h, "stride height"), positive(stride_w, "stride width")]
    window = [positive(filter_h, "filter height"), positive(filter_w, "filter width")]
    if window[0] * window[1] > _MAX_WINDOW:  # one slice (or one-hot lane) per position
        raise Unsupported(f"its {window[0]}x{window[1]} window has more than {_MAX_WINDOW} "
                          f"positions, each of which becomes an op here")
    return padding, strides, window, activation


def _float32_nhwc(ctx: ImportContext, k: int, what: str) -> Operand:
    x = ctx.operand(k)
    if x.rank != 4 or x.data_type != "float32":
        raise Unsupported(f"its {what} is {x.data_type} of rank {x.rank}; the kernel takes "
                          f"float32 NHWC")
    return x


@tflite_op("CUSTOM:MaxPoolingWithArgmax2D",
           webnn=("pad", "slice", "reshape", "concat", "reduceMax", "argMax", "cast", "add",
                  "clamp", "relu"))
def max_pooling_with_argmax_2d(ctx: ImportContext, op: Operator):
    """Each window's maximum and where it is. Every window position is a strided slice of the
    input padded with -inf (the kernel skips padding, and -inf never wins a comparison); the
    slices stacked on a last axis give the maximum by reduceMax and its position by argMax,
    which takes the first of equal maxima as the kernel's strict `>` scan does.

    (Windows whose real elements are all -inf or NaN differ: the kernel answers the lowest
    float and index 0.)"""
    padding, strides, window, activation = _pool_params(op)
    x = _float32_nhwc(ctx, 0, "input")
    batch, height, width, channels = x.shape
    out_hw, begin = [], []
    for size, f, s in zip((height, width), window, strides):
        out = (size + s - 1) // s if padding == _SAME else (size - f + s) // s
        if out < 1:
            raise Unsupported(f"its {f}-wide window does not fit a dimension of {size}")
        out_hw.append(out)
        begin.append(max(((out - 1) * s + f - size) // 2, 0))  # TFLite's ComputePadding
    end = [max((o - 1) * s + f - b - size, 0)
           for o, s, f, b, size in zip(out_hw, strides, window, begin, (height, width))]
    if any(begin) or any(end):
        x = emit(ctx, "pad", x, beginningPadding=[0, begin[0], begin[1], 0],
                 endingPadding=[0, end[0], end[1], 0], value=-np.inf)
    span = [(o - 1) * s + 1 for o, s in zip(out_hw, strides)]
    taps = []
    for fy in range(window[0]):
        for fx in range(window[1]):
            tap = ctx.emit("slice", [x], {"starts": [0, fy, fx, 0],
                                          "sizes": [batch, span[0], span[1], channels],
                                          "strides": [1, strides[0], strides[1], 1]},
                           suffix=f"tap_{fy}_{fx}")
            taps.append(reshape(ctx, tap, [batch, *out_hw, channels, 1], f"tap_{fy}_{fx}_5d"))
    stacked = taps[0] if len(taps) == 1 else ctx.emit("concat", taps, {"axis": 4})
    values = emit(ctx, "reduceMax", stacked, axes=[4], keepDimensions=False)
    position = emit(ctx, "argMax", stacked, axis=4, keepDimensions=False,
                    outputDataType="int32")
    indices = emit(ctx, "add", emit(ctx, "cast", position, dataType="float32"),
                   ctx.scalar(0.1, "float32"), suffix="indices")
    return [ctx.activation(values, activation), indices]


@tflite_op("CUSTOM:MaxUnpooling2D",
           webnn=("floor", "ceil", "lesser", "where", "reshape", "equal", "transpose"))
def max_unpooling_2d(ctx: ImportContext, op: Operator):
    """Each value written back at its window position, zeros elsewhere: the output is
    [N, H * filter h, W * filter w, C]. With the stride equal to the filter size (as MediaPipe's
    models pool 2x2 by 2) the windows tile the output, so value (y, x) with index i lands in
    block (y, x) at offset i: a one-hot of the index over the window times the value, blocks
    laid out by a transpose. The kernel reads the index as int(i), truncating.

    (Indices outside [0, filter h * filter w), which MaxPoolingWithArgmax2D never gives, write
    into a neighbouring block in the kernel and nowhere here. The kernel computes, then ignores,
    the fused activation.)"""
    _, strides, window, _ = _pool_params(op)
    x = _float32_nhwc(ctx, 0, "input")
    indices = _float32_nhwc(ctx, 1, "indices")
    if indices.shape != x.shape:
        raise Unsupported(f"its indices {list(indices.shape)} and values {list(x.shape)} differ "
                          f"in shape")
    if strides != window:
        raise Unsupported(f"its strides {strides} differ from its filter size {window}: the "
                          f"windows overlap or leave gaps, and the kernel's write order would "
                          f"decide what overlapping writes leave")
    batch, height, width, channels = x.shape
    fh, fw = window
    count = fh * fw
    # int(i) truncates toward zero: ceil below zero, floor above.
    whole = emit(ctx, "where", emit(ctx, "lesser", indices, ctx.scalar(0, "float32")),
                 emit(ctx, "ceil", indices), emit(ctx, "floor", indices), suffix="truncate")
    lane = [batch, height, width, channels, 1]
    positions = ctx.constant(np.arange(count, dtype=np.float32), "float32",
                             name=f"{ctx.out_tensor().name}/window_positions")
    hit = emit(ctx, "equal", reshape(ctx, whole, lane, "index_5d"), positions)
    blocks = emit(ctx, "where", hit, reshape(ctx, x, lane, "value_5d"),
                  ctx.scalar(0, "float32"), suffix="blocks")
    blocks = reshape(ctx, blocks, [batch, height, width, channels, fh, fw], "blocks_6d")
    blocks = emit(ctx, "transpose", blocks, permutation=[0, 1, 4, 2, 5, 3])
    return [reshape(ctx, blocks, [batch, height * fh, width * fw, channels], "unpooled")]
