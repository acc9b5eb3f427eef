"""ONNX reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
ReduceLogSum, ReduceLogSumExp and ReduceSumSquare; and CumProd (CumSum, one WebNN op, is with
the shape ops).

Axes are an attribute in older opsets (ReduceSum before 13, the others before 18) and an input
after, which WebNN needs known at conversion time. No axes (or an empty list) reduces every
axis, unless noop_with_empty_axes is set: then ONNX reduces over no axes, applying only the
element-wise part (ReduceSumSquare squares, ReduceLogSum takes the log, ReduceSum passes the
value through), which is exactly WebNN's meaning of an empty `axes` list.
"""
from __future__ import annotations

import numpy as np

from .... import dtypes
from ..context import ImportContext, OnnxNode
from ..registry import Unsupported, onnx_op
from .shape_ops import known_ints, known_scalar, normalize_axes

_REDUCE = {"ReduceSum": "reduceSum", "ReduceMean": "reduceMean", "ReduceMax": "reduceMax",
           "ReduceMin": "reduceMin", "ReduceProd": "reduceProduct", "ReduceL1": "reduceL1",
           "ReduceL2": "reduceL2", "ReduceLogSum": "reduceLogSum",
           "ReduceLogSumExp": "reduceLogSumExp", "ReduceSumSquare": "reduceSumSquare"}


def _reduce_rule(webnn: str):
    def rule(ctx: ImportContext, node: OnnxNode):
        shape = ctx.shape(node.input(0))
        axes = known_ints(ctx, node, 1, "axes", "the axes input")
        attrs = {"keepDimensions": bool(node.attr("keepdims", 1))}
        if axes:
            attrs["axes"] = sorted(normalize_axes(axes, len(shape)))
        elif node.attr("noop_with_empty_axes", 0):
            attrs["axes"] = []
        # else: `axes` absent, and WebNN reduces every axis.
        return [ctx.emit(webnn, [ctx.operand(node.input(0))], attrs)]
    return rule


for _onnx, _webnn in _REDUCE.items():
    onnx_op(_onnx, webnn=(_webnn,))(_reduce_rule(_webnn))


# Each prefix product is one step, so the axis length is bounded to keep graphs small.
CUMPROD_LIMIT = 1024


@onnx_op("CumProd", since=26, webnn=("slice", "mul", "concat"))
def cumprod(ctx: ImportContext, node: OnnxNode):
    """Running products along an axis, one multiplication per element in the direction of
    the scan (exactly the reference's order of rounding); exclusive ones start from 1."""
    x = ctx.operand(node.input(0))
    axis = normalize_axes([known_scalar(ctx, node.input(1), "the axis input")], x.rank)[0]
    length = x.shape[axis]
    if length > CUMPROD_LIMIT:
        raise Unsupported(f"an axis of {length}: CumProd is unrolled, one step per element, "
                          f"up to {CUMPROD_LIMIT}")
    sizes = list(x.shape)
    sizes[axis] = 1

    def element(i: int):
        starts = [0] * x.rank
        starts[axis] = i
        return ctx.emit("slice", [x], {"starts": starts, "sizes": sizes})

    order = range(length - 1, -1, -1) if node.attr("reverse", 0) else range(length)
    exclusive = bool(node.attr("exclusive", 0))
    running, parts = None, {}
    for i in order:
        if exclusive:
            parts[i] = running if running is not None else \
                ctx.constant(np.ones(sizes, dtypes.numpy_dtype(x.data_type)), x.data_type)
        value = element(i)
        running = value if running is None else ctx.emit("mul", [running, value])
        if not exclusive:
            parts[i] = running
    ordered = [parts[i] for i in range(length)]
    if len(ordered) == 1:
        return [ctx.emit("identity", [ordered[0]])]
    return [ctx.emit("concat", ordered, {"axis": axis})]
