"""`--weights int8|int4` on whole models and on every built-in target: what each target stores
(int4 kept where its dequantizeLinear takes int4, else widened exactly), the graph still fits
the target, the weights file shrinks, and the outputs stay within a stated error of ONNX
Runtime on the float source: tiny_cnn and the light squeezenet (int8), the tiny Llama decoder
(int8, int4; int4 as close to float as onnxruntime's own 4-bit quantizer gets)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import converter
from converter.lowering.onnx.executor import run_on_ort
from converter.ops.builder import GraphBuilder
from converter.targets.pipeline import convert_for_target

ROOT = Path(__file__).parents[2]
LLAMA = ROOT / "models" / "optimum-tiny" / "llama"
TARGETS = ("chromium-litert", "coreml", "directml", "onnxruntime", "portable")
# The type int4 weights are stored as on each target: its dequantizeLinear's input types
# (chromium-litert and onnxruntime take int4; the others int8 and uint8, not 4-bit).
INT4_STORED = {"chromium-litert": "int4", "onnxruntime": "int4", "coreml": "int8",
               "directml": "int8", "portable": "int8"}


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _conv_and_matmul():
    rng = np.random.default_rng(5)
    b = GraphBuilder("g")
    x = b.input("x", "float32", [1, 8, 6, 6])
    f = b.constant(rng.standard_normal((16, 8, 3, 3)).astype(np.float32), name="filter")
    flat = b.reshape(b.relu(b.conv2d(x, f)), [4, 64])
    fc = b.constant(rng.standard_normal((64, 32)).astype(np.float32), name="fc")
    graph = b.build({"y": b.matmul(flat, fc)})
    return graph, {"x": rng.standard_normal((1, 8, 6, 6)).astype(np.float32)}


@pytest.mark.parametrize("weights", ["int8", "int4"])
@pytest.mark.parametrize("target", TARGETS)
def test_each_target_stores_the_type_its_dequantize_takes(target, weights):
    graph, feeds = _conv_and_matmul()
    want = run_on_ort(graph, feeds)["y"]
    fc = graph.operand("fc").constant.numpy().copy()
    report = convert_for_target(graph, target, weights=weights)  # raises on a violation
    assert report.passed
    stored = {op.inputs[0].name: op.inputs[0].data_type for op in graph.operations
              if op.op_type == "dequantizeLinear"}
    expected = INT4_STORED[target] if weights == "int4" else "int8"
    assert stored.get(f"fc_{expected}") == expected, stored
    # int4 leaves the convolution float32; int8 quantizes its filter too
    # (on chromium-litert the filter is quantized in the ohwi layout the layout pass gave it)
    assert any(n.startswith("filter") for n in stored) == (weights == "int8"), stored
    dq = next(op for op in graph.operations
              if op.op_type == "dequantizeLinear" and op.inputs[0].name == f"fc_{expected}")
    q, scale, zero = dq.inputs
    if expected == "int8" and weights == "int4":  # widened exactly: the int4 values as int8
        assert q.constant.numpy().min() >= -8 and q.constant.numpy().max() <= 7
    def blockwise(x):  # each scale (zero point) repeated over its block of rows
        return np.repeat(x.constant.numpy(), fc.shape[0] // x.shape[0], axis=0)

    values = (q.constant.numpy().astype(np.float32) - blockwise(zero)) * blockwise(scale)
    assert np.abs(values - fc).max() <= np.abs(fc).max() / {"int8": 254, "int4": 14}[weights] \
        * 1.0001
    got = run_on_ort(graph, feeds)["y"]
    assert _cosine(got, want) >= {"int8": 0.9995, "int4": 0.99}[weights]


@pytest.mark.parametrize("name", ["tiny_cnn", "squeezenet"])
def test_int8_classifiers_shrink_and_agree_with_the_float_source(name, tmp_path):
    """The weights file: squeezenet <= 0.27x of float32's (tiny_cnn, whose biases weigh more,
    <= 0.31x); over three seeded inputs, cosine >= 0.9999 and the same top-1 class as ONNX
    Runtime on the float source, for the graph read back from its file."""
    if name == "tiny_cnn":
        source = ROOT / "models" / "tiny_cnn.onnx"
    else:
        from converter.testing.light_models import light_model

        source = light_model(name, tmp_path, seed=0)
    converter.convert(source, tmp_path / "f32.webnn")
    converter.convert(source, tmp_path / "q.webnn", weights="int8")
    ratio = (tmp_path / "q.weights").stat().st_size / (tmp_path / "f32.weights").stat().st_size
    assert ratio <= {"tiny_cnn": 0.31, "squeezenet": 0.27}[name], ratio
    loaded = converter.load(tmp_path / "q.webnn")
    assert {c.data_type for c in loaded.constants.values()} >= {"int8"}
    session = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    for seed in (0, 1, 2):
        rng = np.random.default_rng(seed)
        feeds = {n: rng.random(o.shape, dtype=np.float32) for n, o in loaded.inputs.items()}
        want = dict(zip(names, session.run(None, feeds)))
        got = converter.run(loaded, feeds)
        for out in names:
            assert _cosine(got[out], want[out]) >= 0.9999, (name, seed, out)
            assert got[out].reshape(-1).argmax() == want[out].reshape(-1).argmax()


def _decoder_feeds(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"input_ids": rng.integers(0, 96, (1, 8)).astype(np.int64),
            "attention_mask": np.ones((1, 8), np.int64),
            "position_ids": np.arange(8, dtype=np.int64)[None]}


def test_tiny_decoder_int4_is_as_close_as_onnxruntimes_own_4bit_quantizer(tmp_path):
    """The tiny Llama (random weights, hidden 32): int8 logits have cosine >= 0.999 with the
    float source; int4 (blocks of 32) keeps its matmul weights 6.4x smaller, scales counted,
    and its logits are within 0.02 cosine of what onnxruntime's MatMulNBitsQuantizer (block
    32, symmetric: decoder_model_q4.onnx) gives on the same inputs."""
    source = LLAMA / "decoder_model.onnx"
    dims = {"batch_size": 1, "sequence_length": 8}
    float_session = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    q4_session = ort.InferenceSession(str(LLAMA / "decoder_model_q4.onnx"),
                                      providers=["CPUExecutionProvider"])
    graphs = {w: converter.convert(source, tmp_path / f"{w}.webnn", weights=w, dims=dims)
              for w in ("int8", "int4")}
    stored = [op.inputs[0] for op in graphs["int4"].operations
              if op.op_type == "dequantizeLinear"]
    assert len(stored) == 15 and {q.data_type for q in stored} == {"int4"}
    for seed in (0, 1):
        feeds = _decoder_feeds(seed)
        want = float_session.run(["logits"], feeds)[0]
        theirs = _cosine(q4_session.run(["logits"], feeds)[0], want)
        assert _cosine(converter.run(graphs["int8"], feeds)["logits"], want) >= 0.999
        ours = _cosine(converter.run(graphs["int4"], feeds)["logits"], want)
        assert ours >= theirs - 0.02, (seed, ours, theirs)
