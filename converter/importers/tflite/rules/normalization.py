"""L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION, both over the last axis (channels)."""
from __future__ import annotations

import numpy as np

from ..context import ImportContext
from ..model_file import Operator
from ..registry import Unsupported, tflite_op
from ._common import emit, options

# TFLite divides by max(norm, 1e-6), so an all-zero row stays zero.
_L2_EPSILON = 1e-6


@tflite_op("L2_NORMALIZATION", webnn=("reduceL2", "max", "div"))
def l2_normalization(ctx: ImportContext, op: Operator):
    if op.options is not None and op.options.fusedActivationFunction:
        raise Unsupported("a fused activation on L2_NORMALIZATION, which LiteRT's kernel "
                          "rejects")
    x = ctx.real(0)
    if x.rank == 0:
        raise Unsupported("its input is a scalar")
    norm = emit(ctx, "reduceL2", x, axes=[x.rank - 1], keepDimensions=True)
    norm = emit(ctx, "max", norm, ctx.scalar(_L2_EPSILON, x.data_type))
    return [emit(ctx, "div", x, norm)]


@tflite_op("LOCAL_RESPONSE_NORMALIZATION", webnn=("mul", "matmul", "add", "pow"))
def local_response_normalization(ctx: ImportContext, op: Operator):
    """x * (bias + alpha * sum of x^2 over channels [c - radius, c + radius]) ^ -beta.

    The windowed sum is a product with a band matrix of ones, which also handles the edges
    (the window simply holds fewer channels there)."""
    o = options(op)
    x = ctx.real(0)
    if x.rank < 2:
        raise Unsupported(f"its input has rank {x.rank}; it needs channels and a batch")
    channels = x.shape[-1]
    r = int(o.radius)
    ctx.claim([channels, channels], 8)  # the band of channel distances, before it is made
    band = (np.abs(np.subtract.outer(np.arange(channels), np.arange(channels))) <= r)
    dt = x.data_type
    window = ctx.constant(band.astype(np.dtype(dt)), dt, name=f"{ctx.out_tensor().name}/window")
    sums = emit(ctx, "matmul", emit(ctx, "mul", x, x, suffix="square"), window)
    base = emit(ctx, "add", emit(ctx, "mul", sums, ctx.scalar(o.alpha, dt)),
                ctx.scalar(o.bias, dt))
    return [emit(ctx, "mul", x, emit(ctx, "pow", base, ctx.scalar(-o.beta, dt)))]
