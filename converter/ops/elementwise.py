"""Element-wise ops: binary arithmetic, comparisons, logical ops, unary math, where and cast.

Shape rules follow the spec: binary ops broadcast bidirectionally; comparisons and logical ops
return uint8 (WebNN has no bool); unary ops keep their input's descriptor.
"""
from __future__ import annotations

from ..ir.operand import TensorDesc
from .registry import REQUIRED, Param, ShapeContext, op

BINARY = ("add", "sub", "mul", "div", "max", "min", "pow")
COMPARISON = ("equal", "notEqual", "greater", "greaterOrEqual", "lesser", "lesserOrEqual")
LOGICAL_BINARY = ("logicalAnd", "logicalOr", "logicalXor")
PREDICATES = ("logicalNot", "isNaN", "isInfinite")  # one operand `a`, uint8 result
UNARY = ("abs", "ceil", "cos", "erf", "exp", "floor", "identity", "log", "neg", "reciprocal",
         "roundEven", "sin", "sign", "sqrt", "tan")


def _binary(c: ShapeContext) -> TensorDesc:
    """Bidirectional broadcast of a and b; the result has a's data type (b's is the same: the
    spec's data type limits, checked before any shape rule, say `sameAs: a`)."""
    a, b = c["a"], c["b"]
    return TensorDesc(a.data_type, c.broadcast("b", a.shape, b.shape))


def _compare(c: ShapeContext) -> TensorDesc:
    """Bidirectional broadcast of a and b; the result is uint8 (1 where true)."""
    return TensorDesc("uint8", _binary(c).shape)


def _predicate(c: ShapeContext) -> TensorDesc:
    return TensorDesc("uint8", c["a"].shape)


def _unary(c: ShapeContext) -> TensorDesc:
    return c["input"]


for _name in BINARY:
    op(_name, operands=("a", "b"))(_binary)
for _name in COMPARISON + LOGICAL_BINARY:
    op(_name, operands=("a", "b"))(_compare)
for _name in PREDICATES:
    op(_name, operands=("a",))(_predicate)
for _name in UNARY:
    op(_name)(_unary)


@op("where", operands=("condition", "trueValue", "falseValue"))
def where(c: ShapeContext) -> TensorDesc:
    """The three operands broadcast bidirectionally together; the result has trueValue's type."""
    cond, t, f = c["condition"], c["trueValue"], c["falseValue"]
    shape = c.broadcast("falseValue", t.shape, f.shape)
    shape = c.broadcast("condition", cond.shape, shape)
    return TensorDesc(t.data_type, shape)


@op("cast", arguments=(Param("dataType", "dtype", default=REQUIRED),))
def cast(c: ShapeContext) -> TensorDesc:
    """Same shape as input, data type `dataType`."""
    return TensorDesc(c.attr("dataType"), c["input"].shape)
