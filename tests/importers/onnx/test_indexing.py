"""ONNX indexing ops imported as WebNN: Gather, GatherElements, GatherND, ScatterElements,
Scatter, ScatterND, OneHot, ArgMax, ArgMin, Compress, NonZero. Values are worked out by hand from
the ONNX spec; ONNX Runtime runs each model as a second witness."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from .test_shape_ops import F, F32, I64, check, make, ops, unsupported

I32 = TensorProto.INT32
X23 = np.array([[1, 2, 3], [4, 5, 6]], F32)


# -- Gather family ----------------------------------------------------------------------------
def test_gather_negative_indices_along_axis_1():
    m = make([helper.make_node("Gather", ["x", "i"], ["y"], axis=1)],
             {"x": (F, [2, 3]), "i": (I64, [2])}, {"y": F})
    check(m, {"x": X23, "i": np.array([-1, 0], np.int64)}, {"y": [[3, 1], [6, 4]]})


def test_gather_negative_axis_and_scalar_index_drops_the_axis():
    m = make([helper.make_node("Gather", ["x", "i"], ["y"], axis=-2)], {"x": (F, [2, 3])},
             {"y": F}, {"i": np.array(1, np.int64)})
    g = check(m, {"x": X23}, {"y": [4, 5, 6]})
    assert g.operations[0].attrs["axis"] == 0


def test_gather_elements_axis_1():
    x = np.array([[1, 2], [3, 4]], F32)
    m = make([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)],
             {"x": (F, [2, 2]), "i": (I32, [2, 2])}, {"y": F})
    check(m, {"x": x, "i": np.array([[0, 0], [1, 0]], np.int32)}, {"y": [[1, 1], [4, 3]]})


def test_gather_nd_plain():
    x = np.array([[1, 2], [3, 4]], F32)
    m = make([helper.make_node("GatherND", ["x", "i"], ["y"])],
             {"x": (F, [2, 2]), "i": (I64, [2, 2])}, {"y": F})
    check(m, {"x": x, "i": np.array([[0, 1], [1, 0]], np.int64)}, {"y": [2, 3]})


def test_gather_nd_batch_dims_1_prepends_batch_coordinates():
    # ONNX's own example: data [2, 2, 2], indices [[1], [0]] -> [[2, 3], [4, 5]]
    data = np.arange(8, dtype=F32).reshape(2, 2, 2)
    m = make([helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1)],
             {"x": (F, [2, 2, 2]), "i": (I64, [2, 1])}, {"y": F})
    g = check(m, {"x": data, "i": np.array([[1], [0]], np.int64)}, {"y": [[2, 3], [4, 5]]})
    assert ops(g) == ["concat", "gatherND"]
    prefix = g.operations[0].inputs[0].constant.numpy()
    np.testing.assert_array_equal(prefix, [[0], [1]])


def test_gather_nd_batch_dims_1_with_two_index_tuples_per_batch():
    data = np.arange(12, dtype=F32).reshape(2, 3, 2)
    idx = np.array([[[2, 1], [0, 0]], [[1, 0], [2, 1]]], np.int64)  # [2, 2, 2]
    m = make([helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1)],
             {"x": (F, [2, 3, 2]), "i": (I64, [2, 2, 2])}, {"y": F})
    # batch 0: data[0][2][1] = 5, data[0][0][0] = 0; batch 1: data[1][1][0] = 8, [1][2][1] = 11
    check(m, {"x": data, "i": idx}, {"y": [[5, 0], [8, 11]]})


# -- Scatter family ---------------------------------------------------------------------------
def test_scatter_elements_axis_1_with_a_negative_index():
    x = np.array([[1, 2, 3, 4, 5]], F32)
    m = make([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1)],
             {"x": (F, [1, 5]), "i": (I64, [1, 2]), "u": (F, [1, 2])}, {"y": F})
    check(m, {"x": x, "i": np.array([[1, -2]], np.int64), "u": np.array([[1.5, 2.5]], F32)},
          {"y": [[1, 1.5, 3, 2.5, 5]]})


@pytest.mark.parametrize("opset", [9, 10])  # Scatter came in opset 9
def test_scatter_opset10_is_scatter_elements(opset):
    x = np.zeros((2, 2), F32)
    m = make([helper.make_node("Scatter", ["x", "i", "u"], ["y"])],
             {"x": (F, [2, 2]), "i": (I64, [1, 2]), "u": (F, [1, 2])}, {"y": F}, opset=opset)
    check(m, {"x": x, "i": np.array([[1, 0]], np.int64), "u": np.array([[7, 8]], F32)},
          {"y": [[0, 8], [7, 0]]})


def test_scatter_nd_replaces_rows():
    x = np.arange(1, 9, dtype=F32)
    m = make([helper.make_node("ScatterND", ["x", "i", "u"], ["y"])],
             {"x": (F, [8]), "i": (I64, [4, 1]), "u": (F, [4])}, {"y": F})
    check(m, {"x": x, "i": np.array([[4], [3], [1], [7]], np.int64),
              "u": np.array([9, 10, 11, 12], F32)},
          {"y": [1, 11, 3, 10, 9, 6, 7, 12]})


def test_scatter_reductions_are_refused():
    for op in ("ScatterElements", "ScatterND"):
        m = make([helper.make_node(op, ["x", "i", "u"], ["y"], reduction="add")],
                 {"x": (F, [4]), "i": (I64, [1, 1] if op == "ScatterND" else [1]),
                  "u": (F, [1])}, {"y": F})
        feeds = {"x": np.zeros(4, F32), "i": np.zeros((1, 1) if op == "ScatterND" else 1,
                                                     np.int64), "u": np.ones(1, F32)}
        assert "reduction 'add'" in unsupported(m, feeds)


# -- OneHot -------------------------------------------------------------------------------------
def test_one_hot_wraps_negative_indices_and_leaves_out_of_range_rows_off():
    m = make([helper.make_node("OneHot", ["i", "d", "v"], ["y"])], {"i": (I64, [4])}, {"y": F},
             {"d": np.array(4, np.int64), "v": np.array([0, 1], F32)})
    g = check(m, {"i": np.array([0, -1, 3, 5], np.int64)},
              {"y": [[1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 0]]})
    assert ops(g) == ["reshape", "equal", "equal", "logicalOr", "where"]


def test_one_hot_float_indices_on_axis_0_with_off_on_values():
    m = make([helper.make_node("OneHot", ["i", "d", "v"], ["y"], axis=0)],
             {"i": (F, [2])}, {"y": F},
             {"d": np.array([3.0], F32), "v": np.array([-1, 5], F32)})
    # positions run down axis 0: column j is one-hot of index j (1 and 2)
    check(m, {"i": np.array([1, 2], F32)}, {"y": [[-1, -1], [5, -1], [-1, 5]]})


def test_one_hot_values_from_a_graph_input():
    m = make([helper.make_node("OneHot", ["i", "d", "v"], ["y"])],
             {"i": (I32, [2]), "v": (F, [2])}, {"y": F}, {"d": np.array(2, np.int32)})
    check(m, {"i": np.array([1, 0], np.int32), "v": np.array([3, 7], F32)},
          {"y": [[3, 7], [7, 3]]})


# -- ArgMax, ArgMin -----------------------------------------------------------------------------
X_TIES = np.array([[2, 2, 1], [3, 1, 3]], F32)


def test_arg_max_first_and_last_index_of_ties():
    first = make([helper.make_node("ArgMax", ["x"], ["y"], axis=1, keepdims=0)],
                 {"x": (F, [2, 3])}, {"y": I64})
    check(first, {"x": X_TIES}, {"y": [0, 0]})
    last = make([helper.make_node("ArgMax", ["x"], ["y"], axis=-1, keepdims=0,
                                  select_last_index=1)], {"x": (F, [2, 3])}, {"y": I64})
    g = check(last, {"x": X_TIES}, {"y": [1, 2]})
    assert ops(g) == ["reverse", "argMax", "sub"]


def test_arg_min_keepdims_default_and_last_index():
    m = make([helper.make_node("ArgMin", ["x"], ["y"], select_last_index=1)],
             {"x": (F, [2, 3])}, {"y": I64})
    # axis 0: column-wise minimum rows: col0 min 2 at row 0; col1 min 1 at row 1; col2 1 at row 0
    check(m, {"x": X_TIES}, {"y": [[0, 1, 0]]})


# -- Compress, NonZero --------------------------------------------------------------------------
def test_compress_with_a_known_condition_is_a_gather():
    m = make([helper.make_node("Compress", ["x", "c"], ["y"], axis=1)], {"x": (F, [2, 3])},
             {"y": F}, {"c": np.array([True, False, True])})
    g = check(m, {"x": X23}, {"y": [[1, 3], [4, 6]]})
    assert ops(g) == ["gather"]


def test_compress_without_axis_flattens_and_allows_a_short_condition():
    m = make([helper.make_node("Compress", ["x", "c"], ["y"])], {"x": (F, [2, 3])}, {"y": F},
             {"c": np.array([False, True, False, True])})
    check(m, {"x": X23}, {"y": [2, 4]})


def test_compress_with_a_run_time_condition_is_refused():
    m = make([helper.make_node("Compress", ["x", "c"], ["y"])],
             {"x": (F, [3]), "c": (TensorProto.BOOL, [3])}, {"y": F})
    reason = unsupported(m, {"x": np.ones(3, F32), "c": np.array([True, False, True])})
    assert "its output shape depends on run-time values" in reason


def test_non_zero_of_a_graph_input_is_refused_and_of_a_constant_is_known():
    m = make([helper.make_node("NonZero", ["x"], ["y"])], {"x": (F, [3])}, {"y": I64})
    assert "number of nonzero elements" in unsupported(m, {"x": np.ones(3, F32)})
    known = make([helper.make_node("NonZero", ["c"], ["n"]),
                  helper.make_node("Reshape", ["n", "s"], ["flat"]),
                  helper.make_node("Gather", ["x", "flat"], ["y"])],
                 {"x": (F, [4])}, {"y": F},
                 {"c": np.array([0, 3, 0, 1], F32), "s": np.array([-1], np.int64)})
    g = check(known, {"x": np.array([10, 20, 30, 40], F32)}, {"y": [20, 40]})
    assert ops(g) == ["gather"]
