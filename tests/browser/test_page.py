"""The emitted .html page, opened in the browser, builds the graph, runs it on a .npy file or on
random inputs, and shows the outputs and the timings (screenshot and page text checked)."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

import converter
from converter.emit.javascript import write_js
from converter.runtimes.chromium import browser_page

MODEL = os.path.join(os.path.dirname(__file__), "..", "..", "models", "tiny_cnn.onnx")


@pytest.fixture
def page_folder(tmp_path):
    graph = converter.load(MODEL)
    write_js(graph, tmp_path / "tiny.js")
    image = np.full((1, 3, 32, 32), 0.5, np.float32)
    np.save(tmp_path / "image.npy", image)
    return tmp_path, converter.run(graph, {"image": image})["probabilities"]


def _open(folder):
    page, url = browser_page(folder)
    page.goto(url + "tiny.html")
    return page


def test_the_page_runs_a_npy_input_and_shows_outputs_and_timings(browser_limits, page_folder):
    folder, want = page_folder
    page = _open(folder)
    try:
        page.set_input_files('input[data-input="image"]', str(folder / "image.npy"))
        page.click("#run")
        page.wait_for_function("window.webnnResult !== undefined")
        shot = folder / "page.png"
        page.screenshot(path=str(shot), full_page=True)
        text = page.inner_text("body")
    finally:
        page.close()
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    assert "Done: 1 output(s)." in text
    assert "image.npy" in text  # the input that was used
    row = next(line for line in text.splitlines() if line.startswith("probabilities"))
    assert "float32\t[1, 10]" in row and "(10 values)" in row
    shown = [float(v) for v in row.split("\t")[3].split(" …")[0].split(", ")]
    np.testing.assert_allclose(shown, want.reshape(-1)[:8], rtol=1e-5)  # 6 digits shown
    for step in ("createContext", "load weights", "build", "dispatch + read"):
        assert re.search(rf"^{re.escape(step)}\t\d+\.\d\d$", text, re.M), step


def test_the_page_runs_on_random_inputs_when_given_no_file(browser_limits, page_folder):
    folder, _ = page_folder
    page = _open(folder)
    try:
        page.click("#run")
        page.wait_for_function("window.webnnResult !== undefined")
        result = page.evaluate("window.webnnResult")
        used = page.inner_text("#used-image")
    finally:
        page.close()
    assert used == "random"
    first = [float(v) for v in result["outputs"]["probabilities"]["first"]]
    assert len(first) == 8 and all(0 < v < 1 for v in first)  # softmax probabilities


def test_the_page_says_when_a_file_does_not_fit_the_input(browser_limits, page_folder):
    folder, _ = page_folder
    np.save(folder / "wrong.npy", np.zeros((1, 3, 32, 32), np.float64))
    page = _open(folder)
    try:
        page.set_input_files('input[data-input="image"]', str(folder / "wrong.npy"))
        page.click("#run")
        page.wait_for_function("window.webnnResult !== undefined")
        status = page.inner_text("#status")
    finally:
        page.close()
    assert status == ("Error: Error: wrong.npy: numpy type <f8 has no WebNN data type")


def test_the_page_times_ten_dispatches_and_states_the_device(browser_limits, page_folder):
    """The page's timing says what it measured: the total of ten dispatches and one read, and
    the mean per dispatch; and it states the device asked for and what the context reports."""
    folder, _ = page_folder
    page = _open(folder)
    try:
        page.check("#timing-runs")
        page.click("#run")
        page.wait_for_function("window.webnnResult !== undefined")
        result = page.evaluate("window.webnnResult")
        context = page.inner_text("#context")
    finally:
        page.close()
    timings = result["timings"]
    total = timings["10 more dispatches + one read (total)"]
    assert total > 0 and timings["per dispatch (mean)"] == total / 10
    assert context.startswith("Device requested: the browser's default; the context reports")
    assert result["context"]["requested"] == "default"
