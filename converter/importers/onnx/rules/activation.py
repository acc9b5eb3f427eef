"""Activations: the one-to-one ones (Relu, Elu, HardSigmoid ...), those written with a few WebNN
ops (Selu, Celu, Mish, ThresholdedRelu, Shrink, Gelu's tanh form), Clip, and the softmax
family (Softmax, LogSoftmax, Hardmax), including its opset < 13 form, which flattens the
input to 2-D at `axis` and normalizes each row.
"""
from __future__ import annotations

import math

import numpy as np

from .... import dtypes
from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..registry import Unsupported, onnx_op

# ONNX op -> (WebNN op, {ONNX attribute: (WebNN option, ONNX default)}).
_DIRECT = {
    "Relu": ("relu", {}),
    "Sigmoid": ("sigmoid", {}),
    "Tanh": ("tanh", {}),
    "Softplus": ("softplus", {}),
    "Softsign": ("softsign", {}),
    "HardSwish": ("hardSwish", {}),
    "LeakyRelu": ("leakyRelu", {"alpha": ("alpha", 0.01)}),
    "Elu": ("elu", {"alpha": ("alpha", 1.0)}),
    "HardSigmoid": ("hardSigmoid", {"alpha": ("alpha", 0.2), "beta": ("beta", 0.5)}),
}


def _direct_rule(webnn: str, options: dict):
    def rule(ctx: ImportContext, node: OnnxNode):
        attrs = {name: float(node.attr(onnx_name, default))
                 for onnx_name, (name, default) in options.items()}
        return [ctx.emit(webnn, [ctx.operand(node.input(0))], attrs)]
    return rule


for _onnx, (_webnn, _options) in _DIRECT.items():
    onnx_op(_onnx, webnn=(_webnn,))(_direct_rule(_webnn, _options))


def normalized_axis(axis: int, rank: int, what: str = "axis") -> int:
    """ONNX allows negative axes counted from the end; WebNN takes them non-negative."""
    if not -rank <= axis < max(rank, 1):
        raise Unsupported(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


@onnx_op("PRelu", webnn=("prelu",))
def prelu(ctx: ImportContext, node: OnnxNode):
    return [ctx.emit("prelu", [ctx.operand(node.input(0)), ctx.operand(node.input(1))])]


@onnx_op("Selu", webnn=("elu", "mul"))
def selu(ctx: ImportContext, node: OnnxNode):
    # gamma * (x > 0 ? x : alpha * (exp(x) - 1)) = gamma * elu(x, alpha)
    x = ctx.operand(node.input(0))
    alpha = float(node.attr("alpha", 1.67326319217681884765625))
    gamma = float(node.attr("gamma", 1.05070102214813232421875))
    elu = ctx.emit("elu", [x], {"alpha": alpha})
    return [ctx.emit("mul", [elu, ctx.scalar(gamma, x.data_type)])]


@onnx_op("Celu", webnn=("elu", "mul", "div"))
def celu(ctx: ImportContext, node: OnnxNode):
    # max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) = alpha * elu(x / alpha, 1)
    x = ctx.operand(node.input(0))
    alpha = float(node.attr("alpha", 1.0))
    if alpha == 1.0:
        return [ctx.emit("elu", [x], {"alpha": 1.0})]
    scaled = ctx.emit("div", [x, ctx.scalar(alpha, x.data_type)])
    elu = ctx.emit("elu", [scaled], {"alpha": 1.0})
    return [ctx.emit("mul", [elu, ctx.scalar(alpha, x.data_type)])]


@onnx_op("Mish", webnn=("softplus", "tanh", "mul"))
def mish(ctx: ImportContext, node: OnnxNode):
    # x * tanh(softplus(x))
    x = ctx.operand(node.input(0))
    return [ctx.emit("mul", [x, ctx.emit("tanh", [ctx.emit("softplus", [x])])])]


@onnx_op("Swish", since=24, webnn=("sigmoid", "mul"))
def swish(ctx: ImportContext, node: OnnxNode):
    # x * sigmoid(alpha x)
    x = ctx.operand(node.input(0))
    alpha = float(node.attr("alpha", 1.0))
    scaled = x if alpha == 1.0 else ctx.emit("mul", [x, ctx.scalar(alpha, x.data_type)])
    return [ctx.emit("mul", [x, ctx.emit("sigmoid", [scaled])])]


@onnx_op("ThresholdedRelu", webnn=("greater", "where"))
def thresholded_relu(ctx: ImportContext, node: OnnxNode):
    # x where x > alpha, else 0
    x = ctx.operand(node.input(0))
    alpha = float(node.attr("alpha", 1.0))
    above = ctx.emit("greater", [x, ctx.scalar(alpha, x.data_type)])
    return [ctx.emit("where", [above, x, ctx.scalar(0, x.data_type)])]


@onnx_op("Shrink", webnn=("lesser", "greater", "add", "sub", "where"))
def shrink(ctx: ImportContext, node: OnnxNode):
    # x + bias below -lambd, x - bias above lambd, 0 between
    x = ctx.operand(node.input(0))
    dt = x.data_type
    lambd, bias = float(node.attr("lambd", 0.5)), float(node.attr("bias", 0.0))
    if dt not in ("float32", "float16") and (lambd != int(lambd) or bias != int(bias)):
        raise Unsupported(f"lambd {lambd} / bias {bias} are not integers, but the input is {dt}")
    below = ctx.emit("lesser", [x, _number(ctx, -lambd, dt)])
    above = ctx.emit("greater", [x, _number(ctx, lambd, dt)])
    raised = ctx.emit("add", [x, _number(ctx, bias, dt)])
    lowered = ctx.emit("sub", [x, _number(ctx, bias, dt)])
    inner = ctx.emit("where", [above, lowered, ctx.scalar(0, dt)])
    return [ctx.emit("where", [below, raised, inner])]


def _number(ctx: ImportContext, value: float, dt: str) -> Operand:
    if dt in ("float32", "float16"):
        return ctx.scalar(value, dt)
    info = np.iinfo(dtypes.numpy_dtype(dt))
    return ctx.scalar(int(min(max(value, info.min), info.max)), dt)


@onnx_op("Gelu", since=20, webnn=("gelu", "mul", "add", "tanh", "pow"))
def gelu(ctx: ImportContext, node: OnnxNode):
    x = ctx.operand(node.input(0))
    approximate = node.attr("approximate", "none")
    if approximate == "none":
        return [ctx.emit("gelu", [x])]
    if approximate != "tanh":
        raise Unsupported(f"approximate '{approximate}' is not an ONNX Gelu mode")
    # 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
    dt = x.data_type
    cube = ctx.emit("mul", [x, ctx.emit("mul", [x, x])])
    inner = ctx.emit("add", [x, ctx.emit("mul", [cube, ctx.scalar(0.044715, dt)])])
    t = ctx.emit("tanh", [ctx.emit("mul", [inner, ctx.scalar(math.sqrt(2 / math.pi), dt)])])
    one_plus = ctx.emit("add", [t, ctx.scalar(1.0, dt)])
    return [ctx.emit("mul", [ctx.emit("mul", [x, ctx.scalar(0.5, dt)]), one_plus])]


# -- Clip ----------------------------------------------------------------------------------
def _bound(ctx: ImportContext, node: OnnxNode, index: int, attr: str):
    """A Clip bound: (known number or None, operand or None). Opset < 11 has attributes."""
    if node.opset < 11:
        value = node.attr(attr)
        return (None if value is None else float(value)), None
    name = node.input(index)
    if name is None:
        return None, None
    known = ctx.known(name)
    if known is not None:
        if known.size != 1:
            raise Unsupported(f"Clip {attr} '{name}' has {known.size} values; ONNX wants a "
                              f"scalar")
        return known.reshape(-1)[0].item(), None
    return None, ctx.operand(name)


def _float_ends(lo, hi, dt: str):
    """ONNX Clip's known bounds as WebNN's clamp means them, on a float input. An absent bound
    is numeric_limits::lowest() / max(), the largest finite values, so an infinite input comes
    out finite; a NaN bound clamps nothing (ONNX Runtime's max(x, NaN) keeps x), where clamp's
    NaN bound gives NaN. Integer ends are the type's own, so nothing changes there."""
    if dt not in ("float32", "float16"):
        return lo, hi
    big = float(np.finfo(dtypes.numpy_dtype(dt)).max)
    lo = -big if lo is None else (None if math.isnan(lo) else lo)
    hi = big if hi is None else (None if math.isnan(hi) else hi)
    return lo, hi


@onnx_op("Clip", webnn=("clamp", "max", "min"))
def clip(ctx: ImportContext, node: OnnxNode):
    x = ctx.operand(node.input(0))
    lo, lo_operand = _bound(ctx, node, 1, "min")
    hi, hi_operand = _bound(ctx, node, 2, "max")
    if node.opset < 11 and not (-math.inf if lo is None else lo) <= (
            math.inf if hi is None else hi):
        # Clip-6's attributes: ONNX Runtime refuses the model unless min <= max (NaN is not).
        raise Unsupported(f"Clip min {lo} is not <= max {hi}: ONNX Runtime refuses such a "
                          f"Clip before opset 11")
    lo_known, hi_known = _float_ends(lo, hi, x.data_type)
    lo = lo_known if lo_operand is None else lo
    hi = hi_known if hi_operand is None else hi
    if lo_operand is None and hi_operand is None and not (
            lo is not None and hi is not None and lo > hi):
        attrs = {}
        if lo is not None:
            attrs["minValue"] = lo
        if hi is not None:
            attrs["maxValue"] = hi
        return [ctx.emit("clamp", [x], attrs)]
    # Bounds computed in the graph, or min > max (ONNX then gives max everywhere, where WebNN's
    # clamp rejects the pair): min(max(x, lo), hi), which is ONNX's definition.
    y = x
    if lo is not None or lo_operand is not None:
        bound = lo_operand if lo_operand is not None else _number(ctx, lo, x.data_type)
        y = ctx.emit("max", [y, bound])
    if hi is not None or hi_operand is not None:
        bound = hi_operand if hi_operand is not None else _number(ctx, hi, x.data_type)
        y = ctx.emit("min", [y, bound])
    return [y if y is not x else ctx.emit("identity", [x])]


# -- Softmax, LogSoftmax, Hardmax ----------------------------------------------------------
def _along_axis(ctx: ImportContext, node: OnnxNode, compute):
    """Apply compute(x, axis) as ONNX defines the softmax family at the node's opset: along
    `axis` (default -1) from opset 13; before, on the input flattened to 2-D at `axis`
    (default 1), along its rows."""
    x = ctx.operand(node.input(0))
    if node.opset >= 13:
        return [compute(x, normalized_axis(node.attr("axis", -1), x.rank))]
    axis = normalized_axis(node.attr("axis", 1), x.rank)
    if axis == x.rank - 1:  # the rows are the last axis already: no flattening needed
        return [compute(x, axis)]
    rows = int(np.prod(x.shape[:axis], dtype=np.int64))
    flat = ctx.emit("reshape", [x], {"newShape": [rows, int(np.prod(x.shape[axis:]))]},
                    suffix="flatten")
    y = compute(flat, 1)
    return [ctx.emit("reshape", [y], {"newShape": list(x.shape)}, suffix="unflatten")]


@onnx_op("Softmax", webnn=("softmax", "reshape"))
def softmax(ctx: ImportContext, node: OnnxNode):
    return _along_axis(ctx, node, lambda x, axis: ctx.emit("softmax", [x], {"axis": axis}))


@onnx_op("LogSoftmax", webnn=("reduceMax", "sub", "exp", "reduceSum", "log", "reshape"))
def log_softmax(ctx: ImportContext, node: OnnxNode):
    def compute(x: Operand, axis: int) -> Operand:
        # x - max - log(sum(exp(x - max))): log(softmax(x)) would give -inf where softmax
        # underflows to 0, and subtracting the max keeps exp from overflowing.
        keep = {"axes": [axis], "keepDimensions": True}
        shifted = ctx.emit("sub", [x, ctx.emit("reduceMax", [x], keep)])
        total = ctx.emit("reduceSum", [ctx.emit("exp", [shifted])], keep)
        return ctx.emit("sub", [shifted, ctx.emit("log", [total])])
    return _along_axis(ctx, node, compute)


@onnx_op("Hardmax", webnn=("argMax", "equal", "cast", "reshape"))
def hardmax(ctx: ImportContext, node: OnnxNode):
    def compute(x: Operand, axis: int) -> Operand:
        # 1 at the first largest element along axis, 0 elsewhere: the argMax index compared
        # with each position's own index.
        index = ctx.emit("argMax", [x], {"axis": axis, "keepDimensions": True,
                                         "outputDataType": "int32"})
        shape = [1] * x.rank
        shape[axis] = x.shape[axis]
        positions = ctx.constant(np.arange(x.shape[axis], dtype=np.int32).reshape(shape),
                                 "int32")
        hit = ctx.emit("equal", [positions, index])
        return ctx.emit("cast", [hit], {"dataType": x.data_type})
    return _along_axis(ctx, node, compute)
