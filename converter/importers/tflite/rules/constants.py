"""Ops whose results are known at conversion time from static shapes and constants: SHAPE,
RANK, ZEROS_LIKE, FILL, RANGE, BROADCAST_ARGS. They leave no op in the WebNN graph (a FILL of
a value computed at run time becomes an expand)."""
from __future__ import annotations

import math

import numpy as np

from ....ir.graph import shape_problem
from ..context import ImportContext
from ..model_file import TYPES, Operator
from ..registry import Unsupported, tflite_op
from ._common import emit, reshape


def _out_numpy(ctx: ImportContext, k: int = 0) -> np.dtype:
    info = TYPES.get(ctx.out_tensor(k).type)
    if info is None or info.numpy is None or info.webnn is None:
        raise Unsupported(f"its output {ctx.out_tensor(k)} has a type WebNN does not have")
    return info.numpy


@tflite_op("SHAPE")
def shape(ctx: ImportContext, op: Operator):
    return [np.asarray(ctx.shape(0), _out_numpy(ctx))]


@tflite_op("RANK")
def rank(ctx: ImportContext, op: Operator):
    return [np.asarray(ctx.rank(0), _out_numpy(ctx))]


@tflite_op("ZEROS_LIKE")
def zeros_like(ctx: ImportContext, op: Operator):
    # A broadcast view: it becomes a one-number constant, not a buffer of zeros.
    return [np.broadcast_to(np.zeros((), _out_numpy(ctx)), ctx.shape(0))]


@tflite_op("FILL", webnn=("expand",))
def fill(ctx: ImportContext, op: Operator):
    dims = [int(d) for d in ctx.require_known(0, "dimensions").reshape(-1)]
    if any(d <= 0 for d in dims):
        raise Unsupported(f"its dimensions {dims} include a 0; WebNN has no empty tensors")
    problem = shape_problem(dims)  # before numpy is asked for a view of that many elements
    if problem:
        raise Unsupported(f"its dimensions {dims} are not a WebNN shape: {problem}")
    value = ctx.known(1)
    if value is not None and ctx.quant(1) is None:
        return [np.broadcast_to(value.reshape(()).astype(_out_numpy(ctx)), dims)]
    x = reshape(ctx, ctx.passthrough(1), [])
    return [emit(ctx, "expand", x, newShape=dims)]


@tflite_op("RANGE")
def range_op(ctx: ImportContext, op: Operator):
    start, limit, delta = (ctx.require_known(k, what).reshape(()) for k, what in
                           ((0, "start"), (1, "limit"), (2, "delta")))
    if delta == 0:
        raise Unsupported("its delta is 0")
    if not all(np.isfinite(v) for v in (start, limit, delta)):
        raise Unsupported(f"range({start}, {limit}, {delta}) has a bound that is not finite")
    ctx.claim([max(math.ceil((float(limit) - float(start)) / float(delta)), 0)], 8)
    values = np.arange(start, limit, delta).astype(_out_numpy(ctx))
    if values.size == 0:
        raise Unsupported(f"range({start}, {limit}, {delta}) is empty; WebNN has no empty "
                          f"tensors")
    return [values]


@tflite_op("BROADCAST_ARGS")
def broadcast_args(ctx: ImportContext, op: Operator):
    a = [int(d) for d in ctx.require_known(0, "first shape").reshape(-1)]
    b = [int(d) for d in ctx.require_known(1, "second shape").reshape(-1)]
    try:
        out = np.broadcast_shapes(tuple(a), tuple(b))
    except ValueError:
        raise Unsupported(f"shapes {a} and {b} do not broadcast") from None
    return [np.asarray(out, _out_numpy(ctx))]
