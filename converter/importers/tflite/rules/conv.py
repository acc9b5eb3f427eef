"""Convolutions and matrix products: CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, MediaPipe's
Convolution2DTransposeBias, FULLY_CONNECTED, BATCH_MATMUL.

TFLite stores activations NHWC and filters OHWI (depthwise: 1HW(C*multiplier)), which WebNN
conv2d takes as they are with inputLayout "nhwc" and filterLayout "ohwi" / "ihwo": no transpose
of the data or the weights.
"""
from __future__ import annotations

import struct

from ....ir import Operand
from ..context import ImportContext
from ..model_file import Operator
from ..registry import Unsupported, tflite_op
from ._common import SAME, VALID, emit, options, positive, reshape, same_padding, \
    spatial_padding, transpose
from ._hybrid import WEBNN_OPS as HYBRID, dynamically_quantized, is_hybrid


def _bias(ctx: ImportContext, k: int) -> Operand | None:
    return ctx.real(k) if ctx.has(k) else None


def _activation(ctx: ImportContext, k: int, weights: int, axes, symmetric: bool = False
                ) -> Operand:
    """Input k's real values as the op's kernel reads them: quantized to int8 and back over
    `axes` when LiteRT runs the op as a hybrid one (float input, int8 weights)."""
    x = ctx.real(k)
    return dynamically_quantized(ctx, x, axes, symmetric) if is_hybrid(ctx, k, weights) else x


def _own_kernel(ctx: ImportContext, weights: int) -> bool:
    """Whether LiteRT's own kernel runs the op, not XNNPACK's: XNNPACK takes constant weights
    only. The two quantize a hybrid op's input differently (see _hybrid)."""
    return ctx.known(weights) is None


def _rank4(ctx: ImportContext, k: int, what: str) -> None:
    if ctx.rank(k) != 4:
        raise Unsupported(f"its {what} has rank {ctx.rank(k)}; it must be 4")


@tflite_op("CONV_2D", webnn=("conv2d", "relu", "clamp") + HYBRID)
def conv_2d(ctx: ImportContext, op: Operator):
    o = options(op)
    _rank4(ctx, 0, "input")
    _rank4(ctx, 1, "filter")
    # LiteRT's own hybrid conv quantizes symmetrically for a per-tensor filter scale
    q = ctx.quant(1)
    symmetric = q is not None and not q.per_channel and _own_kernel(ctx, 1)
    x, w = _activation(ctx, 0, 1, [1, 2, 3], symmetric), ctx.real(1)
    channels, per_group = x.shape[3], w.shape[3]
    if channels % per_group:
        raise Unsupported(f"its input has {channels} channels, not a multiple of the filter's "
                          f"{per_group}")
    strides = [positive(o.strideH, "stride height"), positive(o.strideW, "stride width")]
    dilations = [positive(o.dilationHFactor, "dilation height"),
                 positive(o.dilationWFactor, "dilation width")]
    y = emit(ctx, "conv2d", x, w, _bias(ctx, 2),
             padding=spatial_padding(o.padding, x.shape[1:3], w.shape[1:3], strides, dilations),
             strides=strides, dilations=dilations, groups=channels // per_group,
             inputLayout="nhwc", filterLayout="ohwi")
    return [ctx.activation(y, o.fusedActivationFunction)]


@tflite_op("DEPTHWISE_CONV_2D", webnn=("conv2d", "relu", "clamp") + HYBRID)
def depthwise_conv_2d(ctx: ImportContext, op: Operator):
    o = options(op)
    _rank4(ctx, 0, "input")
    _rank4(ctx, 1, "filter")
    x, w = _activation(ctx, 0, 1, [1, 2, 3]), ctx.real(1)
    channels, outputs = x.shape[3], w.shape[3]
    if w.shape[0] != 1 or outputs % channels:
        raise Unsupported(f"its filter {list(w.shape)} is not [1, height, width, "
                          f"{channels} x multiplier]")
    if o.depthMultiplier and o.depthMultiplier * channels != outputs:
        raise Unsupported(f"depth_multiplier {o.depthMultiplier} disagrees with its filter's "
                          f"{outputs} channels for {channels} input channels")
    strides = [positive(o.strideH, "stride height"), positive(o.strideW, "stride width")]
    dilations = [positive(o.dilationHFactor, "dilation height"),
                 positive(o.dilationWFactor, "dilation width")]
    # One group per input channel; [1, H, W, C * multiplier] is WebNN's "ihwo" as it stands.
    y = emit(ctx, "conv2d", x, w, _bias(ctx, 2),
             padding=spatial_padding(o.padding, x.shape[1:3], w.shape[1:3], strides, dilations),
             strides=strides, dilations=dilations, groups=channels,
             inputLayout="nhwc", filterLayout="ihwo")
    return [ctx.activation(y, o.fusedActivationFunction)]


def _transpose_conv(ctx: ImportContext, x: Operand, w: Operand, bias: Operand | None,
                    out_hw: list[int], padding_code: int, strides: list[int]) -> Operand:
    """convTranspose2d as TFLite computes it: output row o gathers input row i through filter
    tap k where o + pad_begin = i * stride + k, for o in [0, out) only. pad_begin is the SAME
    padding of a convolution from the output size back to the input size."""
    in_hw, window = list(x.shape[1:3]), list(w.shape[1:3])
    if x.shape[3] != w.shape[3]:
        raise Unsupported(f"its input has {x.shape[3]} channels, its filter {w.shape[3]}")
    padding, output_padding = [], []
    for i in range(2):
        begin = 0 if padding_code == VALID else same_padding(out_hw[i], window[i], strides[i])[0]
        if padding_code not in (SAME, VALID):
            raise Unsupported(f"padding code {padding_code} is neither SAME nor VALID")
        end = (in_hw[i] - 1) * strides[i] + window[i] - begin - out_hw[i]
        padding += [begin, max(end, 0)]
        output_padding.append(max(-end, 0))
    return emit(ctx, "convTranspose2d", x, w, bias, padding=padding, strides=strides,
                outputPadding=output_padding, inputLayout="nhwc", filterLayout="ohwi")


@tflite_op("TRANSPOSE_CONV", webnn=("convTranspose2d", "relu", "clamp") + HYBRID)
def transpose_conv(ctx: ImportContext, op: Operator):
    o = options(op)
    shape = [int(d) for d in ctx.require_known(0, "output shape").reshape(-1)]
    _rank4(ctx, 2, "input")
    _rank4(ctx, 1, "filter")
    x, w = _activation(ctx, 2, 1, [1, 2, 3]), ctx.real(1)
    if len(shape) != 4 or shape[0] != x.shape[0] or shape[3] != w.shape[0]:
        raise Unsupported(f"its output shape {shape} does not fit input {list(x.shape)} and "
                          f"filter {list(w.shape)}")
    strides = [positive(o.strideH, "stride height"), positive(o.strideW, "stride width")]
    y = _transpose_conv(ctx, x, w, _bias(ctx, 3), shape[1:3], o.padding, strides)
    return [ctx.activation(y, getattr(o, "fusedActivationFunction", 0))]


# TfLitePadding, as MediaPipe's op stores it in its custom options.
_MP_PADDING = {1: SAME, 2: VALID}


@tflite_op("CUSTOM:Convolution2DTransposeBias", webnn=("convTranspose2d",))
def convolution_2d_transpose_bias(ctx: ImportContext, op: Operator):
    """MediaPipe's transposed convolution with bias. Its options are a raw struct of three
    int32 (padding, stride width, stride height), not a flexbuffer. The output is in * stride
    for SAME padding and (in - 1) * stride + filter for VALID."""
    raw = op.custom_options or b""
    if len(raw) < 12:
        raise Unsupported(f"its custom options have {len(raw)} bytes; they need 12 (padding, "
                          f"stride width, stride height)")
    code, stride_w, stride_h = struct.unpack_from("<3i", raw, 0)
    if code not in _MP_PADDING:
        raise Unsupported(f"its padding code {code} is neither SAME (1) nor VALID (2)")
    _rank4(ctx, 0, "input")
    _rank4(ctx, 1, "filter")
    x, w = ctx.real(0), ctx.real(1)
    strides = [positive(stride_h, "stride height"), positive(stride_w, "stride width")]
    padding = _MP_PADDING[code]
    if padding == SAME:
        out_hw = [x.shape[1] * strides[0], x.shape[2] * strides[1]]
    else:
        out_hw = [(x.shape[1 + i] - 1) * strides[i] + w.shape[1 + i] for i in range(2)]
    return [_transpose_conv(ctx, x, w, _bias(ctx, 2), out_hw, padding, strides)]


@tflite_op("FULLY_CONNECTED", webnn=("gemm", "reshape", "relu", "clamp") + HYBRID)
def fully_connected(ctx: ImportContext, op: Operator):
    """y = x W^T + b over the last axis: gemm with bTranspose. The input is taken as rows of
    W's input size; keep_num_dims keeps its leading dimensions, else the result is 2-D."""
    o = op.options
    if o is not None and o.weightsFormat != 0:
        raise Unsupported("its weights are in the SHUFFLED4x16INT8 format")
    x, w = ctx.real(0), ctx.real(1)
    if w.rank != 2:
        raise Unsupported(f"its weights have rank {w.rank}; they must be 2")
    units, depth = w.shape
    if x.size % depth:
        raise Unsupported(f"its input {list(x.shape)} does not split into rows of {depth}")
    rows = x.size // depth
    x2 = reshape(ctx, x, [rows, depth], "rows")
    if is_hybrid(ctx, 0, 1):  # one scale per row; LiteRT's own kernel: symmetric by default
        asymmetric = o is not None and o.asymmetricQuantizeInputs
        x2 = dynamically_quantized(ctx, x2, [1], _own_kernel(ctx, 1) and not asymmetric)
    bias = _bias(ctx, 2)
    if bias is not None:
        # The kernel reads the bias as its N values whatever its shape; litert-torch stores a
        # folded layer scale as [1, 1, 1, N]. gemm broadcasts c, so it takes them as [N].
        if bias.size != units:
            raise Unsupported(f"its bias {list(bias.shape)} has {bias.size} values for "
                              f"{units} units")
        bias = reshape(ctx, bias, [units], "bias")
    y = emit(ctx, "gemm", x2, w, bias, bTranspose=True)
    keep = o is not None and o.keepNumDims
    if keep:
        y = reshape(ctx, y, list(x.shape[:-1]) + [units])
    return [ctx.activation(y, o.fusedActivationFunction if o is not None else 0)] \
        + [None] * (len(op.outputs) - 1)


@tflite_op("BATCH_MATMUL", webnn=("matmul", "transpose") + HYBRID)
def batch_matmul(ctx: ImportContext, op: Operator):
    o = op.options
    a, b = ctx.real(0), ctx.real(1)
    if a.rank < 2 or b.rank < 2:
        raise Unsupported("its operands need rank 2 or more")

    def adjoint(x: Operand) -> Operand:
        perm = list(range(x.rank))
        perm[-2], perm[-1] = perm[-1], perm[-2]
        return transpose(ctx, x, perm, "adjoint")

    if o is not None and o.adjX:
        a = adjoint(a)
    if o is not None and o.adjY:
        b = adjoint(b)
    if is_hybrid(ctx, 0, 1):  # one scale per row of the product's left matrix
        if _own_kernel(ctx, 1):
            # (measured: off from float math and from either quantization by whole units)
            raise Unsupported("its right operand is int8 computed in the graph, which LiteRT's "
                              "hybrid kernel does not compute as documented")
        a = dynamically_quantized(ctx, a, [a.rank - 1])
    return [emit(ctx, "matmul", a, b)]
