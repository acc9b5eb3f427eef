"""Nothing a model says is executed: a graph whose graph, input, output, operand and constant
names hold every character that could end a comment, a string, a template or a script element
gives a module that, imported in Node and run in Chromium, sets no canary and hands back exactly
those names, and a page that shows them as text. (A graph name with U+2028 used to end the
module's `//` header comment, so the rest of the name ran on import.)"""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.emit.javascript import write_js

# Each one sets globalThis.CANARY if any part of it is parsed as code or markup.
HOSTILE = [
    "nl\nglobalThis.CANARY='nl';//",
    "cr\rglobalThis.CANARY='cr';//",
    "ls\u2028globalThis.CANARY='ls';//",
    "ps\u2029globalThis.CANARY='ps';//",
    "*/globalThis.CANARY='star';/*",
    "</script><script>globalThis.CANARY='script'</script>",
    "<!--<script>globalThis.CANARY='comment'</script>-->",
    "\"';globalThis.CANARY='quote';'\"",
    "`${globalThis.CANARY='template'}`",
    "back\\slash\\\";globalThis.CANARY='backslash';//",
    "nul\x00globalThis.CANARY='nul';//",
    "lone\ud800surrogate\udfff;globalThis.CANARY='surrogate';//",
]


def _graph():
    b = GraphBuilder("graph " + " ".join(HOSTILE))
    outputs = {}
    for i, name in enumerate(HOSTILE):
        x = b.input(name, "float32", [2])
        w = b.constant(np.array([i, -i], np.float32), name=name + " weight")
        outputs[name + " out"] = b.add(b.relu(x, name=name + " relu"), w, name=name + " add")
    return b.build(outputs)


def test_no_name_reaches_the_module_raw(tmp_path):
    write_js(_graph(), tmp_path / "m.js")
    module = (tmp_path / "m.js").read_text()
    generated = module.split("\nexport async function buildGraph")[0] + \
        module.split("\nexport async function buildGraph")[1].split("\n}\n")[0]
    assert generated.isascii()  # every line terminator, NUL and surrogate is a \u escape
    for marker in ("</script", "<!--", "<script"):
        assert marker not in module
    header = module.splitlines()[0]
    assert header.startswith('// WebNN graph "graph nl\\nglobalThis') and "\\u2028" in header
    page = (tmp_path / "m.html").read_text()
    assert page.count("<script") == 1 and page.count("</script") == 1
    assert "&lt;/script&gt;&lt;script&gt;globalThis.CANARY=&#x27;script&#x27;" in page


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_imports_the_module_without_running_any_name(tmp_path):
    write_js(_graph(), tmp_path / "m.js")
    (tmp_path / "m.mjs").write_bytes((tmp_path / "m.js").read_bytes())
    check = subprocess.run(["node", "--check", str(tmp_path / "m.mjs")], capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0, check.stderr
    (tmp_path / "run.mjs").write_text(
        "const m = await import('./m.mjs');\n"
        "console.log(JSON.stringify({canary: globalThis.CANARY ?? null, "
        "inputs: Object.keys(m.inputs), outputs: Object.keys(m.outputs), "
        "exports: Object.keys(m).sort()}));\n")
    run = subprocess.run(["node", str(tmp_path / "run.mjs")], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["canary"] is None
    assert seen["inputs"] == HOSTILE  # the exact names, lone surrogates included
    assert seen["outputs"] == [n + " out" for n in HOSTILE]
    assert "buildGraph" in seen["exports"] and "WEIGHTS_FILE" in seen["exports"]


def test_chromium_builds_and_runs_it_and_the_page_shows_the_names_as_text(browser_limits,
                                                                         tmp_path):
    from converter.runtimes.chromium import browser_page

    write_js(_graph(), tmp_path / "m.js")
    page, url = browser_page(tmp_path)
    try:
        page.goto(url + "m.html")
        page.click("#run")
        page.wait_for_function("window.webnnResult !== undefined", timeout=60_000)
        seen = page.evaluate("""() => ({
            canary: globalThis.CANARY ?? null,
            result: window.webnnResult,
            scripts: document.querySelectorAll('script').length,
            heading: document.querySelector('h1 code').textContent,
            inputRows: Array.from(document.querySelectorAll('#inputs tr'), (tr) =>
                tr.cells[0].textContent).slice(1),
            outputRows: Array.from(document.querySelectorAll('#outputs tr'), (tr) =>
                tr.cells[0].textContent).slice(1),
        })""")
    finally:
        page.close()
    assert seen["canary"] is None and seen["scripts"] == 1
    assert "error" not in seen["result"], seen["result"]
    assert seen["inputRows"] == HOSTILE  # set as textContent from the module: exact
    assert seen["outputRows"] == [n + " out" for n in HOSTILE]
    assert sorted(seen["result"]["outputs"]) == sorted(n + " out" for n in HOSTILE)
    for i, name in enumerate(HOSTILE):  # relu(0..1 random) + [i, -i]: the graph really ran
        first = [float(v) for v in seen["result"]["outputs"][name + " out"]["first"]]
        assert 0 <= first[0] - i <= 1 and -i <= first[1] + 0 <= 1 - i, (name, first)
    # The heading is HTML text: UTF-8 has no lone surrogates (the escaper writes U+FFFD), and
    # the parser turns CR into LF and drops NUL in element content.
    shown = [n.replace("\ud800", "\ufffd").replace("\udfff", "\ufffd") for n in HOSTILE]
    want = ("graph " + " ".join(shown)).replace("\r", "\n").replace("\x00", "")
    assert seen["heading"] == want


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_second_output_name_and_state_names_stay_data(tmp_path):
    """One operand under two hostile output names (the second goes through an identity whose
    variable is made from the name), and state pairs named with them."""
    b = GraphBuilder("twice")
    outputs = {}
    for i, name in enumerate(HOSTILE):
        state = b.input(name + " state", "float32", [2])
        y = b.add(state, b.input(name, "float32", [2]), name=f"add{i}")
        outputs[name + " next"] = y
        outputs[name + " again"] = y
    graph = b.build(outputs)
    for name in HOSTILE:
        graph.declare_state(name + " state", name + " next", initial=np.ones(2, np.float32))
    write_js(graph, tmp_path / "m.js")
    (tmp_path / "m.mjs").write_bytes((tmp_path / "m.js").read_bytes())
    (tmp_path / "run.mjs").write_text(
        "const m = await import('./m.mjs');\n"
        "console.log(JSON.stringify({canary: globalThis.CANARY ?? null, state: m.state}));\n")
    run = subprocess.run(["node", str(tmp_path / "run.mjs")], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["canary"] is None
    assert [(s["input"], s["output"]) for s in seen["state"]] == \
        [(n + " state", n + " next") for n in HOSTILE]
    assert all(isinstance(s["initial"], str) for s in seen["state"])
