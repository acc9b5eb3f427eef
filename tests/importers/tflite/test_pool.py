"""TFLite pools against LiteRT: layout "nhwc", SAME padding that does not count in averages,
and L2_POOL_2D as the root of the mean square."""
from __future__ import annotations

import numpy as np
import pytest

from converter.testing.tflite_fixtures import (RELU, RELU6, SAME, VALID, Input, Output, Quant,
                                               one_op)

from .helpers import EXACT, atol, check, op_named, ops_of, rand, refused, ulp

X = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)  # [[1 2 3] [4 5 6] [7 8 9]]


def _pool(op, shape, out, **options):
    return one_op(op, [Input("x", shape)], [Output("y", out)], **options)


def test_average_pool_same_padding_does_not_count_the_padding():
    model = _pool("AVERAGE_POOL_2D", [1, 3, 3, 1], [1, 2, 2, 1], padding=SAME, strideW=2,
                  strideH=2, filterWidth=2, filterHeight=2)
    graph, got = check(model, {"x": X}, ulp(4 + 1))
    # windows: {1,2,4,5} -> 3, {3,6} -> 4.5, {7,8} -> 7.5, {9} -> 9
    np.testing.assert_allclose(got["y"].reshape(2, 2), [[3, 4.5], [7.5, 9]])
    pool = op_named(graph, "averagePool2d")
    assert pool.attrs["layout"] == "nhwc" and pool.attrs["padding"] == [0, 1, 0, 1]


def test_max_pool_valid_with_fused_relu6():
    model = _pool("MAX_POOL_2D", [1, 3, 3, 1], [1, 2, 2, 1], padding=VALID, strideW=1,
                  strideH=1, filterWidth=2, filterHeight=2, fusedActivationFunction=RELU6)
    graph, got = check(model, {"x": X}, EXACT)
    np.testing.assert_array_equal(got["y"].reshape(2, 2), [[5, 6], [6, 6]])
    assert ops_of(graph) == ["maxPool2d", "clamp"]


def test_l2_pool_is_the_root_of_the_mean_square():
    model = _pool("L2_POOL_2D", [1, 3, 3, 1], [1, 2, 2, 1], padding=SAME, strideW=2, strideH=2,
                  filterWidth=2, filterHeight=2)
    graph, got = check(model, {"x": X}, ulp(8))
    np.testing.assert_allclose(got["y"].reshape(2, 2),
                               np.sqrt([[(1 + 4 + 16 + 25) / 4, (9 + 36) / 2],
                                        [(49 + 64) / 2, 81]]), rtol=1e-6)
    assert ops_of(graph) == ["mul", "averagePool2d", "sqrt"]


@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"])
@pytest.mark.parametrize("padding, strides, window, out_hw", [
    (SAME, (2, 2), (3, 3), (4, 3)), (VALID, (1, 2), (2, 3), (6, 2)), (SAME, (1, 1), (3, 2), (7, 6))])
def test_pools_match_litert(op, padding, strides, window, out_hw):
    x = rand(2, 7, 6, 3)
    model = _pool(op, x.shape, [2, *out_hw, 3], padding=padding, strideH=strides[0],
                  strideW=strides[1], filterHeight=window[0], filterWidth=window[1])
    graph, got = check(model, {"x": x}, atol(1e-6))
    assert got["y"].shape == (2, *out_hw, 3)
    assert "transpose" not in ops_of(graph)


def test_pool_of_a_rank_3_input_is_refused():
    model = _pool("MAX_POOL_2D", [3, 3, 1], [2, 2, 1], padding=VALID, strideW=1, strideH=1,
                  filterWidth=2, filterHeight=2)
    assert "its input has rank 3; it must be 4" in refused(model).line()


Q = Quant([0.05], [2])


def test_int8_max_pool_without_activation_takes_the_stored_max():
    x = np.random.default_rng(3).integers(-128, 128, (1, 4, 4, 3)).astype(np.int8)
    model = one_op("MAX_POOL_2D", [Input("x", x.shape, "int8", Q)],
                   [Output("y", [1, 2, 2, 3], "int8", Q)], padding=VALID, strideW=2, strideH=2,
                   filterWidth=2, filterHeight=2)
    graph, got = check(model, {"x": x}, EXACT)
    np.testing.assert_array_equal(got["y"], x.reshape(1, 2, 2, 2, 2, 3).max(axis=(2, 4)))
    assert ops_of(graph) == ["maxPool2d"]  # no dequantize / quantize round trip


def test_int8_max_pool_with_relu_clamps_real_values():
    # RELU on real values: stored values below the zero point 2 become 2 (real 0).
    x = np.random.default_rng(5).integers(-128, 128, (1, 4, 4, 3)).astype(np.int8)
    model = one_op("MAX_POOL_2D", [Input("x", x.shape, "int8", Q)],
                   [Output("y", [1, 2, 2, 3], "int8", Q)], padding=VALID, strideW=2, strideH=2,
                   filterWidth=2, filterHeight=2, fusedActivationFunction=RELU)
    _, got = check(model, {"x": x}, EXACT)
    np.testing.assert_array_equal(got["y"],
                                  np.maximum(x.reshape(1, 2, 2, 2, 2, 3).max(axis=(2, 4)), 2))
