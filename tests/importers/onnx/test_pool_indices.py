"""MaxPool's Indices output (the flat position of each window's largest element) and
MaxUnpool, which puts values back at such positions; compared with ONNX Runtime."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from .helpers import check

F32, I64 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [2, 3], "dilations": [2, 1], "strides": [1, 2]},
    {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [2, 2], "storage_order": 1},
])
def test_max_pool_indices_match_onnx_runtime(attrs):
    x = np.random.default_rng(2).permutation(2 * 3 * 7 * 6).astype(np.float32).reshape(
        2, 3, 7, 6)  # distinct values: one largest element per window
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    graph = helper.make_graph([node], "p", [helper.make_tensor_value_info("x", F32, x.shape)],
                              [helper.make_tensor_value_info("y", F32, None),
                               helper.make_tensor_value_info("i", I64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)], ir_version=9)
    _, (y, i) = check(model, {"x": x})
    # every index points at its window's value (storage_order 1: columns first in a plane)
    flat = x.transpose(0, 1, 3, 2).reshape(-1) if attrs.get("storage_order") else x.reshape(-1)
    np.testing.assert_array_equal(flat[i], y)


@pytest.mark.parametrize("opset", [9, 12])  # MaxUnpool exists since opset 9
def test_max_unpool_puts_pooled_values_back(opset):
    x = np.random.default_rng(3).standard_normal((1, 2, 4, 4)).astype(np.float32)
    pool = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2])
    unpool = helper.make_node("MaxUnpool", ["y", "i"], ["z"], kernel_shape=[2, 2],
                              strides=[2, 2])
    graph = helper.make_graph([pool, unpool], "u",
                              [helper.make_tensor_value_info("x", F32, x.shape)],
                              [helper.make_tensor_value_info("z", F32, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=9)
    _, (z,) = check(model, {"x": x})
    windows = x.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5))
    assert np.count_nonzero(z) == 8 and np.isclose(np.sort(z[z != 0]),
                                                   np.sort(windows.reshape(-1))).all()
