"""Reductions, argMin/argMax and cumulativeSum exported to TFLite. Budget: the number of
reduced elements (reduceL2: 2n + 1, tolerances.md); integers exactly."""
from __future__ import annotations

import math

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from .helpers import check, rand, run_one

RNG = np.random.default_rng(17)
SUMS = ("float32", "float16", "int32", "uint32", "int64")


def test_reductions_on_hand_values():
    v = np.array([[1, -2, 3], [4, 5, -6]], np.float32)
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    graph = b.build({
        "sum": b.reduceSum(x, axes=[1]), "mean": b.reduceMean(x, axes=[0]),
        "max": b.reduceMax(x), "min": b.reduceMin(x, axes=[1], keepDimensions=True),
        "prod": b.reduceProduct(x, axes=[1]), "l1": b.reduceL1(x, axes=[1]),
        "l2": b.reduceL2(x, axes=[0]), "sumsq": b.reduceSumSquare(x, axes=[1]),
        "logsum": b.reduceLogSum(b.abs(x), axes=[1]),
        "logsumexp": b.reduceLogSumExp(x, axes=[1]),
    })
    got = check(graph, {"x": v}, ulp=7, xnnpack_atol=3e-6, rtol=1e-6)
    assert got["sum"].tolist() == [2, 3]
    assert got["mean"].tolist() == [2.5, 1.5, -1.5]
    assert got["max"].tolist() == 5 and got["min"].tolist() == [[-2], [-6]]
    assert got["prod"].tolist() == [-6, -120]
    assert got["l1"].tolist() == [6, 15] and got["sumsq"].tolist() == [14, 77]
    np.testing.assert_allclose(got["l2"], [math.sqrt(17), math.sqrt(29), math.sqrt(45)],
                               rtol=2e-7)
    np.testing.assert_allclose(got["logsum"], [math.log(6), math.log(15)], rtol=2e-7)
    np.testing.assert_allclose(got["logsumexp"], np.log(np.exp(v.astype(float)).sum(1)),
                               rtol=2e-6)


@pytest.mark.parametrize("op,types", [
    ("reduceSum", SUMS), ("reduceProduct", SUMS), ("reduceL1", SUMS),
    ("reduceSumSquare", SUMS), ("reduceMax", SUMS + ("int8", "uint8")),
    ("reduceMin", SUMS + ("int8", "uint8")), ("reduceMean", ("float32", "float16")),
    ("reduceL2", ("float32", "float16")), ("reduceLogSum", ("float32", "float16")),
    ("reduceLogSumExp", ("float32", "float16"))])
@pytest.mark.parametrize("opts", [dict(), dict(axes=[1]), dict(axes=[0, 2], keepDimensions=True),
                                  dict(axes=[])])
def test_reduction_options_and_types(op, types, opts):
    for dt in types:
        low, high = (1, 2) if op in ("reduceProduct", "reduceLogSum") else (0, 3)
        if op == "reduceProduct" and dt.startswith("float"):
            high = 1.3  # 24 factors stay within float16's range
        b = GraphBuilder()
        x = b.input("x", dt, [2, 3, 4])
        graph = b.build({"y": getattr(b, op)(x, **opts)})
        # 24 elements at most; XNNPACK's log/exp as in test_every_op
        y = check(graph, {"x": rand(RNG, (2, 3, 4), dt, low, high)}, ulp=2 * 24 + 1,
                  xnnpack_atol=2e-6 if dt == "float32" else None, rtol=1e-6)["y"]
        assert y.dtype == np.dtype(dt)


def test_reductions_over_no_axes_apply_to_each_element():
    v = np.array([-2, 0.5, 3], np.float32)
    b = GraphBuilder()
    x = b.input("x", "float32", [3])
    graph = b.build({"l1": b.reduceL1(x, axes=[]), "sq": b.reduceSumSquare(x, axes=[]),
                     "sum": b.reduceSum(x, axes=[])})
    got = check(graph, {"x": v}, ulp=0)
    assert got["l1"].tolist() == [2, 0.5, 3] and got["sq"].tolist() == [4, 0.25, 9]
    assert got["sum"].tolist() == [-2, 0.5, 3]


@pytest.mark.parametrize("dt", ["float32", "float16", "int32", "int8", "uint8"])
def test_arg_min_max_keep_the_first_of_equal_values(dt):
    v = np.array([[3, 7, 7, 1], [2, 2, 0, 0]], dt)
    b = GraphBuilder()
    x = b.input("x", dt, [2, 4])
    graph = b.build({"max": b.argMax(x, 1), "min": b.argMin(x, 1, keepDimensions=True,
                                                             outputDataType="int64")})
    got = check(graph, {"x": v})
    assert got["max"].dtype == np.int32 and got["max"].tolist() == [1, 0]
    assert got["min"].dtype == np.int64 and got["min"].tolist() == [[3], [2]]


@pytest.mark.parametrize("exclusive,reverse,want", [
    (False, False, [1, 3, 6, 10]), (True, False, [0, 1, 3, 6]),
    (False, True, [10, 9, 7, 4]), (True, True, [9, 7, 4, 0])])
@pytest.mark.parametrize("dt", ["float32", "float16", "int32", "uint32", "int64"])
def test_cumulative_sum(exclusive, reverse, want, dt):
    b = GraphBuilder()
    x = b.input("x", dt, [2, 4])
    y = run_one(b, b.cumulativeSum(x, 1, exclusive=exclusive, reversed=reverse),
                {"x": np.array([[1, 2, 3, 4], [0, 0, 0, 0]], dt)}, ulp=0)
    assert y.tolist() == [want, [0, 0, 0, 0]]
