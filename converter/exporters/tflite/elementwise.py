"""Export of the element-wise ops: binary math, comparisons, logical ops, unary math, where,
cast.

WebNN has no bool type: comparisons and logical ops give uint8 0/1, and logical ops and where
read any nonzero uint8 as true. TFLite's comparisons give bool and its logical ops and
SELECT_V2 take bool, so values cross with CAST (a static_cast: nonzero becomes true, true
becomes 1).

TFLite's integer kernels cover fewer types than WebNN allows. Where a wider type holds every
value exactly, the op runs in it: comparisons, min and max of int8/uint8 in int32, of uint32 in
int64. add, sub and mul wrap around, and a wider integer type followed by a narrowing CAST
(which keeps the low bits) gives the same bits, so they widen the same way.
"""
from __future__ import annotations

import math

from ...ir import Operation
from .context import ExportContext, compute_type
from .registry import ALL_TYPES, FLOATS, exports
from .schema import options

_BINARY = {"add": "ADD", "sub": "SUB", "mul": "MUL", "div": "DIV", "max": "MAXIMUM",
           "min": "MINIMUM", "pow": "POW"}
# The integer types each TFLite kernel computes in (beyond float32), and for other integer
# types the wider type that holds their values.
_KERNEL_INTS = {"ADD": ("int32", "int64"), "SUB": ("int32", "int64"),
                "MUL": ("int32", "uint32", "int64"), "DIV": ("int32",), "POW": ("int32",),
                "MAXIMUM": ("int32", "int64", "int8", "uint8"),
                "MINIMUM": ("int32", "int64", "int8", "uint8"),
                "compare": ("int32", "int64")}
_WIDER = {"int8": "int32", "uint8": "int32", "uint32": "int64"}
_COMPARE = {"equal": "EQUAL", "notEqual": "NOT_EQUAL", "greater": "GREATER",
            "greaterOrEqual": "GREATER_EQUAL", "lesser": "LESS", "lesserOrEqual": "LESS_EQUAL"}
_FLOAT_UNARY = {"ceil": "CEIL", "cos": "COS", "exp": "EXP", "floor": "FLOOR", "log": "LOG",
                "roundEven": "ROUND", "sin": "SIN", "sqrt": "SQRT"}


def run_type(kernel: str, data_type: str) -> str:
    """The type `kernel` runs in for operands of `data_type`."""
    ct = compute_type(data_type)
    if ct == "float32" or ct in _KERNEL_INTS[kernel]:
        return ct
    return _WIDER[ct]


def _types(kernel: str) -> tuple[str, ...]:
    ints = set(_KERNEL_INTS[kernel])
    ints |= {t for t, wide in _WIDER.items() if wide in ints}
    return FLOATS + tuple(t for t in ALL_TYPES if t in ints)


def to_bool(ctx: ExportContext, tensor: int) -> int:
    """A WebNN uint8 truth value as bool: CAST is a static_cast, so nonzero is true."""
    return ctx.cast(tensor, "bool")


def from_bool(ctx: ExportContext, tensor: int) -> int:
    return ctx.cast(tensor, "uint8")


def _pow_problem(op: Operation) -> str | None:
    exponent = op.inputs[1]
    if exponent.data_type in FLOATS:
        return None
    # TFLite's integer POW fails at run time on a negative exponent; only a constant one can
    # be seen to have none.
    if not exponent.is_constant or (exponent.constant.numpy() < 0).any():
        return ("TFLite's integer POW rejects negative exponents at run time: the exponent "
                "must be a constant without negative values")
    return None


@exports("add", "sub", "mul", types=_types("ADD"), max_rank=6, pointwise=True)
@exports("div", types=_types("DIV"), max_rank=5, pointwise=True)
@exports("pow", types=_types("POW"), max_rank=5, pointwise=True, check=_pow_problem)
@exports("max", "min", types=_types("MAXIMUM"), max_rank=5, pointwise=True)
def _binary(ctx: ExportContext, op: Operation) -> list[int]:
    a, b = op.inputs[0], op.inputs[1]
    kernel = _BINARY[op.op_type]
    ct = run_type(kernel, a.data_type)
    out = ctx.binary(kernel, ctx.read(a, ct), ctx.read(b, ct))
    return [ctx.cast(out, compute_type(a.data_type))]


@exports(*_COMPARE, types=_types("compare"), max_rank=5, pointwise=True)
def _compare(ctx: ExportContext, op: Operation) -> list[int]:
    a, b = op.inputs[0], op.inputs[1]
    ct = run_type("compare", a.data_type)
    out = ctx.binary(_COMPARE[op.op_type], ctx.read(a, ct), ctx.read(b, ct), "bool")
    return [from_bool(ctx, out)]


@exports("logicalAnd", "logicalOr", "logicalXor", types=("uint8",), max_rank=5, pointwise=True)
def _logical(ctx: ExportContext, op: Operation) -> list[int]:
    a, b = (to_bool(ctx, ctx.get(x)) for x in op.inputs[:2])
    kernel = {"logicalAnd": "LOGICAL_AND", "logicalOr": "LOGICAL_OR",
              "logicalXor": "NOT_EQUAL"}[op.op_type]  # xor of two truth values: they differ
    return [from_bool(ctx, ctx.binary(kernel, a, b, "bool"))]


@exports("logicalNot", types=("uint8",), max_rank=5, pointwise=True)
def _logical_not(ctx: ExportContext, op: Operation) -> list[int]:
    return [from_bool(ctx, ctx.unary("LOGICAL_NOT", to_bool(ctx, ctx.get(op.inputs[0]))))]


@exports("isNaN", "isInfinite", types=ALL_TYPES, max_rank=5)
def _float_class(ctx: ExportContext, op: Operation) -> list[int]:
    a = op.inputs[0]
    if a.data_type not in FLOATS:
        # Integers are never NaN or infinite, whatever their values.
        zero = ctx.scalar(0, "uint8")
        return [ctx.emit("BROADCAST_TO", [zero, ctx.int32s(a.shape)], ("uint8", a.shape))]
    x = ctx.value(a)
    if op.op_type == "isNaN":  # NaN is the one value not equal to itself
        found = ctx.binary("NOT_EQUAL", x, x, "bool")
    else:
        found = ctx.binary("EQUAL", ctx.unary("ABS", x), ctx.number(math.inf, x), "bool")
    return [from_bool(ctx, found)]


@exports(*_FLOAT_UNARY, types=FLOATS, pointwise=True)
def _float_unary(ctx: ExportContext, op: Operation) -> list[int]:
    return [ctx.unary(_FLOAT_UNARY[op.op_type], ctx.value(op.inputs[0]))]


@exports("tan", types=FLOATS, pointwise=True)
def _tan(ctx: ExportContext, op: Operation) -> list[int]:
    x = ctx.value(op.inputs[0])
    return [ctx.div(ctx.unary("SIN", x), ctx.unary("COS", x))]


@exports("reciprocal", types=FLOATS, max_rank=5, pointwise=True)
def _reciprocal(ctx: ExportContext, op: Operation) -> list[int]:
    x = ctx.value(op.inputs[0])
    return [ctx.div(ctx.number(1, x), x)]


@exports("abs", "neg", "sign", types=FLOATS + ("int32", "int64", "int8"), pointwise=True)
def _signed_unary(ctx: ExportContext, op: Operation) -> list[int]:
    operand = op.inputs[0]
    x = ctx.value(operand)
    dt = ctx.desc(x).data_type
    if op.op_type == "neg":
        return [ctx.unary("NEG", x)]  # NEG has float32, int32, int64 and int8 kernels
    if op.op_type == "abs":
        if dt in ("float32", "int32"):
            return [ctx.unary("ABS", x)]
        return [ctx.maximum(x, ctx.unary("NEG", x))]  # |x| = max(x, -x), wrapping as WebNN's
    if dt in ("float32", "int32"):
        return [ctx.unary("SIGN", x)]
    if dt == "int8":  # int32 holds every int8
        return [ctx.cast(ctx.unary("SIGN", ctx.cast(x, "int32")), dt)]
    # int64: sign = (x > 0) - (x < 0)
    positive = ctx.cast(ctx.binary("GREATER", x, ctx.number(0, x), "bool"), dt)
    negative = ctx.cast(ctx.binary("LESS", x, ctx.number(0, x), "bool"), dt)
    return [ctx.sub(positive, negative)]


@exports("identity", types=ALL_TYPES, pointwise=True)
def _identity(ctx: ExportContext, op: Operation) -> list[int]:
    return [ctx.get(op.inputs[0])]  # the same values: no operator at all


# erf: TFLite has no ERF operator. For |x| >= 0.5 it comes from GELU, whose exact form is
# x * Phi(x) with Phi(x) = (1 + erf(x / sqrt 2)) / 2, so erf(y) = 2 GELU(z) / z - 1 with
# z = y sqrt 2; there erf >= 0.52 and the subtraction loses nothing. Below 0.5 erf is small
# and that form would cancel, so the Taylor series x * sum_n c_n x^2n runs instead; eight
# terms leave a relative error below 1e-9 at 0.5.
_ERF_SWITCH = 0.5
_ERF_TAYLOR = [2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1))
               for n in range(8)]
# Beyond this erf is 1 in float32; clamping keeps infinity out of GELU(z) / z.
_ERF_SATURATES = 10.0


@exports("erf", types=FLOATS, max_rank=5, pointwise=True)
def _erf(ctx: ExportContext, op: Operation) -> list[int]:
    x = ctx.value(op.inputs[0])
    x2 = ctx.mul(x, x)
    series = ctx.number(_ERF_TAYLOR[-1], x)
    for c in reversed(_ERF_TAYLOR[:-1]):
        series = ctx.add(ctx.mul(series, x2), ctx.number(c, x))
    small = ctx.mul(x, series)
    ax = ctx.minimum(ctx.unary("ABS", x), ctx.number(_ERF_SATURATES, x))
    z = ctx.mul(ax, ctx.number(math.sqrt(2.0), x))
    gelu = ctx.unary("GELU", z, opts=options("GeluOptions", approximate=False))
    large = ctx.sub(ctx.mul(ctx.div(gelu, z), ctx.number(2, x)), ctx.number(1, x))
    large = ctx.mul(large, ctx.unary("SIGN", x))
    use_series = ctx.binary("LESS", ctx.unary("ABS", x), ctx.number(_ERF_SWITCH, x), "bool")
    return [ctx.select(use_series, small, large)]


@exports("where", types={"trueValue": ALL_TYPES}, max_rank=5, pointwise=True)
def _where(ctx: ExportContext, op: Operation) -> list[int]:
    cond, t, f = op.inputs[:3]
    return [ctx.select(to_bool(ctx, ctx.get(cond)), ctx.value(t), ctx.value(f))]


_CAST_TYPES = ("float32", "float16", "int32", "uint32", "int64", "int8", "uint8")


def _cast_problem(op: Operation) -> str | None:
    to = op.attr("dataType")
    if to not in _CAST_TYPES:
        return f"TFLite's CAST has no kernel to {to}"
    return None


@exports("cast", types=_CAST_TYPES, check=_cast_problem, pointwise=True)
def _cast(ctx: ExportContext, op: Operation) -> list[int]:
    # TFLite's CAST is a C++ static_cast: float to integer truncates, integer to integer keeps
    # the low bits, float32 to float16 rounds to nearest; the spec's table says the same.
    x = op.inputs[0]
    to = op.attr("dataType")
    if x.data_type == to:
        return [ctx.get(x)]
    if x.is_constant and x.data_type == "float16" and to == "float32":
        # float16 weights read as float32 (`--weights float16`): TFLite's own form, the
        # float16 constant kept in the file under a DEQUANTIZE (ctx.value), where a CAST of
        # a constant would be folded into float32 bytes
        return [ctx.value(x)]
    return [ctx.cast(ctx.get(x), to)]

