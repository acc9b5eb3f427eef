"""The emitted page of a module with dims (issue 14) also has the device selector and context
description of issue 12: it runs at the dims and device asked for, a change of dims rebuilds the
graph on the same context and weights, a change of device makes a new context. A module with
both dims and state has no createSession: its page says so, and runs one step with the state
input fed like any other input. Every value is checked against numpy."""
from __future__ import annotations

import numpy as np

import converter
from converter.dynamic.module_js import write_variants_js
from converter.dynamic.variants import Variants
from converter.runtimes.chromium import browser_page

W = np.arange(12, dtype=np.float32).reshape(4, 3) / 8


def _matmul(s: int) -> converter.Graph:
    """y = x @ W, x of s rows."""
    b = converter.GraphBuilder("rows")
    x = b.input("x", "float32", [s, 4])
    return b.build({"y": b.matmul(x, b.constant(W, name="w"), name="mm")})


def _running_sum(s: int) -> converter.Graph:
    """acc' = acc + x (state, s rows); y = 2 * acc'."""
    b = converter.GraphBuilder("running sum")
    acc = b.input("acc", "float32", [s, 3])
    total = b.add(acc, b.input("x", "float32", [s, 3]), name="sum")
    y = b.mul(total, b.constant(np.full([s, 3], 2.0, np.float32), name="two"), name="double")
    graph = b.build({"y": y, "acc_next": total})
    graph.declare_state("acc", "acc_next", initial=np.ones((s, 3), np.float32))
    return graph


def _rerun(page):
    page.evaluate("window.webnnResult = undefined")
    page.click("#run")
    page.wait_for_function("window.webnnResult !== undefined")
    return page.evaluate("window.webnnResult")


def test_dims_and_device_each_rebuild_what_they_change(browser_limits, tmp_path):
    variants = Variants(("s",), [({"s": s}, _matmul(s)) for s in (2, 4, 8)],
                        convert=lambda at: _matmul(at["s"]))
    _, note = write_variants_js(variants, tmp_path / "rows.js")
    assert note.startswith("one builder for s in 2..8")
    xs = {s: np.random.default_rng(s).standard_normal((s, 4)).astype(np.float32)
          for s in (3, 6)}
    for s, x in xs.items():
        np.save(tmp_path / f"x{s}.npy", x)
    page, url = browser_page(tmp_path)
    try:
        page.goto(url + "rows.html?s=3&device=cpu")
        assert not page.is_hidden("#dims-section") and page.is_hidden("#dims-state-note")
        page.set_input_files('input[data-input="x"]', str(tmp_path / "x3.npy"))
        first = _rerun(page)
        page.fill('input[data-dim="s"]', "6")
        page.dispatch_event('input[data-dim="s"]', "change")
        page.set_input_files('input[data-input="x"]', str(tmp_path / "x6.npy"))
        second = _rerun(page)  # new dims, same device: the context and weights are kept
        page.select_option("#device", "")
        third = _rerun(page)  # new device, same dims: a new context
        context_text = page.inner_text("#context")
    finally:
        page.close()
    for result in (first, second, third):
        assert "error" not in result, result
    assert first["outputs"]["y"]["shape"] == [3, 3] and second["outputs"]["y"]["shape"] == [6, 3]
    for result, s in ((first, 3), (second, 6), (third, 6)):
        want = (xs[s].astype(np.float64) @ W).reshape(-1)[:8]
        np.testing.assert_allclose([float(v) for v in result["outputs"]["y"]["first"]], want,
                                   rtol=1e-5, atol=1e-6)  # the page shows 6 digits
    assert {"createContext", "load weights", "build"} <= set(first["timings"])
    assert "build" in second["timings"]
    assert "createContext" not in second["timings"] and "load weights" not in second["timings"]
    assert "createContext" in third["timings"] and "load weights" not in third["timings"]
    assert first["context"]["requested"] == "cpu" and third["context"]["requested"] == "default"
    assert context_text.startswith("Device requested: the browser's default;")


def test_a_module_with_dims_and_state_runs_one_step_and_says_so(browser_limits, tmp_path):
    variants = Variants(("s",), [({"s": s}, _running_sum(s)) for s in (1, 2)],
                        convert=lambda at: _running_sum(at["s"]))
    _, note = write_variants_js(variants, tmp_path / "sum.js")
    assert note.startswith("one builder per value (s in 1, 2)")
    text = (tmp_path / "sum.js").read_text()
    assert 'export const state = [{input: "acc", output: "acc_next"}];' in text
    assert "function createSession" not in text
    acc = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    x = np.array([[0.5, 0.25, 0.125], [-1, -2, -3]], np.float32)
    np.save(tmp_path / "acc.npy", acc)
    np.save(tmp_path / "x.npy", x)
    page, url = browser_page(tmp_path)
    try:
        page.goto(url + "sum.html?s=2")
        said = page.inner_text("#dims-state-note")
        hidden = {i: page.is_hidden(f"#{i}") for i in ("stateful-note", "steps-control")}
        page.set_input_files('input[data-input="acc"]', str(tmp_path / "acc.npy"))
        page.set_input_files('input[data-input="x"]', str(tmp_path / "x.npy"))
        result = _rerun(page)
    finally:
        page.close()
    assert "has state (1 pair(s))" in said and "has no createSession" in said
    assert "convert it at one value of each dimension" in said
    assert hidden == {"stateful-note": True, "steps-control": True}
    assert "error" not in result, result
    np.testing.assert_array_equal([float(v) for v in result["outputs"]["acc_next"]["first"]],
                                  (acc + x).reshape(-1)[:8])
    np.testing.assert_array_equal([float(v) for v in result["outputs"]["y"]["first"]],
                                  (2 * (acc + x)).reshape(-1)[:8])
