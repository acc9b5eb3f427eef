"""Data-movement ops through the ONNX lowering, on hand values (exact)."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from .helpers import assert_exact, execute, run1

A23 = np.array([[1, 2, 3], [4, 5, 6]], np.float32)


def _one(name, x, *args, dtype="float32", **options):
    b = GraphBuilder()
    xi = b.input("x", dtype, list(np.shape(x)))
    return run1(b, getattr(b, name)(xi, *args, **options), {"x": np.asarray(x, dtype)})


def test_concat_along_each_axis_and_types():
    b = GraphBuilder()
    x = b.input("x", "int8", [2, 1])
    c = b.constant(np.array([[7, 8], [9, 10]], np.int8))
    got = execute(b, {"c1": b.concat([x, c, x], 1), "c0": b.concat([c, c], 0)},
                  {"x": np.array([[-1], [-2]], np.int8)})
    assert_exact(got["c1"], [[-1, 7, 8, -1], [-2, 9, 10, -2]], np.int8)
    assert_exact(got["c0"], [[7, 8], [9, 10], [7, 8], [9, 10]], np.int8)


def test_expand():
    got = _one("expand", np.array([[1], [2], [3]]), [2, 3, 2])
    assert_exact(got, [[[1, 1], [2, 2], [3, 3]]] * 2, np.float32)
    assert_exact(_one("expand", np.float32(5), [2]), [5, 5], np.float32)


def test_pad_spec_examples():
    begin, end = [1, 2], [1, 2]
    assert_exact(_one("pad", A23, begin, end), [[0, 0, 0, 0, 0, 0, 0], [0, 0, 1, 2, 3, 0, 0],
                                                [0, 0, 4, 5, 6, 0, 0], [0, 0, 0, 0, 0, 0, 0]],
                 np.float32)
    assert_exact(_one("pad", A23, begin, end, mode="edge"),
                 [[1, 1, 1, 2, 3, 3, 3], [1, 1, 1, 2, 3, 3, 3], [4, 4, 4, 5, 6, 6, 6],
                  [4, 4, 4, 5, 6, 6, 6]], np.float32)
    assert_exact(_one("pad", A23, begin, end, mode="reflection"),
                 [[6, 5, 4, 5, 6, 5, 4], [3, 2, 1, 2, 3, 2, 1], [6, 5, 4, 5, 6, 5, 4],
                  [3, 2, 1, 2, 3, 2, 1]], np.float32)


def test_pad_value_is_cast_to_the_input_type():
    assert_exact(_one("pad", np.array([1, 2]), [1], [2], value=9.5), [9.5, 1, 2, 9.5, 9.5],
                 np.float32)
    assert_exact(_one("pad", np.array([1, 2]), [1], [1], dtype="uint8", value=-3), [0, 1, 2, 0],
                 np.uint8)  # -3 clamps to 0 in uint8
    big = 2**64 - 2
    assert_exact(_one("pad", np.array([1], np.uint64), [1], [0], dtype="uint64", value=big),
                 [big, 1], np.uint64)


def test_reshape():
    assert_exact(_one("reshape", A23, [3, 2]), [[1, 2], [3, 4], [5, 6]], np.float32)
    assert_exact(_one("reshape", A23, [6]), [1, 2, 3, 4, 5, 6], np.float32)
    assert_exact(_one("reshape", np.float32(4), [1, 1]), [[4]], np.float32)


def test_slice_with_and_without_strides():
    x = np.arange(10, dtype=np.float32)
    assert_exact(_one("slice", x, [1], [7], strides=[3]), [1, 4, 7], np.float32)
    assert_exact(_one("slice", x, [1], [3], strides=[3]), [1], np.float32)  # ceil(3 / 3)
    assert_exact(_one("slice", x, [7], [3]), [7, 8, 9], np.float32)
    assert_exact(_one("slice", A23, [1, 0], [1, 2], strides=[1, 2]), [[4]], np.float32)
    assert_exact(_one("slice", A23, [0, 1], [2, 2]), [[2, 3], [5, 6]], np.float32)


def test_split_by_count_and_by_sizes():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    p = b.split(x, 3, axis=1)
    q = b.split(x, [1, 2], axis=1)
    r = b.split(x, 1)
    got = execute(b, {"p0": p[0], "p2": p[2], "q0": q[0], "q1": q[1], "r0": r[0]}, {"x": A23})
    assert_exact(got["p0"], [[1], [4]], np.float32)
    assert_exact(got["p2"], [[3], [6]], np.float32)
    assert_exact(got["q0"], [[1], [4]], np.float32)
    assert_exact(got["q1"], [[2, 3], [5, 6]], np.float32)
    assert_exact(got["r0"], A23, np.float32)


def test_transpose_default_and_explicit():
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    assert_exact(_one("transpose", x), x.transpose(2, 1, 0), np.float32)
    assert_exact(_one("transpose", x, permutation=[1, 2, 0]), x.transpose(1, 2, 0), np.float32)
    assert_exact(_one("transpose", x, permutation=[0, 1, 2]), x, np.float32)


def test_tile():
    assert_exact(_one("tile", A23, [2, 1]), [[1, 2, 3], [4, 5, 6], [1, 2, 3], [4, 5, 6]],
                 np.float32)
    assert_exact(_one("tile", np.array([1, 2]), [3], dtype="float16"), [1, 2, 1, 2, 1, 2],
                 np.float16)
    assert_exact(_one("tile", np.array([2**64 - 1], np.uint64), [2], dtype="uint64"),
                 [2**64 - 1] * 2, np.uint64)


def test_reverse():
    assert_exact(_one("reverse", A23), [[6, 5, 4], [3, 2, 1]], np.float32)
    assert_exact(_one("reverse", A23, axes=[1]), [[3, 2, 1], [6, 5, 4]], np.float32)
    assert_exact(_one("reverse", A23, axes=[0]), [[4, 5, 6], [1, 2, 3]], np.float32)
    assert_exact(_one("reverse", A23, axes=[]), A23, np.float32)


T = np.array([[7, 1, 2], [9, 4, 8], [2, 6, 3]], np.float32)


@pytest.mark.parametrize("options,want", [
    ({}, [[7, 1, 2], [0, 4, 8], [0, 0, 3]]),
    ({"diagonal": 1}, [[0, 1, 2], [0, 0, 8], [0, 0, 0]]),
    ({"diagonal": -1}, [[7, 1, 2], [9, 4, 8], [0, 6, 3]]),
    ({"upper": False}, [[7, 0, 0], [9, 4, 0], [2, 6, 3]]),
    ({"upper": False, "diagonal": 1}, [[7, 1, 0], [9, 4, 8], [2, 6, 3]]),
    ({"upper": False, "diagonal": -1}, [[0, 0, 0], [9, 0, 0], [2, 6, 0]]),
])
def test_triangular_spec_examples(options, want):
    assert_exact(_one("triangular", T, **options), want, np.float32)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "uint32", "uint64", "float16", "int64"])
def test_triangular_batched_on_other_types(dtype):
    x = np.stack([T, T + 1]).astype(dtype)
    got = _one("triangular", x, dtype=dtype, upper=False)
    assert_exact(got, np.stack([np.tril(T), np.tril(T + 1)]), dtype)


def test_pad_of_a_scalar_is_the_scalar():
    # A rank-0 input has empty padding lists (the spec accepts rank 0 since #894).
    import numpy as np

    import converter

    b = converter.GraphBuilder()
    g = b.build({"y": b.pad(b.input("x", "float32", []), [], [])})
    assert converter.run(g, {"x": np.array(3.5, np.float32)})["y"] == np.float32(3.5)


def test_reverse_a_long_axis_reaches_its_first_element():
    # The slice runs from -1 down past the start (end INT64_MIN): every one of 300 elements.
    x = np.arange(300, dtype=np.float32)
    assert_exact(_one("reverse", x), x[::-1], np.float32)


def test_concat_of_one_input_is_that_input():
    b = GraphBuilder()
    xi = b.input("x", "int32", [2, 2])
    got = run1(b, b.concat([xi], 1), {"x": np.array([[1, 2], [3, 4]], np.int32)})
    assert_exact(got, [[1, 2], [3, 4]], np.int32)
