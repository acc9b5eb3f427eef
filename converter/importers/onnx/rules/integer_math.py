"""Integer arithmetic WebNN has no op for: BitShift, and Mod of integers (Mod's float form is in
elementwise.py, whose rule sends integers here).

Both are exact. A shift by s is a multiplication or division by 2**s, read from a constant
table of powers of two with `gather` (so the shift may be a run-time value). An integer
remainder is a - trunc_or_floor(a / b) * b, fixed up afterwards: WebNN does not say how an
integer `div` rounds, and either rounding leaves a remainder r with |r| < |b| that is off by
exactly one b when its sign is not the one wanted.
"""
from __future__ import annotations

import numpy as np

from .... import dtypes
from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..registry import Unsupported, onnx_op
from ._emit import emit

_UNSIGNED = ("uint8", "uint32", "uint64")
_SIGNED = ("int8", "int32", "int64")


@onnx_op("BitShift", since=11, webnn=("gather", "cast", "mul", "div", "sub", "lesser",
                                      "greater", "logicalOr", "where", "clamp"))
def bit_shift(ctx: ImportContext, node: OnnxNode):
    """x << s is x * 2**s, wrapping modulo 2**bits (the bits moved out are dropped, for signed
    types too: two's complement products wrap the same way). x >> s is floor(x / 2**s), the
    arithmetic shift of a signed x. A shift outside the valid range (negative, or at least the
    type's width; for a signed right shift, from width - 1 on) gives what the sign fill alone
    gives: -1 for a negative x shifted right, else 0 (opset 28's definition; earlier opsets
    leave it undefined)."""
    x, shift = ctx.operand(node.input(0)), ctx.operand(node.input(1))
    dt = x.data_type
    if dt not in _UNSIGNED + _SIGNED:
        raise Unsupported(f"BitShift of {dt}: it shifts integers")
    direction = node.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise Unsupported(f"direction {direction!r} is not LEFT or RIGHT")
    np_type = dtypes.numpy_dtype(dt)
    bits = np.dtype(np_type).itemsize * 8
    signed = dt in _SIGNED
    right = direction == "RIGHT"
    # 2**s in x's type, for the shifts computed; 2**(bits - 1) wraps to the sign bit in a
    # signed type, which is right for a left shift (and unused by a signed right shift).
    last = bits - 2 if signed and right else bits - 1
    powers = ctx.constant(np.left_shift(np.ones(last + 1, np_type),
                                        np.arange(last + 1).astype(np_type)), dt)
    index = emit(ctx, "clamp", shift, minValue=0, maxValue=last)
    if dt not in ("int32", "uint32", "int64"):
        index = emit(ctx, "cast", index, dataType="int64" if dt == "uint64" else "int32")
    factor = emit(ctx, "gather", powers, index, axis=0)
    zero = ctx.scalar(0, dt)
    if not right:
        moved, fill = emit(ctx, "mul", x, factor), zero
    else:
        moved = emit(ctx, "div", x, factor)
        fill = zero
        if signed:
            # WebNN leaves integer rounding open: a truncated quotient of a negative x leaves
            # a negative remainder, and flooring it is one less.
            rest = emit(ctx, "sub", x, emit(ctx, "mul", moved, factor))
            moved = emit(ctx, "where", emit(ctx, "lesser", rest, zero),
                         emit(ctx, "sub", moved, ctx.scalar(1, dt)), moved)
            fill = emit(ctx, "where", emit(ctx, "lesser", x, zero), ctx.scalar(-1, dt), zero)
    outside = emit(ctx, "greater", shift, ctx.scalar(last, dt))
    if signed:
        outside = emit(ctx, "logicalOr", outside, emit(ctx, "lesser", shift, zero))
    return [emit(ctx, "where", outside, fill, moved)]


def integer_mod(ctx: ImportContext, a: Operand, b: Operand, fmod: bool) -> Operand:
    """a mod b for integers: the remainder takes the divisor's sign (fmod=0, Python's %) or
    the dividend's (fmod=1, C's fmod); exact for every value, undefined for b = 0 as in ONNX."""
    dt = a.data_type
    if dt not in _UNSIGNED + _SIGNED:
        raise Unsupported(f"Mod of {dt}")
    r = emit(ctx, "sub", a, emit(ctx, "mul", emit(ctx, "div", a, b), b))
    if dt in _UNSIGNED:  # both roundings agree on non-negative values
        return r
    zero = ctx.scalar(0, dt)
    r_negative = emit(ctx, "lesser", r, zero)
    r_positive = emit(ctx, "greater", r, zero)
    want_negative = emit(ctx, "lesser", a if fmod else b, zero)
    # r has the wrong sign when it is nonzero and its sign is not the wanted one.
    wrong = emit(ctx, "logicalOr", emit(ctx, "logicalAnd", r_negative,
                                        emit(ctx, "logicalNot", want_negative)),
                 emit(ctx, "logicalAnd", r_positive, want_negative))
    if fmod:  # toward a's sign: r + |b| when r < 0, r - |b| when r > 0
        magnitude = emit(ctx, "abs", b)
        fixed = emit(ctx, "where", r_negative, emit(ctx, "add", r, magnitude),
                     emit(ctx, "sub", r, magnitude))
    else:  # toward b's sign: r and b differ in sign, so r + b has b's sign and |r + b| < |b|
        fixed = emit(ctx, "add", r, b)
    return emit(ctx, "where", wrong, fixed, r)
