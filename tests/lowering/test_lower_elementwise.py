"""Element-wise ops run through the ONNX lowering, against values worked out from the spec."""
from __future__ import annotations

import math

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from .helpers import assert_exact, assert_ulp, execute, run1

F32 = np.float32


def test_add_broadcasts_b_over_rows():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    y = b.add(x, b.constant(np.array([10, 20, 30], F32)))
    got = run1(b, y, {"x": np.array([[1, 2, 3], [4, 5, 6]], F32)})
    assert_exact(got, [[11, 22, 33], [14, 25, 36]], np.float32)


def test_binary_float_ops_on_hand_values():
    b = GraphBuilder()
    x = b.input("x", "float32", [4])
    c = b.constant(np.array([2, -4, 0.5, 3], F32))
    outs = {"sub": b.sub(x, c), "mul": b.mul(x, c), "div": b.div(x, c), "max": b.max(x, c),
            "min": b.min(x, c), "pow": b.pow(x, c)}
    got = execute(b, outs, {"x": np.array([3, 2, -1, 2], F32)})
    assert_exact(got["sub"], [1, 6, -1.5, -1], np.float32)
    assert_exact(got["mul"], [6, -8, -0.5, 6], np.float32)
    assert_exact(got["div"], [1.5, -0.5, -2, 2 / 3], np.float32)
    assert_exact(got["max"], [3, 2, 0.5, 3], np.float32)
    assert_exact(got["min"], [2, -4, -1, 2], np.float32)
    assert_ulp(got["pow"], [9, 1 / 16, math.nan, 8], 1)  # (-1)^0.5 is NaN


def test_integer_add_sub_mul_wrap_around():
    b = GraphBuilder()
    x = b.input("x", "uint8", [3])
    k = b.constant(np.array([100, 3, 255], np.uint8))
    got = execute(b, {"add": b.add(x, k), "sub": b.sub(x, k), "mul": b.mul(x, k)},
                  {"x": np.array([200, 1, 2], np.uint8)})
    assert_exact(got["add"], [44, 4, 1], np.uint8)  # 300, 4, 257 mod 256
    assert_exact(got["sub"], [100, 254, 3], np.uint8)  # 1-3 and 2-255 wrap
    assert_exact(got["mul"], [32, 3, 254], np.uint8)  # 20000 mod 256 = 32, 510 mod 256 = 254


def test_int8_and_uint64_arithmetic_keep_their_types():
    b = GraphBuilder()
    i8 = b.input("i8", "int8", [2])
    u64 = b.input("u64", "uint64", [2])
    got = execute(b, {"i8": b.add(i8, i8), "u64": b.mul(u64, u64),
                      "u64max": b.max(u64, b.constant(np.array([2**63, 1], np.uint64)))},
                  {"i8": np.array([100, -3], np.int8),
                   "u64": np.array([2**32, 3], np.uint64)})
    assert_exact(got["i8"], [-56, -6], np.int8)  # 200 wraps to -56
    assert_exact(got["u64"], [0, 9], np.uint64)  # 2^64 wraps to 0
    assert_exact(got["u64max"], [2**63, 3], np.uint64)


def test_integer_division_truncates():
    b = GraphBuilder()
    x = b.input("x", "int32", [3])
    got = run1(b, b.div(x, b.constant(np.array([2, 3, 5], np.int32))),
               {"x": np.array([7, 9, 4], np.int32)})
    assert_exact(got, [3, 3, 0], np.int32)


def test_int32_pow():
    b = GraphBuilder()
    x = b.input("x", "int32", [3])
    got = run1(b, b.pow(x, b.constant(np.array([2, 3, 0], np.int32))),
               {"x": np.array([5, -2, 7], np.int32)})
    assert_exact(got, [25, -8, 1], np.int32)


COMPARISONS = {
    "equal": [0, 1, 0, 0],
    "notEqual": [1, 0, 1, 1],
    "greater": [0, 0, 1, 0],
    "greaterOrEqual": [0, 1, 1, 0],
    "lesser": [1, 0, 0, 0],
    "lesserOrEqual": [1, 1, 0, 0],
}


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint32", "int8", "int64"])
def test_comparisons_give_uint8_zero_or_one(dtype):
    b = GraphBuilder()
    x = b.input("x", dtype, [4])
    y = b.input("y", dtype, [4])
    got = execute(b, {name: getattr(b, name)(x, y) for name in COMPARISONS},
                  {"x": np.array([1, 2, 3, 0], dtype), "y": np.array([2, 2, 1, 0], dtype)})
    # The last pair is 0 vs 0 for every type except floats, where we put a NaN.
    for name, want in COMPARISONS.items():
        want = list(want)
        want[3] = {"equal": 1, "notEqual": 0, "greater": 0, "greaterOrEqual": 1,
                   "lesser": 0, "lesserOrEqual": 1}[name]
        assert_exact(got[name], want, np.uint8)


def test_comparisons_with_nan_are_false_except_not_equal():
    b = GraphBuilder()
    x = b.input("x", "float32", [1])
    outs = {name: getattr(b, name)(x, x) for name in COMPARISONS}
    got = execute(b, outs, {"x": np.array([np.nan], F32)})
    for name in COMPARISONS:
        assert_exact(got[name], [1 if name == "notEqual" else 0], np.uint8)


def test_logical_ops_treat_any_nonzero_as_true():
    b = GraphBuilder()
    p = b.input("p", "uint8", [4])
    q = b.input("q", "uint8", [4])
    got = execute(b, {"and": b.logicalAnd(p, q), "or": b.logicalOr(p, q),
                      "xor": b.logicalXor(p, q), "not": b.logicalNot(p)},
                  {"p": np.array([0, 0, 2, 255], np.uint8), "q": np.array([0, 7, 0, 1], np.uint8)})
    assert_exact(got["and"], [0, 0, 0, 1], np.uint8)
    assert_exact(got["or"], [0, 1, 1, 1], np.uint8)
    assert_exact(got["xor"], [0, 1, 1, 0], np.uint8)
    assert_exact(got["not"], [1, 1, 0, 0], np.uint8)


def test_is_nan_and_is_infinite():
    b = GraphBuilder()
    x = b.input("x", "float32", [5])
    i = b.input("i", "int32", [2])
    got = execute(b, {"nan": b.isNaN(x), "inf": b.isInfinite(x), "inan": b.isNaN(i),
                      "iinf": b.isInfinite(i)},
                  {"x": np.array([1, np.nan, np.inf, -np.inf, 0], F32),
                   "i": np.array([0, -5], np.int32)})
    assert_exact(got["nan"], [0, 1, 0, 0, 0], np.uint8)
    assert_exact(got["inf"], [0, 0, 1, 1, 0], np.uint8)
    assert_exact(got["inan"], [0, 0], np.uint8)
    assert_exact(got["iinf"], [0, 0], np.uint8)


def test_exact_unary_ops():
    b = GraphBuilder()
    x = b.input("x", "float32", [5])
    names = ["abs", "ceil", "floor", "neg", "sign", "roundEven", "identity"]
    got = execute(b, {n: getattr(b, n)(x) for n in names},
                  {"x": np.array([-1.5, -0.5, 0.5, 1.5, 2.5], F32)})
    assert_exact(got["abs"], [1.5, 0.5, 0.5, 1.5, 2.5], np.float32)
    assert_exact(got["ceil"], [-1, -0, 1, 2, 3], np.float32)
    assert_exact(got["floor"], [-2, -1, 0, 1, 2], np.float32)
    assert_exact(got["neg"], [1.5, 0.5, -0.5, -1.5, -2.5], np.float32)
    assert_exact(got["sign"], [-1, -1, 1, 1, 1], np.float32)
    assert_exact(got["roundEven"], [-2, -0, 0, 2, 2], np.float32)  # halves go to even
    assert_exact(got["identity"], [-1.5, -0.5, 0.5, 1.5, 2.5], np.float32)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_integer_abs_neg_sign(dtype):
    b = GraphBuilder()
    x = b.input("x", dtype, [3])
    got = execute(b, {"abs": b.abs(x), "neg": b.neg(x), "sign": b.sign(x)},
                  {"x": np.array([-7, 0, 5], dtype)})
    assert_exact(got["abs"], [7, 0, 5], dtype)
    assert_exact(got["neg"], [7, 0, -5], dtype)
    assert_exact(got["sign"], [-1, 0, 1], dtype)


def test_transcendental_unary_ops_within_a_few_ulp():
    b = GraphBuilder()
    x = b.input("x", "float32", [4])
    names = ["cos", "erf", "exp", "log", "reciprocal", "sin", "sqrt", "tan"]
    got = execute(b, {n: getattr(b, n)(x) for n in names},
                  {"x": np.array([0.25, 0.5, 1.0, 2.0], F32)})
    v = [0.25, 0.5, 1.0, 2.0]
    want = {"cos": [math.cos(t) for t in v], "erf": [math.erf(t) for t in v],
            "exp": [math.exp(t) for t in v], "log": [math.log(t) for t in v],
            "reciprocal": [1 / t for t in v], "sin": [math.sin(t) for t in v],
            "sqrt": [math.sqrt(t) for t in v], "tan": [math.tan(t) for t in v]}
    for name in names:
        # Budget: these are not in tolerances.md's table; 4 ULP covers the vectorized
        # implementations ORT uses for exp/log/erf/trig, and sqrt/reciprocal are exact.
        assert_ulp(got[name], np.array(want[name]), 0 if name in ("sqrt", "reciprocal") else 4)


def test_float16_unary_and_binary():
    b = GraphBuilder()
    x = b.input("x", "float16", [3])
    got = execute(b, {"add": b.add(x, x), "sqrt": b.sqrt(x), "neg": b.neg(x)},
                  {"x": np.array([1, 4, 0.25], np.float16)})
    assert_exact(got["add"], [2, 8, 0.5], np.float16)
    assert_exact(got["sqrt"], [1, 2, 0.5], np.float16)
    assert_exact(got["neg"], [-1, -4, -0.25], np.float16)


def test_where_takes_nonzero_as_true_and_broadcasts():
    b = GraphBuilder()
    c = b.input("c", "uint8", [3, 1])
    t = b.input("t", "float32", [1, 2])
    f = b.constant(np.array([-1, -2], F32))
    got = run1(b, b.where(c, t, f), {"c": np.array([[0], [1], [200]], np.uint8),
                                    "t": np.array([[10, 20]], F32)})
    assert_exact(got, [[-1, -2], [10, 20], [10, 20]], np.float32)


def test_where_on_uint64_keeps_every_bit():
    b = GraphBuilder()
    c = b.input("c", "uint8", [2])
    t = b.constant(np.array([2**64 - 1, 5], np.uint64))
    f = b.constant(np.array([7, 2**63 + 1], np.uint64))
    got = run1(b, b.where(c, t, f), {"c": np.array([1, 0], np.uint8)})
    assert_exact(got, [2**64 - 1, 2**63 + 1], np.uint64)


def test_cast_follows_the_spec_table():
    b = GraphBuilder()
    f = b.input("f", "float32", [3])
    i = b.input("i", "int32", [3])
    got = execute(b, {"f2i": b.cast(f, "int32"), "i2u8": b.cast(i, "uint8"),
                      "f2h": b.cast(f, "float16"), "i2f": b.cast(i, "float32"),
                      "i2i64": b.cast(i, "int64")},
                  {"f": np.array([-1.7, 2.9, 70000], F32),
                   "i": np.array([-1, 300, 16777217], np.int32)})
    assert_exact(got["f2i"], [-1, 2, 70000], np.int32)  # in range: truncated
    assert_exact(got["i2u8"], [255, 44, 1], np.uint8)  # low 8 bits
    assert_exact(got["f2h"], [np.float16(-1.7), np.float16(2.9), np.inf], np.float16)
    assert_exact(got["i2f"], [-1, 300, 16777216], np.float32)  # nearest representable
    assert_exact(got["i2i64"], [-1, 300, 16777217], np.int64)


def test_uint64_pow_has_no_kernel_and_is_refused():
    # ORT has no Pow on uint64 and no wider type holds its values; int64's wrap-around would
    # do for add, sub and mul only, which pow is not
    from converter.errors import UnsupportedError
    from converter.lowering.onnx import to_onnx

    b = GraphBuilder()
    x = b.input("x", "uint64", [2])
    graph = b.build({"y": b.pow(x, b.constant(np.array([2, 3], np.uint64)))})
    with pytest.raises(UnsupportedError, match="no CPU kernel for Pow on uint64"):
        to_onnx(graph)
