"""`webnn-convert serve` without a browser: the token on every URL, bounded uploads, hostile
registrations and device results, loopback only, the record of the last server. The devices
here are fake (websocket clients); tests/devices/test_devices_in_chromium.py opens the page in
a real browser."""
from __future__ import annotations

import base64
import json
import stat
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter.devices import client
from converter.devices.protocol import pack
from converter.errors import ConverterError

from .serving import FakeDevice, Served, listening, registration

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "models" / "tiny_cnn.onnx"
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = Served(tmp_path_factory.mktemp("cache"), "--max-upload-mb", "1")
    yield server
    server.stop()


@pytest.fixture
def use_it(served, monkeypatch):
    monkeypatch.setenv("WEBNN_CONVERTER_CACHE", str(served.cache))
    client.use_server(served.url)
    yield served
    client.use_server(None)


def _http(url: str, body: bytes | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET")
    try:
        with _DIRECT.open(request, timeout=120) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _cli(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def _one_line(result, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def test_first_line_is_the_url_then_a_qr_code(tmp_path):
    server = Served(tmp_path)
    try:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/")
        token = server.url.rsplit("/", 2)[1]
        assert len(token) >= 22
        qr = server.lines[:server.lines.index(next(l for l in server.lines if "Ctrl-C" in l))]
        # A QR code of half blocks: at least 21 modules + quiet zone, two rows a line.
        assert len(qr) >= 14 and all(set(line) <= set(" █▀▄") for line in qr if line)
        record = tmp_path / "devices" / "server.json"
        assert json.loads(record.read_text())["url"] == server.url
        assert stat.S_IMODE(record.stat().st_mode) == 0o600  # the token is in it
    finally:
        assert server.stop() != 0 or True
    assert not record.exists()  # removed when its server stops


def test_listens_on_loopback_only(served):
    port = int(served.url.split(":")[2].split("/")[0])
    assert listening(port) == ["0100007F"]  # 127.0.0.1, and nothing else


@pytest.mark.parametrize("path", ["", "api/devices", "device.js", "base64.js", "ws",
                                  "jobs/1/model.js", "../api/devices"])
@pytest.mark.parametrize("token", ["", "wrong", "SAME_LENGTH", "upper"])
def test_every_url_needs_the_token(served, path, token):
    real = served.url.rsplit("/", 2)[1]
    given = {"SAME_LENGTH": "A" * len(real), "upper": real.upper(), "": "", "wrong": "wrong"}
    status, text = _http(f"{served.origin}{given[token]}/{path}" if token else
                         f"{served.origin}{path}")
    assert status == 403
    assert text.count("\n") == 1 and "token" in text and real not in text


def test_a_post_without_the_token_is_refused_before_its_body_is_read(served):
    status, text = _http(f"{served.origin}nope/api/run", b"x" * (3 << 20))
    assert status == 403 and text.count("\n") == 1


def test_the_page_is_static_and_runs_only_its_own_script(served):
    with _DIRECT.open(served.url, timeout=60) as response:
        page = response.read().decode()
        policy = response.headers["Content-Security-Policy"]
        assert response.headers["Referrer-Policy"] == "no-referrer"
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert "unsafe" not in policy
    assert '<script type="module" src="device.js"></script>' in page and page.count("<script") == 1


def test_the_page_and_the_chromium_runner_share_one_base64_encoder(served):
    """converter/emit/base64.js is the one source: the device page's script and the chromium
    runtime's runner import it (the browser tests run both), and the server serves it under
    the token with the page's policy."""
    shared = ROOT / "converter" / "emit" / "base64.js"
    with _DIRECT.open(served.url + "base64.js", timeout=60) as response:
        assert response.read() == shared.read_bytes()
        assert response.headers["Content-Type"].startswith("text/javascript")
        assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    for script in (ROOT / "converter" / "devices" / "page" / "device.js",
                   ROOT / "converter" / "runtimes" / "chromium_runner.js"):
        text = script.read_text()
        assert 'import {base64} from "./base64.js";' in text and "function base64" not in text


def test_an_upload_over_the_bound_is_refused(use_it):
    body = pack({"device": None, "deviceType": None, "inputs": {}},
                {"model.webnn": b"", "model.manifest.json": b"", "model.weights": b"\0" * (2 << 20)})
    status, text = _http(use_it.url + "api/run", body)
    assert status == 413 and text.strip().count("\n") == 0
    # and through the client: a graph whose weights exceed the bound, one line
    b = converter.GraphBuilder("big")
    x = b.input("x", "float32", [1, 300_000])
    graph = b.build({"y": b.add(x, b.constant(np.ones((1, 300_000), np.float32), name="w"))})
    with pytest.raises(ConverterError, match=r"refused it \(413\)") as caught:
        client.run_on_device(graph, {"x": np.zeros((1, 300_000), np.float32)}, "device")
    assert "\n" not in caught.value.line() and use_it.url.rsplit("/", 2)[1] not in caught.value.line()


@pytest.mark.parametrize("body", [b"", b"not a job", b"webnn-device-job 1\n\xff\xff\xff\xff{}",
                                  pack({"inputs": {}}, {"../model.webnn": b""})])
def test_a_malformed_upload_gets_one_line(use_it, body):
    status, text = _http(use_it.url + "api/run", body)
    assert status == 400 and text.count("\n") == 1


def test_no_device_connected_lists_none(use_it):
    line = _one_line(_cli("verify", TINY, "--runtime", "device:gamma", "--server", use_it.url))
    assert line.endswith("no device named 'gamma' is connected; connected: none")


def test_no_server_running_says_how_to_start_one(tmp_path, monkeypatch):
    monkeypatch.setenv("WEBNN_CONVERTER_CACHE", str(tmp_path))
    client.use_server(None)
    line = _one_line(_cli("verify", TINY, "--runtime", "device"))
    assert line == "error: no device server is running; start one with `webnn-convert serve` " \
                   "(or give --server URL)"
    # a record left by a killed server: nothing answers on its port
    (tmp_path / "devices").mkdir()
    (tmp_path / "devices" / "server.json").write_text(
        json.dumps({"url": "http://127.0.0.1:9/" + "t" * 22 + "/"}))
    result = _cli("run", TINY, "--runtime", "device:x", "--output-dir", tmp_path / "o")
    assert result.exit_code == 2 and "Traceback" not in result.output
    # (run names its seeded input on stderr first)
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert "no device server answers" in errors[0] and "webnn-convert serve" in errors[0]
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:1/" + "t" * 22 + "/", "http://127.0.0.1:1/",
                                 "http://127.0.0.1:1/short/", "http://127.0.0.1:1/a/b/"])
def test_a_bad_server_url_gets_one_line(url):
    line = _one_line(_cli("verify", TINY, "--runtime", "device", "--server", url))
    assert "--server" in line


@pytest.mark.parametrize("change", [
    {"type": "hello"}, {"userAgent": 5}, {"platform": "x" * 600}, {"contexts": []},
    {"contexts": {"tpu": {}}}, {"contexts": {"cpu": {"add": "everything"}}},
    {"refused": {"cpu": 7}}, {"refused": {"<script>": "x"}}])
def test_a_hostile_registration_is_refused(use_it, change):
    device = FakeDevice(use_it.url, "hostile", registration(**change))
    assert device.reply["type"] == "refused" and "\n" not in device.reply["reason"]
    assert "hostile" not in [d["name"] for d in client.devices()]
    assert not list((use_it.cache / "devices").glob("targets/hostile*"))


@pytest.mark.parametrize("name", ["<script>", "a" * 41, "-x", "a/b", "..", "ä"])
def test_a_hostile_page_name_is_refused(use_it, name):
    from urllib.parse import quote

    device = FakeDevice(use_it.url, quote(name), registration())
    assert device.reply["type"] == "refused" and "is not a device name" in device.reply["reason"]


async def _wrong_size(job, session, base):
    return {"type": "result", "id": job["id"], "outputs": {"y": base64.b64encode(b"1234").decode()}}


async def _fails(job, session, base):
    # The job's module is the server's own emission of the uploaded graph.
    async with session.get(base.rsplit("/", 2)[0] + job["module"]) as response:
        job["fetched"] = (response.status, await response.text())
    return {"type": "result", "id": job["id"],
            "error": {"stage": "build", "name": "TypeError", "message": "no\nthanks"}}


def _add_graph():
    b = converter.GraphBuilder("g")
    x = b.input("x", "float32", [2, 3])
    return b.build({"y": b.add(x, x)})


@pytest.mark.parametrize("answer, message", [
    (_wrong_size, r"device 'fake' \(HeadlessChrome 153 on Linux, deviceType cpu\) sent output "
                  r"'y' as 4 bytes, the graph gives f32\[2, 3\]"),
    (_fails, r"WebNN on device 'fake' \(HeadlessChrome 153 on Linux, deviceType cpu\) failed at "
             r"build: TypeError: no thanks")])
def test_a_device_result_is_checked(use_it, answer, message):
    device = FakeDevice(use_it.url, "fake", registration(), answer)
    try:
        assert device.reply == {"type": "registered", "name": "fake", "deviceTypes": ["cpu"]}
        with pytest.raises(ConverterError, match=message) as caught:
            client.run_on_device(_add_graph(), {"x": np.ones((2, 3), np.float32)}, "device:fake")
        assert "\n" not in caught.value.line()
        job = device.jobs[0]
        assert job["deviceType"] == "cpu" and set(job["inputs"]) == {"x"}
        if "fetched" in job:
            status, module = job["fetched"]
            assert status == 200 and "export async function buildGraph" in module
        # the job's files are gone once it is answered
        status, _ = _http(use_it.origin.rstrip("/") + job["module"])
        assert status == 404
    finally:
        device.close()


def test_a_registered_device_is_listed_and_its_limits_saved(use_it):
    device = FakeDevice(use_it.url, "listed", registration())
    try:
        listed = {d["name"]: d for d in client.devices()}["listed"]
        assert listed["browser"] == "HeadlessChrome 153" and listed["deviceTypes"] == ["cpu"]
        target = Path(listed["targets"]["cpu"])
        assert target == use_it.cache / "devices" / "targets" / "listed-cpu.opSupportLimits.json"
        result = _cli("check", TINY, "--target", target)
        assert result.exit_code == 0 and "fits listed-cpu" in result.output, result.output
        # a second page asking for the same name gets another
        twin = FakeDevice(use_it.url, "listed", registration())
        assert twin.reply["name"] == "listed-2"
        twin.close()
    finally:
        device.close()
    use_it.wait_for("device 'listed' disconnected")
    assert "listed" not in [d["name"] for d in client.devices()]


async def _unhashable_id(job, session, base):
    return {"type": "result", "id": [job["id"]], "outputs": {}}


def test_a_device_that_answers_nonsense_is_disconnected(use_it):
    device = FakeDevice(use_it.url, "nonsense", registration(), _unhashable_id)
    try:
        with pytest.raises(ConverterError, match="device 'nonsense' disconnected while running"):
            client.run_on_device(_add_graph(), {"x": np.ones((2, 3), np.float32)},
                                 "device:nonsense")
        assert use_it.wait_for("device 'nonsense' sent what is not a result (a result without "
                               "a job number); disconnected")
    finally:
        device.close()
    assert use_it.proc.poll() is None  # the server runs on


def test_a_device_type_the_device_lacks_gets_one_line(use_it):
    device = FakeDevice(use_it.url, "cpuonly",
                        registration(refused={"gpu": "NotSupportedError: no GPU here"}))
    try:
        line = _one_line(_cli("verify", TINY, "--runtime", "device:cpuonly:gpu"))
        assert line.endswith("device 'cpuonly' has no gpu context (NotSupportedError: no GPU "
                             "here); its deviceTypes: cpu")
        assert device.jobs == []
    finally:
        device.close()


def test_a_zoo_over_devices_needs_one_connected(use_it, tmp_path):
    manifest = tmp_path / "zoo.json"
    manifest.write_text(json.dumps({"models": [{"id": "m", "path": "m.onnx"}]}))
    for _ in range(600):  # the fake devices of earlier tests are gone (their close is seen)
        if not client.devices():
            break
        time.sleep(0.1)
    line = _one_line(_cli("zoo", manifest, "--runtime", "device", "--results", tmp_path / "r.jsonl"))
    assert line == "error: no device is connected to the device server; open the URL " \
                   "`webnn-convert serve` printed on each device"
    assert not (tmp_path / "r.jsonl").exists()


def test_serve_runs_its_loop_beside_one_already_running():
    """In a thread that already runs an event loop (a notebook; Playwright's sync API leaves
    one in a test worker) asyncio.run refuses to nest: serve's loop then runs in a thread of
    its own, and what it raises comes back (a port in use stays its one line, not an internal
    error). Checked in a fresh thread, where asyncio.run may start the outer loop."""
    import asyncio
    import threading

    from cli.commands.serve import _run

    seen = []

    async def inner():
        seen.append(threading.current_thread().name)

    async def fails():
        raise OSError("address in use")

    async def outer():
        _run(inner)
        try:
            _run(fails)
        except OSError as error:
            seen.append(str(error))

    worker = threading.Thread(target=lambda: asyncio.run(outer()), name="outer")
    worker.start()
    worker.join()
    assert seen == ["webnn-convert serve", "address in use"]


def test_a_port_in_use_gets_one_line(served, tmp_path):
    port = served.url.split(":")[2].split("/")[0]
    result = _cli("serve", "--port", port, "--no-qr")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.strip() == f"error: 127.0.0.1:{port}: cannot listen there (Address " \
                                    f"already in use); choose another --port (0: any free one) " \
                                    f"or --host"


def test_a_devices_limits_are_given_to_a_probe_as_it_registered_them(use_it):
    message = registration()
    device = FakeDevice(use_it.url, "limited", message)
    try:
        described, kind, limits = client.device_limits("device:limited")
        assert (described["name"], kind, limits) == ("limited", "cpu", message["contexts"]["cpu"])
        with pytest.raises(ConverterError) as caught:
            client.device_limits("device:limited:gpu")
        assert caught.value.line().endswith("the device server refused it (404): device "
                                            "'limited' has no 'gpu' context; its deviceTypes: cpu")
        with pytest.raises(ConverterError) as caught:
            client.device_limits("device:nobody")
        assert "no device named 'nobody' is connected" in caught.value.line()
        # a name in the path is checked as any device name is
        status, text = _http(use_it.url + "api/limits/%3Cb%3E/cpu")
        assert status == 400 and "is not a device name" in text
    finally:
        device.close()
