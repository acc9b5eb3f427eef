"""`convert --weights int8|int4 --target chromium-litert` in the real browser: Chromium's WebNN
(LiteRT) builds graphs whose weights are int8 per-channel (conv2d, convTranspose2d, gemm) and
int4 blockwise (matmul) constants read through dequantizeLinear, and computes what ONNX Runtime
computes on the same graph (within the float32 policy: the dequantized weights are exact, only
the ops' own rounding differs), and close to the float source: tiny_cnn and the light
squeezenet (int8, cosine >= 0.9999 and the same top-1 class), the tiny Llama decoder (int8 and
int4 logits)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort

import converter
from converter.errors import ConverterError
from converter.ops.builder import GraphBuilder
from converter.runtimes.chromium import run_chromium_many
from converter.targets.pipeline import convert_for_target
from converter.testing.light_models import light_model

ROOT = Path(__file__).parents[2]
LLAMA = ROOT / "models" / "optimum-tiny" / "llama" / "decoder_model.onnx"


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _feeds(graph, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, x in graph.inputs.items():
        if x.data_type.startswith("float"):
            feeds[name] = rng.random(x.shape, dtype=np.float32)
        elif name == "input_ids":
            feeds[name] = rng.integers(0, 96, x.shape).astype(x.data_type)
        elif name == "position_ids":
            feeds[name] = np.broadcast_to(np.arange(x.shape[-1]), x.shape).astype(x.data_type)
        else:
            feeds[name] = np.ones(x.shape, x.data_type)
    return feeds


def _every_weight_kind():
    """conv2d, convTranspose2d, gemm with transposed b (int8) and matmul (int4) in one graph."""
    rng = np.random.default_rng(9)
    b = GraphBuilder("kinds")
    x = b.input("x", "float32", [1, 8, 6, 6])

    def weight(shape, name):
        value = rng.standard_normal(shape) / np.sqrt(shape[1])
        return b.constant(value.astype(np.float32), name=name)

    y = b.relu(b.conv2d(x, weight((16, 8, 3, 3), "conv_w")))  # [1, 16, 4, 4]
    y = b.convTranspose2d(y, weight((16, 8, 3, 3), "deconv_w"))  # [1, 8, 6, 6]
    flat = b.reshape(y, [4, 72])
    g = b.gemm(flat, weight((64, 72), "gemm_w"), bTranspose=True)  # [4, 64]
    return b.build({"y": b.matmul(g, weight((64, 32), "matmul_w"))})


def test_integer_weights_build_and_run_in_chromium(browser_limits, tmp_path):
    jobs, wants = [], []
    for weights in ("int8", "int4"):  # int4: the matmul only; int8 every kind
        graph = _every_weight_kind()
        plain = _every_weight_kind()
        convert_for_target(graph, "chromium-litert", weights=weights)
        stored = {op.inputs[0].data_type for op in graph.operations
                  if op.op_type == "dequantizeLinear"}
        assert stored == {weights}, stored
        feeds = _feeds(graph, 0)
        jobs.append((graph, feeds))
        wants.append(("kinds", weights, converter.run(graph, feeds), converter.run(plain, feeds),
                      0.9999 if weights == "int8" else 0.99))
    for name, source, weights, dims, floor in (
            ("tiny_cnn", ROOT / "models" / "tiny_cnn.onnx", "int8", None, 0.9999),
            ("squeezenet", light_model("squeezenet", tmp_path, seed=0), "int8", None, 0.9999),
            ("llama", LLAMA, "int8", {"batch_size": 1, "sequence_length": 8}, 0.999),
            ("llama", LLAMA, "int4", {"batch_size": 1, "sequence_length": 8}, 0.9)):
        out = tmp_path / f"{name}_{weights}.webnn"
        converter.convert(source, out, target="chromium-litert", weights=weights, dims=dims)
        graph = converter.load(out)  # as the file holds it
        session = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()][:1]
        for seed in (0, 1):
            feeds = _feeds(graph, seed)
            source_feeds = {k: v.astype(np.int64) if v.dtype.kind == "i" else v
                            for k, v in feeds.items()}
            jobs.append((graph, feeds))
            wants.append((name, weights, converter.run(graph, feeds),
                          dict(zip(names, session.run(names, source_feeds))), floor))
    results = run_chromium_many(jobs)
    for got, (name, weights, on_ort, source, floor) in zip(results, wants):
        assert not isinstance(got, ConverterError), got.line()
        for out, want in source.items():
            # the browser computes what ONNX Runtime computes on the same quantized graph ...
            assert _cosine(got[out], on_ort[out]) >= 0.99999, (name, weights, out)
            # ... which is close to the float source
            assert _cosine(got[out], want) >= floor, (name, weights, out)
            if name in ("tiny_cnn", "squeezenet"):
                assert got[out].argmax() == want.argmax(), (name, out)
