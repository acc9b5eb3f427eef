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


def _open_model(path: Path, dims: list) -> Path:
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_ort_web_gets_overrides_by_name_or_a_copy_with_fixed_input_shapes(tmp_path):
    """ORT-web's WebNN EP takes static shapes only: the bench gives it each named dim's size
    (freeDimensionOverrides), and where names cannot say it (two dims both named '?', as in
    the PaddleOCR classifier) a copy whose input shapes are fixed, which ONNX Runtime runs."""
    import onnxruntime as ort

    bench = _bench()
    inputs = [{"name": "x", "dataType": "float32", "shape": [1, 3, 48, 192]}]
    named = _open_model(tmp_path / "model.onnx", ["batch", 3, "height", "width"])
    assert bench.static_for_ort(named, inputs) == (
        named, {"batch": 1, "height": 48, "width": 192})
    unnamed = _open_model(tmp_path / "model.onnx", [1, 3, "?", "?"])
    fixed, overrides = bench.static_for_ort(unnamed, inputs)
    assert overrides == {} and fixed.name == "model.static.onnx"
    session = ort.InferenceSession(str(fixed))
    assert session.get_inputs()[0].shape == [1, 3, 48, 192]
    x = np.linspace(-1, 1, 1 * 3 * 48 * 192, dtype=np.float32).reshape(1, 3, 48, 192)
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], np.maximum(x, 0))
