"""Two real devices: headless Chromium pages that open the page `webnn-convert serve` prints,
named alpha and beta. They register (their opSupportLimits() saved as target files that
`check --target` takes), and `verify/run --runtime device:NAME` run the graph in them, judged
as the local runtimes are: the same numbers as `--runtime chromium`, the device named."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter.devices import client

from .serving import Served

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "models" / "tiny_cnn.onnx"
NAMES = ("alpha", "beta")


@pytest.fixture(scope="module")
def devices(browser, tmp_path_factory):
    """A server and two pages registered on it as alpha and beta."""
    server = Served(tmp_path_factory.mktemp("cache"), "--no-qr")
    pages = []
    try:
        for name in NAMES:
            page = browser[0].new_page()
            pages.append(page)
            page.goto(f"{server.url}?name={name}")
            # Waiting on the page's text, not a script: its CSP allows no eval.
            page.locator("#status", has_text="ready").wait_for(timeout=120_000)
            assert page.text_content("#name") == name
        yield server, pages
    finally:
        for page in pages:
            page.close()
        server.stop()


@pytest.fixture
def use_it(devices, monkeypatch):
    server = devices[0]
    monkeypatch.setenv("WEBNN_CONVERTER_CACHE", str(server.cache))
    client.use_server(None)  # the record `serve` wrote
    yield server
    client.use_server(None)


def _cli(*args):
    return CliRunner().invoke(main, list(map(str, args)))


@pytest.mark.parametrize("name", NAMES)
def test_registration(use_it, browser, name):
    listed = {d["name"]: d for d in client.devices()}
    assert set(listed) == set(NAMES)
    device = listed[name]
    assert device["browser"] == "HeadlessChrome 153" and device["platform"] == "Linux"
    assert "cpu" in device["deviceTypes"]
    assert use_it.wait_for(f"device '{name}': HeadlessChrome 153 on Linux; deviceTypes cpu")
    target = Path(device["targets"]["cpu"])
    saved = json.loads(target.read_text())
    extension = saved.pop("webnn-converter")
    assert saved == browser[1]  # what the browser says of itself, as the page reported it
    assert extension["name"] == f"{name}-cpu"
    result = _cli("check", TINY, "--target", target)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"{TINY}: fits {name}-cpu after conversion (11 operations)"


@pytest.mark.parametrize("name", NAMES)
def test_verify_on_a_device_as_on_local_chromium(use_it, name):
    on_device = _cli("verify", TINY, "--runtime", f"device:{name}", "--json",
                     "--oracle", "always")
    local = _cli("verify", TINY, "--runtime", "chromium", "--json", "--oracle", "always")
    assert on_device.exit_code == 0 and local.exit_code == 0, on_device.output + local.output
    mine, theirs = json.loads(on_device.output), json.loads(local.output)
    assert mine["graphRuntime"] == \
        f"device '{name}' (HeadlessChrome 153 on Linux, deviceType cpu)"
    assert theirs["graphRuntime"] == "chromium"
    assert mine["passed"] and mine["outputs"] and mine["oracle"] == theirs["oracle"]
    # The same browser build on the same inputs: the same numbers, to the last bit.
    assert mine["outputs"] == theirs["outputs"]
    assert mine["outputs"][0]["maxAbs"] < 1e-6
    assert use_it.wait_for(f"sent to device '{name}' (cpu)")


def test_verify_names_the_device_in_the_table(use_it):
    result = _cli("verify", TINY, "--runtime", "device:beta:cpu")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == \
        "device 'beta' (HeadlessChrome 153 on Linux, deviceType cpu) vs onnxruntime"
    assert result.output.splitlines()[-1] == "pass"


def test_run_on_a_device_gives_chromiums_outputs(use_it, tmp_path):
    graph = converter.load(TINY)
    feeds = {"image": np.random.default_rng(3).random((1, 3, 32, 32), np.float32)}
    outputs, ran_on = client.run_on_device(graph, feeds, "device:alpha")
    assert ran_on == "device 'alpha' (HeadlessChrome 153 on Linux, deviceType cpu)"
    local = converter.run(graph, feeds, runtime="chromium")
    assert np.array_equal(outputs["probabilities"], local["probabilities"])
    assert abs(float(outputs["probabilities"].sum()) - 1.0) < 1e-5  # a softmax
    result = _cli("run", TINY, "--runtime", "device:alpha", "--output-dir", tmp_path)
    assert result.exit_code == 0, result.output
    written = np.load(tmp_path / "probabilities.npy")
    seeded = converter.run(graph, {"image": np.random.default_rng(0).random(
        (1, 3, 32, 32), dtype=np.float64).astype(np.float32)}, runtime="chromium")
    assert np.array_equal(written, seeded["probabilities"])


def test_an_unknown_device_name_lists_the_connected_ones(use_it):
    result = _cli("verify", TINY, "--runtime", "device:gamma")
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert lines[0].endswith("no device named 'gamma' is connected; connected: alpha, beta")
    result = _cli("verify", TINY, "--runtime", "device")
    assert result.exit_code == 2
    assert "2 devices are connected, name one" in result.output


def test_convert_verify_on_a_device(use_it, tmp_path):
    out = tmp_path / "tiny.webnn"
    result = _cli("convert", TINY, "-o", out, "--verify", "--runtime", "device:beta", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["graphRuntime"] == "device 'beta' (HeadlessChrome 153 on Linux, deviceType cpu)"
    assert report["passed"] and report["outputs"][0]["maxAbs"] < 1e-6
    assert out.is_file()


def test_a_page_opened_over_the_network_says_it_needs_a_secure_context(browser, tmp_path):
    from cli.commands.serve import _shown_host

    address = _shown_host("0.0.0.0")
    server = Served(tmp_path, "--no-qr", "--host", "0.0.0.0", "--no-tls")
    page = None
    try:
        assert server.url.startswith(f"http://{address}:")  # the address a device types
        if address == "127.0.0.1":
            pytest.skip("this machine has no network address but loopback")
        page = browser[0].new_page()
        page.goto(f"{server.url}?name=lan")
        page.locator("#status", has_text="ready").wait_for(timeout=120_000)
        assert page.text_content("#status") == "ready (no deviceType gave a context)"
        line = server.wait_for("device 'lan'")
        # (navigator.userAgentData is for secure contexts too: the platform is navigator's)
        assert line.startswith("device 'lan': HeadlessChrome 153 on Linux")
        assert line.endswith("; deviceTypes no deviceType gave a context (cpu: not a secure "
                             "context: WebNN needs https or localhost); registered")
        result = _cli("verify", TINY, "--runtime", "device:lan", "--server", server.url)
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert result.output.strip().endswith(
            "device 'lan' has no WebNN context (not a secure context: WebNN needs https or "
            "localhost); its deviceTypes: none")
    finally:
        if page is not None:
            page.close()
        server.stop()
        client.use_server(None)


def test_a_zoo_over_two_devices_and_local_chromium(use_it, tmp_path):
    """`--runtime device` is every connected device; `--runtime chromium` beside it adds this
    machine's browser as one more column (and only then)."""
    import shutil

    shutil.copy(TINY, tmp_path / "tiny_cnn.onnx")
    manifest = tmp_path / "zoo.json"
    manifest.write_text(json.dumps({"models": [{"id": "tiny_cnn", "path": "tiny_cnn.onnx"}]}))
    result = _cli("zoo", manifest, "--runtime", "device", "--runtime", "chromium", "--json",
                  "--results", tmp_path / "results.jsonl", "--report", tmp_path / "zoo.html",
                  "--report", tmp_path / "zoo.md")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    runtimes = ["device:alpha", "device:beta", "chromium"]
    assert report["options"]["runtimes"] == runtimes
    model = report["models"][0]
    assert model["status"] == "verified"
    parity = model["targets"][0]["parity"]
    assert list(parity) == runtimes and all(parity[r]["passed"] for r in runtimes)
    # one browser build: each device's numbers are local chromium's
    assert parity["device:alpha"]["outputs"] == parity["chromium"]["outputs"]
    assert parity["device:beta"]["outputs"] == parity["chromium"]["outputs"]
    assert all(model["targets"][0]["times"][f"run:{r}"] > 0 for r in runtimes)
    cells = {c["runtime"]: c for c in model["cells"]}
    assert list(cells) == runtimes
    for name in ("alpha", "beta"):  # what each device did, as its page measured it
        done = parity[f"device:{name}"]["device"]
        assert done["device"] == name and done["deviceType"] == "cpu"
        assert done["built"] and done["ran"] and done["buildMs"] > 0 and done["runMs"] > 0
        cell = cells[f"device:{name}"]
        assert cell["verdict"] == "verified" and cell["built"] and cell["ran"]
        assert (cell["buildMs"], cell["runMs"]) == (done["buildMs"], done["runMs"])
        assert cell["device"] == {"name": name, "browser": "HeadlessChrome 153",
                                  "platform": "Linux", "deviceType": "cpu",
                                  "userAgent": cell["device"]["userAgent"]}
    assert "device" not in parity["chromium"]
    local = cells["chromium"]  # this machine's browser, measured by its page as a device's
    assert local["verdict"] == "verified" and local["built"] is True and local["ran"] is True
    assert local["buildMs"] > 0 and local["runMs"] > 0
    assert parity["chromium"]["pageTimes"] == {"buildMs": local["buildMs"],
                                               "runMs": local["runMs"]}
    assert cells["chromium"]["device"]["browser"] == "Chromium (this machine)"
    page = (tmp_path / "zoo.html").read_text()
    for runtime in runtimes:  # the model x device matrix: a column per device
        assert f"<th data-sort>worst on {runtime}</th>" in page
        assert f"<th title=" in page and f">{runtime}<small>" in page
    assert page.count(" ms, ran in ") == 2 and page.count("built in ") == 5
    markdown = (tmp_path / "zoo.md").read_text()
    assert "| model | `device:alpha` | `device:beta` | `chromium` |" in markdown


def test_zoo_device_alone_leaves_local_chromium_out(use_it, tmp_path):
    import shutil

    shutil.copy(TINY, tmp_path / "tiny_cnn.onnx")
    manifest = tmp_path / "zoo.json"
    manifest.write_text(json.dumps({"models": [{"id": "tiny_cnn", "path": "tiny_cnn.onnx"}]}))
    result = _cli("zoo", manifest, "--runtime", "device", "--results",
                  tmp_path / "results.jsonl", "--report", tmp_path / "report.json")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["options"]["runtimes"] == ["device:alpha", "device:beta"]
    assert [c["runtime"] for c in report["models"][0]["cells"]] == report["options"]["runtimes"]
    # each device's column in the summary
    assert result.output.splitlines()[-2:] == ["  on device:alpha: 1 verified",
                                               "  on device:beta: 1 verified"]


def test_zoo_on_a_device_not_connected_is_refused_before_anything_runs(use_it, tmp_path):
    import shutil

    shutil.copy(TINY, tmp_path / "tiny_cnn.onnx")
    manifest = tmp_path / "zoo.json"
    manifest.write_text(json.dumps({"models": [{"id": "tiny_cnn", "path": "tiny_cnn.onnx"}]}))
    results = tmp_path / "results.jsonl"
    results.write_text("kept\n")
    result = _cli("zoo", manifest, "--runtime", "device:gamma", "--results", results)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert lines[0].endswith("no device named 'gamma' is connected; connected: alpha, beta")
    assert results.read_text() == "kept\n"  # nothing written
