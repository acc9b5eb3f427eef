"""A device registered with a hostile user agent and platform (whoever opens the page chooses
both), through the real server to the zoo's reports: the matrix and device tables escape every
string (no element of the payload in the HTML, nor in the Markdown rendered with raw HTML on), and
neither report nor serve's terminal carries a raw control character. The fuzz corpus's sweep of
registrations, kept here: wiring a server into tools/fuzz.py's forked runs costs more than it
shows (tests/zoo/test_device_matrix.py sweeps the report strings alone, without the server)."""
from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from converter.devices import client
from converter.zoo import ZooOptions, build_report
from converter.zoo.cells import make_cell, where_of
from converter.zoo.report_html import render_html
from converter.zoo.report_md import render_markdown
from converter.zoo.runner import ZooRun

from .serving import FakeDevice, Served, registration

_MARKUP = '<img src=x onerror="alert(1)"><script>alert(1)</script><b>x</b>'
HOSTILE = {
    "markup": _MARKUP,
    "pipes": "a | b || c |",
    "backticks": "``` fenced ``` ` one `",
    "escapes": "\x1b]52;c;QQ==\x07\x1b[2J\x9b31m",
    "nul": "a\x00b",
    "line-separators": "a\u2028b\u2029c\r\nFORGED",
    "bidi": "\u202egnp.exe\u2066\u200f",
    "long-512": (_MARKUP + "|`\x1b\u2028") * (512 // len(_MARKUP + "|`\x1b\u2028")),
    "link": "[click](javascript:alert(1))",
}
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e"
                      "\u2066-\u2069]")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = Served(tmp_path_factory.mktemp("cache"), "--no-qr")
    yield server
    server.stop()


def _raw(runtime: str) -> dict:
    """A passing job's result on `runtime`, as converter/zoo/job.py writes it."""
    entry = {"passed": True, "error": None,
             "outputs": [{"name": "y", "passed": True, "maxAbs": 0.0, "maxUlp": 0,
                          "cosine": 1.0, "reason": ""}],
             "device": {"device": runtime.split(":")[1], "deviceType": "cpu", "built": True,
                        "ran": True, "buildMs": 2.5, "runMs": 0.5}}
    return {"id": "m", "sha256": "0" * 64, "status": "verified", "error": None,
            "unsupported": [], "ops": 1, "transposes": 0, "opHistogram": {"add": 1},
            "targets": [{"target": "webnn", "status": "verified", "check": None, "ops": 1,
                         "transposes": 0, "parity": {runtime: entry}, "error": None,
                         "times": {}}],
            "times": {"wall": 1.0}}


@pytest.mark.parametrize("field", ["userAgent", "platform"])
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_registration_reaches_the_reports_escaped(served, monkeypatch, kind, field):
    monkeypatch.setenv("WEBNN_CONVERTER_CACHE", str(served.cache))
    client.use_server(served.url)
    name = f"{field}-{kind}".lower()
    text = HOSTILE[kind]
    device = FakeDevice(served.url, name, registration(**{field: text}))
    try:
        assert device.reply["type"] == "registered", device.reply
        listed = {d["name"]: d for d in client.devices()}[device.reply["name"]]
    finally:
        device.close()
        client.use_server(None)
    assert listed[field] == text  # kept as given: the reports escape it, not the server
    page, markdown, rendered = _reports(listed)
    plain = _reports({**listed, field: "plain"})  # the same reports, of a harmless device
    # every element of the HTML page and of the rendered Markdown is the report's own
    assert re.findall(r"<[a-zA-Z/!][^\s>]*", page) == re.findall(r"<[a-zA-Z/!][^\s>]*", plain[0])
    assert re.findall(r"<[a-zA-Z/!][^\s>]*", rendered) == \
        re.findall(r"<[a-zA-Z/!][^\s>]*", plain[2])
    assert "<img" not in page + rendered and "<script>alert" not in page + rendered
    assert not _CONTROL.search(page)
    assert not _CONTROL.search(markdown)
    assert not any(_CONTROL.search(line) for line in served.lines)


def _reports(listed: dict) -> tuple[str, str, str]:
    """(the HTML page, the Markdown, the Markdown rendered with raw HTML on) of a zoo of one
    model that passed on `listed`, the device as the server lists it."""
    runtime = f"device:{listed['name']}"
    raw = _raw(runtime)
    cell = make_cell(runtime, raw, where_of(runtime, listed), 0.0, 1.0)
    run = ZooRun("zoo.json", ZooOptions(runtimes=[runtime]),
                 [{**raw, "key": "k", "expect": "verified", "meetsExpect": True,
                   "format": "onnx", "cells": [cell]}], [], 1.0)
    doc = build_report(run)
    markdown = render_markdown(doc)
    return (render_html(doc), markdown,
            MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown))
