"""bench/bench_decode.py's page decodes the tiny Llama once in the real browser through our
module and gives the tokens ONNX Runtime gives on the source (no timing is asserted). ORT-web's
side runs too where the bench has installed onnxruntime-web into the cache (the test installs
nothing)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from converter.state.generation import generate_on_onnxruntime
from converter.runtimes.chromium import browser_page
from converter.testing import decoding

ROOT = Path(__file__).resolve().parents[2]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not decoding.source("fp32").exists(), reason="models/tiny-llama/ is not here")
def test_bench_page_decodes_the_tiny_llama_once(browser_limits, tmp_path):
    bench, bench_browser = _load("bench_decode"), _load("bench_browser")
    root = tmp_path / "served"
    root.mkdir()
    spec = {**bench.prepare("fp32", root), "runs": 1, "warmup": 0}
    from converter.zoo.fetch import cache_dir

    found = cache_dir() / "bench" / "ort-web" / "node_modules" / "onnxruntime-web" / "dist"
    dist = found if (found / "ort.all.min.mjs").exists() else None
    want = generate_on_onnxruntime(decoding.source("fp32"), decoding.PROMPT,
                                             decoding.NEW_TOKENS).tokens
    page, _ = browser_page(ROOT / "models" / "tiny_cnn.onnx")  # the suite's shared browser
    shared = page.context.browser
    page.close()
    browser = bench_browser.BenchBrowser(root, dist, shared, script=ROOT / "bench" /
                                         "bench_decode.js")
    runs = [("decodeOurs", {})]
    if dist is not None:
        runs += [("decodeOrt", {}), ("decodeOrt", {"keepCaches": True})]
    try:
        for which, extra in runs:
            result = browser.run(which, {**spec, **extra})
            assert result["tokens"] == want, which
            assert result["decodeTokens"] == 31 and result["tokensPerSecond"] > 0
            assert result["setupMs"] > 0 and result["prefillMs"] >= 0
    finally:
        browser.close()
    if dist is None:
        pytest.skip("onnxruntime-web is not in the cache (run bench/bench_browser.py once): "
                    "only our module was run")
