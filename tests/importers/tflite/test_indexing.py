"""TFLite indexing ops against LiteRT (bit-exact), with hand-computed values."""
from __future__ import annotations

import numpy as np
import pytest

from converter.errors import ConverterError
from converter.runtimes.litert import run_litert
from converter.testing.tflite_fixtures import Const, Input, Output, Quant, TfliteBuilder, one_op

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


@pytest.mark.parametrize("begin, end, strides, masks, index", [
    ([0, 0, 0, 1], [0, 2, 3, 3], [1, 1, 1, 1], {"newAxisMask": 1}, np.s_[None, 0:2, 0:3, 1:3]),
    # an ellipsis between two explicit axes stands for one axis
    ([1, 0, 2], [2, 0, 3], [1, 1, 1], {"ellipsisMask": 2}, np.s_[1:2, ..., 2:3]),
    # fewer entries than axes: the rest are whole
    ([1, 1], [2, 3], [1, 1], {}, np.s_[1:2, 1:3]),
    # offset with a begin mask: the end counts from 0
    ([5, 1, 1], [1, 2, 2], [1, 1, 1], {"offset": True, "beginMask": 1}, np.s_[0:1, 1:3, 1:3]),
    # shrinking at index 0 and at the last index
    ([0, 0, 0], [1, 3, 4], [1, 1, 1], {"shrinkAxisMask": 1}, np.s_[0]),
    ([0, 2, 0], [2, 3, 4], [1, 1, 1], {"shrinkAxisMask": 2}, np.s_[:, 2]),
    # LiteRT reads a second ellipsis bit as a whole axis
    ([0, 0, 2], [0, 0, 3], [1, 1, 1], {"ellipsisMask": 3}, np.s_[..., 2:3]),
])
def test_strided_slice_masks_match_litert(begin, end, strides, masks, index):
    want = A[index]
    model = _strided(begin, end, strides, list(want.shape), **masks)
    graph, got = check(model, {"x": A}, EXACT)
    np.testing.assert_array_equal(got["y"], want)
    assert "strides" not in op_named(graph, "slice").attrs  # unit steps: no strides


def test_strided_slice_of_everything_is_an_identity():
    model = _strided([0, 0, 0], [2, 3, 4], [1, 1, 1], [2, 3, 4])
    graph, got = check(model, {"x": A}, EXACT)
    np.testing.assert_array_equal(got["y"], A)
    assert ops_of(graph) == ["identity"]


def test_strided_slice_that_only_adds_an_axis_is_a_reshape():
    model = _strided([0, 0, 0, 0], [0, 2, 3, 4], [1, 1, 1, 1], [1, 2, 3, 4], newAxisMask=1)
    graph, got = check(model, {"x": A}, EXACT)
    np.testing.assert_array_equal(got["y"], A[None])
    assert ops_of(graph) == ["reshape"]


@pytest.mark.parametrize("begin, end, starts, sizes", [
    ([1, 0, 0], [2, 3, 4], [1, 0, 0], [1, 3, 4]),  # only the start moves
    ([0, 0, 0], [2, 2, 4], [0, 0, 0], [2, 2, 4]),  # only the size shrinks
])
def test_strided_slice_slices_when_start_or_size_differ(begin, end, starts, sizes):
    model = _strided(begin, end, [1, 1, 1], sizes)
    graph, _ = check(model, {"x": A}, EXACT)
    s = op_named(graph, "slice")
    assert s.attrs["starts"] == starts and s.attrs["sizes"] == sizes


def test_strided_slice_with_a_zero_stride_is_refused():
    assert "a stride of 0" in refused(_strided([0, 0, 0], [2, 3, 4], [1, 0, 1],
                                               [2, 3, 4])).line()


def test_strided_slice_with_lists_of_different_lengths_is_refused():
    assert "differ in length" in refused(_strided([0, 0], [2, 3, 4], [1, 1, 1],
                                                  [2, 3, 4])).line()


def test_strided_slice_shrinking_an_index_out_of_range_is_refused():
    assert "out of range" in refused(_strided([0, 3, 0], [2, 4, 4], [1, 1, 1], [2, 4],
                                              shrinkAxisMask=2)).line()


def test_strided_slice_of_a_constant_is_folded():
    model = one_op("STRIDED_SLICE", [Const(A), _i32([1, 0, 0]), _i32([2, 3, 4]),
                                     _i32([1, 1, 2])], [Output("y", [1, 3, 2])])
    graph, got = check(model, {}, EXACT)
    np.testing.assert_array_equal(got["y"], A[1:2, :, ::2])
    assert ops_of(graph) in ([], ["identity"])


@pytest.mark.parametrize("begin, size, reason", [
    ([0, 0], [1, 1, 1], "do not fit rank 3"),
    ([0, 0, 0], [1, 1], "do not fit rank 3"),
    ([0, 0, -1], [1, 1, 1], "leave the input"),
    ([0, 0, 0], [1, 1, -2], "leave the input"),
    ([0, 2, 0], [1, 2, 1], "leave the input"),
])
def test_slice_outside_the_input_is_refused(begin, size, reason):
    model = one_op("SLICE", [Input("x", [2, 3, 4]), _i32(begin), _i32(size)],
                   [Output("y", [1, 1, 1])])
    assert reason in refused(model).line()


def test_slice_reaching_exactly_the_end_and_of_unequal_begins():
    # begin + size == the axis (allowed), and begin 1 / size 2 on an axis where the two differ
    model = one_op("SLICE", [Input("x", [2, 3, 4]), _i32([1, 1, 0]), _i32([1, 2, 4])],
                   [Output("y", [1, 2, 4])])
    _, got = check(model, {"x": A}, EXACT)
    np.testing.assert_array_equal(got["y"], A[1:2, 1:3, 0:4])


def test_gather_without_options_takes_axis_0():
    b = TfliteBuilder()
    y = b.tensor("y", [2, 3, 4])
    b.op("GATHER", [b.input("x", [2, 3, 4]), b.constant("i", np.array([1, 0], np.int32))], [y])
    b.current.operators[-1].builtinOptionsType = 0
    b.current.operators[-1].builtinOptions = None
    _, got = check(b.build([y]), {"x": A}, EXACT)
    np.testing.assert_array_equal(got["y"], A[[1, 0]])


def test_gather_with_batch_dims_is_refused():
    model = one_op("GATHER", [Input("x", [2, 3, 4]), Input("i", [2, 2], "int32")],
                   [Output("y", [2, 2, 4])], axis=1, batchDims=1)
    assert "batch_dims 1" in refused(model).line()


def test_gather_of_constants_is_folded():
    model = one_op("GATHER", [Const(A), _i32([2, 0])], [Output("y", [2, 2, 4])], axis=1)
    graph, got = check(model, {}, EXACT)
    np.testing.assert_array_equal(got["y"], A[:, [2, 0]])
    assert "gather" not in ops_of(graph)


def test_gather_from_a_constant_table_by_input_indices():
    indices = np.array([2, 2, 0], np.int32)
    model = one_op("GATHER", [Const(A), Input("i", [3], "int32")], [Output("y", [2, 3, 4])],
                   axis=1)
    graph, got = check(model, {"i": indices}, EXACT)
    np.testing.assert_array_equal(got["y"], A[:, indices])
    assert ops_of(graph) == ["gather"]


def test_scatter_nd_with_more_rows_than_coordinates():
    # 3 rows of 2-D coordinates: read as [3, 2] rows, not [2, 3]
    indices = np.array([[0, 1], [2, 0], [1, 1]], np.int32)
    model = one_op("SCATTER_ND", [Const(indices), Input("u", [3]), _i32([3, 2])],
                   [Output("y", [3, 2])])
    _, got = check(model, {"u": np.array([5, 7, 9], np.float32)}, EXACT)
    np.testing.assert_array_equal(got["y"], [[0, 5], [0, 9], [7, 0]])


def test_scatter_nd_repeating_one_of_three_rows_is_refused():
    model = one_op("SCATTER_ND", [Const(np.array([[0, 1], [2, 0], [0, 1]], np.int32)),
                                  Input("u", [3]), _i32([3, 2])], [Output("y", [3, 2])])
    assert "repeat" in refused(model).line()


def test_one_hot_of_depth_1_and_without_options():
    b = TfliteBuilder()
    y = b.tensor("y", [1, 2])
    b.op("ONE_HOT", [b.input("i", [2], "int32"), b.constant("d", np.array(1, np.int32)),
                     b.constant("on", np.array(5, np.float32)),
                     b.constant("off", np.array(-1, np.float32))], [y])
    b.current.operators[-1].builtinOptionsType = 0
    b.current.operators[-1].builtinOptions = None
    _, got = check(b.build([y]), {"i": np.array([0, 3], np.int32)}, EXACT)
    np.testing.assert_array_equal(got["y"], [[5, -1]])  # axis 0: LiteRT's default here


@pytest.mark.parametrize("depth, axis, reason", [(0, -1, "its depth is 0"),
                                                 (3, -2, "its axis -2 is out of range"),
                                                 (3, 2, "its axis 2 is out of range")])
def test_one_hot_depth_and_axis_litert_refuses_are_refused(depth, axis, reason):
    # LiteRT's kernel will not prepare these (axis must be -1 or 0 .. rank of the indices)
    model = one_op("ONE_HOT", [Input("i", [2], "int32"), _i32(depth),
                               Const(np.array(5, np.float32)), Const(np.array(-1, np.float32))],
                   [Output("y", [2, 3])], axis=axis)
    assert reason in refused(model).line()


def test_matrix_diag_of_a_batch_of_vectors():
    x = rand(2, 2, 3)
    model = one_op("MATRIX_DIAG", [Input("x", [2, 2, 3])], [Output("y", [2, 2, 3, 3])])
    _, got = check(model, {"x": x}, EXACT)
    want = np.zeros((2, 2, 3, 3), np.float32)
    for i in range(3):
        want[..., i, i] = x[..., i]
    np.testing.assert_array_equal(got["y"], want)


@pytest.mark.parametrize("zero_point", [-7, 3])
def test_int8_matrix_diag_fills_stored_zeros_as_litert_does(zero_point):
    # LiteRT writes the stored value 0 off the diagonal, whatever the zero point
    q = Quant([0.5], [zero_point])
    model = one_op("MATRIX_DIAG", [Input("x", [1, 3], "int8", q)],
                   [Output("y", [1, 3, 3], "int8", q)])
    _, got = check(model, {"x": np.array([[1, 2, 3]], np.int8)}, EXACT)
    np.testing.assert_array_equal(got["y"][0], np.diag([1, 2, 3]))


def test_matrix_set_diag_of_the_wrong_length_is_refused():
    model = one_op("MATRIX_SET_DIAG", [Input("x", [2, 3, 3]), Input("d", [2, 2])],
                   [Output("y", [2, 3, 3])])
    assert "its diagonal has 2 values, the matrices 3" in refused(model).line()


@pytest.mark.parametrize("op, extra", [("MATRIX_SET_DIAG", []),
                                       ("DYNAMIC_UPDATE_SLICE", [_i32([1, 0])])])
def test_int8_diagonal_and_update_are_copied_as_stored(op, extra):
    q = Quant([0.5], [-7])
    x = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    u = np.array([[100, 101], [102, 103]] if op != "MATRIX_SET_DIAG" else [100, 101, 102],
                 np.int8)
    model = one_op(op, [Input("x", [3, 4], "int8", q), Input("u", list(u.shape), "int8", q),
                        *extra], [Output("y", [3, 4], "int8", q)])
    graph, got = check(model, {"x": x, "u": u}, EXACT)
    assert got["y"].dtype == np.int8
    assert "dequantizeLinear" not in ops_of(graph)


@pytest.mark.parametrize("starts, u_shape", [([0], [2, 2]), ([0, 0], [2])])
def test_dynamic_update_slice_that_does_not_fit_is_refused(starts, u_shape):
    model = one_op("DYNAMIC_UPDATE_SLICE", [Input("x", [3, 4]), Input("u", u_shape),
                                            _i32(starts)], [Output("y", [3, 4])])
    assert "do not fit the operand" in refused(model).line()


def test_dynamic_update_slice_clamps_a_negative_start_to_0():
    x = np.zeros((3, 4), np.float32)
    update = np.array([[1, 2], [3, 4]], np.float32)
    model = one_op("DYNAMIC_UPDATE_SLICE", [Input("x", [3, 4]), Input("u", [2, 2]),
                                            _i32([-1, 1])], [Output("y", [3, 4])])
    _, got = check(model, {"x": x, "u": update}, EXACT)
    np.testing.assert_array_equal(got["y"], [[0, 1, 2, 0], [0, 3, 4, 0], [0, 0, 0, 0]])


def test_matrix_set_diag_over_two_batch_axes_of_square_matrices():
    x, d = rand(2, 2, 3, 3), rand(2, 2, 3)
    model = one_op("MATRIX_SET_DIAG", [Input("x", x.shape), Input("d", d.shape)],
                   [Output("y", x.shape)])
    graph, got = check(model, {"x": x, "d": d}, EXACT)
    want = x.copy()
    for i in range(3):
        want[..., i, i] = d[..., i]
    np.testing.assert_array_equal(got["y"], want)
    assert "pad" not in ops_of(graph)  # square: the diagonal already spans every column


def test_strided_slice_of_an_int8_constant_is_folded_as_stored():
    q = Quant([0.5], [-7])
    stored = np.arange(-12, 12, dtype=np.int8).reshape(2, 3, 4)
    model = one_op("STRIDED_SLICE", [Const(stored, quant=q), _i32([0, 1, 0]), _i32([2, 3, 4]),
                                     _i32([1, 1, 3])], [Output("y", [2, 2, 2], "int8", q)])
    graph, got = check(model, {}, EXACT)
    np.testing.assert_array_equal(got["y"], stored[:, 1:3, ::3])
    assert "slice" not in ops_of(graph)


def test_one_hot_along_the_new_last_axis_by_number():
    # axis = rank of the indices (1) is the last axis, the same as -1
    model = one_op("ONE_HOT", [Input("i", [2], "int32"), _i32(3), Const(np.array(5, np.float32)),
                               Const(np.array(-1, np.float32))], [Output("y", [2, 3])], axis=1)
    _, got = check(model, {"i": np.array([2, 0], np.int32)}, EXACT)
    np.testing.assert_array_equal(got["y"], [[-1, -1, 5], [5, -1, -1]])


def test_slice_of_size_0_is_refused_as_an_empty_output():
    model = one_op("SLICE", [Input("x", [2, 3, 4]), _i32([0, 0, 0]), _i32([1, 0, 4])],
                   [Output("y", [1, 0, 4])])
    assert "is empty" in refused(model).line()


@pytest.mark.parametrize("indices, reason", [
    (np.array([[[0, 1], [2, 0], [0, 1]]], np.int32), "its indices repeat"),  # TFLite sums
    (np.array(1, np.int32), "WebNN rejects it"),  # a scalar holds no coordinates
])
def test_scatter_nd_with_repeated_or_scalar_indices_is_refused(indices, reason):
    model = one_op("SCATTER_ND", [Const(indices), Input("u", [1, 3] if indices.ndim else []),
                                  _i32([3, 2])], [Output("y", [3, 2])])
    assert reason in refused(model).line()


def test_matrix_set_diag_of_mixed_types_is_refused():
    """LiteRT copies a float diagonal's bytes into int8 rows (no values to match): refused."""
    q = Quant([0.5], [-7])
    model = one_op("MATRIX_SET_DIAG", [Input("x", [3, 3], "int8", q), Input("d", [3])],
                   [Output("y", [3, 3], "int8", q)])
    got = run_litert(model, {"x": np.zeros((3, 3), np.int8), "d": np.ones(3, np.float32)})
    # 1.0f's bytes (00 00 80 3f) land on the diagonal as the int8s 0, 0, -128
    np.testing.assert_array_equal(np.diag(got["y"]), [0, 0, -128])
    assert "its operand is int8 but its diagonal float32; give both the same type" in \
        refused(model).line()


def test_dynamic_update_slice_of_mixed_types_is_refused_as_litert_does():
    q = Quant([0.5], [-7])
    model = one_op("DYNAMIC_UPDATE_SLICE", [Input("x", [3, 3], "int8", q), Input("u", [2, 2]),
                                            _i32([1, 0])], [Output("y", [3, 3], "int8", q)])
    with pytest.raises(ConverterError, match="operand->type != update->type"):
        run_litert(model, {"x": np.zeros((3, 3), np.int8), "u": np.ones((2, 2), np.float32)})
    assert "its operand is int8 but its update float32" in refused(model).line()


def test_float_matrix_set_diag_with_an_int8_diagonal_is_refused():
    """Types are compared as stored: dequantizing the int8 diagonal next to a float operand
    would give values LiteRT never computes (it copies the int8 bytes into float rows)."""
    q = Quant([0.5], [-7])
    model = one_op("MATRIX_SET_DIAG", [Input("x", [3, 3]), Input("d", [3], "int8", q)],
                   [Output("y", [3, 3])])
    d = np.array([1, 2, 3], np.int8)
    got = run_litert(model, {"x": np.zeros((3, 3), np.float32), "d": d})
    dequantized = (d.astype(np.float32) + 7) * 0.5  # 4, 4.5, 5: what a dequantizing import gives
    assert not np.any(np.isin(np.diag(got["y"]), dequantized))
    assert "its operand is float32 but its diagonal int8; give both the same type" in \
        refused(model).line()


def test_float_dynamic_update_slice_with_an_int8_update_is_refused_as_litert_does():
    q = Quant([0.5], [-7])
    model = one_op("DYNAMIC_UPDATE_SLICE", [Input("x", [3, 3]), Input("u", [2, 2], "int8", q),
                                            _i32([1, 0])], [Output("y", [3, 3])])
    with pytest.raises(ConverterError, match=r"operand->type != update->type \(FLOAT32 != INT8\)"):
        run_litert(model, {"x": np.zeros((3, 3), np.float32), "u": np.ones((2, 2), np.int8)})
    assert "its operand is float32 but its update int8; give both the same type" in \
        refused(model).line()
