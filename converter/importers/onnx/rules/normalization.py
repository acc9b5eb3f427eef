"""Normalizations: BatchNormalization (inference and training mode), InstanceNormalization,
LayerNormalization, GroupNormalization, LpNormalization, LRN and MeanVarianceNormalization.

WebNN has batch, instance and layer normalization; the others are written with them or with
reductions. instanceNormalization takes a 4-D input only, so other ranks are reshaped to
[N, C, spatial, 1] (instance statistics cover all spatial axes, so flattening them keeps
them).
"""
from __future__ import annotations

import numpy as np

from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..registry import Unsupported, onnx_op
from .activation import normalized_axis
from .conv import reshape, reshaped_input


def _spatial_size(shape) -> int:
    return int(np.prod(shape[2:], dtype=np.int64))


def in_float32(ctx: ImportContext, op_type: str, x: Operand, params: list[Operand | None],
               attrs: dict, suffix: str = "stash") -> Operand:
    """op_type(x, *params) computed in float32, cast back to x's type when it is float16.

    ONNX Runtime computes the statistics of a float16 layer (stash_type 1, the default),
    instance or group normalization in float32. In float16 an epsilon below 6e-8 is 0 (BERT's
    1e-12), so a constant row, variance 0, would give inf or NaN where ORT is finite; the
    mean and variance of a long row lose digits too. So the WebNN graph computes them in
    float32 whatever its backend does with float16 normalizations."""
    if x.data_type != "float16":
        return ctx.emit(op_type, [x, *params], attrs)

    def wide(operand: Operand | None) -> Operand | None:
        if operand is None:
            return None
        return ctx.emit("cast", [operand], {"dataType": "float32"}, suffix=suffix)

    y = ctx.emit(op_type, [wide(x), *(wide(p) for p in params)], attrs)
    return ctx.emit("cast", [y], {"dataType": x.data_type}, suffix=f"{suffix}_back")


@onnx_op("BatchNormalization", webnn=("batchNormalization", "reduceMean", "sub", "mul", "add"))
def batch_normalization(ctx: ImportContext, node: OnnxNode):
    if node.opset < 9 and node.attr("spatial", 1) == 0:
        raise Unsupported("spatial=0 (per-element statistics) has no WebNN form")
    x = ctx.operand(node.input(0))
    scale, bias, mean, var = (ctx.operand(node.input(i)) for i in (1, 2, 3, 4))
    epsilon = float(node.attr("epsilon", 1e-5))
    training = bool(node.attr("training_mode", 0)) if node.opset >= 14 else False
    extra = [o for o in node.outputs[1:] if o is not None]
    if not training:
        if extra:
            raise Unsupported("its running-statistics outputs exist only in training; "
                              "inference BatchNormalization has one output")
        return [ctx.emit("batchNormalization", [x, mean, var, scale, bias],
                         {"axis": 1, "epsilon": epsilon})]
    # Training mode normalizes with the batch's own statistics (population variance over every
    # axis but the channel) and blends them into the running ones with `momentum`.
    axes = [a for a in range(x.rank) if a != 1]
    reduce = {"axes": axes, "keepDimensions": False}
    batch_mean = ctx.emit("reduceMean", [x], reduce, suffix="batch_mean")
    channel = [1] * x.rank
    channel[1] = x.shape[1]
    centered = ctx.emit("sub", [x, reshape(ctx, batch_mean, channel, "mean_along_channel")])
    batch_var = ctx.emit("reduceMean", [ctx.emit("mul", [centered, centered])], reduce,
                         suffix="batch_var")
    y = ctx.emit("batchNormalization", [x, batch_mean, batch_var, scale, bias],
                 {"axis": 1, "epsilon": epsilon})
    momentum = float(node.attr("momentum", 0.9))
    dt = x.data_type

    def running(old: Operand, new: Operand) -> Operand:
        kept = ctx.emit("mul", [old, ctx.scalar(momentum, dt)])
        return ctx.emit("add", [kept, ctx.emit("mul", [new, ctx.scalar(1 - momentum, dt)])])

    return [y, running(mean, batch_mean), running(var, batch_var)]


@onnx_op("InstanceNormalization", webnn=("instanceNormalization", "reshape", "cast"))
def instance_normalization(ctx: ImportContext, node: OnnxNode):
    x = ctx.operand(node.input(0))
    if x.rank < 3:
        raise Unsupported(f"input rank {x.rank}: instance normalization needs [N, C, "
                          f"spatial...]")
    scale, bias = ctx.operand(node.input(1)), ctx.operand(node.input(2))
    attrs = {"epsilon": float(node.attr("epsilon", 1e-5))}
    if x.rank == 4:
        return [in_float32(ctx, "instanceNormalization", x, [scale, bias], attrs)]
    flat = reshape(ctx, x, (x.shape[0], x.shape[1], _spatial_size(x.shape), 1), "flatten")
    y = in_float32(ctx, "instanceNormalization", flat, [scale, bias], attrs)
    return [reshape(ctx, y, x.shape, "unflatten")]


def _per_normalized(ctx: ImportContext, name: str | None, shape: tuple, what: str):
    """Scale or bias as WebNN wants it: exactly the normalized shape. ONNX lets it broadcast,
    so a smaller one is expanded and leading 1s are dropped."""
    if name is None:
        return None
    have = tuple(ctx.shape(name))
    if have == shape:
        return ctx.operand(name)
    while len(have) > len(shape) and have[0] == 1:
        have = have[1:]
    if len(have) > len(shape):
        raise Unsupported(f"{what} shape {list(ctx.shape(name))} has more dimensions than the "
                          f"normalized shape {list(shape)}")
    operand = reshaped_input(ctx, name, have, f"{what}_reshape") if have != ctx.shape(name) \
        else ctx.operand(name)
    if have != shape:
        operand = ctx.emit("expand", [operand], {"newShape": list(shape)}, suffix=f"{what}_expand")
    return operand


@onnx_op("LayerNormalization", since=17,
         webnn=("layerNormalization", "expand", "reshape", "reduceMean", "sub", "mul", "add",
                "sqrt", "reciprocal", "cast"))
def layer_normalization(ctx: ImportContext, node: OnnxNode):
    x = ctx.operand(node.input(0))
    axis = normalized_axis(node.attr("axis", -1), x.rank)
    axes = list(range(axis, x.rank))
    shape = tuple(x.shape[axis:])
    epsilon = float(node.attr("epsilon", 1e-5))
    scale = _per_normalized(ctx, node.input(1), shape, "scale")
    bias = _per_normalized(ctx, node.input(2), shape, "bias")
    if int(node.attr("stash_type", 1)) == 1:  # float32 statistics (float16 loses epsilon)
        y = in_float32(ctx, "layerNormalization", x, [scale, bias],
                       {"axes": axes, "epsilon": epsilon})
    else:
        y = ctx.emit("layerNormalization", [x, scale, bias], {"axes": axes, "epsilon": epsilon})
    if all(o is None for o in node.outputs[1:]):
        return [y]
    mean, inv_std_dev = _layer_statistics(ctx, node, x, axes, epsilon)
    return [y, mean, inv_std_dev]


def _layer_statistics(ctx: ImportContext, node: OnnxNode, x: Operand, axes: list[int],
                      epsilon: float) -> tuple[Operand, Operand]:
    """LayerNormalization's Mean and InvStdDev outputs, as its function body defines them:
    Mean = ReduceMean(X), InvStdDev = 1 / sqrt(ReduceMean((X - Mean)^2) + epsilon), kept
    dimensions, computed in the stash type (float32 by default)."""
    stash = int(node.attr("stash_type", 1))
    if stash != 1:
        raise Unsupported(f"stash_type {stash}: only float32 statistics (1) are defined")
    if x.data_type != "float32":
        x = ctx.emit("cast", [x], {"dataType": "float32"}, suffix="stash")
    keep = {"axes": axes, "keepDimensions": True}
    mean = ctx.emit("reduceMean", [x], keep, suffix="mean")
    centered = ctx.emit("sub", [x, mean])
    variance = ctx.emit("reduceMean", [ctx.emit("mul", [centered, centered])], keep,
                        suffix="variance")
    std = ctx.emit("sqrt", [ctx.emit("add", [variance, ctx.scalar(epsilon, "float32")])])
    return mean, ctx.emit("reciprocal", [std], suffix="inv_std_dev")


@onnx_op("GroupNormalization", since=18,
         webnn=("layerNormalization", "reshape", "expand", "mul", "add", "cast"))
def group_normalization(ctx: ImportContext, node: OnnxNode):
    x = ctx.operand(node.input(0))
    if x.rank < 3:
        raise Unsupported(f"input rank {x.rank}: group normalization needs [N, C, spatial...]")
    groups = int(node.attr("num_groups"))
    n, channels = x.shape[0], x.shape[1]
    if groups <= 0 or channels % groups:
        raise Unsupported(f"{channels} channels do not split into num_groups={groups}")
    # Statistics per (instance, group): normalize [N, G, C/G * spatial] over its last axis.
    grouped = reshape(ctx, x, (n, groups, channels // groups * _spatial_size(x.shape)),
                      "group")
    normalized = in_float32(ctx, "layerNormalization", grouped, [None, None],
                            {"axes": [2], "epsilon": float(node.attr("epsilon", 1e-5))})
    y = reshape(ctx, normalized, x.shape, "ungroup")
    along = (1, channels) + (1,) * (x.rank - 2)
    # Opset 18 gives scale and bias per group (a spec bug fixed in 21, which gives them per
    # channel); each group's value applies to its C/G channels.
    per_group = node.opset < 21
    scale = _per_channel(ctx, node.input(1), groups, channels, along, per_group, "scale")
    bias = _per_channel(ctx, node.input(2), groups, channels, along, per_group, "bias")
    return [ctx.emit("add", [ctx.emit("mul", [y, scale]), bias])]


def _per_channel(ctx: ImportContext, name: str, groups: int, channels: int, along: tuple,
                 per_group: bool, what: str) -> Operand:
    size = int(np.prod(ctx.shape(name), dtype=np.int64))
    want = groups if per_group else channels
    if size != want:
        raise Unsupported(f"{what} has {size} values; this opset wants {want}")
    if not per_group:
        return reshaped_input(ctx, name, along, f"{what}_reshape")
    known = ctx.known(name)
    if known is not None:
        values = np.repeat(known.reshape(-1), channels // groups)
        return ctx.constant(values.reshape(along), ctx.dtype(name))
    column = reshape(ctx, ctx.operand(name), (groups, 1), f"{what}_column")
    spread = ctx.emit("expand", [column], {"newShape": [groups, channels // groups]},
                      suffix=f"{what}_spread")
    return reshape(ctx, spread, along, f"{what}_reshape")


@onnx_op("LpNormalization", webnn=("reduceL1", "reduceL2", "equal", "where", "div"))
def lp_normalization(ctx: ImportContext, node: OnnxNode):
    x = ctx.operand(node.input(0))
    axis = normalized_axis(node.attr("axis", -1), x.rank)
    p = int(node.attr("p", 2))
    if p not in (1, 2):
        raise Unsupported(f"p={p}: ONNX LpNormalization defines only p=1 and p=2")
    norm = ctx.emit("reduceL1" if p == 1 else "reduceL2", [x],
                    {"axes": [axis], "keepDimensions": True})
    # A zero norm means an all-zero slice, which ONNX leaves 0 (not 0 / 0 = NaN): divide it
    # by 1 instead.
    zero = ctx.emit("equal", [norm, ctx.scalar(0, x.data_type)])
    safe = ctx.emit("where", [zero, ctx.scalar(1, x.data_type), norm])
    return [ctx.emit("div", [x, safe])]


@onnx_op("LRN", webnn=("mul", "pad", "averagePool2d", "reshape", "add", "pow", "div"))
def lrn(ctx: ImportContext, node: OnnxNode):
    x = ctx.operand(node.input(0))
    if x.rank < 3:
        raise Unsupported(f"input rank {x.rank}: LRN needs [N, C, spatial...]")
    size = int(node.attr("size"))
    alpha = float(node.attr("alpha", 1e-4))
    beta = float(node.attr("beta", 0.75))
    bias = float(node.attr("bias", 1.0))
    dt = x.data_type
    n, channels, spatial = x.shape[0], x.shape[1], _spatial_size(x.shape)
    # The sum of squares over channels c - floor((size-1)/2) .. c + ceil((size-1)/2): the
    # channels become the pooled height of [N, 1, C, spatial], zero-padded so that every
    # window has `size` elements, and averaging them gives sum / size.
    squares = reshape(ctx, ctx.emit("mul", [x, x]), (n, 1, channels, spatial), "as_image")
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    padded = ctx.emit("pad", [squares], {"beginningPadding": [0, 0, before, 0],
                                         "endingPadding": [0, 0, after, 0]})
    mean = ctx.emit("averagePool2d", [padded], {"windowDimensions": [size, 1]})
    mean = reshape(ctx, mean, x.shape, "unflatten")
    # x / (bias + alpha / size * sum) ^ beta, where alpha / size * sum = alpha * mean
    base = ctx.emit("add", [ctx.emit("mul", [mean, ctx.scalar(alpha, dt)]),
                            ctx.scalar(bias, dt)])
    return [ctx.emit("div", [x, ctx.emit("pow", [base, ctx.scalar(beta, dt)])])]


@onnx_op("MeanVarianceNormalization", webnn=("reduceMean", "mul", "sub", "sqrt", "add", "div"))
def mean_variance_normalization(ctx: ImportContext, node: OnnxNode):
    # ONNX's function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9)
    x = ctx.operand(node.input(0))
    axes = sorted({normalized_axis(a, x.rank, "axes item")
                   for a in node.attr("axes", [0, 2, 3])})
    keep = {"axes": axes, "keepDimensions": True}
    dt = x.data_type
    mean = ctx.emit("reduceMean", [x], keep)
    mean_of_squares = ctx.emit("reduceMean", [ctx.emit("mul", [x, x])], keep)
    variance = ctx.emit("sub", [mean_of_squares, ctx.emit("mul", [mean, mean])])
    std = ctx.emit("add", [ctx.emit("sqrt", [variance]), ctx.scalar(1e-9, dt)])
    return [ctx.emit("div", [ctx.emit("sub", [x, mean]), std])]
