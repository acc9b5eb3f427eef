"""The three reports of one run agree; the public models run with --jobs 2; the HTML page
renders in the headless browser and shows what the JSON says."""
from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser

import pytest

from converter.errors import ConverterError
from converter.schemas import validate

from .conftest import ROOT, run_cli

PYMICRO = ["alexa", "hey_jarvis", "hey_mycroft", "okay_nabu"]


@pytest.fixture(scope="module")
def public(tmp_path_factory):
    """The whole public set once, as the issue's acceptance command runs it."""
    out = tmp_path_factory.mktemp("public")
    proc = run_cli(ROOT / "models" / "zoo.json", "--jobs", "2", "--results",
                   out / "results.jsonl", "--report", out / "out.json", "--report",
                   out / "out.md", "--report", out / "out.html", cwd=out)
    return proc, out


def _md_rows(text: str) -> dict[str, list[str]]:
    """The model table of the Markdown report: id -> cells."""
    rows, in_table = {}, False
    for line in text.splitlines():
        if line.startswith("| model |"):
            in_table = True
            continue
        if in_table and line.startswith("| ---"):
            continue
        if in_table and line.startswith("| "):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            rows[cells[0].strip("`")] = cells  # the id is a code span
        elif in_table:
            break
    return rows


class _Rows(HTMLParser):
    """The cells' text of the HTML model table's rows."""

    def __init__(self):
        super().__init__()
        self.rows, self._row, self._cell, self._in = [], None, None, False

    def handle_starttag(self, tag, attrs):
        if tag == "table" and ("id", "models") in attrs:
            self._in = True
        elif self._in and tag == "tr":
            self._row = []
        elif self._in and tag == "td":
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row:
            self.rows.append(self._row)
            self._row = None
        elif tag == "table":
            self._in = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def test_public_models_run_and_exit_code_names_regressions(public):
    proc, out = public
    doc = json.loads((out / "out.json").read_text())
    validate(doc, "zoo-report", "out.json")
    assert doc["summary"]["models"] == 26 and doc["options"]["jobs"] == 2
    by_id = {m["id"]: m for m in doc["models"]}
    for model_id in PYMICRO:  # the four micro-wakeword models: state, verified over steps
        assert by_id[model_id]["status"] == "verified"
        parity = by_id[model_id]["targets"][0]["parity"]["ort"]
        assert parity["passed"] and parity["outputs"][0]["maxAbs"] == 0.0
    assert by_id["mul_1"]["status"] == "verified" and by_id["mul_1"]["ops"] == 1
    assert by_id["face_detection_front"]["status"] == "verified"
    assert by_id["face_detection_front"]["opHistogram"]["conv2d"] > 20
    counts = doc["summary"]["byStatus"]
    assert counts["unsupported"] == 0 and counts["verified"] == 26
    assert sum(counts.values()) == 26
    assert doc["summary"]["regressions"] == []
    assert proc.returncode == 0, proc.stderr


def test_three_reports_agree(public):
    _, out = public
    doc = json.loads((out / "out.json").read_text())
    md = (out / "out.md").read_text()
    rows = _md_rows(md)
    assert list(rows) == [m["id"] for m in doc["models"]]
    for m in doc["models"]:
        assert rows[m["id"]][1] == m["status"]
        assert rows[m["id"]][5] == ("-" if m["ops"] is None else f"{m['ops']:,}")
    for status, n in doc["summary"]["byStatus"].items():
        assert f"| {status} | {n} |" in md
    parser = _Rows()
    parser.feed((out / "out.html").read_text())
    assert [r[0] for r in parser.rows] == [m["id"] for m in doc["models"]]
    assert [r[1] for r in parser.rows] == [m["status"] for m in doc["models"]]
    assert [r[6] for r in parser.rows] == ["-" if m["ops"] is None else f"{m['ops']:,}"
                                           for m in doc["models"]]


@pytest.mark.browser
def test_html_report_renders_in_the_browser(public):
    from converter.runtimes.chromium import browser_page

    _, out = public
    doc = json.loads((out / "out.json").read_text())
    try:
        page, url = browser_page(out / "out.html")
    except ConverterError as e:
        if os.environ.get("CI"):
            pytest.fail(f"the browser must run in CI: {e.line()}")
        pytest.skip(f"no browser: {e.line()}")
    try:
        page.goto(url)
        assert page.title() == "Model zoo report: 26 models"
        assert page.locator("#models tbody tr").count() == 26
        first = page.locator("#models tbody tr").first.locator("td")
        assert first.nth(0).inner_text() == doc["models"][0]["id"]
        assert first.nth(1).inner_text() == doc["models"][0]["status"]
        # the charts are drawn, with a bar per target and one per model (the error kinds'
        # chart only when a model failed: every public model verifies now)
        assert page.locator("svg").count() == 2 + bool(doc["summary"]["errorKinds"])
        assert page.locator('svg[aria-label="time per model"] rect').count() == 26
        unsupported = page.locator(".card", has_text="unsupported").inner_text()
        assert unsupported.split()[0] == str(doc["summary"]["byStatus"]["unsupported"])
        box = page.locator("#models").bounding_box()
        assert box["width"] > 600 and box["height"] > 26 * 15  # laid out, not collapsed
        # sorting by ops (numbers, not text), twice to reverse; filtering by text
        page.locator("#models th", has_text="ops").click()
        ops = [m["ops"] for m in doc["models"]]
        cells = page.locator("#models tbody tr td:nth-child(7)").all_inner_texts()
        assert [int(c.replace(",", "")) for c in cells] == sorted(ops)
        page.locator("#models th", has_text="ops").click()
        cells = page.locator("#models tbody tr td:nth-child(7)").all_inner_texts()
        assert [int(c.replace(",", "")) for c in cells] == sorted(ops, reverse=True)
        page.fill("#filter-text", "hey_")
        visible = page.locator("#models tbody tr:visible td:first-child").all_inner_texts()
        assert sorted(visible) == sorted(m["id"] for m in doc["models"] if "hey_" in m["id"])
        assert 0 < len(visible) < 26
        page.select_option("#filter-status", "mismatch")
        assert page.locator("#models tbody tr:visible").count() == 0
    finally:
        page.close()
