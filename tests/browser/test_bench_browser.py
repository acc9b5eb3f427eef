"""bench/bench_browser.py's page code runs tiny_cnn for one iteration in the real browser and
gives the executor's numbers (no timing is asserted). ORT-web's side runs too where the bench
has installed onnxruntime-web into the cache (the test installs nothing)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import converter
from converter.runtimes.chromium import browser_page

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_browser",
                                                  ROOT / "bench" / "bench_browser.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_page_runs_tiny_cnn_once(browser_limits, tmp_path):
    bench = _bench()
    root = tmp_path / "served"
    root.mkdir()
    spec = {**bench.prepare("tiny_cnn", root), "runs": 1, "warmup": 0}
    dist = None
    try:
        from converter.zoo.fetch import cache_dir

        found = cache_dir() / "bench" / "ort-web" / "node_modules" / "onnxruntime-web" / "dist"
        dist = found if (found / "ort.all.min.mjs").exists() else None
    except ImportError:
        pass
    graph = converter.load(ROOT / "models" / "tiny_cnn.onnx")
    (name, desc), = graph.input_descs().items()
    count = int(np.prod(desc.shape))
    feed = ((np.arange(count) % 251) / np.float32(251)).astype(np.float32).reshape(desc.shape)
    want = next(iter(converter.run(graph, {name: feed}).values())).reshape(-1)[:4]
    page, _ = browser_page(ROOT / "models" / "tiny_cnn.onnx")  # the suite's shared browser
    shared = page.context.browser
    page.close()
    browser = bench.BenchBrowser(root, dist, shared)  # its own server: ORT-web linked, not copied
    try:
        for which in ["benchOurs"] + (["benchOrt"] if dist is not None else []):
            result = browser.run(which, spec)
            assert result["medianMs"] >= 0 and result["setupMs"] > 0
            np.testing.assert_allclose(result["sample"], want, atol=1e-4, rtol=1e-3)
    finally:
        browser.close()
    if dist is None:
        pytest.skip("onnxruntime-web is not in the cache (run bench/bench_browser.py once): "
                    "only our module was run")
