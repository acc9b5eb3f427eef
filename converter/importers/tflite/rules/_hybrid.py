"""Dynamic-range ("hybrid") ops: int8 weights, float32 activations.

LiteRT does not compute such an op in float on dequantized weights. It quantizes the float
input to int8 at run time, multiplies integers and scales the sums back, so its result carries
the input's rounding (about 1% of the output range): an import as plain float math misses it.

What the interpreter the project runs (ai-edge-litert, default kernel set: XNNPACK where it
applies) computes, measured against numpy on one-op models (tests/importers/tflite/
test_hybrid.py):
- FULLY_CONNECTED and BATCH_MATMUL: each row (the last axis) quantized asymmetrically, with or
  without the op's asymmetric_quantize_inputs (XNNPACK's dynamically quantized GEMM always is).
  XNNPACK takes constant weights only; with weights computed in the graph LiteRT's own kernel
  runs, and FULLY_CONNECTED's quantizes symmetrically (max|x|/127) unless the option is set
  (BATCH_MATMUL's gives numbers no quantization explains: refused).
- CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV: each image (all of H, W, C) quantized
  asymmetrically; LiteRT's own CONV_2D kernel (weights computed in the graph) symmetrically
  when the filter has one scale.
- UNIDIRECTIONAL_SEQUENCE_RNN and _LSTM (no XNNPACK): each row of the step's input and of
  the hidden state, symmetrically unless asymmetric_quantize_inputs is set.
Symmetric: scale = max|x| / 127, q = round(x / scale), within [-127, 127].
Asymmetric: rmin = min(0, min x), rmax = max(0, max x), scale = (rmax - rmin) / 255, zero
point the integer in [-128, 127] nearest to -128 - rmin/scale or to 127 - rmax/scale, whichever
of the two ends the smaller error (TFLite's AsymmetricQuantizeFloats and XNNPACK's qd8
parameters pick the same one), q = clamp(round(x / scale) + zp).
A slice of zeros gets scale 1 (its q - zp is 0 whatever the zero point).
Rounding: quantizeLinear rounds ties to even, as XNNPACK does; LiteRT's own kernels round
them away from zero. A tie needs x / scale to land exactly on .5, which float inputs of a model
hardly ever do, so the difference is left.

The product then runs in float on (q - zp) * scale and the dequantized weights: each term is
an integer product (|q - zp| <= 255, |w| <= 127) times two scales, exact in float32 below 2^24
per sum, i.e. up to about 500 terms; past that the float sum rounds where LiteRT's int32 sum
does not, by float32's relative 6e-8 per term, far inside the parity policy.
(An LSTM with int8 weights is therefore unrolled: WebNN's lstm op keeps the hidden state
inside, where it cannot be quantized.)
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ....ir import Operand
from ..context import ImportContext
from ._common import emit

# the WebNN ops the emulation emits, for the rules' registered op lists
WEBNN_OPS = ("reduceMin", "reduceMax", "min", "max", "abs", "sub", "div", "add", "equal",
             "greater", "where", "quantizeLinear", "dequantizeLinear")


def is_hybrid(ctx: ImportContext, activation: int, weights: int) -> bool:
    """Whether LiteRT runs the op on input `activation` and `weights` through its hybrid path:
    float32 activations (not quantized) with int8 quantized weights."""
    return ctx.quant(activation) is None and ctx.desc(activation).data_type == "float32" \
        and ctx.quant(weights) is not None and ctx.tensor(weights).type_name == "INT8"


def dynamically_quantized(ctx: ImportContext, x: Operand, axes: Sequence[int],
                          symmetric: bool = False) -> Operand:
    """x quantized to int8 and back, one scale (and zero point) for each slice over `axes`, as
    LiteRT quantizes a hybrid op's float input at run time (see the module's docstring)."""
    axes = [int(a) for a in axes]
    if symmetric:
        return _symmetric(ctx, x, axes)
    f32 = "float32"
    zero, one = ctx.scalar(0, f32), ctx.scalar(1, f32)
    low = emit(ctx, "min", emit(ctx, "reduceMin", x, axes=axes, keepDimensions=True), zero,
               suffix="hybrid/rmin")
    high = emit(ctx, "max", emit(ctx, "reduceMax", x, axes=axes, keepDimensions=True), zero,
                suffix="hybrid/rmax")
    span = emit(ctx, "sub", high, low, suffix="hybrid/span")
    # all zeros: span 0, and any scale gives q = zp; 1 keeps the division finite
    scale = emit(ctx, "where", emit(ctx, "equal", span, zero),
                 one, emit(ctx, "div", span, ctx.scalar(255, f32)), suffix="hybrid/scale")
    # The zero point from the minimum errs by 128 - rmin/scale, the one from the maximum by
    # 127 + rmax/scale: the minimum's is chosen when (rmin + rmax) / scale > 1.
    from_min = emit(ctx, "sub", ctx.scalar(-128, f32), emit(ctx, "div", low, scale))
    from_max = emit(ctx, "sub", ctx.scalar(127, f32), emit(ctx, "div", high, scale))
    closer_min = emit(ctx, "greater", emit(ctx, "add", low, high), scale)
    point = emit(ctx, "where", closer_min, from_min, from_max, suffix="hybrid/zero_point_real")
    # quantizeLinear with scale 1 rounds the zero point and saturates it to int8's range
    unit = ctx.constant(np.ones([1] * x.rank, np.float32), f32)
    origin = ctx.constant(np.zeros([1] * x.rank, np.int8), "int8")
    point = emit(ctx, "quantizeLinear", point, unit, origin, suffix="hybrid/zero_point")
    q = emit(ctx, "quantizeLinear", x, scale, point, suffix="hybrid/quantize")
    return emit(ctx, "dequantizeLinear", q, scale, point, suffix="hybrid/dequantize")


def _symmetric(ctx: ImportContext, x: Operand, axes: list[int]) -> Operand:
    f32 = "float32"
    zero = ctx.scalar(0, f32)
    top = emit(ctx, "reduceMax", emit(ctx, "abs", x), axes=axes, keepDimensions=True,
               suffix="hybrid/range")
    # all zeros: any scale gives q = 0; 1 keeps the division finite
    scale = emit(ctx, "where", emit(ctx, "equal", top, zero), ctx.scalar(1, f32),
                 emit(ctx, "div", top, ctx.scalar(127, f32)), suffix="hybrid/scale")
    # |x| / scale <= 127, so int8's saturation never bites and q stays in [-127, 127]
    origin = ctx.constant(np.zeros(scale.shape, np.int8), "int8")
    q = emit(ctx, "quantizeLinear", x, scale, origin, suffix="hybrid/quantize")
    return emit(ctx, "dequantizeLinear", q, scale, origin, suffix="hybrid/dequantize")
