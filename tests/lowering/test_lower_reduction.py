"""Reductions, argMin/argMax and cumulativeSum through the ONNX lowering, on hand values."""
from __future__ import annotations

import math

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from .helpers import assert_exact, assert_ulp, execute, run1

M = np.array([[1, 2, 3], [4, 5, 6]], np.float32)

# Results of each reduction over axis 1 of M, worked out by hand.
ROWS = {
    "reduceL1": [6, 15],
    "reduceL2": [math.sqrt(14), math.sqrt(77)],
    "reduceLogSum": [math.log(6), math.log(15)],
    "reduceLogSumExp": [math.log(math.e + math.e**2 + math.e**3),
                        math.log(math.e**4 + math.e**5 + math.e**6)],
    "reduceMax": [3, 6],
    "reduceMean": [2, 5],
    "reduceMin": [1, 4],
    "reduceProduct": [6, 120],
    "reduceSum": [6, 15],
    "reduceSumSquare": [14, 77],
}


def _reduce(name, x, dtype="float32", **options):
    b = GraphBuilder()
    xi = b.input("x", dtype, list(np.shape(x)))
    return run1(b, getattr(b, name)(xi, **options), {"x": np.asarray(x, dtype)})


@pytest.mark.parametrize("name", sorted(ROWS))
def test_reduce_over_one_axis(name):
    got = _reduce(name, M, axes=[1])
    assert_ulp(got, np.array(ROWS[name]), 7)  # budget: 2n + 1 with n = 3 (reduceL2's)
    kept = _reduce(name, M, axes=[1], keepDimensions=True)
    assert kept.shape == (2, 1)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_reduce_over_every_axis_when_axes_are_absent(name):
    got = _reduce(name, M)
    assert got.shape == ()
    flat = M.astype(np.float64).ravel()
    want = {"reduceL1": flat.sum(), "reduceL2": math.sqrt((flat**2).sum()),
            "reduceLogSum": math.log(flat.sum()), "reduceLogSumExp": math.log(np.exp(flat).sum()),
            "reduceMax": 6, "reduceMean": 3.5, "reduceMin": 1, "reduceProduct": 720,
            "reduceSum": 21, "reduceSumSquare": 91}[name]
    assert_ulp(got, np.array(want), 13)  # 2n + 1 with n = 6


@pytest.mark.parametrize("name", sorted(ROWS))
def test_empty_axes_apply_the_function_to_each_element(name):
    x = np.array([-2.0, 0.5, 3.0], np.float32)
    got = _reduce(name, x, axes=[])
    v = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = {"reduceL1": np.abs(v), "reduceL2": np.abs(v), "reduceLogSum": np.log(v),
                "reduceLogSumExp": v, "reduceMax": v, "reduceMean": v, "reduceMin": v,
                "reduceProduct": v, "reduceSum": v, "reduceSumSquare": v * v}[name]
    assert_ulp(got, want, 2)


def test_reduce_of_a_scalar():
    assert_exact(_reduce("reduceSumSquare", np.float32(-3)), 9, np.float32)
    assert_exact(_reduce("reduceMax", np.float32(-3)), -3, np.float32)


def test_integer_reductions_keep_their_type():
    i = np.array([[1, -2, 3], [4, 5, -6]], np.int32)
    assert_exact(_reduce("reduceSum", i, "int32", axes=[0]), [5, 3, -3], np.int32)
    assert_exact(_reduce("reduceL1", i, "int32", axes=[1]), [6, 15], np.int32)
    u = np.array([[1, 2**32 - 1], [7, 3]], np.uint32)
    assert_exact(_reduce("reduceMax", u, "uint32", axes=[1]), [2**32 - 1, 7], np.uint32)
    assert_exact(_reduce("reduceSum", u, "uint32", axes=[1]), [0, 10], np.uint32)  # wraps
    big = np.array([2**63, 2**63 + 5], np.uint64)
    assert_exact(_reduce("reduceSum", big, "uint64"), 5, np.uint64)  # wraps mod 2^64
    assert_exact(_reduce("reduceProduct", np.array([3, -4, 5], np.int64), "int64"), -60, np.int64)
    assert_exact(_reduce("reduceMin", np.array([[3, -4]], np.int8), "int8", axes=[1]), [-4],
                 np.int8)


def test_float16_reduce_mean():
    got = _reduce("reduceMean", M, "float16", axes=[0])
    assert_exact(got, [2.5, 3.5, 4.5], np.float16)


def test_arg_min_max_first_index_wins_and_output_types():
    x = np.array([[3, 1, 3, 1], [2, 2, 0, 9]], np.float32)
    b = GraphBuilder()
    xi = b.input("x", "float32", [2, 4])
    got = execute(b, {"amax": b.argMax(xi, 1), "amin": b.argMin(xi, 1),
                      "amax0": b.argMax(xi, 0, keepDimensions=True, outputDataType="int64")},
                  {"x": x})
    assert_exact(got["amax"], [0, 3], np.int32)
    assert_exact(got["amin"], [1, 2], np.int32)
    assert_exact(got["amax0"], [[0, 1, 0, 1]], np.int64)


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int8", "int64", "float16"])
def test_arg_max_on_other_types(dtype):
    got = _reduce("argMax", np.array([1, 7, 7, 2]), dtype, axis=0)
    assert_exact(got, 1, np.int32)


@pytest.mark.parametrize("exclusive,reversed_,want", [
    (False, False, [1, 3, 6, 10]),
    (True, False, [0, 1, 3, 6]),
    (False, True, [10, 9, 7, 4]),
    (True, True, [9, 7, 4, 0]),
])
def test_cumulative_sum_spec_examples(exclusive, reversed_, want):
    got = _reduce("cumulativeSum", np.array([1, 2, 3, 4]), "float32", axis=0,
                  exclusive=exclusive, reversed=reversed_)
    assert_exact(got, want, np.float32)


def test_cumulative_sum_along_an_inner_axis_and_on_integers():
    got = _reduce("cumulativeSum", M, axis=1)
    assert_exact(got, [[1, 3, 6], [4, 9, 15]], np.float32)
    got = _reduce("cumulativeSum", np.array([2**32 - 1, 1, 5]), "uint32", axis=0)
    assert_exact(got, [2**32 - 1, 0, 5], np.uint32)  # wraps like uint32 addition
    got = _reduce("cumulativeSum", np.array([5, -7, 1]), "int64", axis=0, exclusive=True)
    assert_exact(got, [0, 5, -2], np.int64)


def test_uint64_max_min_and_arg_max_keep_unsigned_order():
    # Values on both sides of 2^63, where a signed reading would flip the order.
    x = np.array([[5, 2**63 + 1, 2**64 - 1], [2**63, 3, 2**62]], np.uint64)
    b = GraphBuilder()
    xi = b.input("x", "uint64", [2, 3])
    got = execute(b, {"max": b.reduceMax(xi, axes=[1]), "min": b.reduceMin(xi),
                      "amax": b.argMax(xi, 1), "amin": b.argMin(xi, 1)}, {"x": x})
    assert_exact(got["max"], [2**64 - 1, 2**63], np.uint64)
    assert_exact(got["min"], 3, np.uint64)
    assert_exact(got["amax"], [2, 0], np.int32)
    assert_exact(got["amin"], [0, 1], np.int32)


@pytest.mark.parametrize("name", ["reduceMax", "reduceMean", "reduceMin", "reduceProduct",
                                  "reduceSum"])
def test_empty_axes_leave_each_element_exactly_as_it_is(name):
    # -200 would not survive a detour through exp (0 in float32) and log (-inf)
    x = np.array([-200.0, 0.1, 90.0], np.float32)
    assert_exact(_reduce(name, x, axes=[]), x, np.float32)


def test_integer_product_of_an_odd_count_and_sums_keeping_dimensions():
    # int32 reductions fold pairwise in the integer type; an odd count is padded with the
    # fold's identity (1 for a product, 0 for a sum)
    m = np.array([[2, 3, 4], [-1, 5, 6]], np.int32)
    assert_exact(_reduce("reduceProduct", m, "int32", axes=[1]), [24, -30], np.int32)
    assert_exact(_reduce("reduceSum", m, "int32", axes=[1], keepDimensions=True), [[9], [10]],
                 np.int32)
    assert_exact(_reduce("reduceProduct", m, "int32", axes=[0], keepDimensions=True),
                 [[-2, 15, 24]], np.int32)
