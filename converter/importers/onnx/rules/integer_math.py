"""Integer arithmetic WebNN has no op for: BitShift, BitwiseAnd/Or/Xor/Not, and Mod of
integers (Mod's float form is in elementwise.py, whose rule sends integers here).

All are exact. Bitwise ops split their operands into bits (below). A shift by s is a
multiplication or division by 2**s, read from a constant table of powers of two with
`gather` (so the shift may be a run-time value). An integer
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


# -- BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot ----------------------------------------------
def _bits(ctx: ImportContext, x: Operand) -> list[Operand]:
    """x's two's complement bits, lowest first, each 0 or 1 in x's type: bit b is
    floor(x / 2**b) - 2 * floor(x / 2**(b + 1)), with floor(x / 2**(width - 1)) -1 or 0 by
    the sign for signed types (2**(width - 1) is not a value of theirs)."""
    dt = x.data_type
    np_type = dtypes.numpy_dtype(dt)
    width = np.dtype(np_type).itemsize * 8
    signed = dt in _SIGNED
    zero = ctx.scalar(0, dt)
    floors = [x]  # floor(x / 2**k) for k = 0 .. width
    for k in range(1, width + 1):
        if signed and k >= width - 1:
            negative = emit(ctx, "lesser", x, zero)
            floors.append(emit(ctx, "where", negative, ctx.scalar(-1, dt), zero))
            continue
        if not signed and k == width:
            floors.append(zero)
            continue
        two = ctx.scalar(2, dt)
        previous = floors[-1]
        q = emit(ctx, "div", previous, two)
        if signed:  # either rounding of the division: floor it
            rest = emit(ctx, "sub", previous, emit(ctx, "mul", q, two))
            q = emit(ctx, "where", emit(ctx, "lesser", rest, zero),
                     emit(ctx, "sub", q, ctx.scalar(1, dt)), q)
        floors.append(q)
    two = ctx.scalar(2, dt)
    return [emit(ctx, "sub", floors[b], emit(ctx, "mul", floors[b + 1], two))
            for b in range(width)]


def _from_bits(ctx: ImportContext, bits: list[Operand], dt: str) -> Operand:
    np_type = dtypes.numpy_dtype(dt)
    width = len(bits)
    total = None
    for b, bit in enumerate(bits):
        weight = -(1 << b) if dt in _SIGNED and b == width - 1 else 1 << b
        term = bit if b == 0 else emit(ctx, "mul", bit,
                                       ctx.constant(np.array(weight, np_type), dt))
        total = term if total is None else emit(ctx, "add", total, term)
    return total


_COMBINE = {"BitwiseAnd": lambda ctx, a, b: emit(ctx, "mul", a, b),
            "BitwiseOr": lambda ctx, a, b: emit(ctx, "sub", emit(ctx, "add", a, b),
                                                emit(ctx, "mul", a, b)),
            "BitwiseXor": lambda ctx, a, b: emit(ctx, "sub", emit(ctx, "add", a, b),
                                                 emit(ctx, "mul", emit(ctx, "mul", a, b),
                                                      ctx.scalar(2, a.data_type)))}


def _bitwise_rule(op_type: str):
    def rule(ctx: ImportContext, node: OnnxNode):
        """Bit by bit: each operand split into its bits (exact integer steps), the bits
        combined (and: a b; or: a + b - a b; xor: a + b - 2 a b), and summed back with their
        weights. One division per bit: a graph of some 10 ops per bit of the type."""
        a, b = ctx.operand(node.input(0)), ctx.operand(node.input(1))
        if a.data_type not in _UNSIGNED + _SIGNED or b.data_type != a.data_type:
            raise Unsupported(f"{op_type} of {a.data_type} and {b.data_type}")
        combine = _COMBINE[op_type]
        bits = [combine(ctx, x, y) for x, y in zip(_bits(ctx, a), _bits(ctx, b))]
        return [_from_bits(ctx, bits, a.data_type)]
    return rule


for _op in _COMBINE:
    onnx_op(_op, since=18, webnn=("div", "mul", "sub", "add", "lesser", "where"))(
        _bitwise_rule(_op))


@onnx_op("BitwiseNot", since=18, webnn=("neg", "sub"))
def bitwise_not(ctx: ImportContext, node: OnnxNode):
    """~x is -x - 1 in two's complement (wrapping: ~MIN is MAX), and MAX - x unsigned."""
    x = ctx.operand(node.input(0))
    dt = x.data_type
    if dt in _SIGNED:
        return [emit(ctx, "sub", emit(ctx, "neg", x), ctx.scalar(1, dt))]
    if dt in _UNSIGNED:
        top = np.iinfo(dtypes.numpy_dtype(dt)).max
        return [emit(ctx, "sub", ctx.constant(np.array(top, dtypes.numpy_dtype(dt)), dt), x)]
    raise Unsupported(f"BitwiseNot of {dt}")
