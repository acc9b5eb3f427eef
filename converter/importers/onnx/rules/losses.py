"""Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

Both pick, per sample (and per extra position d1..dk), the input at the target class along
axis 1: `gatherElements` with the target as a [N, 1, d...] index. A target equal to
`ignore_index` may lie outside [0, C) (it is often -1 or -100), so it is replaced by 0 before
gathering and its loss and weight are zeroed after, as ONNX defines:

    loss[n, d] = -input[n, target[n, d], d] * weight[target[n, d]]   (0 where ignored)
    mean = sum(loss) / sum(weight[target] over the positions not ignored)

SoftmaxCrossEntropyLoss is the same applied to log_softmax(scores) over axis 1, whose value
is its optional second output.
"""
from __future__ import annotations

from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..registry import Unsupported, onnx_op
from ._emit import emit

_REDUCTIONS = ("none", "sum", "mean")


def _reshape(ctx, x: Operand, shape) -> Operand:
    return emit(ctx, "reshape", x, newShape=list(shape))


def _picked_loss(ctx: ImportContext, node: OnnxNode, log_prob: Operand) -> Operand:
    """The reduced (or per-position) loss of `log_prob` [N, C, d...] for the node's target and
    optional weight inputs."""
    reduction = node.attr("reduction", "mean")
    if reduction not in _REDUCTIONS:
        raise Unsupported(f"reduction '{reduction}' is not one of {', '.join(_REDUCTIONS)}")
    target = ctx.operand(node.input(1))
    if log_prob.rank < 2 or tuple(target.shape) != (log_prob.shape[0], *log_prob.shape[2:]):
        raise Unsupported(f"target shape {list(target.shape)} does not fit input shape "
                          f"{list(log_prob.shape)} (it must be [N, d1, ...] for [N, C, d1, ...])")
    dt = log_prob.data_type
    ignore = node.attr("ignore_index")
    index = target
    kept = None  # 1 where the target is not ignored, in the input's type
    if ignore is not None:
        ignored = emit(ctx, "equal", target, ctx.scalar(int(ignore), target.data_type))
        index = emit(ctx, "where", ignored, ctx.scalar(0, target.data_type), target)
        kept = emit(ctx, "where", ignored, ctx.scalar(0, dt), ctx.scalar(1, dt))
    column = _reshape(ctx, index, (target.shape[0], 1, *target.shape[1:]))
    picked = emit(ctx, "gatherElements", log_prob, column, axis=1)
    loss = emit(ctx, "neg", _reshape(ctx, picked, target.shape))
    weight = None
    if node.input(2) is not None:
        weight = emit(ctx, "gather", ctx.operand(node.input(2)), index, axis=0)
        loss = emit(ctx, "mul", loss, weight)
    if kept is not None:
        loss = emit(ctx, "mul", loss, kept)
        weight = kept if weight is None else emit(ctx, "mul", weight, kept)
    if reduction == "none":
        return loss
    total = emit(ctx, "reduceSum", loss, keepDimensions=False)
    if reduction == "sum":
        return total
    if weight is None:
        return emit(ctx, "div", total, ctx.scalar(float(target.size), dt))
    return emit(ctx, "div", total, emit(ctx, "reduceSum", weight, keepDimensions=False))


_OPS = ("gatherElements", "gather", "reshape", "neg", "mul", "equal", "where", "reduceSum",
        "div")


@onnx_op("NegativeLogLikelihoodLoss", since=12, webnn=_OPS)
def negative_log_likelihood_loss(ctx: ImportContext, node: OnnxNode):
    return [_picked_loss(ctx, node, ctx.operand(node.input(0)))]


@onnx_op("SoftmaxCrossEntropyLoss", since=12,
         webnn=_OPS + ("reduceMax", "sub", "exp", "log"))
def softmax_cross_entropy_loss(ctx: ImportContext, node: OnnxNode):
    scores = ctx.operand(node.input(0))
    if scores.rank < 2:
        raise Unsupported(f"scores of rank {scores.rank}: they must be [N, C, d1, ...]")
    # log_softmax over the classes: x - max - log(sum(exp(x - max))), which stays finite
    # where softmax underflows to 0.
    keep = {"axes": [1], "keepDimensions": True}
    shifted = emit(ctx, "sub", scores, emit(ctx, "reduceMax", scores, **keep))
    log_prob = emit(ctx, "sub", shifted,
                    emit(ctx, "log", emit(ctx, "reduceSum", emit(ctx, "exp", shifted), **keep)))
    return [_picked_loss(ctx, node, log_prob), log_prob]
