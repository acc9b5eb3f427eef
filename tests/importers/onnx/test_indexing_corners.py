"""Corners of the ONNX indexing import the main tests leave open: GatherND with two batch axes
and batch_dims at its bounds, and ScatterElements / ScatterND with a reduction from the first
opset that has one (16), with negative and repeated indices. Checked against ONNX Runtime
running the same model and against values worked out by hand from ONNX's definition."""
from __future__ import annotations

import numpy as np
import pytest

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
