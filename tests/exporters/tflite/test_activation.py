"""Activations exported to TFLite: the TFLite function where there is one (and which), the
spec's expression where there is not, with hand-computed values."""
from __future__ import annotations

import math

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from .helpers import check, ops_of, rand, run_one

RNG = np.random.default_rng(12)
F32 = np.float32


@pytest.mark.parametrize("bounds,op", [((0, 6), "RELU6"), ((-1, 1), "RELU_N1_TO_1"),
                                       ((0, None), "RELU"), ((-0.5, 2.5), "MAXIMUM")])
def test_clamp_uses_the_fused_relus_where_the_bounds_match(bounds, op):
    lo, hi = bounds
    b = GraphBuilder()
    x = b.input("x", "float32", [6])
    graph = b.build({"y": b.clamp(x, minValue=lo, **({} if hi is None else {"maxValue": hi}))})
    v = np.array([-8, -1, -0.25, 0.5, 3, 9], F32)
    got = check(graph, {"x": v}, ulp=0)["y"]
    assert got.tolist() == np.clip(v, lo, hi if hi is not None else np.inf).tolist()
    assert ops_of(graph)[0] == op


_SPECIAL_BOUNDS = [{"minValue": -math.inf}, {"maxValue": math.inf},
                   {"minValue": -math.inf, "maxValue": math.inf}, {"minValue": math.nan},
                   {"maxValue": math.nan}, {"minValue": 0, "maxValue": math.inf},
                   {"minValue": -math.inf, "maxValue": 6}]


@pytest.mark.parametrize("options", _SPECIAL_BOUNDS, ids=lambda o: ",".join(
    f"{k}={v}" for k, v in o.items()))
@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_clamp_with_infinite_and_nan_bounds_matches_the_spec(dt, options):
    """An infinite bound leaves infinities alone; a NaN bound makes every element NaN (the
    spec's min(max(x, minValue), maxValue)); LiteRT's MAXIMUM would keep x for a NaN bound.
    A NaN x is left out: LiteRT's MAXIMUM and MINIMUM do not return it for every bound (a
    difference of the max and min exports in general, not of these bounds)."""
    b = GraphBuilder()
    x = b.input("x", dt, [7])
    v = np.array([-np.inf, -60000, -1.5, 0, 2.5, 60000, np.inf], dt)
    got = run_one(b, b.clamp(x, **options), {"x": v}, ulp=0)
    lo, hi = options.get("minValue"), options.get("maxValue")
    if any(bound is not None and math.isnan(bound) for bound in (lo, hi)):
        assert np.isnan(got).all()
    else:
        want = np.clip(v, -np.inf if lo is None else lo, np.inf if hi is None else hi)
        np.testing.assert_array_equal(got, want.astype(dt))


@pytest.mark.parametrize("dt", ["int32", "int64", "int8", "uint8", "uint32"])
def test_integer_clamp_casts_its_bounds_to_the_type(dt):
    b = GraphBuilder()
    x = b.input("x", dt, [4])
    v = np.array([0, 3, 9, 100], dt)
    y = run_one(b, b.clamp(x, minValue=2.6, maxValue=9.5), {"x": v})
    assert y.tolist() == [3, 3, 9, 10]  # 2.6 -> 3 and 9.5 -> 10 (rounding halves to even)


@pytest.mark.parametrize("dt", ["float32", "float16", "int32", "int64", "int8"])
def test_relu(dt):
    b = GraphBuilder()
    x = b.input("x", dt, [4])
    assert run_one(b, b.relu(x), {"x": np.array([-3, 0, 2, 5], dt)}, ulp=0).tolist() \
        == [0, 0, 2, 5]


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_elu(alpha):
    v = np.array([-3, -1, -0.2, 0, 0.5, 4], F32)
    b = GraphBuilder()
    x = b.input("x", "float32", [6])
    y = run_one(b, b.elu(x, alpha=alpha), {"x": v}, ulp=18)
    want = np.where(v > 0, v, alpha * np.expm1(v.astype(np.float64)))
    np.testing.assert_allclose(y, want, rtol=3e-6)


def test_hardswish_hardsigmoid_leaky_relu_linear_on_hand_values():
    v = np.array([-4, -1, 0, 0.5, 1, 3], F32)
    b = GraphBuilder()
    x = b.input("x", "float32", [6])
    graph = b.build({"hswish": b.hardSwish(x), "hsig": b.hardSigmoid(x, alpha=0.25, beta=0.5),
                     "leaky": b.leakyRelu(x, alpha=0.125),
                     "linear": b.linear(x, alpha=2, beta=-1)})
    got = check(graph, {"x": v}, ulp=4)
    np.testing.assert_allclose(got["hswish"], [0, -2 / 6, 0, 0.5 * 3.5 / 6, 4 / 6, 3],
                               rtol=1e-6)
    assert got["hsig"].tolist() == [0, 0.25, 0.5, 0.625, 0.75, 1]
    assert got["leaky"].tolist() == [-0.5, -0.125, 0, 0.5, 1, 3]
    assert got["linear"].tolist() == [-9, -3, -1, 0, 1, 5]


def test_gelu_is_tflites_exact_gelu():
    # GELU(approximate=False) is the spec's 0.5 * x * (1 + erf(x / sqrt 2)), computed so by
    # LiteRT: below -3 the 1 + erf(...) cancels, which leaves an absolute error under 5e-8
    # (many ULP of the tiny result), so it is judged by that bound; elsewhere by 18 ULP.
    # XNNPACK's GELU is an approximation with an absolute error up to 2.4e-7 (measured).
    v = np.array([-4, -3, -1, 0, 0.5, 1, 3], F32)
    b = GraphBuilder()
    x = b.input("x", "float32", [7])
    y = run_one(b, b.gelu(x), {"x": v}, atol=5e-8, rtol=18 * 2**-23, xnnpack_atol=3e-7)
    want = [0.5 * t * (1 + math.erf(t / math.sqrt(2))) for t in v.astype(float)]
    np.testing.assert_allclose(y, want, rtol=18 * 2**-23, atol=5e-8)


def test_linear_float16_casts_alpha_and_beta_to_float16():
    b = GraphBuilder()
    x = b.input("x", "float16", [3])
    y = run_one(b, b.linear(x, alpha=0.1, beta=0.2), {"x": np.array([1, 2, 4], np.float16)},
                ulp=2)
    a, c = np.float16(0.1), np.float16(0.2)
    assert y.tolist() == [np.float16(a * t + c) for t in (1.0, 2.0, 4.0)]


@pytest.mark.parametrize("dt", ["float32", "float16", "int32", "int64", "int8"])
def test_prelu_with_a_broadcast_slope(dt):
    b = GraphBuilder()
    x, s = b.input("x", dt, [2, 3]), b.input("s", dt, [3])
    y = run_one(b, b.prelu(x, s), {"x": np.array([[-2, 0, 3], [4, -5, -1]], dt),
                                   "s": np.array([2, 3, -1], dt)}, ulp=1)
    assert y.tolist() == [[-4, 0, 3], [4, -15, 1]]


def test_prelu_with_a_slope_that_widens_the_shape():
    b = GraphBuilder()
    x, s = b.input("x", "float32", [3, 1]), b.input("s", "float32", [2])
    graph = b.build({"y": b.prelu(x, s)})
    y = check(graph, {"x": np.array([[-1], [2], [-3]], F32), "s": np.array([0.5, 2], F32)},
              ulp=1)["y"]
    assert y.tolist() == [[-0.5, -2], [2, 2], [-1.5, -6]]
    assert "PRELU" not in ops_of(graph)  # written out: PRELU keeps the input's shape


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_softmax_on_any_axis(axis):
    v = rand(RNG, [2, 3, 4], "float32", -3, 3)
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4])
    graph = b.build({"y": b.softmax(x, axis)})
    n = v.shape[axis]
    y = check(graph, {"x": v}, ulp=3 * n + 3, xnnpack_ulp=3 * n + 3 + 16)["y"]
    e = np.exp(v.astype(np.float64) - v.max(axis, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis, keepdims=True), rtol=3e-6)
    assert ops_of(graph).count("TRANSPOSE") == (0 if axis == 2 else 2)


def test_softplus_keeps_its_digits_at_both_ends():
    v = np.array([-30, -15, -3, 0, 0.001, 2, 15, 40], F32)
    b = GraphBuilder()
    x = b.input("x", "float32", [8])
    y = run_one(b, b.softplus(x), {"x": v}, ulp=18)
    want = np.logaddexp(0, v.astype(np.float64))
    np.testing.assert_allclose(y, want, rtol=2e-6)  # 9.36e-14 at -30, 40 at 40
    assert y[-1] == 40


@pytest.mark.parametrize("op,budget", [("sigmoid", None), ("tanh", 4), ("softsign", 3)])
@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_sigmoid_tanh_softsign(op, budget, dt):
    v = rand(RNG, [3, 5], dt, -5, 5)
    b = GraphBuilder()
    x = b.input("x", dt, [3, 5])
    # LOGISTIC has an absolute error near 6e-8 (see test_every_op); XNNPACK's tanh is a
    # rational approximation (16 ULP)
    bounds = dict(atol=1e-7 if dt == "float32" else 1e-3) if budget is None else \
        dict(ulp=budget, xnnpack_ulp=16)
    y = run_one(b, getattr(b, op)(x), {"x": v}, **bounds)
    ref = {"sigmoid": lambda t: 1 / (1 + np.exp(-t)), "tanh": np.tanh,
           "softsign": lambda t: t / (1 + np.abs(t))}[op](v.astype(np.float64))
    np.testing.assert_allclose(y, ref, rtol=2e-3 if dt == "float16" else 2e-6, atol=1e-7)
