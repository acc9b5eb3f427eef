"""Lowerings of the element-wise ops: binary math, comparisons, logical ops, unary math, where,
cast.

WebNN has no bool type: comparisons and logical ops give uint8 0/1, and logical ops and where
read uint8 with any nonzero value as true. ONNX's versions take and give bool, so values
cross with Cast (ONNX's Cast to bool maps nonzero to true).
"""
from __future__ import annotations

import numpy as np

from ...ir import Operation
from .context import ONNX_TYPES, LoweringContext
from .registry import lowers

_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "max": "Max", "min": "Min",
           "pow": "Pow"}
# Wrap-around integer add/sub/mul give the same bits in any wider or same-width integer type.
_MODULAR = {"add", "sub", "mul"}
_COMPARE = {"equal": "Equal", "greater": "Greater", "greaterOrEqual": "GreaterOrEqual",
            "lesser": "Less", "lesserOrEqual": "LessOrEqual"}
_LOGICAL = {"logicalAnd": "And", "logicalOr": "Or", "logicalXor": "Xor"}
_UNARY = {"abs": "Abs", "ceil": "Ceil", "cos": "Cos", "erf": "Erf", "exp": "Exp",
          "floor": "Floor", "log": "Log", "neg": "Neg", "reciprocal": "Reciprocal",
          "roundEven": "Round", "sin": "Sin", "sign": "Sign", "sqrt": "Sqrt", "tan": "Tan"}


def to_uint8(ctx: LoweringContext, value: str) -> str:
    """A bool value as WebNN's uint8 0/1."""
    return ctx.cast(value, "uint8", "bool")


def to_bool(ctx: LoweringContext, value: str) -> str:
    """A WebNN uint8 truth value as bool (nonzero is true)."""
    return ctx.cast(value, "bool", "uint8")


@lowers(*_BINARY)
def binary(ctx: LoweringContext, op: Operation) -> list[str]:
    a, b = op.inputs[0], op.inputs[1]
    widen = "modular" if op.op_type in _MODULAR else "value"
    return [ctx.typed(_BINARY[op.op_type], [ctx.name_of(a), ctx.name_of(b)], a.data_type,
                      widen=widen)]


@lowers(*_COMPARE)
def compare(ctx: LoweringContext, op: Operation) -> list[str]:
    a, b = op.inputs[0], op.inputs[1]
    out = ctx.typed(_COMPARE[op.op_type], [ctx.name_of(a), ctx.name_of(b)], a.data_type,
                    result="bool")
    return [to_uint8(ctx, out)]


@lowers("notEqual")
def not_equal(ctx: LoweringContext, op: Operation) -> list[str]:
    a, b = op.inputs[0], op.inputs[1]
    eq = ctx.typed("Equal", [ctx.name_of(a), ctx.name_of(b)], a.data_type, result="bool")
    return [to_uint8(ctx, ctx.node("Not", [eq], dtype="bool"))]


@lowers(*_LOGICAL)
def logical(ctx: LoweringContext, op: Operation) -> list[str]:
    a, b = (to_bool(ctx, ctx.name_of(x)) for x in op.inputs)
    return [to_uint8(ctx, ctx.node(_LOGICAL[op.op_type], [a, b], dtype="bool"))]


@lowers("logicalNot")
def logical_not(ctx: LoweringContext, op: Operation) -> list[str]:
    a = to_bool(ctx, ctx.name_of(op.inputs[0]))
    return [to_uint8(ctx, ctx.node("Not", [a], dtype="bool"))]


@lowers("isNaN", "isInfinite")
def float_class(ctx: LoweringContext, op: Operation) -> list[str]:
    a = op.inputs[0]
    if a.data_type not in ("float32", "float16"):
        # Integers are never NaN or infinite: the answer is all zeros, whatever the values.
        return [ctx.constant(np.zeros(a.shape, np.uint8), "uint8")]
    onnx_op = "IsNaN" if op.op_type == "isNaN" else "IsInf"
    out = ctx.typed(onnx_op, [ctx.name_of(a)], a.data_type, result="bool")
    return [to_uint8(ctx, out)]


@lowers(*_UNARY)
def unary(ctx: LoweringContext, op: Operation) -> list[str]:
    x = op.inputs[0]
    widen = "modular" if op.op_type == "neg" else "value"
    return [ctx.typed(_UNARY[op.op_type], [ctx.name_of(x)], x.data_type, widen=widen)]


@lowers("identity")
def identity(ctx: LoweringContext, op: Operation) -> list[str]:
    return [ctx.node("Identity", [ctx.name_of(op.inputs[0])])]


@lowers("where")
def where(ctx: LoweringContext, op: Operation) -> list[str]:
    cond, t, f = op.inputs
    c = to_bool(ctx, ctx.name_of(cond))
    ct = ctx.compute_type("Where", t.data_type, widen="bits", constraint="T")
    tv = ctx.cast(ctx.name_of(t), ct, t.data_type)
    fv = ctx.cast(ctx.name_of(f), ct, f.data_type)
    out = ctx.node("Where", [c, tv, fv], dtype=ct)
    return [ctx.cast(out, t.data_type, ct)]


@lowers("cast")
def cast(ctx: LoweringContext, op: Operation) -> list[str]:
    # ONNX Cast (as ORT runs it) matches the spec's table: float to int truncates, int to int
    # keeps the low bits, float to narrower float rounds to nearest and overflows to infinity.
    x = op.inputs[0]
    to = op.attr("dataType")
    return [ctx.node("Cast", [ctx.name_of(x)], to=ONNX_TYPES[to], dtype=to)]
