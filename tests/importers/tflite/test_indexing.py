"""TFLite indexing ops against LiteRT (bit-exact), with hand-computed values."""
from __future__ import annotations

import numpy as np
import pytest

from converter.testing.tflite_fixtures import Const, Input, Output, one_op

from .helpers import EXACT, check, op_named, ops_of, rand, refused

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def _i32(v):
    return Const(np.array(v, np.int32))


def _strided(begin, end, strides, out_shape, **masks):
    return one_op("STRIDED_SLICE", [Input("x", [2, 3, 4]), _i32(begin), _i32(end),
                                    _i32(strides)], [Output("y", out_shape)], **masks)


@pytest.mark.parametrize("begin, end, strides, masks, index", [
    ([0, 1, 0], [2, 3, 4], [1, 1, 2], {}, np.s_[0:2, 1:3, 0:4:2]),
    ([1, 0, -1], [2, 3, 0], [1, 1, -1], {}, np.s_[1:2, 0:3, -1:0:-1]),
    ([0, 0, 1], [0, 0, 3], [1, 1, 1], {"beginMask": 3, "endMask": 3}, np.s_[:, :, 1:3]),
    ([1, 0, 0], [2, 3, 4], [1, 1, 1], {"shrinkAxisMask": 1}, np.s_[1, 0:3, 0:4]),
    ([0, 2], [0, 3], [1, 1], {"ellipsisMask": 1}, np.s_[..., 2:3]),
    ([0, 0, -1], [0, 0, 0], [1, 1, 1], {"beginMask": 3, "endMask": 3, "shrinkAxisMask": 4},
     np.s_[:, :, -1]),
    ([0, -5, 1], [2, 10, 3], [1, 2, 1], {}, np.s_[0:2, -5:10:2, 1:3]),  # clamped bounds
])
def test_strided_slice(begin, end, strides, masks, index):
    want = A[index]
    model = _strided(begin, end, strides, list(want.shape), **masks)
    _, got = check(model, {"x": A}, EXACT)
    np.testing.assert_array_equal(got["y"], want)


def test_strided_slice_with_offset_takes_end_relative_to_begin():
    model = _strided([1, 1, 1], [1, 2, 2], [1, 1, 1], [1, 2, 2], offset=True)
    graph, got = check(model, {"x": A}, EXACT)
    np.testing.assert_array_equal(got["y"], A[1:2, 1:3, 1:3])
    assert ops_of(graph) == ["slice"]


def test_strided_slice_negative_stride_is_reverse_then_slice():
    model = _strided([1, 0, 3], [2, 3, 0], [1, 1, -2], [1, 3, 2])
    graph, got = check(model, {"x": A}, EXACT)
    np.testing.assert_array_equal(got["y"], A[1:2, :, 3:0:-2])
    assert ops_of(graph) == ["reverse", "slice"]
    assert op_named(graph, "slice").attrs["strides"] == [1, 1, 2]


@pytest.mark.parametrize("n", [7, 5])
def test_strided_slice_stride_two_over_an_odd_axis_still_slices(n):
    """Issue 17: over an odd axis, stride 2 from 0 walks a window as long as the axis
    ((n - 1) // 2 * 2 + 1 == n), which must not read as "the whole axis, no slice"."""
    x = np.arange(2 * n * n * 3, dtype=np.float32).reshape(2, n, n, 3)
    want = x[:, ::2, ::2, :]
    model = one_op("STRIDED_SLICE", [Input("x", x.shape), _i32([0, 0, 0, 0]),
                                     _i32([2, n, n, 3]), _i32([1, 2, 2, 1])],
                   [Output("y", list(want.shape))])
    graph, got = check(model, {"x": x}, EXACT)
    np.testing.assert_array_equal(got["y"], want)
    assert op_named(graph, "slice").attrs["strides"] == [1, 2, 2, 1]


def test_slice_with_size_minus_one():
    model = one_op("SLICE", [Input("x", [2, 3, 4]), _i32([1, 1, 0]), _i32([1, -1, 3])],
                   [Output("y", [1, 2, 3])])
    graph, got = check(model, {"x": A}, EXACT)
    np.testing.assert_array_equal(got["y"], A[1:2, 1:3, 0:3])
    assert op_named(graph, "slice").attrs["starts"] == [1, 1, 0]


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather(axis):
    indices = np.array([[2, 0], [1, 1]], np.int32) if axis else np.array([1, 0, 1], np.int32)
    want = np.take(A, indices, axis=axis)
    model = one_op("GATHER", [Input("x", [2, 3, 4]), Input("i", indices.shape, "int32")],
                   [Output("y", list(want.shape))], axis=axis)
    _, got = check(model, {"x": A, "i": indices}, EXACT)
    np.testing.assert_array_equal(got["y"], want)


def test_gather_nd():
    indices = np.array([[1, 2], [0, 0]], np.int32)
    model = one_op("GATHER_ND", [Input("x", [2, 3, 4]), Input("i", [2, 2], "int32")],
                   [Output("y", [2, 4])])
    _, got = check(model, {"x": A, "i": indices}, EXACT)
    np.testing.assert_array_equal(got["y"], [A[1, 2], A[0, 0]])


def test_scatter_nd_into_zeros():
    indices = np.array([[0, 1], [2, 0]], np.int32)
    updates = np.array([5, 7], np.float32)
    model = one_op("SCATTER_ND", [Const(indices), Input("u", [2]), _i32([3, 2])],
                   [Output("y", [3, 2])])
    graph, got = check(model, {"u": updates}, EXACT)
    np.testing.assert_array_equal(got["y"], [[0, 5], [0, 0], [7, 0]])
    assert op_named(graph, "scatterND").input("input").constant.fill == 0


def test_scatter_nd_with_repeated_indices_is_refused():
    # TFLite adds the two updates of [0, 1]; WebNN's scatterND would keep one.
    model = one_op("SCATTER_ND", [Const(np.array([[0, 1], [0, 1]], np.int32)), Input("u", [2]),
                                  _i32([3, 2])], [Output("y", [3, 2])])
    assert "repeat" in refused(model).line()


def test_embedding_lookup():
    table = np.array([[0, 0], [1, 1], [2, 4]], np.float32)
    model = one_op("EMBEDDING_LOOKUP", [Input("ids", [3], "int32"), Const(table)],
                   [Output("y", [3, 2])])
    _, got = check(model, {"ids": np.array([2, 0, 2], np.int32)}, EXACT)
    np.testing.assert_array_equal(got["y"], [[2, 4], [0, 0], [2, 4]])


@pytest.mark.parametrize("axis, shape", [(-1, [2, 3]), (0, [3, 2])])
def test_one_hot(axis, shape):
    indices = np.array([2, 0], np.int32)
    model = one_op("ONE_HOT", [Input("i", [2], "int32"), _i32(3),
                               Const(np.array(5, np.float32)), Const(np.array(-1, np.float32))],
                   [Output("y", shape)], axis=axis)
    _, got = check(model, {"i": indices}, EXACT)
    want = np.array([[-1, -1, 5], [5, -1, -1]], np.float32)
    np.testing.assert_array_equal(got["y"], want if axis == -1 else want.T)


def test_matrix_diag():
    x = np.array([[1, 2, 3]], np.float32)
    model = one_op("MATRIX_DIAG", [Input("x", [1, 3])], [Output("y", [1, 3, 3])])
    _, got = check(model, {"x": x}, EXACT)
    np.testing.assert_array_equal(got["y"][0], np.diag([1, 2, 3]))


@pytest.mark.parametrize("rows, cols", [(3, 3), (2, 4), (4, 2)])
def test_matrix_set_diag(rows, cols):
    x = rand(2, rows, cols)
    d = rand(2, min(rows, cols))
    model = one_op("MATRIX_SET_DIAG", [Input("x", x.shape), Input("d", d.shape)],
                   [Output("y", x.shape)])
    _, got = check(model, {"x": x, "d": d}, EXACT)
    want = x.copy()
    for i in range(min(rows, cols)):
        want[:, i, i] = d[:, i]
    np.testing.assert_array_equal(got["y"], want)


def test_dynamic_update_slice_clamps_its_start():
    x = np.zeros((3, 4), np.float32)
    update = np.array([[1, 2], [3, 4]], np.float32)
    # start [2, 3] would overflow; TFLite clamps it to [1, 2]
    model = one_op("DYNAMIC_UPDATE_SLICE", [Input("x", [3, 4]), Input("u", [2, 2]),
                                            _i32([2, 3])], [Output("y", [3, 4])])
    _, got = check(model, {"x": x, "u": update}, EXACT)
    np.testing.assert_array_equal(got["y"], [[0, 0, 0, 0], [0, 0, 1, 2], [0, 0, 3, 4]])
