"""Reference kernels for the element-wise ops: binary arithmetic, comparisons, logical ops,
unary math, where and cast (spec: "Element-wise binary operations", "Element-wise logical
operations", "Element-wise unary operations", where, cast).

Binary ops broadcast bidirectionally (numpy broadcasting is the spec's). Integer arithmetic is
done in 64 bits and wraps into the operand's type when the walk stores the result.
"""
from __future__ import annotations

import math

import numpy as np

from .core import is_float, kernel, wide

_erf = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, element by element (libm's erf, accurate to an ULP of float64)."""
    return np.asarray(_erf(np.asarray(x, np.float64)), dtype=np.float64).astype(x.dtype)


# -- binary arithmetic -------------------------------------------------------------------------
@kernel("add")
def add(op, ins, env):
    return wide(ins[0]) + wide(ins[1])


@kernel("sub")
def sub(op, ins, env):
    return wide(ins[0]) - wide(ins[1])


@kernel("mul")
def mul(op, ins, env):
    return wide(ins[0]) * wide(ins[1])


@kernel("max")
def maximum(op, ins, env):
    return np.maximum(ins[0], ins[1])


@kernel("min")
def minimum(op, ins, env):
    return np.minimum(ins[0], ins[1])


@kernel("div")
def div(op, ins, env):
    a, b = wide(ins[0]), wide(ins[1])
    if a.dtype.kind == "f":
        return a / b
    # Integer division truncates toward zero (as C, and ONNX Div on integers); division by
    # zero has no defined value and gives 0 here.
    a, b = np.broadcast_arrays(a, b)
    safe = np.where(b == 0, 1, b)
    quotient = np.abs(a) // np.abs(safe)
    negative = (a < 0) != (safe < 0)
    if quotient.dtype.kind == "u":
        return np.where(b == 0, 0, quotient)
    return np.where(b == 0, 0, np.where(negative, -quotient, quotient))


@kernel("pow")
def power(op, ins, env):
    a, b = wide(ins[0]), wide(ins[1])
    if a.dtype.kind == "f":
        return np.power(a, b)
    # Integers: exact powers for non-negative exponents (wrapping like repeated
    # multiplication); a negative exponent gives 1 / a^|b| truncated toward zero.
    a, b = np.broadcast_arrays(a, b)
    out = np.ones(a.shape, dtype=a.dtype)
    base, exp = a.copy(), np.where(b < 0, 0, b)
    while np.any(exp > 0):  # square and multiply, in the integer type (wraps as it goes)
        odd = (exp & 1) == 1
        out = np.where(odd, out * base, out)
        base = base * base
        exp = exp >> 1
    if a.dtype.kind == "i":
        inverse = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
        out = np.where(b < 0, inverse, out)
    return out


# -- comparisons and logical ops: uint8 results ------------------------------------------------
def _u8(mask) -> np.ndarray:
    return np.asarray(mask).astype(np.uint8)


@kernel("equal")
def equal(op, ins, env):
    return _u8(ins[0] == ins[1])


@kernel("notEqual")
def not_equal(op, ins, env):
    return _u8(ins[0] != ins[1])


@kernel("greater")
def greater(op, ins, env):
    return _u8(ins[0] > ins[1])


@kernel("greaterOrEqual")
def greater_or_equal(op, ins, env):
    return _u8(ins[0] >= ins[1])


@kernel("lesser")
def lesser(op, ins, env):
    return _u8(ins[0] < ins[1])


@kernel("lesserOrEqual")
def lesser_or_equal(op, ins, env):
    return _u8(ins[0] <= ins[1])


# Logical ops read any non-zero byte as true.
@kernel("logicalNot")
def logical_not(op, ins, env):
    return _u8(ins[0] == 0)


@kernel("logicalAnd")
def logical_and(op, ins, env):
    return _u8((ins[0] != 0) & (ins[1] != 0))


@kernel("logicalOr")
def logical_or(op, ins, env):
    return _u8((ins[0] != 0) | (ins[1] != 0))


@kernel("logicalXor")
def logical_xor(op, ins, env):
    return _u8((ins[0] != 0) != (ins[1] != 0))


@kernel("isNaN")
def is_nan(op, ins, env):
    x = ins[0]
    return _u8(np.isnan(x)) if x.dtype.kind == "f" else np.zeros(x.shape, np.uint8)


@kernel("isInfinite")
def is_infinite(op, ins, env):
    x = ins[0]
    return _u8(np.isinf(x)) if x.dtype.kind == "f" else np.zeros(x.shape, np.uint8)


# -- unary -------------------------------------------------------------------------------------
_UNARY = {
    "abs": lambda x: np.abs(wide(x)),
    "neg": lambda x: -wide(x),
    "sign": np.sign,
    "ceil": np.ceil,
    "floor": np.floor,
    "roundEven": np.rint,  # numpy rounds halves to even, as roundEven must
    "identity": lambda x: x,
    "cos": np.cos,
    "sin": np.sin,
    "tan": np.tan,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "reciprocal": lambda x: 1 / x,
    "erf": erf,
}


def _unary(op, ins, env):
    return _UNARY[op.op_type](ins[0])


kernel(*_UNARY)(_unary)


# -- where and cast ----------------------------------------------------------------------------
@kernel("where")
def where(op, ins, env):
    condition, true_value, false_value = ins
    return np.where(condition != 0, true_value, false_value)


# The float types an operand can be cast to, with the precision the cast rounds to.
_FLOAT_PRECISION = {"float32": np.float32, "float16": np.float16}


@kernel("cast")
def cast(op, ins, env):
    """The spec's cast table: floats round to the nearest value of the target type; floats to
    integers truncate toward zero (NaN and infinities give 0) and integers keep their low bits
    in the target width (the wrap happens when the result is stored)."""
    x, target = ins[0], op.attr("dataType")
    if is_float(target):
        with np.errstate(over="ignore"):
            return x.astype(_FLOAT_PRECISION[target]).astype(env.float)
    if x.dtype.kind == "f":
        t = np.trunc(np.where(np.isfinite(x), x, 0.0))
        if target == "uint64":
            return np.clip(t, 0, 1.8e19).astype(np.uint64)
        return np.clip(t, -9.2e18, 9.2e18).astype(np.int64)
    return wide(x)
