"""Element-wise ops exported to TFLite: LiteRT against the ONNX executor, and against values
worked out by hand from the spec (integer wrap-around, nonzero truth values, NaN and infinity,
rounding halves to even, truncating casts)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from .helpers import check, ops_of, rand, run_one

RNG = np.random.default_rng(11)
F32 = np.float32
INTS = ("int32", "int64", "int8", "uint8", "uint32")


def test_float_binary_ops_on_hand_values():
    b = GraphBuilder()
    x = b.input("x", "float32", [4])
    c = b.constant(np.array([2, -4, 0.5, 3], F32))
    graph = b.build({"add": b.add(x, c), "sub": b.sub(x, c), "mul": b.mul(x, c),
                     "div": b.div(x, c), "max": b.max(x, c), "min": b.min(x, c),
                     "pow": b.pow(x, b.constant(np.array([2, 3, 0.5, 0], F32)))})
    got = check(graph, {"x": np.array([3, 2, 4, 2], F32)}, ulp=1)
    assert got["add"].tolist() == [5, -2, 4.5, 5]
    assert got["sub"].tolist() == [1, 6, 3.5, -1]
    assert got["mul"].tolist() == [6, -8, 2, 6]
    assert got["div"].tolist() == [1.5, -0.5, 8, np.float32(2 / 3)]
    assert got["max"].tolist() == [3, 2, 4, 3]
    assert got["min"].tolist() == [2, -4, 0.5, 2]
    assert got["pow"].tolist() == [9, 8, 2, 1]


@pytest.mark.parametrize("dt", INTS)
def test_integer_add_sub_mul_wrap_around_as_webnn_does(dt):
    # int8, uint8 and uint32 have no TFLite ADD/SUB kernel: they run wider and are cast back,
    # which keeps the low bits, so the results wrap as in the type itself.
    info = np.iinfo(dt)
    a = np.array([info.max, info.min, 7, 3], dt)
    c = np.array([1, 1, 5, 2], dt)
    b = GraphBuilder()
    x, y = b.input("a", dt, [4]), b.input("b", dt, [4])
    graph = b.build({"add": b.add(x, y), "sub": b.sub(x, y), "mul": b.mul(x, y)})
    got = check(graph, {"a": a, "b": c})
    with np.errstate(over="ignore"):
        assert got["add"].tolist() == (a + c).tolist()  # max + 1 wraps to min
        assert got["sub"].tolist() == (a - c).tolist()  # min - 1 wraps to max
        assert got["mul"].tolist() == (a * c).tolist()
    assert got["add"][0] == info.min and got["sub"][1] == info.max


def test_integer_division_truncates_toward_zero():
    b = GraphBuilder()
    x, y = b.input("a", "int32", [5]), b.input("b", "int32", [5])
    got = check(b.build({"y": b.div(x, y)}), {"a": np.array([-7, 7, -7, 7, 9], np.int32),
                                              "b": np.array([2, -2, -2, 2, 1], np.int32)})
    assert got["y"].tolist() == [-3, -3, 3, 3, 9]


def test_integer_pow_with_a_constant_exponent():
    b = GraphBuilder()
    x = b.input("x", "int32", [4])
    y = run_one(b, b.pow(x, b.constant(np.array([3, 2, 5, 0], np.int32))),
                {"x": np.array([-2, 3, -1, 7], np.int32)})
    assert y.tolist() == [-8, 9, -1, 1]


@pytest.mark.parametrize("op,want", [("equal", [0, 1, 0]), ("notEqual", [1, 0, 1]),
                                     ("greater", [0, 0, 1]), ("greaterOrEqual", [0, 1, 1]),
                                     ("lesser", [1, 0, 0]), ("lesserOrEqual", [1, 1, 0])])
@pytest.mark.parametrize("dt", ("float32", "float16") + INTS)
def test_comparisons_give_uint8_zero_or_one(op, want, dt):
    b = GraphBuilder()
    x, y = b.input("a", dt, [3]), b.input("b", dt, [3])
    got = run_one(b, getattr(b, op)(x, y), {"a": np.array([1, 5, 9], dt),
                                            "b": np.array([2, 5, 8], dt)})
    assert got.dtype == np.uint8 and got.tolist() == want


def test_logical_ops_read_any_nonzero_value_as_true():
    a = np.array([0, 1, 2, 255], np.uint8)
    c = np.array([0, 0, 3, 1], np.uint8)
    b = GraphBuilder()
    x, y = b.input("a", "uint8", [4]), b.input("b", "uint8", [4])
    graph = b.build({"and": b.logicalAnd(x, y), "or": b.logicalOr(x, y),
                     "xor": b.logicalXor(x, y), "not": b.logicalNot(x)})
    got = check(graph, {"a": a, "b": c})
    assert got["and"].tolist() == [0, 0, 1, 1]
    assert got["or"].tolist() == [0, 1, 1, 1]
    assert got["xor"].tolist() == [0, 1, 0, 0]
    assert got["not"].tolist() == [1, 0, 0, 0]


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_is_nan_and_is_infinite(dt):
    b = GraphBuilder()
    x = b.input("x", dt, [5])
    graph = b.build({"nan": b.isNaN(x), "inf": b.isInfinite(x)})
    got = check(graph, {"x": np.array([math.nan, math.inf, -math.inf, 1.0, -0.0], dt)})
    assert got["nan"].tolist() == [1, 0, 0, 0, 0]
    assert got["inf"].tolist() == [0, 1, 1, 0, 0]


def test_integers_are_never_nan_or_infinite():
    b = GraphBuilder()
    x = b.input("x", "int32", [3])
    assert run_one(b, b.isNaN(x), {"x": np.array([0, -1, 2**31 - 1], np.int32)}).tolist() \
        == [0, 0, 0]


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_unary_float_ops_on_hand_values(dt):
    b = GraphBuilder()
    x = b.input("x", dt, [6])
    graph = b.build({"round": b.roundEven(x), "ceil": b.ceil(x), "floor": b.floor(x),
                     "sqrt": b.sqrt(b.abs(x)), "recip": b.reciprocal(x)})
    v = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 4.0], dt)
    got = check(graph, {"x": v}, ulp=1)
    assert got["round"].tolist() == [0, 2, 2, 0, -2, 4]  # halves to even
    assert got["ceil"].tolist() == [1, 2, 3, 0, -1, 4]
    assert got["floor"].tolist() == [0, 1, 2, -1, -2, 4]
    assert got["sqrt"][5] == 2 and got["recip"].tolist()[:2] == [2, np.float32(1 / 1.5).astype(dt)]


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_transcendental_functions_within_their_budgets(dt):
    b = GraphBuilder()
    x = b.input("x", dt, [2, 8])
    graph = b.build({"exp": b.exp(x), "cos": b.cos(x), "sin": b.sin(x), "tan": b.tan(x)})
    v = rand(RNG, [2, 8], dt, -1.2, 1.2)
    got = check(graph, {"x": v}, ulp=6, xnnpack_ulp=16)
    assert got["exp"].dtype == np.dtype(dt)
    np.testing.assert_allclose(got["tan"], np.tan(v.astype(np.float64)), rtol=2e-3)


@pytest.mark.parametrize("dt", ["float32", "float16", "int32", "int64", "int8"])
def test_abs_neg_sign(dt):
    lo = -128 if dt == "int8" else -7
    v = np.array([lo, -3, 0, 2, 5], dt)
    b = GraphBuilder()
    x = b.input("x", dt, [5])
    got = check(b.build({"abs": b.abs(x), "neg": b.neg(x), "sign": b.sign(x)}), {"x": v},
                ulp=0)
    with np.errstate(over="ignore"):
        assert got["abs"].tolist() == np.abs(v).tolist()  # int8: |-128| wraps to -128
        assert got["neg"].tolist() == (-v).tolist()
    assert got["sign"].tolist() == [-1, -1, 0, 1, 1]


def test_erf_against_the_function():
    # Written out: the series below |x| = 0.5, GELU's form above; 18 ULP as gelu's budget.
    v = np.array([0.0, 1e-4, 0.3, -0.49, 0.5, 1.0, -2.0, 3.5, 9.0, -12.0], F32)
    b = GraphBuilder()
    x = b.input("x", "float32", [10])
    y = run_one(b, b.erf(x), {"x": v}, ulp=18)
    want = np.array([math.erf(float(t)) for t in v], F32)
    np.testing.assert_allclose(y, want, rtol=3e-6, atol=0)
    assert y[0] == 0 and y[-2] == 1 and y[-1] == -1


@pytest.mark.parametrize("dt", ["float32", "int64", "uint8", "uint64"])
def test_where_broadcasts_all_three(dt):
    b = GraphBuilder()
    c = b.input("c", "uint8", [2, 1])
    t, f = b.input("t", dt, [3]), b.input("f", dt, [2, 3])
    y = run_one(b, b.where(c, t, f), {"c": np.array([[0], [7]], np.uint8),
                                     "t": np.array([1, 2, 3], dt),
                                     "f": np.array([[4, 5, 6], [7, 8, 9]], dt)})
    assert y.tolist() == [[4, 5, 6], [1, 2, 3]]


def test_cast_truncates_floats_and_keeps_low_bits_of_integers():
    b = GraphBuilder()
    x = b.input("x", "float32", [4])
    i = b.input("i", "int32", [3])
    graph = b.build({"to_int": b.cast(x, "int32"), "to_u8": b.cast(i, "uint8"),
                     "to_f16": b.cast(x, "float16"), "to_i64": b.cast(i, "int64")})
    got = check(graph, {"x": np.array([-1.7, 2.9, 0.5, 65504.5], F32),
                        "i": np.array([300, -1, 255], np.int32)})
    assert got["to_int"].tolist() == [-1, 2, 0, 65504]
    assert got["to_u8"].tolist() == [44, 255, 255]
    assert got["to_f16"].dtype == np.float16 and got["to_f16"][2] == 0.5
    assert got["to_i64"].tolist() == [300, -1, 255]


@pytest.mark.parametrize("src", ["float32", "float16", "int32", "uint32", "int64", "int8",
                                 "uint8"])
@pytest.mark.parametrize("dst", ["float32", "float16", "int32", "uint32", "int64", "int8",
                                 "uint8"])
def test_cast_between_every_pair_of_types(src, dst):
    v = np.array([0, 1, 7, 100], src)
    b = GraphBuilder()
    x = b.input("x", src, [4])
    y = run_one(b, b.cast(x, dst), {"x": v})
    assert y.dtype == np.dtype(dst) and y.tolist() == [0, 1, 7, 100]


def test_identity_of_an_input_is_a_copy_of_its_own():
    b = GraphBuilder()
    x = b.input("x", "uint64", [3])
    graph = b.build({"y": b.identity(x)})
    v = np.array([0, 2**63 + 5, 1], np.uint64)
    assert check(graph, {"x": v})["y"].tolist() == v.tolist()
    assert ops_of(graph) == ["RESHAPE"]  # an output gets a tensor of its own
