"""Corners of the ONNX indexing import the main tests leave open: GatherND with two batch axes
and batch_dims at its bounds, and ScatterElements / ScatterND with a reduction from the first
opset that has one (16), with negative and repeated indices. Checked against ONNX Runtime
running the same model and against values worked out by hand from ONNX's definition."""
from __future__ import annotations

import numpy as np
import pytest

from onnx.reference import ReferenceEvaluator

from .helpers import check, rand, refused, single_node

I64 = np.int64


def test_gather_nd_with_two_batch_axes():
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    i = np.array([[[1], [3]], [[0], [-1]], [[2], [2]]], I64)[None].repeat(2, 0)  # [2, 3, 2, 1]
    i[1] = 3 - i[1] % 4
    model = single_node("GatherND", ["x", "i"], {"x": x}, {"i": i}, opset=13, batch_dims=2)
    _, (y,) = check(model, {"x": x})
    # y[b0, b1, j] = x[b0, b1, i[b0, b1, j, 0]]
    want = np.array([[[x[b0, b1, i[b0, b1, j, 0]] for j in range(2)] for b1 in range(3)]
                     for b0 in range(2)])
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("x_shape, i_shape", [((2, 3), (2,)), ((2,), (2, 1))])
def test_gather_nd_batch_dims_must_leave_an_axis_of_each(x_shape, i_shape):
    # batch_dims 1 with indices (or data) of rank 1: nothing is left beyond the batch axis
    x = rand(*x_shape)
    model = single_node("GatherND", ["x", "i"], {"x": x}, {"i": np.zeros(i_shape, I64)},
                        opset=13, batch_dims=1)
    assert "batch_dims 1 does not fit" in refused(model, {"x": x})


@pytest.mark.parametrize("reduction", ["add", "mul"])
def test_scatter_elements_reduces_from_opset_16(reduction):
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    i = np.array([[2, -1, 0], [1, 1, -2]], I64)  # row 0 hits column 2 twice, row 1 column 1 three times
    u = np.array([[10, 20, 30], [40, 50, 60]], np.float32)
    model = single_node("ScatterElements", ["x", "i", "u"], {"x": x}, {"i": i, "u": u},
                        opset=16, axis=1, reduction=reduction)
    _, (y,) = check(model, {"x": x})
    if reduction == "add":
        want = [[31, 2, 33], [4, 155, 6]]
    else:
        want = [[30, 2, 600], [4, 600000, 6]]
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("reduction", ["add", "mul"])
def test_scatter_nd_reduces_from_opset_16(reduction):
    x = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    i = np.array([[2], [-1], [0]], I64)  # row 2 twice
    u = np.array([[10, 20], [30, 40], [50, 60]], np.float32)
    model = single_node("ScatterND", ["x", "i", "u"], {"x": x}, {"i": i, "u": u},
                        opset=16, reduction=reduction)
    _, (y,) = check(model, {"x": x})
    if reduction == "add":
        want = [[51, 62], [3, 4], [45, 66]]
    else:
        want = [[50, 120], [3, 4], [1500, 4800]]
    np.testing.assert_array_equal(y, want)


def test_scatter_nd_reduction_with_indices_of_rank_3():
    # indices [2, 2, 1]: each index tuple has one coordinate (the last axis), four updates
    x = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    i = np.array([[[0], [2]], [[-3], [1]]], I64)  # row 0 twice
    u = np.arange(8, dtype=np.float32).reshape(2, 2, 2) + 1
    model = single_node("ScatterND", ["x", "i", "u"], {"x": x}, {"i": i, "u": u},
                        opset=16, reduction="add")
    _, (y,) = check(model, {"x": x})
    np.testing.assert_array_equal(y, [[1 + 1 + 5, 2 + 2 + 6], [3 + 7, 4 + 8], [5 + 3, 6 + 4]])


def test_reverse_sequence_default_axes_are_time_0_and_batch_1():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)  # [time, batch]
    lens = np.array([4, 1, 2], I64)
    model = single_node("ReverseSequence", ["x", "l"], {"x": x}, {"l": lens}, opset=10)
    _, (y,) = check(model, {"x": x})
    # batch 0 fully reversed, batch 1 as it is, batch 2's first two steps swapped
    np.testing.assert_array_equal(y, [[9, 1, 5], [6, 4, 2], [3, 7, 8], [0, 10, 11]])


def test_tensor_scatter_on_the_batch_axis_is_refused():
    past, update = rand(2, 3, 4), rand(1, 3, 4)
    model = single_node("TensorScatter", ["past", "update"], {"past": past, "update": update},
                        opset=24, axis=0)
    assert "the axis cannot be the batch axis" in refused(model, {"past": past,
                                                                   "update": update})


def _tensor_scatter(past, update, write=None, **attrs):
    """(ours, ONNX's reference evaluator's) output of one TensorScatter (opset 24)."""
    feeds = {"past": past, "update": update}
    names = ["past", "update"]
    if write is not None:
        feeds["write"] = write
        names.append("write")
    model = single_node("TensorScatter", names, feeds, opset=24, **attrs)
    _, (ours,) = check(model, feeds, ort=False)
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    return ours, want


@pytest.mark.parametrize("index_type", [np.int64, np.int32])
def test_tensor_scatter_linear_writes_at_each_batch_offset(index_type):
    past = np.zeros((2, 5, 2), np.float32)
    update = np.arange(1, 9, dtype=np.float32).reshape(2, 2, 2)
    # batch 0 writes positions 0, 1; batch 1 positions 3, 4
    ours, want = _tensor_scatter(past, update, np.array([0, 3], index_type), axis=1)
    np.testing.assert_array_equal(ours, want)
    np.testing.assert_array_equal(ours[0, :, 0], [1, 3, 0, 0, 0])
    np.testing.assert_array_equal(ours[1, :, 1], [0, 0, 0, 6, 8])


def test_tensor_scatter_circular_wraps_past_the_end():
    past = np.full((1, 4, 1), -1, np.float32)
    update = np.array([[[10], [20], [30]]], np.float32)
    # writes 3, 4, 5 go to cache positions 3, 0, 1
    ours, want = _tensor_scatter(past, update, np.array([3], np.int64), axis=1,
                                 mode="circular")
    np.testing.assert_array_equal(ours, want)
    np.testing.assert_array_equal(ours[0, :, 0], [20, 30, -1, 10])


def test_one_hot_of_depth_1_on_the_default_last_axis():
    i = np.array([[0, -1, 1], [2, 0, -2]], I64)
    model = single_node("OneHot", ["i", "d", "v"], {"i": i},
                        {"d": np.array(1, I64), "v": np.array([5, 7], np.float32)},
                        out_types=[1], opset=11)
    _, (y,) = check(model, {"i": i})
    # depth 1: 0 and -1 name position 0, anything else is off; the new axis is the last
    np.testing.assert_array_equal(y, [[[7], [7], [5]], [[5], [7], [5]]])


def test_one_hot_default_axis_of_2d_indices_is_the_last():
    i = np.array([[0, 2], [1, -1]], I64)
    model = single_node("OneHot", ["i", "d", "v"], {"i": i},
                        {"d": np.array(3, I64), "v": np.array([0, 1], np.float32)},
                        out_types=[1], opset=11)
    _, (y,) = check(model, {"i": i})
    assert y.shape == (2, 2, 3)
    np.testing.assert_array_equal(y[1], [[0, 1, 0], [0, 0, 1]])


def _top_k(x, k, opset=11, **attrs):
    model = single_node("TopK", ["x", "k"], {"x": x}, {"k": np.array([k], I64)},
                        outputs=("v", "i"), out_types=[1, 7], opset=opset, **attrs)
    return model, {"x": x}


@pytest.mark.parametrize("k", [1, 4])
def test_top_k_takes_k_from_1_to_the_axis_length(k):
    x = np.array([[[3, 1, 4, 1.5]], [[5, 9, 2, 6]]], np.float32)
    model, feeds = _top_k(x, k, opset=10)  # the first opset with k as an input; axis -1
    _, (v, i) = check(model, feeds)
    order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    np.testing.assert_array_equal(i, order)
    np.testing.assert_array_equal(v, np.take_along_axis(x, order, -1))


def test_top_k_of_0_is_refused():
    x = rand(2, 3)
    assert "k=0 is outside 1..3" in refused(*_top_k(x, 0))


def test_top_k_up_to_its_limit_of_256():
    x = np.random.default_rng(3).permutation(256).astype(np.float32).reshape(1, 256)
    _, (v, i) = check(*_top_k(x, 256))
    np.testing.assert_array_equal(v[0], np.arange(255, -1, -1))
    np.testing.assert_array_equal(x[0, i[0]], v[0])


def test_compress_condition_longer_than_the_axis_with_nothing_selected_past_it():
    # ONNX allows extra entries when they select nothing (numpy's compress, which ONNX's
    # reference evaluator runs, does too)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    model = single_node("Compress", ["x", "c"], {"x": x},
                        {"c": np.array([0, 1, 1, 0, 0], np.bool_)}, axis=1)
    graph, (y,) = check(model, {"x": x}, ort=False)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(y, [[1, 2], [4, 5]])
    # int32 indices: the gather index type every WebNN backend takes
    (gather,) = [op for op in graph.operations if op.op_type == "gather"]
    assert gather.input("indices").data_type == "int32"


def test_top_k_with_k_of_two_values_is_refused():
    x = rand(2, 3)
    model = single_node("TopK", ["x", "k"], {"x": x}, {"k": np.array([1, 2], I64)},
                        outputs=("v", "i"), out_types=[1, 7], opset=11)
    assert "K holds 2 values; it must hold one" in refused(model, {"x": x})


def test_gather_elements_default_axis_is_0():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    i = np.array([[1, 0, 1]], I64)
    model = single_node("GatherElements", ["x", "i"], {"x": x}, {"i": i}, opset=13)
    _, (y,) = check(model, {"x": x})
    np.testing.assert_array_equal(y, [[4, 2, 6]])


def test_tensor_scatter_without_write_indices_writes_from_position_0():
    past = np.zeros((2, 4, 1), np.float32)
    update = np.array([[[1], [2]], [[3], [4]]], np.float32)
    ours, want = _tensor_scatter(past, update, axis=1)
    np.testing.assert_array_equal(ours, want)
    np.testing.assert_array_equal(ours[:, :, 0], [[1, 2, 0, 0], [3, 4, 0, 0]])
