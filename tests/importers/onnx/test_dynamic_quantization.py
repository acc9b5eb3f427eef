"""Dynamic quantization (the activation's scale and zero point computed in the graph at run
time): DynamicQuantizeLinear feeding MatMulInteger, and ONNX Runtime's contrib ops
DynamicQuantizeMatMul, MatMulIntegerToFloat and DynamicQuantizeLSTM, each compared with ONNX
Runtime running the source model."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from .helpers import imported, ops_of, ort_outputs

F32, I32 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT32
RNG = np.random.default_rng(11)


def _model(nodes, inputs, outputs, inits, ms=False):
    graph = helper.make_graph(nodes, "dq", inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    opsets = [helper.make_opsetid("", 13)] + ([helper.make_opsetid("com.microsoft", 1)]
                                              if ms else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=9)


@pytest.mark.parametrize("k, parts", [(64, 1), (1024, 4)])
def test_dynamic_quantize_linear_into_matmul_integer_is_exact(k, parts):
    """The activation's zero point is a run-time value, so only uint8's range bounds the
    sums: a long K is summed in parts that each stay exact in float32."""
    a = RNG.standard_normal((3, k)).astype(np.float32)
    b = RNG.integers(-128, 128, (k, 5)).astype(np.int8)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["a"], ["aq", "as", "az"]),
             helper.make_node("MatMulInteger", ["aq", "b", "az"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("a", F32, a.shape)],
                   [helper.make_tensor_value_info("y", I32, None)], {"b": b})
    graph, (y,) = imported(model, {"a": a})
    np.testing.assert_array_equal(y, ort_outputs(model, {"a": a})[0])
    assert ops_of(graph).count("matmul") == parts


@pytest.mark.parametrize("per_column", [False, True])
def test_dynamic_quantize_matmul_matches_onnx_runtime(per_column):
    a = RNG.standard_normal((2, 3, 16)).astype(np.float32)
    b = RNG.integers(0, 256, (16, 6)).astype(np.uint8)
    scale = (np.abs(RNG.standard_normal(6 if per_column else 1)) * 0.01).astype(np.float32)
    inits = {"b": b, "s": scale, "z": np.full(scale.shape, 128, np.uint8),
             "bias": RNG.standard_normal(6).astype(np.float32)}
    node = helper.make_node("DynamicQuantizeMatMul", ["a", "b", "s", "z", "bias"], ["y"],
                            domain="com.microsoft")
    model = _model([node], [helper.make_tensor_value_info("a", F32, a.shape)],
                   [helper.make_tensor_value_info("y", F32, None)], inits, ms=True)
    _, (y,) = imported(model, {"a": a})
    np.testing.assert_allclose(y, ort_outputs(model, {"a": a})[0], rtol=1e-6, atol=1e-6)


def test_matmul_integer_to_float_matches_onnx_runtime():
    a = RNG.integers(0, 256, (4, 8)).astype(np.uint8)
    b = RNG.integers(-128, 128, (8, 3)).astype(np.int8)
    inits = {"b": b, "as": np.array(0.02, np.float32),
             "bs": np.array([0.01, 0.03, 0.005], np.float32), "az": np.array(100, np.uint8),
             "bz": np.array([0, 3, -2], np.int8), "bias": np.array([1, -1, 0.5], np.float32)}
    node = helper.make_node("MatMulIntegerToFloat", ["a", "b", "as", "bs", "az", "bz", "bias"],
                            ["y"], domain="com.microsoft")
    model = _model([node], [helper.make_tensor_value_info("a", onnx.TensorProto.UINT8, a.shape)],
                   [helper.make_tensor_value_info("y", F32, None)], inits, ms=True)
    _, (y,) = imported(model, {"a": a})
    want = ((a.astype(np.int64) - 100) @ (b.astype(np.int64) - inits["bz"])) \
        * 0.02 * inits["bs"] + inits["bias"]
    np.testing.assert_allclose(y, want, rtol=1e-5)
    np.testing.assert_allclose(y, ort_outputs(model, {"a": a})[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("direction, per_column", [("forward", False), ("reverse", True),
                                                   ("bidirectional", True)])
def test_dynamic_quantize_lstm_matches_onnx_runtime(direction, per_column):
    steps, batch, size, hidden = 4, 3, 5, 4
    dirs = 2 if direction == "bidirectional" else 1
    x = RNG.standard_normal((steps, batch, size)).astype(np.float32)
    shape = (dirs, 4 * hidden) if per_column else (dirs,)
    inits = {"W": RNG.integers(-128, 128, (dirs, size, 4 * hidden)).astype(np.int8),
             "R": RNG.integers(-128, 128, (dirs, hidden, 4 * hidden)).astype(np.int8),
             "B": (RNG.standard_normal((dirs, 8 * hidden)) * 0.1).astype(np.float32),
             "h0": (RNG.standard_normal((dirs, batch, hidden)) * 0.5).astype(np.float32),
             "c0": (RNG.standard_normal((dirs, batch, hidden)) * 0.5).astype(np.float32),
             "ws": (np.abs(RNG.standard_normal(shape)) * 0.01).astype(np.float32),
             "wz": np.zeros(shape, np.int8),
             "rs": (np.abs(RNG.standard_normal(shape)) * 0.01).astype(np.float32),
             "rz": np.zeros(shape, np.int8)}
    node = helper.make_node("DynamicQuantizeLSTM",
                            ["x", "W", "R", "B", "", "h0", "c0", "", "ws", "wz", "rs", "rz"],
                            ["y", "yh", "yc"], domain="com.microsoft", hidden_size=hidden,
                            direction=direction)
    model = _model([node], [helper.make_tensor_value_info("x", F32, x.shape)],
                   [helper.make_tensor_value_info(n, F32, None) for n in ("y", "yh", "yc")],
                   inits, ms=True)
    _, got = imported(model, {"x": x})
    # ONNX Runtime quantizes the hidden state of the rows each thread computes together, so
    # its own numbers depend on its thread count; with a thread per batch row, each row on
    # its own, as imported.
    options = ort.SessionOptions()
    options.intra_op_num_threads = batch
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    for have, want in zip(got, session.run(None, {"x": x})):
        assert have.shape == want.shape
        np.testing.assert_allclose(have, want, atol=1e-6)


def _quantized_lstm(steps, batch, size, hidden):
    """One forward DynamicQuantizeLSTM with int8 weights scaled per tensor, h0 and c0 given."""
    inits = {"W": RNG.integers(-128, 128, (1, size, 4 * hidden)).astype(np.int8),
             "R": RNG.integers(-128, 128, (1, hidden, 4 * hidden)).astype(np.int8),
             "h0": RNG.standard_normal((1, batch, hidden)).astype(np.float32),
             "c0": RNG.standard_normal((1, batch, hidden)).astype(np.float32),
             "ws": np.array([0.02], np.float32), "wz": np.zeros(1, np.int8),
             "rs": np.array([3 / hidden], np.float32), "rz": np.zeros(1, np.int8)}
    node = helper.make_node("DynamicQuantizeLSTM",
                            ["x", "W", "R", "", "", "h0", "c0", "", "ws", "wz", "rs", "rz"],
                            ["y", "yh", "yc"], domain="com.microsoft", hidden_size=hidden)
    return _model([node], [helper.make_tensor_value_info("x", F32, (steps, batch, size))],
                  [helper.make_tensor_value_info(n, F32, None) for n in ("y", "yh", "yc")],
                  inits, ms=True)


@pytest.mark.parametrize("batch, hidden, threads", [
    (3, 288, (1, 2, 3)),   # at most 4 rows, hidden over 256: one thread's, rows together
    (2, 257, (1, 2)),
    (3, 256, (3,)),        # hidden 256: the rows split over the threads, one a thread here
    (5, 288, (5,))])       # over 4 rows: split likewise
def test_dynamic_quantize_lstm_groups_hidden_rows_as_onnx_runtime(batch, hidden, threads):
    """Which rows of the hidden state ORT quantizes with one scale: for a batch of at most 4
    rows and hidden_size over 256 all of them, whatever its thread count (uni_directional_lstm
    runs it on one thread); otherwise the rows each thread computes, one row each with a
    thread per row, as imported."""
    steps, size = 3, 8
    model = _quantized_lstm(steps, batch, size, hidden)
    x = RNG.standard_normal((steps, batch, size)).astype(np.float32)
    _, got = imported(model, {"x": x})
    for count in threads:
        options = ort.SessionOptions()
        options.intra_op_num_threads = count
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        for have, want in zip(got, session.run(None, {"x": x})):
            np.testing.assert_allclose(have, want, atol=2e-6, err_msg=f"{count} threads")
