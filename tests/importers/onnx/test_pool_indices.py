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
    # width 6: ceil gives 3 windows, the last reaching one past the end (padded, never max)
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [2, 2], "storage_order": 1},
    {"kernel_shape": [3, 3], "pads": [1, 0, 0, 1]},  # rows and columns padded differently
    {"kernel_shape": [2, 2], "dilations": [1, 2]},   # columns dilated
    {"kernel_shape": [1, 1]},                        # one tap
    {"kernel_shape": [1, 2], "strides": [1, 2]},     # two taps
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


def _pool_unpool(x, pool_attrs, unpool_attrs, output_shape=None):
    pool = helper.make_node("MaxPool", ["x"], ["y", "i"], **pool_attrs)
    inputs = ["y", "i"] + (["shape"] if output_shape is not None else [])
    unpool = helper.make_node("MaxUnpool", inputs, ["z"], **unpool_attrs)
    init = [] if output_shape is None else [
        onnx.numpy_helper.from_array(np.array(output_shape, np.int64), "shape")]
    graph = helper.make_graph([pool, unpool], "u",
                              [helper.make_tensor_value_info("x", F32, x.shape)],
                              [helper.make_tensor_value_info("z", F32, None)], init)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)], ir_version=9)


@pytest.mark.parametrize("pool_attrs, unpool_attrs, shape", [
    # strides and pads left to their defaults (1 and 0): 3x3 -> 2x2 -> (2 - 1) + 2 = 3
    ({"kernel_shape": [2, 2]}, {"kernel_shape": [2, 2]}, (1, 2, 3, 3)),
    # pads cut the unpooled size: (3 - 1) * 2 - 1 - 1 + 3 = 5, rows and columns alike
    ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
     {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, (1, 2, 5, 5)),
])
def test_max_unpool_shapes_match_onnx_runtime(pool_attrs, unpool_attrs, shape):
    x = np.random.default_rng(4).permutation(2 * 25).astype(np.float32).reshape(1, 2, 5, 5)
    x = np.ascontiguousarray(x[:, :, :shape[2], :shape[3]])
    _, (z,) = check(_pool_unpool(x, pool_attrs, unpool_attrs), {"x": x})
    assert z.shape == shape


def test_max_unpool_larger_output_shape_pads_the_end_as_onnx_defines():
    # I indexes the shape the attributes give (4x4); output_shape 5x6 adds zeros after it.
    # This is ONNX's reference implementation; ONNX Runtime instead spreads the flat indices
    # over the larger shape, so the reference is the oracle here.
    from onnx.reference import ReferenceEvaluator

    x = np.random.default_rng(6).permutation(2 * 16).astype(np.float32).reshape(1, 2, 4, 4)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    model = _pool_unpool(x, attrs, attrs, [1, 2, 5, 6])
    _, (z,) = check(model, {"x": x}, ort=False)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    assert z.shape == (1, 2, 5, 6)
    np.testing.assert_array_equal(z, want)
    assert not z[:, :, 4:].any() and not z[:, :, :, 4:].any()


def test_max_unpool_output_shape_smaller_than_the_unpooled_is_refused():
    x = np.zeros((1, 1, 4, 4), np.float32)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    model = _pool_unpool(x, attrs, attrs, [1, 1, 4, 3])
    from .helpers import refused
    assert "output_shape [1, 1, 4, 3] is smaller than the unpooled [1, 1, 4, 4]" in \
        refused(model, {"x": x})
