"""The emitted .html page of a stateful graph runs N steps through the module's createSession
(the state kept on the context), shows each step's latency and what the context says of its
device; its outputs after N steps are the recurrence computed in numpy. A decoder's page decodes
greedy tokens from a prompt: those ONNX Runtime gives on the source."""
from __future__ import annotations

import re

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.emit.javascript import write_js
from converter.state.generation import generate_on_onnxruntime
from converter.runtimes.chromium import browser_page
from converter.targets import load_target
from converter.targets.pipeline import convert_for_target
from converter.testing import decoding

STEPS = 7


def _running_sum(folder):
    """acc' = acc + x (state, starting at ones); y = 2 * acc'."""
    b = GraphBuilder("running sum")
    acc = b.input("acc", "float32", [1, 3])
    total = b.add(acc, b.input("x", "float32", [1, 3]), name="sum")
    y = b.mul(total, b.constant(np.full([1, 3], 2.0, np.float32)), name="double")
    graph = b.build({"y": y, "acc_next": total})
    graph.declare_state("acc", "acc_next", initial=np.ones((1, 3), np.float32))
    write_js(graph, folder / "sum.js")


def _open(folder, query):
    page, url = browser_page(folder)
    page.goto(url + "sum.html" + query)
    page.wait_for_function("window.webnnResult !== undefined")
    return page


def test_the_page_runs_n_steps_on_rows_of_a_npy_file(browser_limits, tmp_path):
    _running_sum(tmp_path)
    xs = np.arange(STEPS * 3, dtype=np.float32).reshape(STEPS, 1, 3) / 4
    np.save(tmp_path / "xs.npy", xs)
    page, url = browser_page(tmp_path)
    try:
        page.goto(url + f"sum.html?steps={STEPS}&device=cpu")
        assert page.inner_text("#inputs").count("state: carried from step to step") == 1
        page.set_input_files('input[data-input="x"]', str(tmp_path / "xs.npy"))
        page.click("#run")
        page.wait_for_function("window.webnnResult !== undefined")
        result = page.evaluate("window.webnnResult")
        text = page.inner_text("body")
    finally:
        page.close()
    assert "error" not in result, result
    assert result["steps"] == STEPS and len(result["stepMs"]) == STEPS
    assert all(ms >= 0 for ms in result["stepMs"])
    want = 2 * (1 + xs.sum(axis=0)).reshape(-1)  # after the last step
    np.testing.assert_allclose([float(v) for v in result["outputs"]["y"]["first"]], want,
                               rtol=1e-6)
    assert list(result["outputs"]) == ["y"]  # the next state stays on the context
    assert f"Done: {STEPS} step(s), 1 output(s) a step." in text
    rows = re.findall(r"^(\d+)\t(\d+\.\d\d)$", page_steps(text), re.M)
    assert [int(k) for k, _ in rows] == list(range(1, STEPS + 1))
    # Chromium 153's MLContext has no `accelerated` attribute: the page says what it asked for
    # and that the context reports nothing more.
    assert result["context"] == {"requested": "cpu", "accelerated": None,
                                 "text": result["context"]["text"]}
    assert "Device requested: cpu; the context reports no device" in text


def page_steps(text):
    """The Steps table's text: between its heading and the Outputs heading."""
    return text.split("ms (dispatch + read)", 1)[1].split("Outputs", 1)[0]


def test_random_inputs_run_each_step_and_a_rerun_starts_from_the_initial_state(browser_limits,
                                                                               tmp_path):
    _running_sum(tmp_path)
    page = _open(tmp_path, "?run&steps=3")
    try:
        first = page.evaluate("window.webnnResult")
        page.evaluate("window.webnnResult = undefined")
        page.click("#run")  # same seed, same inputs: the state must start over
        page.wait_for_function("window.webnnResult !== undefined")
        second = page.evaluate("window.webnnResult")
    finally:
        page.close()
    assert "error" not in first, first
    assert first["steps"] == 3 and first["context"]["requested"] == "default"
    y = [float(v) for v in first["outputs"]["y"]["first"]]
    # three random steps of values in [0, 1) on top of ones, doubled
    assert all(2.0 <= v < 8.0 for v in y) and len(set(y)) == 3
    assert second["outputs"] == first["outputs"]


def test_a_file_that_fits_neither_form_is_refused(browser_limits, tmp_path):
    _running_sum(tmp_path)
    np.save(tmp_path / "bad.npy", np.zeros((2, 1, 3), np.float32))
    page, url = browser_page(tmp_path)
    try:
        page.goto(url + "sum.html?steps=3")
        page.set_input_files('input[data-input="x"]', str(tmp_path / "bad.npy"))
        page.click("#run")
        page.wait_for_function("window.webnnResult !== undefined")
        status = page.inner_text("#status")
    finally:
        page.close()
    assert status == ("Error: Error: bad.npy holds float32[2,1,3], input 'x' takes "
                      "float32[1,3] or [3,1,3], a row a step")


@pytest.mark.skipif(not decoding.source("fp32").exists(), reason="models/tiny-llama/ is not here")
def test_a_decoders_page_decodes_greedy_tokens_from_a_prompt(browser_limits, tmp_path):
    source = decoding.source("fp32")
    graph = decoding.fixed_cache_graph(source, capacity=16)
    convert_for_target(graph, load_target("chromium-litert"))
    write_js(graph, tmp_path / "decoder.js")
    want = generate_on_onnxruntime(source, [1, 17, 42, 99], 10).tokens
    page, url = browser_page(tmp_path)
    try:
        page.goto(url + "decoder.html?run&steps=10&prompt=1,17,42,99")
        page.wait_for_function("window.webnnResult !== undefined")
        result = page.evaluate("window.webnnResult")
        text = page.inner_text("body")
        page.evaluate("window.webnnResult = undefined")
        page.fill("#prompt", "1 17 42 99")
        page.fill("#steps", "10")
        page.click("#run")  # again from the initial state: the same tokens
        page.wait_for_function("window.webnnResult !== undefined")
        again = page.evaluate("window.webnnResult")
        page.evaluate("window.webnnResult = undefined")
        page.fill("#steps", "14")  # 4 + 14 - 1 positions do not fit 16 rows
        page.click("#run")
        page.wait_for_function("window.webnnResult !== undefined")
        status = page.inner_text("#status")
    finally:
        page.close()
    assert "error" not in result, result
    assert result["tokens"] == want and again["tokens"] == want
    assert result["steps"] == 13 and len(result["stepMs"]) == 13
    assert "Done: 10 new token(s) in 13 step(s)." in text
    assert f"new tokens {', '.join(map(str, want))}." in text
    assert text.count("fed by the decoding loop") == 2  # input_ids, attention_mask
    assert status == "Error: Error: the prompt and 14 new tokens need 17 cache rows; this " \
                     "graph has 16"
