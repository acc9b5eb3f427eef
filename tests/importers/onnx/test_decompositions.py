"""ONNX ops WebNN has no single op for, imported as compositions: RMSNormalization, BitShift,
integer Mod, TopK, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss. Each is run on
ONNX Runtime (the source runtime) where it implements the op at that opset, and on a numpy
reference written from the ONNX spec otherwise (signed BitShift is opset 28, newer than
ONNX Runtime)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from .helpers import check, imported, ops_of, rand, refused, single_node

F32 = onnx.TensorProto.FLOAT
I64 = onnx.TensorProto.INT64


# -- RMSNormalization ------------------------------------------------------------------------
def test_rms_normalization_by_hand():
    x = np.array([[3, 4]], np.float32)
    model = single_node("RMSNormalization", ["x", "s"], {"x": x},
                        {"s": np.array([1, 2], np.float32)}, opset=23, epsilon=0.0)
    _, (y,) = imported(model, {"x": x})
    # rms = sqrt((9 + 16) / 2); y = x / rms * scale
    rms = np.sqrt(12.5)
    np.testing.assert_allclose(y, [[3 / rms, 8 / rms]], rtol=1e-6)


@pytest.mark.parametrize("axis", [-1, 1])
def test_rms_normalization_matches_onnx_runtime(axis):
    x = rand(2, 3, 8)
    model = single_node("RMSNormalization", ["x", "s"], {"x": x}, {"s": rand(*x.shape[axis:])},
                        opset=23, axis=axis, epsilon=1e-5)
    graph, _ = check(model, {"x": x})
    assert "reduceMean" in ops_of(graph)


def test_rms_normalization_float16_statistics_in_float32():
    x = (rand(2, 16) * 30).astype(np.float16)
    model = single_node("RMSNormalization", ["x", "s"], {"x": x},
                        {"s": rand(16).astype(np.float16)}, opset=23)
    graph, _ = check(model, {"x": x}, atol=1e-2, rtol=1e-2)
    assert "cast" in ops_of(graph)


# -- BitShift --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.uint64])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift_unsigned_matches_onnx_runtime(dtype, direction):
    bits = np.dtype(dtype).itemsize * 8
    x = np.array([1, 255, 7, 200, 3, 1], dtype)
    s = np.array([0, 1, 3, bits - 1, 2, 5], dtype)
    model = single_node("BitShift", ["x", "s"], {"x": x, "s": s}, opset=11, direction=direction)
    _, (y,) = check(model, {"x": x, "s": s})
    want = np.left_shift(x, s) if direction == "LEFT" else np.right_shift(x, s)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_bit_shift_signed_is_arithmetic_and_fills_out_of_range_shifts(dtype):
    bits = np.dtype(dtype).itemsize * 8
    x = np.array([-8, -7, 5, -1, -8, 4, -3, 100], dtype)
    s = np.array([1, 2, 1, 3, -1, bits, bits - 1, bits - 2], dtype)
    feeds = {"x": x, "s": s}
    for direction in ("LEFT", "RIGHT"):
        model = single_node("BitShift", ["x", "s"], feeds, opset=28, direction=direction)
        _, (y,) = imported(model, feeds)
        valid = (s >= 0) & (s < (bits if direction == "LEFT" else bits - 1))
        safe = np.where(valid, s, 0)
        if direction == "LEFT":  # two's complement wrap, as numpy's shift of a fixed width
            want = np.where(valid, np.left_shift(x, safe), 0)
        else:
            want = np.where(valid, np.right_shift(x, safe), np.where(x < 0, -1, 0))
        np.testing.assert_array_equal(y, want.astype(dtype), err_msg=direction)


# -- integer Mod -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
@pytest.mark.parametrize("fmod", [0, 1])
def test_integer_mod_signs_match_onnx_runtime(dtype, fmod):
    a = np.array([7, -7, 7, -7, 6, -6, 0, 5, -128 if dtype == np.int8 else -1000], dtype)
    b = np.array([3, 3, -3, -3, 3, -3, 4, 7, 3], dtype)
    model = single_node("Mod", ["a", "b"], {"a": a, "b": b}, opset=13, fmod=fmod)
    graph, (y,) = check(model, {"a": a, "b": b})
    want = np.fmod(a, b) if fmod else np.mod(a, b)
    np.testing.assert_array_equal(y, want)
    assert "floor" not in ops_of(graph)  # exact integer steps, no float rounding


def test_unsigned_mod_is_one_remainder():
    a = np.array([7, 250, 3], np.uint8)
    b = np.array([3, 7, 5], np.uint8)
    model = single_node("Mod", ["a", "b"], {"a": a, "b": b}, opset=13)
    _, (y,) = check(model, {"a": a, "b": b})
    np.testing.assert_array_equal(y, [1, 5, 3])


# -- TopK ------------------------------------------------------------------------------------
@pytest.mark.parametrize("largest", [1, 0])
def test_top_k_values_and_indices_match_onnx_runtime(largest):
    x = np.array([[3, 1, 4, 1, 5, 9, 2, 6], [2, 7, 1, 8, 2, 8, 1, 8]], np.float32)
    model = single_node("TopK", ["x", "k"], {"x": x}, {"k": np.array([3], np.int64)},
                        outputs=("v", "i"), out_types=[F32, I64], opset=11, largest=largest)
    _, (v, i) = check(model, {"x": x})
    if largest:
        np.testing.assert_array_equal(v, [[9, 6, 5], [8, 8, 8]])
        np.testing.assert_array_equal(i, [[5, 7, 4], [3, 5, 7]])  # ties: lowest index first
    else:
        np.testing.assert_array_equal(v, [[1, 1, 2], [1, 1, 2]])
        np.testing.assert_array_equal(i, [[1, 3, 6], [2, 6, 0]])


def test_top_k_integer_input_on_axis_0():
    x = np.array([[5, -2], [7, 3], [-1, 3]], np.int32)
    model = single_node("TopK", ["x", "k"], {"x": x}, {"k": np.array([2], np.int64)},
                        outputs=("v", "i"), out_types=[onnx.TensorProto.INT32, I64], opset=11,
                        axis=0)
    _, (v, i) = check(model, {"x": x})
    np.testing.assert_array_equal(v, [[7, 3], [5, 3]])
    np.testing.assert_array_equal(i, [[1, 1], [0, 2]])


def test_top_k_with_k_from_an_input_asks_for_it():
    x = rand(2, 5)
    k = np.array([2], np.int64)
    model = single_node("TopK", ["x", "k"], {"x": x, "k": k}, outputs=("v", "i"),
                        out_types=[F32, I64], opset=11)
    assert "--const" in refused(model, {"x": x, "k": k})


# -- losses ----------------------------------------------------------------------------------
def _loss_model(op, n_outputs=1, weight=None, **attrs):
    x = rand(3, 5, 2)
    t = np.array([[0, 4], [2, -1], [1, 3]], np.int64)
    feeds = {"x": x, "t": t}
    inputs = ["x", "t"] + (["w"] if weight is not None else [])
    weights = {"w": weight} if weight is not None else {}
    outputs = ("loss", "log_prob")[:n_outputs]
    model = single_node(op, inputs, feeds, weights, outputs=outputs,
                        out_types=[F32] * n_outputs, opset=13, **attrs)
    return model, feeds


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_negative_log_likelihood_loss_matches_onnx_runtime(reduction, weighted):
    weight = np.array([1, 2, 0.5, 3, 1.5], np.float32) if weighted else None
    model, feeds = _loss_model("NegativeLogLikelihoodLoss", weight=weight, reduction=reduction,
                               ignore_index=-1)
    _, (loss,) = check(model, feeds)
    x, t = feeds["x"], feeds["t"]
    w = weight if weighted else np.ones(5, np.float32)
    picked = [(-x[n, t[n, d], d] * w[t[n, d]], w[t[n, d]]) for n in range(3) for d in range(2)
              if t[n, d] != -1]
    total, weights = sum(p for p, _ in picked), sum(q for _, q in picked)
    if reduction == "sum":
        np.testing.assert_allclose(loss, total, rtol=1e-5)
    elif reduction == "mean":
        np.testing.assert_allclose(loss, total / weights, rtol=1e-5)
    else:
        assert loss[1, 1] == 0  # the ignored position


def test_softmax_cross_entropy_loss_with_log_prob_matches_onnx_runtime():
    model, feeds = _loss_model("SoftmaxCrossEntropyLoss", n_outputs=2,
                               weight=np.array([1, 2, 0.5, 3, 1.5], np.float32), ignore_index=-1)
    _, (loss, log_prob) = check(model, feeds)
    x = feeds["x"].astype(np.float64)
    want = x - np.log(np.exp(x).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(log_prob, want, rtol=1e-5, atol=1e-6)


# -- Bitwise ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint64])
@pytest.mark.parametrize("op, fn", [("BitwiseAnd", np.bitwise_and), ("BitwiseOr", np.bitwise_or),
                                    ("BitwiseXor", np.bitwise_xor)])
def test_bitwise_binary_ops_match_numpy_and_onnx_runtime(dtype, op, fn):
    info = np.iinfo(dtype)
    a = np.array([0, 1, 5, info.max, info.min, 100, info.max - 3, 77], dtype)
    b = np.array([3, 1, 12, 1, info.max, info.min, 6, 77], dtype)
    if np.issubdtype(dtype, np.signedinteger):
        a[5], b[6] = -100, -6
    model = single_node(op, ["a", "b"], {"a": a, "b": b}, opset=18)
    _, (y,) = check(model, {"a": a, "b": b})
    np.testing.assert_array_equal(y, fn(a, b))


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint8, np.uint32])
def test_bitwise_not_matches_numpy(dtype):
    info = np.iinfo(dtype)
    x = np.array([0, 1, info.max, info.min, 42], dtype)
    model = single_node("BitwiseNot", ["x"], {"x": x}, opset=18)
    _, (y,) = check(model, {"x": x})
    np.testing.assert_array_equal(y, np.invert(x))


# -- scatter with a reduction ----------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_scatter_nd_reduction_with_repeated_targets_matches_onnx_runtime(reduction):
    data = rand(4, 3)
    indices = np.array([[1], [3], [1], [-4], [1]], np.int64)  # row 1 four times (-4 is 0)
    updates = rand(5, 3)
    model = single_node("ScatterND", ["x", "i", "u"], {"x": data}, {"i": indices, "u": updates},
                        opset=18, reduction=reduction)
    graph, (y,) = check(model, {"x": data}, atol=1e-6)
    assert ops_of(graph).count("scatterND") == 3  # three rounds: row 1 is hit three times


@pytest.mark.parametrize("reduction", ["add", "max"])
def test_scatter_elements_reduction_along_axis_1_matches_onnx_runtime(reduction):
    data = np.zeros((2, 4), np.float32)
    indices = np.array([[0, 0, 3], [2, 2, 2]], np.int64)
    updates = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    model = single_node("ScatterElements", ["x", "i", "u"], {"x": data},
                        {"i": indices, "u": updates}, opset=18, axis=1, reduction=reduction)
    _, (y,) = check(model, {"x": data})
    if reduction == "add":
        np.testing.assert_array_equal(y, [[3, 0, 0, 3], [0, 0, 15, 0]])


def test_scatter_reduction_with_run_time_indices_asks_for_them():
    data, indices = rand(4, 3), np.array([[1], [1]], np.int64)
    model = single_node("ScatterND", ["x", "i", "u"], {"x": data, "i": indices},
                        {"u": rand(2, 3)}, opset=18, reduction="add")
    assert "--const" in refused(model, {"x": data, "i": indices})


# -- Swish, CumProd, ReverseSequence ---------------------------------------------------------
def test_swish_by_hand():
    x = np.array([-1, 0, 2], np.float32)
    _, (y,) = imported(single_node("Swish", ["x"], {"x": x}, opset=24, alpha=2.0), {"x": x})
    np.testing.assert_allclose(y, x / (1 + np.exp(-2 * x)), rtol=1e-6)


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cum_prod_matches_numpy(exclusive, reverse):
    x = np.array([[1, 2, 3, 4], [-2, 5, 0, 3]], np.int32)
    model = single_node("CumProd", ["x", "axis"], {"x": x}, {"axis": np.array(1, np.int64)},
                        opset=26, exclusive=exclusive, reverse=reverse)
    _, (y,) = imported(model, {"x": x})
    v = x[:, ::-1] if reverse else x
    want = np.cumprod(v, axis=1)
    if exclusive:
        want = np.concatenate([np.ones((2, 1), np.int32), want[:, :-1]], axis=1)
    np.testing.assert_array_equal(y, want[:, ::-1] if reverse else want)


@pytest.mark.parametrize("time_axis, batch_axis", [(0, 1), (1, 0)])
def test_reverse_sequence_matches_onnx_runtime(time_axis, batch_axis):
    x = rand(4, 3, 2) if time_axis == 0 else rand(3, 4, 2)
    lens = np.array([4, 1, 3], np.int64)
    model = single_node("ReverseSequence", ["x", "lens"], {"x": x}, {"lens": lens}, opset=10,
                        time_axis=time_axis, batch_axis=batch_axis)
    _, (y,) = check(model, {"x": x})
    first = x[:, 2] if time_axis == 0 else x[2]  # batch 2: its first 3 steps reversed
    got = y[:, 2] if time_axis == 0 else y[2]
    np.testing.assert_array_equal(got[:3], first[:3][::-1])
    np.testing.assert_array_equal(got[3], first[3])


# -- TensorScatter (a KV-cache write) --------------------------------------------------------
@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter_with_run_time_write_indices(mode):
    past, update = rand(2, 3, 6, 4), rand(2, 3, 2, 4)
    write = np.array([1, 5 if mode == "circular" else 4], np.int64)
    model = single_node("TensorScatter", ["past", "update", "w"],
                        {"past": past, "update": update, "w": write}, opset=24, mode=mode)
    _, (y,) = imported(model, {"past": past, "update": update, "w": write})
    want = past.copy()
    for b in range(2):  # the spec's pseudocode
        for s in range(2):
            at = write[b] + s
            want[b, :, at % 6 if mode == "circular" else at] = update[b, :, s]
    np.testing.assert_array_equal(y, want)


# -- hyperbolic functions --------------------------------------------------------------------
@pytest.mark.parametrize("op, low, high", [("Sinh", -8, 8), ("Cosh", -8, 8), ("Asinh", -50, 50),
                                           ("Acosh", 1, 50), ("Atanh", -0.99, 0.99)])
def test_hyperbolic_functions_match_onnx_runtime(op, low, high):
    x = np.random.default_rng(9).uniform(low, high, 64).astype(np.float32)
    x[0] = low  # an edge: acosh(1) = 0
    # relative accuracy, and a few float32 epsilons absolute near 0
    check(single_node(op, ["x"], {"x": x}, opset=9), {"x": x}, rtol=1e-5, atol=1e-6)
