"""Dynamic-range ("hybrid") TFLite ops: int8 weights, float32 activations.

LiteRT quantizes such an op's float input to int8 at run time (asymmetric, per row for
FULLY_CONNECTED / BATCH_MATMUL, per image for CONV_2D / DEPTHWISE_CONV_2D / TRANSPOSE_CONV;
per row of each step's input and state for UNIDIRECTIONAL_SEQUENCE_RNN, symmetric unless
asymmetric_quantize_inputs); the importer emulates that. Oracles: LiteRT itself under the
whole-model parity policy (float outputs: atol 1e-4, rtol 1e-3), and numpy versions of the
quantization written from TFLite's AsymmetricQuantizeFloats / SymmetricQuantizeFloats, which
LiteRT must match too (so the test knows what LiteRT does, not only that we agree); each case
also shows that float math on the dequantized weights (the old import) fails the policy."""
from __future__ import annotations

import numpy as np
import pytest

from converter.runtimes.execute import run
from converter.importers.tflite import import_tflite
from converter.verification.parity import Bounds, compare
from converter.runtimes.litert import run_litert
from converter.testing.tflite_fixtures import (RELU, RELU6, RELU_N1_TO_1, SAME, SIGN_BIT, TANH,
                                               VALID, Const, Input, Output, Quant, Variable,
                                               one_op)

from .helpers import check, ops_of, rand, refused

MODEL = Bounds(atol=1e-4, rtol=1e-3)  # whole-model float32 bounds of the parity policy


def asymmetric(x: np.ndarray, axes) -> np.ndarray:
    """x quantized to int8 and back, one scale per slice over `axes`, by the formula of
    TFLite's AsymmetricQuantizeFloats (zero point from the end with the smaller error)."""
    axes = tuple(axes)
    low = np.minimum(x.min(axes, keepdims=True), 0).astype(np.float64)
    high = np.maximum(x.max(axes, keepdims=True), 0).astype(np.float64)
    scale = np.where(high == low, 1.0, (high - low) / 255)
    from_min, from_max = -128 - low / scale, 127 - high / scale
    zp = np.clip(np.round(np.where(128 - low / scale < 127 + high / scale, from_min, from_max)),
                 -128, 127)
    q = np.clip(np.round(x / scale) + zp, -128, 127)
    return ((q - zp) * scale).astype(np.float32)


def conv_nhwc(x, w, groups=1):
    """VALID, stride 1 convolution, NHWC input, OHWI filter (depthwise: groups = channels,
    filter 1HW(C) read as OHW1)."""
    n, height, width, _ = x.shape
    o, kh, kw, per_group = w.shape
    out = np.zeros((n, height - kh + 1, width - kw + 1, o), np.float64)
    out_per_group = o // groups
    for i in range(height - kh + 1):
        for j in range(width - kw + 1):
            patch = x[:, i:i + kh, j:j + kw].astype(np.float64)
            for g in range(groups):
                ws = w[g * out_per_group:(g + 1) * out_per_group]
                out[:, i, j, g * out_per_group:(g + 1) * out_per_group] = np.einsum(
                    "nhwc,ohwc->no", patch[..., g * per_group:(g + 1) * per_group], ws)
    return out.astype(np.float32)


def close(got, want) -> bool:
    return compare("y", got, want, MODEL, "float32").passed


def float_import_fails(model: bytes, feeds, float_math: np.ndarray) -> None:
    """The old import (float math on the dequantized weights) is off LiteRT past the policy."""
    want = run_litert(model, feeds)["y"]
    assert not close(float_math, want)


def fc_model(x_shape, w_q, scales, units, asym: bool, bias=None, keep=False, out_shape=None):
    q = Quant(scales, [0] * len(scales), axis=0)
    inputs = [Input("x", x_shape), Const(w_q, quant=q)]
    if bias is not None:
        inputs.append(Const(bias))
    return one_op("FULLY_CONNECTED", inputs, [Output("y", out_shape or [x_shape[0], units])],
                  asymmetricQuantizeInputs=asym, keepNumDims=keep)


@pytest.mark.parametrize("asym", [False, True])
@pytest.mark.parametrize("per_channel", [False, True])
def test_fully_connected_quantizes_each_row_as_litert(asym, per_channel):
    rng = np.random.default_rng(5)
    x = rand(4, 24)
    x[2] *= 0.01  # a row of small values gets its own, finer scale
    w_q = rng.integers(-127, 128, (6, 24)).astype(np.int8)
    scales = rng.uniform(0.01, 0.03, 6).astype(np.float32) if per_channel \
        else np.array([0.02], np.float32)
    bias = rand(6)
    model = fc_model(x.shape, w_q, scales, 6, asym, bias)
    w = w_q * scales.reshape(-1, 1)
    want = run_litert(model, {"x": x})["y"]
    assert close(asymmetric(x, [1]) @ w.T + bias, want)  # LiteRT runs it as described
    float_import_fails(model, {"x": x}, x @ w.T + bias)
    graph, _ = check(model, {"x": x}, MODEL)
    assert ops_of(graph).count("quantizeLinear") == 2  # zero point, input
    assert [op.input("input").shape for op in graph.operations
            if op.op_type == "reduceMax"] == [(4, 24)]


def test_fully_connected_keep_num_dims_and_a_zero_row():
    rng = np.random.default_rng(6)
    x = rand(2, 3, 16)
    x[1, 1] = 0  # max|x| = 0: the kernel's zero-range case
    x[0, 2] = np.abs(x[0, 2])  # no negatives: the zero point comes from the minimum, 0
    w_q = rng.integers(-127, 128, (5, 16)).astype(np.int8)
    model = fc_model(x.shape, w_q, [0.02], 5, False, keep=True, out_shape=[2, 3, 5])
    _, got = check(model, {"x": x}, MODEL)
    np.testing.assert_array_equal(got["y"][1, 1], 0)


@pytest.mark.parametrize("per_channel", [False, True])
def test_conv_2d_quantizes_each_image_as_litert(per_channel):
    rng = np.random.default_rng(7)
    x = rand(2, 6, 6, 3)
    x[1] *= 3  # the second image has its own scale
    w_q = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    scales = rng.uniform(0.01, 0.03, 4).astype(np.float32) if per_channel \
        else np.array([0.02], np.float32)
    bias = rand(4)
    model = one_op("CONV_2D", [Input("x", x.shape),
                               Const(w_q, quant=Quant(scales, [0] * len(scales), axis=0)),
                               Const(bias)],
                   [Output("y", [2, 4, 4, 4])], padding=VALID, strideW=1, strideH=1)
    w = w_q * scales.reshape(-1, 1, 1, 1)
    want = run_litert(model, {"x": x})["y"]
    assert close(conv_nhwc(asymmetric(x, [1, 2, 3]), w) + bias, want)
    float_import_fails(model, {"x": x}, conv_nhwc(x, w) + bias)
    graph, _ = check(model, {"x": x}, MODEL)
    assert [op.input("input").shape for op in graph.operations
            if op.op_type == "reduceMin"] == [(2, 6, 6, 3)]


def test_depthwise_conv_2d_quantizes_each_image_as_litert():
    rng = np.random.default_rng(8)
    x = rand(1, 7, 7, 4, low=-0.5, high=2.0)
    w_q = rng.integers(-127, 128, (1, 3, 3, 4)).astype(np.int8)
    scales = rng.uniform(0.01, 0.03, 4).astype(np.float32)  # LiteRT needs per-channel here
    bias = rand(4)
    model = one_op("DEPTHWISE_CONV_2D", [Input("x", x.shape),
                                         Const(w_q, quant=Quant(scales, [0] * 4, axis=3)),
                                         Const(bias)],
                   [Output("y", [1, 5, 5, 4])], padding=VALID, strideW=1, strideH=1,
                   depthMultiplier=1)
    w = np.transpose(w_q * scales, (3, 1, 2, 0))  # as OHW1, one group per channel
    want = run_litert(model, {"x": x})["y"]
    assert close(conv_nhwc(asymmetric(x, [1, 2, 3]), w, groups=4) + bias, want)
    float_import_fails(model, {"x": x}, conv_nhwc(x, w, groups=4) + bias)
    check(model, {"x": x}, MODEL)


@pytest.mark.parametrize("asym", [False, True])
def test_batch_matmul_quantizes_each_row_of_the_left_matrix(asym):
    rng = np.random.default_rng(9)
    a = rand(2, 3, 20)
    b_q = rng.integers(-127, 128, (20, 5)).astype(np.int8)
    model = one_op("BATCH_MATMUL", [Input("x", a.shape), Const(b_q, quant=Quant([0.02], [0]))],
                   [Output("y", [2, 3, 5])], asymmetricQuantizeInputs=asym)
    b = b_q * np.float32(0.02)
    want = run_litert(model, {"x": a})["y"]
    assert close(asymmetric(a, [2]) @ b, want)
    float_import_fails(model, {"x": a}, a @ b)
    check(model, {"x": a}, MODEL)


def test_float_weights_and_quantized_inputs_are_not_hybrid():
    """Only float input with int8 weights takes the hybrid path: float16 weights, or an int8
    model (quantized input), import without the run-time quantization."""
    x = rand(2, 8)
    model = one_op("FULLY_CONNECTED", [Input("x", x.shape), Const(rand(3, 8))],
                   [Output("y", [2, 3])])
    graph, _ = check(model, {"x": x}, MODEL)
    assert "quantizeLinear" not in ops_of(graph)
    xq = np.arange(16, dtype=np.int8).reshape(2, 8)
    model = one_op("FULLY_CONNECTED", [
        Input("x", xq.shape, "int8", Quant([0.05], [0])),
        Const(np.ones((3, 8), np.int8), quant=Quant([0.02], [0]))],
        [Output("y", [2, 3], "int8", Quant([0.01], [0]))])
    graph = import_tflite(model)
    assert "reduceMax" not in ops_of(graph)
    got = run(graph, {"x": xq})["y"]
    # a row's sum times 0.05 * 0.02, in steps of 0.01: 0..7 sums to 28 -> 2.8 -> 3;
    # 8..15 to 92 -> 9.2 -> 9 (the input's exact integers, no run-time rounding)
    assert got.tolist() == [[3, 3, 3], [9, 9, 9]]


def test_same_padding_conv_on_an_all_zero_image():
    rng = np.random.default_rng(10)
    x = np.zeros((1, 4, 4, 2), np.float32)
    w_q = rng.integers(-127, 128, (3, 3, 3, 2)).astype(np.int8)
    model = one_op("CONV_2D", [Input("x", x.shape), Const(w_q, quant=Quant([0.02], [0])),
                               Const(np.array([0.5, -1, 2], np.float32))],
                   [Output("y", [1, 4, 4, 3])], padding=SAME, strideW=1, strideH=1)
    _, got = check(model, {"x": x}, MODEL)
    np.testing.assert_array_equal(got["y"][0, 0, 0], [0.5, -1, 2])  # only the bias


def symmetric(x: np.ndarray, axes) -> np.ndarray:
    """x quantized to int8 and back by TFLite's SymmetricQuantizeFloats: max|x| / 127."""
    top = np.abs(x).max(tuple(axes), keepdims=True).astype(np.float64)
    scale = np.where(top == 0, 1.0, top / 127)
    return (np.clip(np.round(x / scale), -127, 127) * scale).astype(np.float32)


def test_batch_matmul_with_adjoint_input_quantizes_rows_of_the_product():
    rng = np.random.default_rng(11)
    a = rand(2, 20, 3)
    a[:, :, 1] *= 0.01  # a row of the adjoint (a column as stored) with its own scale
    b_q = rng.integers(-127, 128, (20, 5)).astype(np.int8)
    model = one_op("BATCH_MATMUL", [Input("x", a.shape), Const(b_q, quant=Quant([0.02], [0]))],
                   [Output("y", [2, 3, 5])], adjX=True)
    b = b_q * np.float32(0.02)
    want = run_litert(model, {"x": a})["y"]
    assert close(asymmetric(np.swapaxes(a, 1, 2), [2]) @ b, want)
    assert not close(asymmetric(a, [2]).swapaxes(1, 2) @ b, want)  # not rows as stored
    check(model, {"x": a}, MODEL)


def test_transpose_conv_quantizes_each_image_as_litert():
    rng = np.random.default_rng(12)
    x = rand(2, 3, 3, 2)
    x[1] *= 0.1
    w_q = rng.integers(-127, 128, (2, 3, 3, 2)).astype(np.int8)
    model = one_op("TRANSPOSE_CONV", [Const(np.array([2, 7, 7, 2], np.int32)),
                                      Const(w_q, quant=Quant([0.02], [0])), Input("x", x.shape)],
                   [Output("y", [2, 7, 7, 2])], padding=VALID, strideW=2, strideH=2)
    float_model = one_op("TRANSPOSE_CONV", [Const(np.array([2, 7, 7, 2], np.int32)),
                                            Const(w_q * np.float32(0.02)), Input("x", x.shape)],
                         [Output("y", [2, 7, 7, 2])], padding=VALID, strideW=2, strideH=2)
    want = run_litert(model, {"x": x})["y"]
    # the float twin run on the hand-quantized input is LiteRT's hybrid result
    assert close(run_litert(float_model, {"x": asymmetric(x, [1, 2, 3])})["y"], want)
    float_import_fails(model, {"x": x}, run_litert(float_model, {"x": x})["y"])
    check(model, {"x": x}, MODEL)


@pytest.mark.parametrize("asym", [False, True])
def test_rnn_quantizes_each_step_input_and_state_row(asym):
    rng = np.random.default_rng(13)
    x = rand(2, 4, 6)
    w_q = rng.integers(-127, 128, (5, 6)).astype(np.int8)
    r_q = rng.integers(-127, 128, (5, 5)).astype(np.int8)
    bias = rand(5) * 0.1
    model = one_op("UNIDIRECTIONAL_SEQUENCE_RNN", [
        Input("x", x.shape), Const(w_q, quant=Quant([0.02], [0])),
        Const(r_q, quant=Quant([0.03], [0])), Const(bias), Variable([2, 5])],
        [Output("y", [2, 4, 5])], fusedActivationFunction=TANH, asymmetricQuantizeInputs=asym)
    w, r = w_q * np.float32(0.02), r_q * np.float32(0.03)

    def rnn(quantized):
        h, out = np.zeros((2, 5), np.float32), []
        for t in range(4):
            h = np.tanh(quantized(x[:, t], [1]) @ w.T + quantized(h, [1]) @ r.T + bias)
            out.append(h)
        return np.stack(out, 1)

    want = run_litert(model, {"x": x})["y"]
    assert close(rnn(asymmetric if asym else symmetric), want)
    assert not close(rnn(symmetric if asym else asymmetric), want)
    float_import_fails(model, {"x": x}, rnn(lambda v, axes: v))
    check(model, {"x": x}, MODEL)


@pytest.mark.parametrize("int8_weights", [1, 2])
def test_rnn_with_only_one_int8_weight_is_refused(int8_weights):
    """LiteRT's RNN kernel reads both weights as the input weights' type: a model with one
    int8 and one float weight is malformed."""
    rng = np.random.default_rng(14)
    weights = {k: Const(rand(5, n)) for k, n in ((1, 6), (2, 5))}
    weights[int8_weights] = Const(rng.integers(-127, 128, weights[int8_weights].value.shape)
                                  .astype(np.int8), quant=Quant([0.02], [0]))
    model = one_op("UNIDIRECTIONAL_SEQUENCE_RNN", [
        Input("x", [2, 4, 6]), weights[1], weights[2], Const(rand(5)), Variable([2, 5])],
        [Output("y", [2, 4, 5])], fusedActivationFunction=TANH)
    assert "one of its weights is int8" in refused(model).line()


def _hybrid_lstm(asym: bool, mixed: bool = False, steps: int = 3, activation: int = TANH):
    """An LSTM (batch 2, `steps` steps, input 4, hidden 5) with int8 gate weights, float
    biases, its cell `activation`; `mixed`: one recurrent weight left float."""
    rng = np.random.default_rng(15)
    w_q = {g: rng.integers(-127, 128, (5, 4)).astype(np.int8) for g in "ifco"}
    r_q = {g: rng.integers(-127, 128, (5, 5)).astype(np.int8) for g in "ifco"}
    bias = {g: rand(5) * 0.5 for g in "ifco"}
    recurrent = [Const(r_q[g], quant=Quant([0.03], [0])) for g in "ifco"]
    if mixed:
        recurrent[2] = Const(rand(5, 5))
    inputs = [Input("x", [2, steps, 4]), *[Const(w_q[g], quant=Quant([0.02], [0])) for g in "ifco"],
              *recurrent, None, None, None, *[Const(bias[g]) for g in "ifco"], None, None,
              Variable([2, 5]), Variable([2, 5]), None, None, None, None]
    model = one_op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [Output("y", [2, steps, 5])],
                   fusedActivationFunction=activation, cellClip=0.0, projClip=0.0,
                   timeMajor=False, asymmetricQuantizeInputs=asym)
    return model, w_q, r_q, bias


@pytest.mark.parametrize("asym", [False, True])
def test_lstm_quantizes_each_step_input_and_state_row(asym):
    model, w_q, r_q, bias = _hybrid_lstm(asym)
    x = rand(2, 3, 4)

    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    def lstm(quantized):
        h, c, out = np.zeros((2, 5), np.float32), np.zeros((2, 5), np.float32), []
        for t in range(3):
            xt, ht = quantized(x[:, t], [1]), quantized(h, [1])
            g = {k: xt @ (w_q[k] * np.float32(0.02)).T + ht @ (r_q[k] * np.float32(0.03)).T
                 + bias[k] for k in "ifco"}
            c = sigmoid(g["f"]) * c + sigmoid(g["i"]) * np.tanh(g["c"])
            h = sigmoid(g["o"]) * np.tanh(c)
            out.append(h)
        return np.stack(out, 1)

    want = run_litert(model, {"x": x})["y"]
    assert close(lstm(asymmetric if asym else symmetric), want)
    assert not close(lstm(symmetric if asym else asymmetric), want)
    float_import_fails(model, {"x": x}, lstm(lambda v, axes: v))
    graph, _ = check(model, {"x": x}, MODEL)
    assert "lstm" not in ops_of(graph)  # unrolled, so each step's state can be quantized


def test_lstm_with_some_int8_weights_is_refused():
    model, *_ = _hybrid_lstm(False, mixed=True)
    assert "some of its gate weights are int8" in refused(model).line()


@pytest.mark.parametrize("activation", [RELU, RELU_N1_TO_1, RELU6, SIGN_BIT])
def test_lstm_with_each_unrolled_cell_activation_matches_litert(activation):
    """The cell activations WebNN's lstm does not take, on the int8-weight kernel too."""
    model, *_ = _hybrid_lstm(True, activation=activation)
    check(model, {"x": rand(2, 3, 4) * 8}, MODEL)


@pytest.mark.parametrize("steps", [1, 2])
def test_lstm_of_one_or_two_steps(steps):
    model, *_ = _hybrid_lstm(True, steps=steps)
    graph, _ = check(model, {"x": rand(2, steps, 4)}, MODEL)
    # the gates' weights joined (2), and the steps' outputs when there are several
    assert ops_of(graph).count("concat") == 2 + (steps > 1)


@pytest.mark.parametrize("asym", [False, True])
def test_fully_connected_with_computed_weights_runs_litert_own_kernel(asym):
    """XNNPACK takes constant weights only: with int8 weights fed as an input, LiteRT's own
    kernel quantizes each row symmetrically unless asymmetric_quantize_inputs is set."""
    rng = np.random.default_rng(16)
    x = rand(3, 16)
    w_q = rng.integers(-127, 128, (5, 16)).astype(np.int8)
    model = one_op("FULLY_CONNECTED", [Input("x", x.shape),
                                       Input("w", w_q.shape, "int8", Quant([0.02], [0]))],
                   [Output("y", [3, 5])], asymmetricQuantizeInputs=asym)
    w = w_q * np.float32(0.02)
    feeds = {"x": x, "w": w_q}
    want = run_litert(model, feeds)["y"]
    assert close((asymmetric if asym else symmetric)(x, [1]) @ w.T, want)
    assert not close((symmetric if asym else asymmetric)(x, [1]) @ w.T, want)
    check(model, feeds, MODEL)


@pytest.mark.parametrize("per_channel", [False, True])
def test_conv_2d_with_computed_weights_runs_litert_own_kernel(per_channel):
    """LiteRT's own hybrid CONV_2D: symmetric per image for one filter scale, asymmetric for
    one per channel."""
    rng = np.random.default_rng(17)
    x = rand(2, 5, 5, 3)
    w_q = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    scales = [0.02, 0.01, 0.03, 0.02] if per_channel else [0.02]
    model = one_op("CONV_2D", [Input("x", x.shape),
                               Input("w", w_q.shape, "int8",
                                     Quant(scales, [0] * len(scales), axis=0)),
                               Const(np.zeros(4, np.float32))],
                   [Output("y", [2, 3, 3, 4])], padding=VALID, strideW=1, strideH=1)
    w = w_q * np.array(scales, np.float32).reshape(-1, 1, 1, 1)
    feeds = {"x": x, "w": w_q}
    want = run_litert(model, feeds)["y"]
    quantized = asymmetric if per_channel else symmetric
    assert close(conv_nhwc(quantized(x, [1, 2, 3]), w), want)
    check(model, feeds, MODEL)


def test_batch_matmul_with_a_computed_int8_operand_is_refused():
    model = one_op("BATCH_MATMUL", [Input("x", [2, 3, 16]),
                                    Input("w", [16, 5], "int8", Quant([0.02], [0]))],
                   [Output("y", [2, 3, 5])])
    assert "int8 computed in the graph" in refused(model).line()
