"""A dynamic-quantized LSTM over 80 steps and 3 layers (issue 31): ORT's `quantize_dynamic`
turns each LSTM into com.microsoft DynamicQuantizeLSTM, which quantizes its input and, every
step, its hidden state at run time. The graph computes that math: it is checked against a
float64 evaluation of the op written here from ORT's kernel (uni_directional_lstm.cc,
rnn_helpers.cc: uint8 over [min(x, 0), max(x, 0)], zero point rounded half to even, the
integer product scaled by input scale x weight scale). ORT drifts from it where float32 puts a
value within its error of a rounding tie and the recurrence carries the other rounding; verify
judges that by the float64 oracle and what the rounding moves (ORT with float LSTMs)."""
from __future__ import annotations

import logging

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as nh

from converter.importers.onnx import import_model
from converter.runtimes.execute import run
from converter.runtimes.quantized_lstm import FLOAT_LSTM_LABEL
from converter.runtimes.source_runs import dynamic_lstm_nodes, run_onnx
from converter.verification.core import verify

STEPS, LAYERS, HIDDEN, FEATURES = 80, 3, 256, 64


def stacked_lstm(path, *, steps=STEPS, layers=LAYERS, hidden=HIDDEN, gain=6.0, seed=0):
    """`layers` float LSTMs, each output [steps, 1, 1, hidden] reshaped to the next one's
    input, weights uniform in +-gain / sqrt(hidden) (saturating gates, as trained ones do),
    quantized by ORT's quantize_dynamic into `path`."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    rng = np.random.default_rng(seed)
    nodes, inits, x, size = [], [], "x", FEATURES
    bound = gain / np.sqrt(hidden)
    for n in range(layers):
        for name, shape in ((f"W{n}", (1, 4 * hidden, size)), (f"R{n}", (1, 4 * hidden, hidden)),
                            (f"B{n}", (1, 8 * hidden))):
            inits.append(nh.from_array(rng.uniform(-bound, bound, shape).astype(np.float32),
                                       name))
        inits.append(nh.from_array(np.array([0, 0, -1], np.int64), f"to{n}"))
        nodes += [H.make_node("LSTM", [x, f"W{n}", f"R{n}", f"B{n}"], [f"Y{n}"],
                              hidden_size=hidden),
                  H.make_node("Reshape", [f"Y{n}", f"to{n}"], [f"X{n + 1}"])]
        x, size = f"X{n + 1}", hidden
    graph = H.make_graph(nodes, "stack", [H.make_tensor_value_info("x", TP.FLOAT,
                                                                   [steps, 1, FEATURES])],
                         [H.make_tensor_value_info(x, TP.FLOAT, None)], inits)
    float_path = path.with_name("float_" + path.name)
    onnx.save(H.make_model(graph, opset_imports=[H.make_opsetid("", 17)], ir_version=9),
              float_path)
    logging.getLogger().setLevel(logging.ERROR)  # its "consider pre-processing" advice
    quantize_dynamic(str(float_path), str(path), op_types_to_quantize=["LSTM"],
                     weight_type=QuantType.QInt8)
    return x


# -- DynamicQuantizeLSTM in float64, from ORT's kernel ------------------------------------------
def _quantized_rows(a, w_int, w_scale):
    """a [M, K] quantized as one block, times integer weights [K, N], scaled back. The op's
    quantization parameters and quantized values are float32 values (a is the float32 tensor
    ORT holds): they are computed so; the rest in float64."""
    a = a.astype(np.float32)
    low, high = min(a.min(), np.float32(0)), max(a.max(), np.float32(0))
    scale = np.float32(1) if high == low else (high - low) / np.float32(255)
    zero = np.round(np.clip(-low / scale, 0, 255))  # half to even
    q = np.clip(np.round(a / scale) + zero, 0, 255).astype(np.float64) - zero
    return (q @ w_int) * (np.float64(scale) * w_scale)


def _dynamic_lstm_f64(x, weights, node):
    """One forward DynamicQuantizeLSTM with per-tensor scales and no initial state, batch 1
    (ORT quantizes a single row's hidden state on its own whatever its threads)."""
    name = list(node.input)
    w = weights[name[1]][0].astype(np.float64) - weights[name[9]][0]
    r = weights[name[2]][0].astype(np.float64) - weights[name[11]][0]
    bias = weights[name[3]][0].astype(np.float64)
    bias = bias[: bias.size // 2] + bias[bias.size // 2:]
    steps, _, size = x.shape
    hidden = r.shape[0]
    xw = _quantized_rows(x.reshape(steps, size), w, float(weights[name[8]][0]))
    h, c, out = np.zeros((1, hidden)), np.zeros((1, hidden)), []
    for t in range(steps):
        gates = xw[t] + _quantized_rows(h, r, float(weights[name[10]][0])) + bias
        i, o, f, g = np.split(gates, 4, axis=1)
        sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        out.append(h)
    return np.stack(out)  # [steps, 1, hidden]: Y's [steps, 1, 1, hidden] reshaped


def _stack_f64(path, x):
    model = onnx.load(str(path))
    weights = {t.name: nh.to_array(t) for t in model.graph.initializer}
    lstms = [n for n in model.graph.node if n.op_type == "DynamicQuantizeLSTM"]
    value = x.astype(np.float64)
    for node in lstms:
        value = _dynamic_lstm_f64(value, weights, node)
    return value


def test_80_steps_3_layers_verify_against_the_quantized_math(tmp_path):
    path = tmp_path / "lstm_q8.onnx"
    out = stacked_lstm(path)
    assert dynamic_lstm_nodes(path) == LAYERS  # quantize_dynamic made each a DynamicQuantizeLSTM
    report = verify(path, seed=0)
    assert report.passed, str(report)
    x = np.random.default_rng(0).random((STEPS, 1, FEATURES)).astype(np.float32)  # verify's
    by_hand = _stack_f64(path, x)
    ours = report.outputs[0]
    # Both ORT and the graph compute the op's math; float32 puts some value within its error
    # of a rounding tie, one of the two rounds it the other way than the float64 evaluation
    # (which one is float32's luck), and the later steps and layers carry that: far beyond
    # float32's budget, within what the rounding moves.
    assert ours.extra["webnnVsF64"] < 1e-5  # the graph's float32 run is its own math
    theirs = run_onnx(path, {"x": x})[out]
    mine = run(import_model(onnx.load(str(path))), {"x": x})[out]
    apart = sorted(float(np.abs(v - by_hand).max()) for v in (theirs, mine))
    assert apart[0] < 1e-5 and 1e-2 < apart[1] <= ours.extra["sourceNoise"]
    assert ours.extra["sourceNoiseFrom"] == FLOAT_LSTM_LABEL
    assert ours.extra["sourceVsF64"] <= 2 * ours.extra["sourceNoise"]
    assert "3 DynamicQuantizeLSTM nodes" in str(report)


def test_onnx_runtime_and_the_graph_are_the_float64_evaluation_before_a_tie(tmp_path):
    """The by-hand evaluation checked on ORT itself, and the graph on it, where no rounding
    tie is near: one layer over 20 steps with weights that do not saturate, to float32's
    error."""
    path = tmp_path / "short.onnx"
    out = stacked_lstm(path, steps=20, layers=1, gain=1.0)
    x = np.random.default_rng(3).random((20, 1, FEATURES)).astype(np.float32)
    by_hand = _stack_f64(path, x)
    np.testing.assert_allclose(run_onnx(path, {"x": x})[out], by_hand, atol=1e-5)
    graph = import_model(onnx.load(str(path)))
    np.testing.assert_allclose(run(graph, {"x": x})[out], by_hand, atol=1e-5)


@pytest.mark.parametrize("direction, per_column", [("forward", False), ("bidirectional", True)])
def test_float_lstm_copy_is_the_lstm_on_dequantized_weights(tmp_path, direction, per_column):
    """The noise run's model: each DynamicQuantizeLSTM an ONNX LSTM on (w - zero) * scale,
    transposed to ONNX's layout, with the bias and initial states it had."""
    rng = np.random.default_rng(5)
    dirs, steps, batch, size, hidden = 1 + (direction == "bidirectional"), 5, 2, 6, 4
    shape = (dirs, 4 * hidden) if per_column else (dirs,)
    w = rng.integers(-128, 128, (dirs, size, 4 * hidden)).astype(np.int8)
    r = rng.integers(-128, 128, (dirs, hidden, 4 * hidden)).astype(np.int8)
    ws, rs = (rng.random(shape) * 0.02).astype(np.float32), (rng.random(shape) * 0.02
                                                             ).astype(np.float32)
    wz = rz = np.zeros(shape, np.int8)  # ORT refuses other weight zero points
    b = (rng.standard_normal((dirs, 8 * hidden)) * 0.1).astype(np.float32)
    h0 = rng.standard_normal((dirs, batch, hidden)).astype(np.float32)
    x = rng.standard_normal((steps, batch, size)).astype(np.float32)
    inits = {"W": w, "R": r, "B": b, "h0": h0, "ws": ws, "wz": wz, "rs": rs, "rz": rz}
    node = H.make_node("DynamicQuantizeLSTM",
                       ["x", "W", "R", "B", "", "h0", "", "", "ws", "wz", "rs", "rz"],
                       ["y", "yh"], domain="com.microsoft", hidden_size=hidden,
                       direction=direction)
    io = ([H.make_tensor_value_info("x", TP.FLOAT, x.shape)],
          [H.make_tensor_value_info(n, TP.FLOAT, None) for n in ("y", "yh")])
    graph = H.make_graph([node], "q", *io, [nh.from_array(v, k) for k, v in inits.items()])
    path = tmp_path / "q.onnx"
    onnx.save(H.make_model(graph, opset_imports=[H.make_opsetid("", 17),
                                                 H.make_opsetid("com.microsoft", 1)]), path)

    def dequantized(q, scale, zero):  # [dirs, in, 4H] -> ONNX's [dirs, 4H, in]
        per = (dirs, 1, 4 * hidden) if per_column else (dirs, 1, 1)
        value = (q.astype(np.float32) - zero.reshape(per)) * scale.reshape(per)
        return value.transpose(0, 2, 1)

    floats = {"W": dequantized(w, ws, wz), "R": dequantized(r, rs, rz), "B": b, "h0": h0}
    plain = H.make_graph([H.make_node("LSTM", ["x", "W", "R", "B", "", "h0"], ["y", "yh"],
                                      hidden_size=hidden, direction=direction)], "f", *io,
                         [nh.from_array(v, k) for k, v in floats.items()])
    plain_path = tmp_path / "f.onnx"
    onnx.save(H.make_model(plain, opset_imports=[H.make_opsetid("", 17)]), plain_path)
    got = run_onnx(path, {"x": x}, float_lstm=True)
    want = run_onnx(plain_path, {"x": x})
    for name in ("y", "yh"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)
    quantized = run_onnx(path, {"x": x})["y"]
    assert np.abs(quantized - want["y"]).max() > 1e-4  # the copy is not the quantized run
