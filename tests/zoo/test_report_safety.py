"""Reports people publish (issue 26 points 5, 6 and 7): the Markdown report writes no model
string raw, every report is written atomically and a full disk names the report, and the
parent process never reads a local model (the job hashes it, under its timeout)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from markdown_it import MarkdownIt

from converter.zoo import ZooOptions, build_report
from converter.zoo.report_md import code, render_markdown
from converter.zoo.runner import ZooRun

from .conftest import ROOT, make_synthetic

HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "[click](javascript:alert(1))",
    "\x1b]8;;http://evil\x07link\x1b]8;;\x07\x1b[2J",
    "a | b || c",
    "``` fenced ``` and ` one `",
    "`starts and ends`",
    "line one\nline two\r\n<b>three</b>",
    "&lt;already escaped&gt; &amp;",
    "",
]


def _hostile_run() -> ZooRun:
    """Results whose every free string (target, output name, error kind and message,
    unsupported items, reasons, the manifest's path) holds a hostile string."""
    results = []
    for i, text in enumerate(HOSTILE):
        variant = {"target": text, "status": "unsupported",
                   "check": {"passed": False, "violations": 1, "reasons": [text]},
                   "ops": 1, "transposes": 0, "error": {"kind": text, "message": text},
                   "parity": {"ort": {"passed": False, "error": None, "outputs": [
                       # maxAbs and cosine: numbers, or inf/-inf/nan spelt out (the
                       # schema refuses other text: tests/zoo/test_baseline.py)
                       {"name": text, "passed": False, "maxAbs": "nan", "maxUlp": 1,
                        "cosine": "nan", "reason": text}]}},
                   "times": {}}
        results.append({"id": f"m{i}", "key": "k", "sha256": "0" * 64, "format": "onnx",
                        "status": "unsupported", "expect": "verified", "meetsExpect": False,
                        "error": {"kind": text, "message": text}, "unsupported": [text],
                        "ops": 1, "transposes": 0, "opHistogram": {}, "targets": [variant],
                        "times": {"wall": 1.0}})
    options = ZooOptions(targets=[HOSTILE[0]])
    return ZooRun("<script>zoo</script>.json", options, results, [], 1.0)


@pytest.fixture(scope="module")
def markdown():
    return render_markdown(build_report(_hostile_run()))


def test_no_model_string_survives_raw_in_the_markdown(markdown):
    assert "<" not in markdown and ">" not in markdown.replace("->", "")
    controls = set(re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", markdown))
    assert not controls, controls
    assert "\\x1b]8;;http://evil\\x07" in markdown  # shown, not sent


def test_a_markdown_renderer_passing_raw_html_makes_nothing_live(markdown):
    """Rendered as mkdocs and previews do (raw HTML on, GFM tables): no element, attribute or
    link comes from a model string, and every table row keeps its cells."""
    page = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    assert "<script" not in page and "<img" not in page and "<b>" not in page
    assert 'href="javascript' not in page and "<a " not in page
    header = next(line for line in markdown.splitlines() if line.startswith("| model |"))
    table = next(t for t in re.findall(r"<table>.*?</table>", page, re.S)
                 if "<th>model</th>" in t)
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
    assert len(rows) == 1 + len(HOSTILE)
    assert {row.count("<td") + row.count("<th") for row in rows} == {header.count("|") - 1}


@pytest.mark.parametrize("text", HOSTILE)
def test_a_code_span_gives_back_the_string(text):
    """What a reader sees is the string itself (HTML-escaped, controls as \\xNN), whatever
    backticks or pipes it holds, in running text and in a table cell."""
    import html

    if not text:
        assert code(text) == code(text, table=True) == '""'  # no code span can be empty
        return
    shown = re.sub(r"[\x00-\x1f]", lambda m: f"\\x{ord(m.group()):02x}", text)
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    for table in (False, True):
        span = code(text, table=table)
        source = f"| a |\n| --- |\n| {span} |\n" if table else span
        page = md.render(source)
        found = re.search(r"<code>(.*?)</code>", page, re.S)
        assert found, page
        # the renderer escapes the code's text once more: undo that and our own escaping
        assert html.unescape(html.unescape(found.group(1))) == shown


def test_the_html_report_escapes_the_same_strings():
    from converter.zoo.report_html import render_html

    page = render_html(build_report(_hostile_run()))
    body = page[page.index("<body>"):page.rindex("<script>")]
    assert "<script>alert" not in body and "<img src=x" not in body and "\x1b" not in page


# -- atomic reports on a full disk ----------------------------------------------------------

_FULL_DISK = """
import resource, signal, sys
from cli.script import run
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # a write past the limit fails with EFBIG
limit = int(sys.argv.pop(1))
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
run()
"""


def test_a_report_that_does_not_fit_leaves_every_report_as_it_was(tmp_path):
    """A real write failure: files may grow to 5 kB only (RLIMIT_FSIZE, as a full disk
    would stop them). The results and the JSON report (2 kB each) fit, the HTML report (8 kB)
    does not: the command names the HTML report in one line, exits 2, and leaves both
    reports as they were before the run, with no temporary file beside them."""
    manifest = make_synthetic.write_manifest(tmp_path, ["add"])
    (tmp_path / "out.html").write_text("the report of last week")
    (tmp_path / "out.json").write_text("{}")
    before = sorted(p.name for p in tmp_path.iterdir())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", _FULL_DISK, str(5_000), "zoo", str(manifest),
               "--results", str(tmp_path / "r.jsonl"), "--report", str(tmp_path / "out.json"),
               "--report", str(tmp_path / "out.html")]
    proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {tmp_path / 'out.html'}: "), lines
    assert "File too large" in lines[0]
    assert (tmp_path / "out.html").read_text() == "the report of last week"
    assert (tmp_path / "out.json").read_text() == "{}"  # all or none: it was not replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(before + ["r.jsonl"])
    # the same run with room for it writes both
    room = subprocess.run(command[:3] + [str(10 << 20)] + command[4:], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert room.returncode == 0, room.stderr
    assert json.loads((tmp_path / "out.json").read_text())["summary"]["models"] == 1
    assert (tmp_path / "out.html").read_text().startswith("<!DOCTYPE html>")


# -- the parent never reads a model ---------------------------------------------------------

_READS = """
import json, sys
from converter.zoo import ZooOptions, run_zoo

def read_bytes():  # by this thread: /proc/self/io also counts the children once reaped
    with open("/proc/thread-self/io") as f:
        return int(dict(line.split(": ") for line in f.read().splitlines())["rchar"])

before = read_bytes()
run = run_zoo(sys.argv[1], ZooOptions(timeout=float(sys.argv[3])), results_path=sys.argv[2])
print(json.dumps({"read": read_bytes() - before, "results": run.results}))
"""


@pytest.mark.skipif(not os.path.exists("/proc/thread-self/io"), reason="Linux's /proc")
def test_a_huge_local_model_is_hashed_in_its_job_under_the_timeout(tmp_path):
    """A 1 TiB sparse model: the parent's main thread reads none of it (old: it hashed every
    byte there before any job started, outside any timeout); its job is killed at the timeout while
    hashing, and the model is a `timeout` that misses its expectation."""
    model = tmp_path / "huge.onnx"
    with open(model, "wb") as f:
        f.truncate(1 << 40)
    manifest = tmp_path / "zoo.json"
    manifest.write_text(json.dumps({"models": [{"id": "huge", "path": "huge.onnx"}]}))
    proc = subprocess.run([sys.executable, "-c", _READS, str(manifest),
                           str(tmp_path / "r.jsonl"), "3"],
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["read"] < 64 << 20  # the manifest, the converter's own files; not the model
    (result,) = out["results"]
    assert result["status"] == "timeout" and result["meetsExpect"] is False
