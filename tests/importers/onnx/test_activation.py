"""ONNX activations and the softmax family: hand-computed values from the ONNX formulas, the
WebNN ops chosen, and agreement with ONNX Runtime."""
from __future__ import annotations

import math

import numpy as np
import onnx
import pytest

from .helpers import check, op_named, ops_of, rand, single_node

X = np.array([-2, -0.5, 0, 0.5, 2], np.float32)


def _run(op_type: str, x: np.ndarray = X, opset: int = 17, **attrs):
    return check(single_node(op_type, ["x"], {"x": x}, opset=opset, **attrs), {"x": x})


@pytest.mark.parametrize("op_type, attrs, webnn, expected", [
    ("Relu", {}, "relu", [0, 0, 0, 0.5, 2]),
    ("LeakyRelu", {"alpha": 0.1}, "leakyRelu", [-0.2, -0.05, 0, 0.5, 2]),
    ("HardSigmoid", {}, "hardSigmoid", [0.1, 0.4, 0.5, 0.6, 0.9]),  # 0.2 x + 0.5
    ("HardSwish", {}, "hardSwish", [-2 / 6, -0.5 * 2.5 / 6, 0, 0.5 * 3.5 / 6, 2 * 5 / 6]),
    ("Softsign", {}, "softsign", [-2 / 3, -1 / 3, 0, 1 / 3, 2 / 3]),
    ("Elu", {"alpha": 2.0}, "elu", [2 * (math.exp(-2) - 1), 2 * (math.exp(-0.5) - 1), 0, 0.5, 2]),
    ("Sigmoid", {}, "sigmoid", [1 / (1 + math.exp(-v)) for v in X]),
    ("Tanh", {}, "tanh", [math.tanh(v) for v in X]),
    ("Softplus", {}, "softplus", [math.log1p(math.exp(v)) for v in X]),
])
def test_one_to_one_activations(op_type, attrs, webnn, expected):
    graph, (y,) = _run(op_type, **attrs)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-7)
    assert ops_of(graph) == [webnn]


def test_selu_is_a_scaled_elu():
    _, (y,) = _run("Selu", alpha=2.0, gamma=3.0)
    np.testing.assert_allclose(y, [6 * (math.exp(-2) - 1), 6 * (math.exp(-0.5) - 1), 0, 1.5, 6],
                               rtol=1e-6)


def test_celu_with_alpha():
    graph, (y,) = _run("Celu", alpha=2.0, opset=12)
    # alpha * (exp(x / alpha) - 1) below 0
    np.testing.assert_allclose(y, [2 * (math.exp(-1) - 1), 2 * (math.exp(-0.25) - 1), 0, 0.5, 2],
                               rtol=1e-6)
    assert ops_of(graph) == ["div", "elu", "mul"]


def test_mish():
    _, (y,) = _run("Mish", opset=18)
    np.testing.assert_allclose(y, [v * math.tanh(math.log1p(math.exp(v))) for v in X],
                               rtol=1e-5)


def test_thresholded_relu_keeps_values_strictly_above_alpha():
    x = np.array([0.5, 1.0, 1.5], np.float32)
    _, (y,) = _run("ThresholdedRelu", x, opset=10, alpha=1.0)
    np.testing.assert_array_equal(y, [0, 0, 1.5])


def test_shrink():
    x = np.array([-2, -1, 0, 1, 2], np.float32)
    graph, (y,) = _run("Shrink", x, lambd=1.0, bias=0.5)
    np.testing.assert_array_equal(y, [-1.5, 0, 0, 0, 1.5])
    assert ops_of(graph).count("where") == 2


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    x = np.array([-1, 0, 1], np.float32)
    graph, (y,) = _run("Gelu", x, opset=20, approximate=approximate)
    if approximate == "none":  # x * Phi(x)
        expected = [v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x]
        assert ops_of(graph) == ["gelu"]
    else:
        expected = [0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
                    for v in x]
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-7)
    assert abs(y[2] - (0.841192 if approximate == "tanh" else 0.841345)) < 1e-6


def test_prelu_broadcasts_a_per_channel_slope():
    x = rand(2, 3, 2, 2)
    slope = np.array([[[0.1]], [[0.2]], [[0.3]]], np.float32)
    _, (y,) = check(single_node("PRelu", ["x", "s"], {"x": x}, {"s": slope}), {"x": x})
    np.testing.assert_allclose(y, np.where(x > 0, x, x * slope), rtol=1e-6)


# -- Clip ----------------------------------------------------------------------------------
def test_clip_attributes_before_opset_11():
    graph, (y,) = _run("Clip", opset=10, min=-1.0, max=1.0)  # Clip-6 holds to opset 10
    np.testing.assert_array_equal(y, [-1, -0.5, 0, 0.5, 1])
    assert op_named(graph, "clamp").attrs == {"minValue": -1.0, "maxValue": 1.0}


def test_clip_known_bounds_become_clamp_options():
    model = single_node("Clip", ["x", "lo", ""], {"x": X}, {"lo": np.array(0.25, np.float32)},
                        opset=13)
    graph, (y,) = check(model, {"x": X})
    np.testing.assert_array_equal(y, [0.25, 0.25, 0.25, 0.5, 2])
    # ONNX's absent max is the largest finite float32 (an infinite input comes out finite).
    assert op_named(graph, "clamp").attrs == {"minValue": 0.25,
                                              "maxValue": float(np.finfo(np.float32).max)}


def test_clip_bounds_from_graph_inputs_use_max_and_min():
    feeds = {"x": X, "lo": np.array(-1, np.float32), "hi": np.array(0.25, np.float32)}
    graph, (y,) = check(single_node("Clip", ["x", "lo", "hi"], feeds, opset=13), feeds)
    np.testing.assert_array_equal(y, [-1, -0.5, 0, 0.25, 0.25])
    assert ops_of(graph) == ["max", "min"]


def test_clip_min_above_max_gives_max_everywhere():
    model = single_node("Clip", ["x", "lo", "hi"], {"x": X},
                        {"lo": np.array(2, np.float32), "hi": np.array(1, np.float32)}, opset=13)
    _, (y,) = check(model, {"x": X})
    np.testing.assert_array_equal(y, [1, 1, 1, 1, 1])


def test_clip_int8():
    x = np.array([-100, -5, 0, 5, 100], np.int8)
    model = single_node("Clip", ["x", "lo", "hi"], {"x": x},
                        {"lo": np.array(-10, np.int8), "hi": np.array(10, np.int8)}, opset=13)
    _, (y,) = check(model, {"x": x})
    np.testing.assert_array_equal(y, [-10, -5, 0, 5, 10])


# -- Softmax family --------------------------------------------------------------------------
def test_softmax_opset_13_is_along_one_axis():
    x = np.array([[0, 1], [2, 2]], np.float32)
    graph, (y,) = _run("Softmax", x, opset=13, axis=0)
    e = math.e ** 2
    np.testing.assert_allclose(y, [[1 / (1 + e), 1 / (1 + math.e)],
                                   [e / (1 + e), math.e / (1 + math.e)]], rtol=1e-6)
    assert op_named(graph, "softmax").attrs["axis"] == 0


def test_softmax_before_opset_13_flattens_to_2d_at_axis():
    # opset 11, axis 1 on [2, 2, 2]: each batch row's 4 values are normalized together
    x = np.array([[[0, 0], [0, math.log(5)]], [[1, 1], [1, 1]]], np.float32)
    graph, (y,) = _run("Softmax", x, opset=11, axis=1)
    np.testing.assert_allclose(y[0], [[1 / 8, 1 / 8], [1 / 8, 5 / 8]], rtol=1e-6)
    np.testing.assert_allclose(y[1], np.full((2, 2), 0.25), rtol=1e-6)
    assert ops_of(graph) == ["reshape", "softmax", "reshape"]


def test_log_softmax_of_large_numbers_stays_finite():
    x = np.array([[1000, 1001, 1002]], np.float32)
    _, (y,) = _run("LogSoftmax", x, opset=13)
    # x - log(sum(exp(x))) = x - 1002 - log(e^-2 + e^-1 + 1)
    offset = 1002 + math.log(math.exp(-2) + math.exp(-1) + 1)
    np.testing.assert_allclose(y, [[1000 - offset, 1001 - offset, 1002 - offset]], rtol=1e-6)


def test_log_softmax_before_opset_13_matches_onnx_runtime():
    x = rand(2, 3, 4)
    _, (y,) = _run("LogSoftmax", x, opset=11, axis=1)
    assert y.shape == (2, 3, 4)


def test_hardmax_marks_the_first_largest():
    x = np.array([[1, 3, 3], [2, 1, 0]], np.float32)
    graph, (y,) = _run("Hardmax", x, opset=13)
    np.testing.assert_array_equal(y, [[0, 1, 0], [1, 0, 0]])
    assert ops_of(graph) == ["argMax", "equal", "cast"]


def test_hardmax_before_opset_13_over_the_flattened_rows():
    x = np.array([[[1, 9], [3, 4]], [[5, 0], [2, 2]]], np.float32)
    _, (y,) = _run("Hardmax", x, opset=11, axis=1)
    np.testing.assert_array_equal(y, [[[0, 1], [0, 0]], [[1, 0], [0, 0]]])


def test_float16_activation():
    x = X.astype(np.float16)
    model = single_node("Elu", ["x"], {"x": x}, out_types=[onnx.TensorProto.FLOAT16])
    _, (y,) = check(model, {"x": x}, atol=1e-2, rtol=1e-2)
    assert y.dtype == np.float16


def test_softmax_before_opset_13_on_the_last_axis_needs_no_flattening():
    x = rand(2, 3, 4)
    graph, _ = _run("Softmax", x, opset=11, axis=-1)
    assert ops_of(graph) == ["softmax"]
    assert op_named(graph, "softmax").attrs["axis"] == 2
