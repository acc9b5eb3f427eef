"""Element-wise ONNX ops: arithmetic (including the many-input Sum/Mean/Max/Min), comparisons,
logic, unary math (with the hyperbolic functions WebNN lacks, from exp, log and sqrt), Where
and Cast.

ONNX BOOL values are WebNN uint8 holding 0 or 1, which is what WebNN's comparisons produce and
its logical ops and `where` consume.
"""
from __future__ import annotations

import numpy as np
import onnx

from ..context import ImportContext, OnnxNode
from ..model_file import ONNX_TO_WEBNN
from ..registry import Unsupported, onnx_op
from ..tensor_data import onnx_dtype_name
from .integer_math import integer_mod

_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div",
           "Equal": "equal", "Greater": "greater", "Less": "lesser",
           "GreaterOrEqual": "greaterOrEqual", "LessOrEqual": "lesserOrEqual",
           "And": "logicalAnd", "Or": "logicalOr", "Xor": "logicalXor"}
_UNARY = {"Abs": "abs", "Ceil": "ceil", "Cos": "cos", "Erf": "erf", "Exp": "exp",
          "Floor": "floor", "Identity": "identity", "Log": "log", "Neg": "neg",
          "Reciprocal": "reciprocal", "Round": "roundEven", "Sin": "sin", "Sign": "sign",
          "Sqrt": "sqrt", "Tan": "tan", "Not": "logicalNot", "IsNaN": "isNaN"}


def _binary_rule(webnn: str):
    def rule(ctx: ImportContext, node: OnnxNode):
        a, b = ctx.operand(node.input(0)), ctx.operand(node.input(1))
        return [ctx.emit(webnn, [a, b])]
    return rule


def _unary_rule(webnn: str):
    def rule(ctx: ImportContext, node: OnnxNode):
        return [ctx.emit(webnn, [ctx.operand(node.input(0))])]
    return rule


for _onnx, _webnn in _BINARY.items():
    onnx_op(_onnx, webnn=(_webnn,))(_binary_rule(_webnn))
for _onnx, _webnn in _UNARY.items():
    onnx_op(_onnx, webnn=(_webnn,))(_unary_rule(_webnn))


@onnx_op("Pow", webnn=("pow", "cast"))
def pow_(ctx: ImportContext, node: OnnxNode):
    base, exponent = ctx.operand(node.input(0)), ctx.operand(node.input(1))
    if exponent.data_type != base.data_type:  # ONNX lets the exponent have its own type
        exponent = ctx.emit("cast", [exponent], {"dataType": base.data_type})
    return [ctx.emit("pow", [base, exponent])]


def _variadic(webnn: str, mean: bool = False):
    def rule(ctx: ImportContext, node: OnnxNode):
        names = [n for n in node.inputs if n is not None]
        result = ctx.operand(names[0])
        for name in names[1:]:
            result = ctx.emit(webnn, [result, ctx.operand(name)])
        if len(names) == 1:
            result = ctx.emit("identity", [result])
        if mean and len(names) > 1:
            result = ctx.emit("div", [result, ctx.scalar(len(names), result.data_type)])
        return [result]
    return rule


onnx_op("Sum", webnn=("add",))(_variadic("add"))
onnx_op("Mean", webnn=("add", "div"))(_variadic("add", mean=True))
onnx_op("Max", webnn=("max",))(_variadic("max"))
onnx_op("Min", webnn=("min",))(_variadic("min"))


@onnx_op("IsInf", webnn=("isInfinite", "greater", "lesser", "logicalAnd"))
def is_inf(ctx: ImportContext, node: OnnxNode):
    x = ctx.operand(node.input(0))
    result = ctx.emit("isInfinite", [x])
    positive, negative = node.attr("detect_positive", 1), node.attr("detect_negative", 1)
    if positive and negative:
        return [result]
    if not positive and not negative:
        return [ctx.emit("logicalAnd", [result, ctx.scalar(0, "uint8")])]
    sign = ctx.emit("greater" if positive else "lesser", [x, ctx.scalar(0, x.data_type)])
    return [ctx.emit("logicalAnd", [result, sign])]


@onnx_op("Where", webnn=("where",))
def where(ctx: ImportContext, node: OnnxNode):
    cond, t, f = (ctx.operand(node.input(i)) for i in range(3))
    return [ctx.emit("where", [cond, t, f])]


def _cast_to(ctx: ImportContext, x, to: int, source_type: int):
    if to not in ONNX_TO_WEBNN:
        raise Unsupported(f"cast to {onnx_dtype_name(to)}, which WebNN lacks")
    if to == onnx.TensorProto.BOOL and source_type == onnx.TensorProto.BOOL:
        return ctx.emit("identity", [x])  # already 0 or 1
    if to == onnx.TensorProto.BOOL:
        # A bool is 1 for every nonzero value; WebNN's cast to uint8 would keep 2 as 2.
        return ctx.emit("notEqual", [x, ctx.scalar(0, x.data_type)])
    target = ONNX_TO_WEBNN[to][0]
    if target == x.data_type:
        return ctx.emit("identity", [x])
    return ctx.emit("cast", [x], {"dataType": target})


@onnx_op("Cast", webnn=("cast", "notEqual"))
def cast(ctx: ImportContext, node: OnnxNode):
    return [_cast_to(ctx, ctx.operand(node.input(0)), node.attr("to"),
                     ctx.onnx_type(node.input(0)))]


@onnx_op("CastLike", webnn=("cast", "notEqual"))
def cast_like(ctx: ImportContext, node: OnnxNode):
    to = ctx.onnx_type(node.input(1))
    value = ctx.known(node.input(0))
    if value is not None and to in ONNX_TO_WEBNN:  # only the target's type matters: fold it
        return [value.astype(onnx.helper.tensor_dtype_to_np_dtype(to))]
    return [_cast_to(ctx, ctx.operand(node.input(0)), to, ctx.onnx_type(node.input(0)))]


@onnx_op("Mod", webnn=("div", "floor", "sign", "abs", "mul", "sub", "isInfinite", "where",
                       "lesser", "greater", "logicalAnd", "logicalOr", "logicalNot", "add"))
def mod(ctx: ImportContext, node: OnnxNode):
    a, b = ctx.operand(node.input(0)), ctx.operand(node.input(1))
    fmod = node.attr("fmod", 0)
    if a.data_type not in ("float32", "float16"):
        return [integer_mod(ctx, a, b, bool(fmod))]
    q = ctx.emit("div", [a, b])
    if fmod:  # C fmod: truncate toward zero, keeps the dividend's sign
        q = ctx.emit("mul", [ctx.emit("sign", [q]), ctx.emit("floor", [ctx.emit("abs", [q])])])
    else:  # Python %: floor, keeps the divisor's sign
        q = ctx.emit("floor", [q])
    result = ctx.emit("sub", [a, ctx.emit("mul", [q, b])])
    # A finite a over an infinite b: q * b is 0 * inf = NaN above, but the remainder is a
    # (fmod; and Python's % when a is 0 or has b's sign), else b itself (Python's %).
    zero = ctx.scalar(0, a.data_type)
    if fmod:
        by_infinity = a
    else:
        keeps_a = ctx.emit("logicalOr", [ctx.emit("greaterOrEqual", [ctx.emit("mul", [a, b]), zero]),
                                         ctx.emit("equal", [a, zero])])
        by_infinity = ctx.emit("where", [keeps_a, a, b])
    return [ctx.emit("where", [ctx.emit("isInfinite", [b]), by_infinity, result])]


# -- hyperbolic functions ----------------------------------------------------------------------
# Written with exp, log and sqrt; where the result is near 0 (sinh, asinh and atanh of small
# x) their error is a few float epsilons absolute rather than relative, as log(1 + x) and
# e^x - e^-x lose the low digits of a small x.
def _hyperbolic(kind: str):
    def rule(ctx: ImportContext, node: OnnxNode):
        x = ctx.operand(node.input(0))
        if x.data_type not in ("float32", "float16"):
            raise Unsupported(f"{node.op_type} of {x.data_type}")
        dt = x.data_type

        def op(name, *inputs):
            return ctx.emit(name, list(inputs))

        def c(v):
            return ctx.scalar(v, dt)

        if kind in ("sinh", "cosh"):
            up, down = op("exp", x), op("exp", op("neg", x))
            return [op("mul", op("sub" if kind == "sinh" else "add", up, down), c(0.5))]
        if kind == "asinh":  # odd: computed on |x| so large negative x does not cancel
            size = op("abs", x)
            magnitude = op("log", op("add", size, op("sqrt", op("add", op("mul", size, size),
                                                                     c(1.0)))))
            return [op("mul", op("sign", x), magnitude)]
        if kind == "acosh":
            return [op("log", op("add", x, op("sqrt", op("sub", op("mul", x, x), c(1.0)))))]
        # atanh
        return [op("mul", op("log", op("div", op("add", c(1.0), x), op("sub", c(1.0), x))),
                   c(0.5))]
    return rule


for _onnx, _kind, _ops in (("Sinh", "sinh", ("exp", "neg", "sub", "mul")),
                           ("Cosh", "cosh", ("exp", "neg", "add", "mul")),
                           ("Asinh", "asinh", ("abs", "mul", "add", "sqrt", "log", "sign")),
                           ("Acosh", "acosh", ("mul", "sub", "sqrt", "add", "log")),
                           ("Atanh", "atanh", ("add", "sub", "div", "log", "mul"))):
    onnx_op(_onnx, since=9, webnn=_ops)(_hyperbolic(_kind))
