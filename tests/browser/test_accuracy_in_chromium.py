"""`verify --weights float16 --runtime chromium --target chromium-litert`: the accuracy report of
the compressed graph as the browser runs it (every sample in one page visit), against the float
source on ONNX Runtime; its figures equal numpy's on the same two sets of outputs."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

import converter
from cli.main import main
from converter.runtimes.chromium import run_chromium_many
from converter.runtimes.source_runs import run_source
from converter.verification.core import make_inputs

TINY = Path(__file__).parents[2] / "models" / "tiny_cnn.onnx"


def test_the_accuracy_report_runs_the_compressed_graph_in_chromium(browser_limits):
    r = CliRunner().invoke(main, ["verify", str(TINY), "--weights", "float16", "--runtime",
                                  "chromium", "--target", "chromium-litert", "--samples", "4",
                                  "--json"])
    assert r.exit_code == 0, r.output
    acc = json.loads(r.stdout)["accuracy"]
    assert acc["graphRuntime"] == "chromium" and acc["sourceRuntime"] == "onnxruntime"
    assert acc["samples"] == 4 and acc["weightsBytes"]["ratio"] < 0.55
    graph = converter.convert(TINY, target="chromium-litert", weights="float16")
    feeds = [make_inputs(graph, i)[0] for i in range(4)]
    got = [g["probabilities"] for g in run_chromium_many([(graph, f) for f in feeds])]
    want = [run_source(TINY, f)["probabilities"] for f in feeds]
    g, w = np.stack(got).astype(np.float64), np.stack(want).astype(np.float64)
    (out,) = acc["outputs"]
    assert out["maxAbs"] == np.abs(g - w).max()  # the browser computes the same each time
    cosines = [a.ravel() @ b.ravel() / np.linalg.norm(a) / np.linalg.norm(b) for a, b in zip(g, w)]
    assert abs(out["cosine"] - min(cosines)) < 1e-12 and out["cosine"] >= 0.9999
    assert out["top1"] == np.mean(g.argmax(-1) == w.argmax(-1)) == 1.0
