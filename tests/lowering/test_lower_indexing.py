"""gather, gatherElements, gatherND, scatterElements and scatterND through the ONNX lowering:
the spec's examples, negative indices, and out-of-range indices clamped into [-N, N-1].

An out-of-range index is given at run time (an input): as a constant it makes the graph invalid
(converter/ir/constant_indices.py)."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from .helpers import assert_exact, run1

G = np.array([[0, 1, 2], [10, 11, 12], [20, 21, 22], [30, 31, 32]], np.float32)


def _indices(b, feeds, indices, idx_type, at_run_time):
    """The indices as a constant, or as an input fed them."""
    indices = np.asarray(indices, idx_type)
    if not at_run_time:
        return b.constant(indices)
    feeds["i"] = indices
    return b.input("i", idx_type, list(indices.shape))


def _gather(name, x, indices, idx_type="int32", dtype="float32", at_run_time=False, **options):
    b = GraphBuilder()
    xi = b.input("x", dtype, list(x.shape))
    feeds = {"x": x.astype(dtype)}
    idx = _indices(b, feeds, indices, idx_type, at_run_time)
    return run1(b, getattr(b, name)(xi, idx, **options), feeds)


@pytest.mark.parametrize("idx_type", ["int32", "uint32", "int64"])
def test_gather_spec_examples(idx_type):
    assert_exact(_gather("gather", G, [3, 1], idx_type), [[30, 31, 32], [10, 11, 12]], np.float32)
    assert_exact(_gather("gather", G, [2, 1, 1], idx_type, axis=1),
                 [[2, 1, 1], [12, 11, 11], [22, 21, 21], [32, 31, 31]], np.float32)
    assert_exact(_gather("gather", G, [[0, 1], [2, 3]], idx_type, axis=0),
                 G[[[0, 1], [2, 3]]], np.float32)


def test_gather_negative_out_of_range_and_scalar_indices():
    # -1 is the last row; 9 clamps to 3 (the last row); -9 clamps to -4 (the first row).
    assert_exact(_gather("gather", G, [-1, 9, -9], at_run_time=True), [G[3], G[3], G[0]],
                 np.float32)
    assert_exact(_gather("gather", G, 2, axis=1), [2, 12, 22, 32], np.float32)
    big = np.array([2**32 - 1], np.uint32)  # far out of range as uint32: clamps to the last
    assert_exact(_gather("gather", G, big, "uint32", at_run_time=True), [G[3]], np.float32)


@pytest.mark.parametrize("dtype", ["int8", "uint64", "float16", "int64"])
def test_gather_moves_any_type(dtype):
    x = np.array([[1, 2], [3, 4]]).astype(dtype)
    assert_exact(_gather("gather", x, [1, 0], dtype=dtype), [[3, 4], [1, 2]], dtype)


def test_gather_elements():
    x = np.array([[1, 2], [3, 4]], np.float32)
    assert_exact(_gather("gatherElements", x, [[0, 0], [1, 0]], axis=1), [[1, 1], [4, 3]],
                 np.float32)
    assert_exact(_gather("gatherElements", x, [[1, -1]], axis=0), [[3, 4]], np.float32)
    # out of range clamps: 5 -> 1, -7 -> -2 (= 0)
    assert_exact(_gather("gatherElements", x, [[5, -7], [0, 1]], "int64", at_run_time=True,
                         axis=1),
                 [[2, 1], [3, 4]], np.float32)


def test_gather_nd_spec_examples():
    x2 = np.array([[0, 1], [2, 3]], np.float32)
    x3 = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    assert_exact(_gather("gatherND", x2, [[0, 0], [1, 1], [1, 0]], "uint32"), [0, 3, 2], np.float32)
    assert_exact(_gather("gatherND", x2, [[1], [0]], "uint32"), [[2, 3], [0, 1]], np.float32)
    assert_exact(_gather("gatherND", x3, [[0, 1], [1, 0]], "uint32"), [[2, 3], [4, 5]], np.float32)
    assert_exact(_gather("gatherND", x3, [[1], [0], [1]], "uint32"),
                 [[[4, 5], [6, 7]], [[0, 1], [2, 3]], [[4, 5], [6, 7]]], np.float32)
    assert_exact(_gather("gatherND", x3, [[0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]],
                         "uint32"), [1, 2, 4, 6, 7], np.float32)


def test_gather_nd_negative_and_clamped_coordinates():
    x3 = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    # [-1, -2, 1] is [1, 0, 1] = 5; [7, 0, -9] clamps to [1, 0, -2] = [1, 0, 0] = 4
    assert_exact(_gather("gatherND", x3, [[-1, -2, 1], [7, 0, -9]], "int64", at_run_time=True),
                 [5, 4], np.float32)


def _scatter(name, x, indices, updates, idx_type="uint32", at_run_time=False, **options):
    b = GraphBuilder()
    xi = b.input("x", "float32", list(x.shape))
    feeds = {"x": x}
    y = getattr(b, name)(xi, _indices(b, feeds, indices, idx_type, at_run_time),
                         b.constant(np.asarray(updates, np.float32)), **options)
    return run1(b, y, feeds)


def test_scatter_elements_spec_examples():
    got = _scatter("scatterElements", G, [[3, 1, 1], [2, 0, 3]], [[-1, -2, -3], [-4, -5, -6]])
    assert_exact(got, [[0, -5, 2], [10, -2, -3], [-4, 21, 22], [-1, 31, -6]], np.float32)
    got = _scatter("scatterElements", G, [[2], [1], [0], [2]], [[-1], [-2], [-3], [-4]], axis=1)
    assert_exact(got, [[0, 1, -1], [10, -2, 12], [-3, 21, 22], [30, 31, -4]], np.float32)
    x3 = np.array([0, 1, 10, 11, 100, 101, 110, 111, 200, 201, 210, 211, 300, 301, 310, 311],
                  np.float32).reshape(4, 2, 2)
    got = _scatter("scatterElements", x3, [[[0, 2], [1, 3]]], [[[-1, -2], [-3, -4]]], axis=0)
    assert_exact(got, [[[-1, 1], [10, 11]], [[100, 101], [-3, 111]], [[200, -2], [210, 211]],
                       [[300, 301], [310, -4]]], np.float32)


def test_scatter_elements_negative_and_clamped_indices():
    got = _scatter("scatterElements", G, [[-1, 7, -9]], [[1, 2, 3]], "int32", at_run_time=True)
    # -1 -> row 3; 7 -> row 3; -9 -> row 0
    assert_exact(got, [[0, 1, 3], [10, 11, 12], [20, 21, 22], [1, 2, 32]], np.float32)


def test_scatter_nd_spec_examples():
    got = _scatter("scatterND", np.arange(8, dtype=np.float32), [[4], [3], [1], [7]],
                   [-1, -2, -3, -4])
    assert_exact(got, [0, -3, 2, -2, -1, 5, 6, -4], np.float32)
    got = _scatter("scatterND", np.array([[0, 1], [2, 3]], np.float32), [[0, 0], [1, 1]], [-1, -2])
    assert_exact(got, [[-1, 1], [2, -2]], np.float32)
    got = _scatter("scatterND", np.array([[0, 1], [2, 3]], np.float32), [[1]], [[8, 9]])
    assert_exact(got, [[0, 1], [8, 9]], np.float32)


def test_scatter_nd_negative_and_clamped_coordinates():
    got = _scatter("scatterND", np.zeros((2, 3), np.float32), [[-1, -1], [5, -5]], [7, 9], "int64",
                   at_run_time=True)
    # [-1, -1] is [1, 2]; [5, -5] clamps to [1, -3] = [1, 0]
    assert_exact(got, [[0, 0, 0], [9, 0, 7]], np.float32)


def test_gather_nd_int32_coordinates_in_a_rank_3_indices_tensor():
    # indices [2, 1, 2]: the last dimension (2) is the coordinate length, int32 widened to
    # int64; the second coordinate is clamped to dimension 1's size 3, not dimension 0's 2
    x3 = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    got = _gather("gatherND", x3, [[[0, 2]], [[1, -1]]], "int32")
    assert_exact(got, [[[4, 5]], [[10, 11]]], np.float32)


def test_scatter_nd_int32_coordinates_in_a_rank_3_indices_tensor():
    # indices [1, 1, 2], updates [1, 1]: [0, 2] gets 5 (2 is inside dimension 1, of size 3)
    got = _scatter("scatterND", np.zeros((2, 3), np.float32), [[[0, 2]]], [[5]], "int32")
    assert_exact(got, [[0, 0, 5], [0, 0, 0]], np.float32)
