"""`convert --compute float16 --target chromium-litert` in the real browser: Chromium's WebNN
(LiteRT) builds the graphs that compute in float16 between a float32 input and output, and
they compute what ONNX Runtime computes on the float32 source within the float16 bounds
(|got - want| <= 1e-2 + 1e-2 |want|) and with cosine >= 0.9999 over seeded inputs: tiny_cnn
and the onnx package's light squeezenet (seeded weights); a constant stored once for float16
and float32 readers computes what two copies did, bit for bit."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort

import converter
from converter.errors import ConverterError
from converter.runtimes.chromium import run_chromium_many
from converter.testing.light_models import light_model

SEEDS = (0, 1)


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_float16_compute_builds_and_runs_in_chromium(browser_limits, tmp_path):
    sources = [Path(__file__).parents[2] / "models" / "tiny_cnn.onnx",
               light_model("squeezenet", tmp_path, seed=0)]
    jobs, wants = [], []
    for source in sources:
        converter.convert(source, tmp_path / f"{source.stem}.webnn", target="chromium-litert",
                          compute="float16")
        graph = converter.load(tmp_path / f"{source.stem}.webnn")  # as the file holds it
        halves = [op for op in graph.operations if op.op_type == "conv2d"]
        assert halves and all(op.output.data_type == "float16" for op in halves)
        session = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        for seed in SEEDS:
            rng = np.random.default_rng(seed)
            feeds = {n: rng.random(o.shape, dtype=np.float32) for n, o in graph.inputs.items()}
            jobs.append((graph, feeds))
            wants.append((source.stem, seed, dict(zip(names, session.run(None, feeds)))))
    results = run_chromium_many(jobs)
    for got, (stem, seed, want) in zip(results, wants):
        assert not isinstance(got, ConverterError), got.line()
        for out in want:
            assert got[out].dtype == np.float32
            assert np.all(np.abs(got[out] - want[out]) <= 1e-2 + 1e-2 * np.abs(want[out])), \
                (stem, seed, out)
            assert _cosine(got[out], want[out]) >= 0.9999, (stem, seed, out)


def test_a_constant_stored_once_computes_what_two_copies_did(browser_limits, tmp_path):
    """A constant a float32 layerNormalization and a float16 add both read, stored once as
    float32 and cast for the add: Chromium's WebNN gives bit for bit what the graph storing a
    float16 copy beside it gives (the cast rounds as storing it as float16 did)."""
    from tests.passes.test_float16_compute_shared import _shared

    source = _shared(tmp_path)
    once = converter.convert(source, target="chromium-litert", compute="float16")
    twice = converter.convert(source, target="chromium-litert", compute="float16")
    cast = next(op for op in twice.operations
                if op.op_type == "cast" and op.inputs[0].name == "g")
    copy = twice.add_constant("g_copy", np.asarray(twice.constants["g"].constant.numpy(),
                                                   np.float16))
    cast.output.replace_all_uses_with(copy)
    twice.remove_operation(cast)
    assert {c.name for c in once.constants.values()} == {"w", "g"}
    rng = np.random.default_rng(3)
    feeds = {"x": rng.standard_normal((4, 64)).astype(np.float32)}
    got_once, got_twice = run_chromium_many([(once, feeds), (twice, feeds)])
    assert np.array_equal(got_once["y"], got_twice["y"])
