"""The model x device matrix of a run on devices, without a browser: the cells merged into a
model's result, the options a run on devices refuses, and the reports escaping every string a
device gave (its name, browser, platform and user agent come from whoever opened the page or
from a results file read back by --resume: hostile)."""
from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from converter.errors import ConverterError
from converter.zoo import ZooOptions, build_report, run_zoo
from converter.zoo.cells import LOST, LOST_KIND, lost_result, make_cell, merge_cells, where_of
from converter.zoo.report_html import render_html
from converter.zoo.report_md import render_markdown
from converter.zoo.runner import ZooRun

from .test_report_safety import HOSTILE

RUNTIMES = ["device:alpha", "device:beta"]
WHERE = {"name": "alpha", "browser": "Chrome 153", "platform": "Linux",
         "userAgent": "Mozilla/5.0 Chrome/153.0", "deviceType": "cpu"}


def _raw(runtime: str, passed: bool = True, device: dict | None = None) -> dict:
    """A job's result on one runtime, as converter/zoo/job.py writes it."""
    output = {"name": "y", "passed": passed, "maxAbs": 0.0 if passed else 1.0, "maxUlp": 0,
              "cosine": 1.0, "reason": "" if passed else "off by one"}
    entry = {"passed": passed, "outputs": [output], "error": None,
             "device": device or {"device": runtime.split(":")[1], "deviceType": "cpu",
                                  "built": True, "ran": True, "buildMs": 2.5, "runMs": 0.5}}
    status = "verified" if passed else "mismatch"
    return {"id": "m", "sha256": "0" * 64, "status": status, "error": None, "unsupported": [],
            "ops": 3, "transposes": 0, "opHistogram": {"add": 3},
            "targets": [{"target": "webnn", "status": status, "check": None, "ops": 3,
                         "transposes": 0, "parity": {runtime: entry},
                         "error": None if passed else {"kind": "parity",
                                                       "message": f"{runtime} y: off by one"},
                         "times": {f"run:{runtime}": 0.1}}],
            "times": {"fetch": 0.0, "convert": 0.2, "job": 1.0, "wall": 1.5}}


def test_a_lost_cell_makes_the_model_an_error_of_its_own_kind_and_keeps_the_others():
    alpha = _raw("device:alpha")
    lost = lost_result({"id": "m"}, "device:beta", "device 'beta' disconnected before this "
                                                   "job ran")
    cells = {"device:alpha": make_cell("device:alpha", alpha, WHERE, 10.0, 11.5),
             "device:beta": make_cell("device:beta", lost, where_of("device:beta", None),
                                      11.0, 11.0, lost=lost["error"]["message"])}
    merged = merge_cells({"device:alpha": alpha, "device:beta": lost}, cells, RUNTIMES)
    assert merged["status"] == "error" and merged["error"]["kind"] == LOST_KIND
    assert merged["error"]["message"] == ("device:beta: device 'beta' disconnected before "
                                          "this job ran")
    variant = merged["targets"][0]
    assert list(variant["parity"]) == ["device:alpha"] and variant["status"] == "error"
    assert merged["times"]["wall"] == 1.5 and merged["ops"] == 3
    assert [c["verdict"] for c in merged["cells"]] == ["verified", LOST]
    beta = merged["cells"][1]
    assert beta["built"] is None and beta["ran"] is False and beta["buildMs"] is None
    alpha_cell = merged["cells"][0]
    assert (alpha_cell["built"], alpha_cell["ran"], alpha_cell["buildMs"],
            alpha_cell["runMs"]) == (True, True, 2.5, 0.5)


def test_each_cell_keeps_its_own_verdict_and_the_model_takes_the_worst():
    raws = {"device:alpha": _raw("device:alpha"), "device:beta": _raw("device:beta", False)}
    cells = {r: make_cell(r, raws[r], WHERE, 0.0, 1.0) for r in RUNTIMES}
    merged = merge_cells(raws, cells, RUNTIMES)
    assert [c["verdict"] for c in merged["cells"]] == ["verified", "mismatch"]
    assert merged["status"] == "mismatch" and merged["error"] == {
        "kind": "parity", "message": "device:beta y: off by one"}
    assert list(merged["targets"][0]["parity"]) == RUNTIMES


def test_a_graph_the_device_did_not_build_says_why():
    refused = {"device": "alpha", "deviceType": "cpu", "built": False, "ran": False,
               "buildMs": None, "runMs": None}
    raw = _raw("device:alpha", device=refused)
    entry = raw["targets"][0]["parity"]["device:alpha"]
    entry.update(passed=False, outputs=[], error="WebNN on device 'alpha' failed at build: "
                                                 "TypeError: pad mode edge")
    raw["status"] = raw["targets"][0]["status"] = "error"
    cell = make_cell("device:alpha", raw, WHERE, 0.0, 1.0)
    assert cell["built"] is False and cell["ran"] is False and cell["verdict"] == "error"
    assert cell["notBuilt"].endswith("failed at build: TypeError: pad mode edge")


def test_a_model_that_did_not_convert_is_not_built_anywhere_for_that_reason():
    failed = {"id": "m", "sha256": None, "status": "unsupported", "unsupported": ["Foo"],
              "error": {"kind": "unsupported", "message": "1 unsupported op: Foo"},
              "ops": None, "transposes": None, "opHistogram": {}, "targets": [],
              "times": {"wall": 0.5}}
    raws = {r: dict(failed) for r in RUNTIMES}
    cells = {r: make_cell(r, raws[r], WHERE, 0.0, 1.0) for r in RUNTIMES}
    merged = merge_cells(raws, cells, RUNTIMES)
    assert merged["status"] == "unsupported" and merged["error"] == failed["error"]
    assert all(c["built"] is False and c["notBuilt"] == "1 unsupported op: Foo"
               for c in merged["cells"])


@pytest.mark.parametrize("options, words", [
    (ZooOptions(runtimes=["device:alpha"], executor="ray"), "a run on devices runs here"),
    (ZooOptions(runtimes=["device:alpha"], targets=["portable", "coreml"]),
     "at most one --target"),
])
def test_a_run_on_devices_refuses_what_it_cannot_do_before_anything_runs(tmp_path, options,
                                                                         words):
    results = tmp_path / "r.jsonl"
    with pytest.raises(ConverterError, match=words):
        run_zoo(tmp_path / "missing.json", options, results_path=results)
    assert not results.exists()


# -- hostile device strings in the reports ----------------------------------------------------

def _hostile_run() -> ZooRun:
    """A results file read back: every string of every cell (the device's name, browser,
    platform, user agent, deviceType; why not built; why lost) and the model's id hostile."""
    results = []
    for i, text in enumerate(HOSTILE):
        raw = _raw("device:alpha")
        where = {k: text for k in ("name", "browser", "platform", "userAgent", "deviceType")}
        cells = [make_cell("device:alpha", raw, where, 0.0, 1.0),
                 {**make_cell("device:beta", raw, where, 0.0, 1.0, lost=text or "gone"),
                  "built": False, "notBuilt": text}]
        results.append({**raw, "id": f"{text}{i}", "key": "k", "expect": "verified",
                        "meetsExpect": True, "format": "onnx", "cells": cells})
    return ZooRun("zoo.json", ZooOptions(runtimes=RUNTIMES), results, [], 1.0)


@pytest.fixture(scope="module")
def doc():
    return build_report(_hostile_run())  # checked against the schema


def test_the_html_matrix_makes_no_device_string_live(doc):
    page = render_html(doc)
    matrix = page[page.index('<table id="matrix">'):page.index("<h2>Models</h2>")]
    assert "<script>alert" not in matrix and "<img src=x" not in matrix and "<b>" not in matrix
    assert "\x1b" not in page and 'title="<' not in matrix and 'title="\'' not in matrix
    assert matrix.count("<tr>") == 1 + len(HOSTILE)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in matrix
    assert matrix.count(">device lost</span>") == len(HOSTILE)


def test_the_markdown_matrix_makes_no_device_string_live(doc):
    markdown = render_markdown(doc)
    section = markdown[markdown.index("## Model x device"):]
    assert "<" not in section and not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", section)
    page = MarkdownIt("commonmark", {"html": True}).enable("table").render(section)
    assert "<script" not in page and "<img" not in page and "<b>" not in page
    assert "<a " not in page
    devices, models = re.findall(r"<table>.*?</table>", page, re.S)
    # every row keeps its cells: a device's pipes stay inside its cell
    assert {r.count("<td") + r.count("<th") for r in re.findall(r"<tr>(.*?)</tr>", devices,
                                                                  re.S)} == {6}
    rows = re.findall(r"<tr>(.*?)</tr>", models, re.S)
    assert len(rows) == 1 + len(HOSTILE)
    assert {r.count("<td") + r.count("<th") for r in rows} == {3}


def test_a_results_file_of_a_run_on_devices_is_a_baseline_of_whole_models(tmp_path):
    """Its records are cells (one per model and device): the baseline's model is the worst of
    them, with every device's numbers, not whichever device's record came last."""
    import json

    from converter.zoo.baseline import compare, load_baseline

    records = []
    for runtime, passed in (("device:alpha", False), ("device:beta", True)):
        raw = _raw(runtime, passed)
        records.append({"key": runtime, "limits": {},
                        "result": {**raw, "cell": make_cell(runtime, raw, WHERE, 0.0, 1.0)}})
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    baseline = load_baseline(path)
    assert baseline.results["m"]["status"] == "mismatch"
    now = {**_raw("device:alpha"), "status": "verified"}
    assert compare([now], baseline.results) == [
        {"id": "m", "kind": "status", "before": "mismatch", "after": "verified"}]


@pytest.mark.parametrize("change", [
    lambda r: r.pop("cell"), lambda r: r["cell"].update(runtime="device:beta"),
    lambda r: r["cell"].update(verdict="<b>fine</b>"), lambda r: r.update(status="great"),
    lambda r: r["cell"].update(lost="gone"), lambda r: r.update(targets=None),
])
def test_a_stored_cell_that_is_not_one_this_run_writes_is_not_reused(change):
    from converter.zoo.lanes import _whole

    raw = _raw("device:alpha")
    record = {**raw, "cell": make_cell("device:alpha", raw, WHERE, 0.0, 1.0)}
    assert _whole(record, "device:alpha")
    change(record)
    assert not _whole(record, "device:alpha")


def test_a_fault_in_a_lane_is_raised_in_the_callers_thread_not_lost(tmp_path):
    """A lane's thread that fails (here: its worker raises) must not leave the run waiting
    for a cell that never comes, nor drop the error."""
    from types import SimpleNamespace

    from converter.zoo.lanes import run_matrix
    from converter.zoo.store import ResultStore

    class Broken:
        def run(self, spec, options):
            raise RuntimeError("the worker broke")

    entry = SimpleNamespace(id="m", spec=lambda: {"id": "m"})
    with pytest.raises(RuntimeError, match="the worker broke"):
        run_matrix([entry], ZooOptions(runtimes=["ort"]), Broken(),
                   ResultStore(tmp_path / "r.jsonl", resume=False), lambda e, r: f"{e.id}{r}",
                   {"ort": None}, lambda e, merged: merged)
