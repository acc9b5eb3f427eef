"""Exit codes a CI can trust (issue 27 point 3), and outputs that cannot destroy inputs (issue
26 point 3): an entry without `expect` expects `verified`; a missing file, an error or a crash
is never a pass; "regressed" only against a baseline, which is read (and refused if bad)
before any model runs; one report cell per runtime; no output is an input or another output."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from converter.zoo import ZooOptions, build_report
from converter.zoo.report_html import render_html
from converter.zoo.report_md import render_markdown
from converter.zoo.runner import ZooRun

from .conftest import ROOT, cli_command, make_synthetic, run_cli


def _one_line(proc, code, *words):
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code, proc.stderr
    assert len(lines) == 1, proc.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def folder(tmp_path):
    """The synthetic models and a manifest of `add` and `conv_relu` without `expect`."""
    make_synthetic.write_models(tmp_path)
    (tmp_path / "zoo.json").write_text(json.dumps({"models": [
        {"id": "add", "path": "add.onnx"}, {"id": "conv_relu", "path": "conv_relu.onnx"}]}))
    return tmp_path


# -- outputs against inputs ---------------------------------------------------------------

def _same_file_cases(folder):
    (folder / "old.json").write_text('{"models": []}')
    (folder / "link.json").symlink_to(folder / "zoo.json")
    (folder / "mine.json").write_text((ROOT / "converter" / "targets" / "data" /
                                       "coreml.json").read_text())
    return {
        "the manifest as a report": (["--report", "zoo.json"], ["--report", "the manifest"]),
        "the manifest as the results": (["--results", "zoo.json"],
                                        ["--results", "the manifest"]),
        "a link to the manifest as a report": (["--report", "link.json"],
                                               ["--report", "the manifest"]),
        "the manifest by another spelling": (["--report", "./sub/../zoo.json"],
                                             ["--report", "the manifest"]),
        "a local model as the results": (["--results", "add.onnx"], ["model 'add'"]),
        "the baseline as a report": (["--baseline", "old.json", "--report", "old.json"],
                                     ["the baseline"]),
        "report and results one file": (["--results", "out.json", "--report", "out.json"],
                                        ["--report", "--results", "same file"]),
        "one report twice": (["--report", "out.md", "--report", "out.md"], ["same file"]),
        "a target file as a report": (["--target", "mine.json", "--report", "mine.json"],
                                      ["--report", "--target"]),
    }


CASES = ["the manifest as a report", "the manifest as the results",
         "a link to the manifest as a report", "the manifest by another spelling",
         "a local model as the results", "the baseline as a report",
         "report and results one file", "one report twice", "a target file as a report"]


@pytest.mark.parametrize("case", CASES)
def test_an_output_that_is_an_input_or_another_output_is_refused(folder, case):
    (folder / "sub").mkdir()
    args, words = _same_file_cases(folder)[case]
    if "--results" not in args:
        args = args + ["--results", "r.jsonl"]
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    proc = run_cli("zoo.json", *args, cwd=folder)
    _one_line(proc, 2, *words)
    after = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    assert after == before  # nothing written, nothing run


def test_a_report_in_a_missing_folder_is_refused_before_any_model_runs(folder):
    proc = run_cli("zoo.json", "--results", "r.jsonl", "--report", "nowhere/r.md", cwd=folder)
    _one_line(proc, 2, "nowhere/r.md", "folder does not exist")
    assert not (folder / "r.jsonl").exists()


# -- exit codes -----------------------------------------------------------------------------

def test_without_expect_a_missing_file_or_an_error_fails_the_run(folder):
    (folder / "zoo.json").write_text(json.dumps({"models": [
        {"id": "add", "path": "add.onnx"}, {"id": "corrupt", "path": "corrupt.onnx"},
        {"id": "gone", "path": "gone.onnx"}]}))
    proc = run_cli("zoo.json", "--results", "r.jsonl", "--report", "r.md", "--report",
                   "r.html", "--report", "r.json", cwd=folder)
    assert proc.returncode == 1, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("missed: corrupt (error, expected verified), gone (")
    assert "does not exist" in line
    doc = json.loads((folder / "r.json").read_text())
    assert [m["expect"] for m in doc["models"]] == ["verified"] * 3
    assert doc["summary"]["missed"] == ["corrupt", "gone"]
    assert doc["summary"]["regressions"] == []  # nothing to compare with: nothing regressed
    md, page = (folder / "r.md").read_text(), (folder / "r.html").read_text()
    assert "missed: `corrupt`, `gone`." in md and "verified (MISSED)" in md
    assert "regress" not in md.lower()
    assert "verified: missed" in page and 'id="regressions"' not in page
    assert "Regressed" not in page


def test_nothing_verified_is_never_a_pass(folder):
    (folder / "zoo.json").write_text(json.dumps({"models": [
        {"id": "corrupt", "path": "corrupt.onnx"},
        {"id": "unsupported", "path": "unsupported.onnx"}]}))
    proc = run_cli("zoo.json", "--results", "r.jsonl", cwd=folder)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "missed: corrupt (error, expected verified), unsupported (unsupported, expected "
        "verified)")


def _bad_baselines(folder):
    os.mkfifo(folder / "fifo.jsonl")
    (folder / "binary.jsonl").write_bytes(b"\xff\xfe\x00garbage")
    (folder / "malformed.json").write_text('{"models": [')
    (folder / "deep.json").write_text('{"models": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (folder / "deep.jsonl").write_text('{"result": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    (folder / "shapeless.json").write_text('{"models": [{"id": "add", "status": "verified", '
                                           '"targets": [{"target": "webnn", "parity": '
                                           '{"ort": {"outputs": [7]}}}]}]}')
    (folder / "folder.json").mkdir()
    with open(folder / "big.jsonl", "wb") as f:  # sparse: 1 GiB that takes no disk
        f.truncate(1 << 30)
    return {"big.jsonl": "1,073,741,824 bytes", "missing.jsonl": "does not exist",
            "fifo.jsonl": "FIFO", "binary.jsonl": "not UTF-8", "malformed.json": "valid JSON",
            "deep.json": "nested more than", "deep.jsonl": "nested more than",
            "shapeless.json": "outputs", "folder.json": "folder"}


@pytest.mark.parametrize("name", ["missing.jsonl", "fifo.jsonl", "binary.jsonl",
                                  "big.jsonl", "malformed.json", "deep.json", "deep.jsonl",
                                  "shapeless.json", "folder.json"])
def test_a_bad_baseline_is_refused_before_any_model_runs(folder, name):
    words = _bad_baselines(folder)[name]
    proc = run_cli("zoo.json", "--results", "r.jsonl", "--baseline", name, cwd=folder)
    line = _one_line(proc, 2, name, words)
    assert line.startswith("error: ") and "internal error" not in line
    assert not (folder / "r.jsonl").exists()  # no model ran, no result was written


# -- one cell per runtime -----------------------------------------------------------------

def _parity(passed, max_abs, error=None):
    outputs = [] if error else [{"name": "y", "passed": passed, "maxAbs": max_abs,
                                 "maxUlp": 3, "cosine": 1.0, "reason": ""}]
    return {"passed": passed, "outputs": outputs, "error": error}


def _run_on_two_runtimes():
    variant = {"target": "webnn", "status": "mismatch", "check": None, "ops": 1,
               "transposes": 0, "error": {"kind": "parity", "message": "chromium y: off"},
               "parity": {"ort": _parity(True, 1e-7), "chromium": _parity(False, 0.5)},
               "times": {}}
    failed = {**variant, "status": "error", "error": {"kind": "runtime", "message": "x"},
              "parity": {"ort": _parity(True, 0.0), "chromium": _parity(
                  False, None, error="Chromium has no WebNN")}}
    results = []
    for model_id, v in (("a", variant), ("b", failed)):
        results.append({"id": model_id, "key": "k", "sha256": "0" * 64, "format": "onnx",
                        "status": v["status"], "expect": "verified", "meetsExpect": False,
                        "error": v["error"], "unsupported": [], "ops": 1, "transposes": 0,
                        "opHistogram": {}, "targets": [v], "times": {"wall": 1.0}})
    return ZooRun("zoo.json", ZooOptions(runtimes=["ort", "chromium"]), results, [], 2.0)


def test_each_runtime_keeps_its_own_cell():
    doc = build_report(_run_on_two_runtimes())
    md = render_markdown(doc)
    header = next(line for line in md.splitlines() if line.startswith("| model |"))
    assert "| worst on ort | worst on chromium |" in header
    row_a = next(line for line in md.splitlines() if line.startswith("| `a` |"))
    assert "| `y: max abs 1e-07, ULP 3, cosine 1.000000` | `y: max abs 0.5, ULP 3, " \
           "cosine 1.000000` |" in row_a
    row_b = next(line for line in md.splitlines() if line.startswith("| `b` |"))
    assert "| `y: max abs 0, ULP 3, cosine 1.000000` | `failed: Chromium has no WebNN` |" \
        in row_b
    page = render_html(doc)
    assert "<th data-sort>worst on ort</th><th data-sort>worst on chromium</th>" in page
    assert "<td>y: max abs 1e-07, ULP 3, cosine 1.000000</td>" \
           "<td>y: max abs 0.5, ULP 3, cosine 1.000000</td>" in page


def test_the_public_manifest_expects_every_model_to_verify():
    """models/zoo.json: every entry verifies today (tests/zoo/test_reports.py runs them), so
    none needs an `expect` other than the default; the CI run exits 1 on any that does not."""
    doc = json.loads((ROOT / "models" / "zoo.json").read_text())
    assert {m.get("expect", "verified") for m in doc["models"]} == {"verified"}


def test_help_says_what_the_exit_codes_mean():
    proc = subprocess.run(cli_command("--help"), cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    text = " ".join(proc.stdout.split())
    assert "an entry without `expect` expects verified" in text
    assert "2 on bad input, before any model runs" in text
