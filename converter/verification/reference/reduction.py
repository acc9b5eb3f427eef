"""Reference kernels for the reductions (reduceL1 ... reduceSumSquare), argMin, argMax and
cumulativeSum (spec: "Reduction operations", argMin/argMax, cumulativeSum).

Absent axes reduce every dimension; an empty list reduces none (the op is then element-wise).
Integer sums and products are exact in 64 bits and wrap into the operand's type when stored.
"""
from __future__ import annotations

import numpy as np

from .core import kernel, wide


def _axes(op, x) -> tuple[int, ...]:
    axes = op.attr("axes")
    return tuple(range(x.ndim)) if axes is None else tuple(axes)


def _log_sum_exp(x, axis, keepdims):
    """log(sum(exp(x))) with the maximum taken out first: the same value, without overflow."""
    if x.size == 0 or not axis:
        return np.log(np.exp(x))
    peak = np.max(x, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0)
    out = np.log(np.sum(np.exp(x - peak), axis=axis, keepdims=True)) + peak
    return out if keepdims else np.squeeze(out, axis=axis)


_REDUCERS = {
    "reduceSum": lambda x, a, k: np.sum(wide(x), axis=a, keepdims=k),
    "reduceSumSquare": lambda x, a, k: np.sum(wide(x) * wide(x), axis=a, keepdims=k),
    "reduceL1": lambda x, a, k: np.sum(np.abs(wide(x)), axis=a, keepdims=k),
    "reduceL2": lambda x, a, k: np.sqrt(np.sum(x * x, axis=a, keepdims=k)),
    "reduceMean": lambda x, a, k: np.mean(x, axis=a, keepdims=k),
    "reduceMax": lambda x, a, k: np.max(x, axis=a, keepdims=k),
    "reduceMin": lambda x, a, k: np.min(x, axis=a, keepdims=k),
    "reduceProduct": lambda x, a, k: np.prod(wide(x), axis=a, keepdims=k),
    "reduceLogSum": lambda x, a, k: np.log(np.sum(x, axis=a, keepdims=k)),
    "reduceLogSumExp": _log_sum_exp,
}


def _reduce(op, ins, env):
    x = ins[0]
    return np.asarray(_REDUCERS[op.op_type](x, _axes(op, x), op.attr("keepDimensions")))


kernel(*_REDUCERS)(_reduce)


@kernel("argMin", "argMax")
def arg_min_max(op, ins, env):
    """The index of the first smallest/largest element along axis (numpy keeps the first of
    equal values), in outputDataType."""
    x, axis = ins[0], op.attr("axis")
    pick = np.argmin if op.op_type == "argMin" else np.argmax
    out = pick(x, axis=axis, keepdims=op.attr("keepDimensions"))
    return out.astype(np.int64)


@kernel("cumulativeSum")
def cumulative_sum(op, ins, env):
    """Running sums along axis: inclusive (the element itself counted) or exclusive (only
    those before it), from the start or, when reversed, from the end."""
    x, axis = wide(ins[0]), op.attr("axis")
    if op.attr("reversed"):
        x = np.flip(x, axis=axis)
    sums = np.cumsum(x, axis=axis)
    if op.attr("exclusive"):
        # Shift by one position, a zero first: each sum of the elements strictly before.
        zero = np.zeros_like(np.take(sums, [0], axis=axis))
        sums = np.concatenate([zero, np.delete(sums, -1, axis=axis)], axis=axis)
    if op.attr("reversed"):
        sums = np.flip(sums, axis=axis)
    return sums
