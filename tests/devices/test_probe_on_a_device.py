"""`probe --runtime device:NAME` through the served page: headless Chromium standing in for a
device gives, case by case, the verdicts `--runtime chromium` gives on the same browser, and a
target that `check` agrees with build() on. A device that hangs on a case or whose page goes
away on one (a fake device here: a real page cannot be made to) has that case recorded, and
the probe goes on."""
from __future__ import annotations

import asyncio
import json
import threading

import pytest
from click.testing import CliRunner

from cli.main import main
from converter.devices import client
from converter.errors import ConverterError
from converter.probe import probed_target, run_probe
from converter.probe.run import case_of
from converter.probe.target import write_target
from converter.targets import load_target
from converter.targets.check import check

from .serving import Served, registration

OPS = ["pad", "clamp", "add", "conv2d", "constant"]


def _verdicts(probe):
    return [(r.name, r.listed, r.built, r.computed) for r in probe.results]


@pytest.mark.browser
def test_the_device_probe_gives_the_chromium_probes_verdicts_and_target(alpha, tmp_path):
    lines = []
    on_device = run_probe("device:alpha", OPS, say=lines.append)
    local = run_probe("chromium", OPS)
    assert _verdicts(on_device) == _verdicts(local)
    assert on_device.limits == local.limits and on_device.skipped == local.skipped
    assert on_device.browser == "device 'alpha' (HeadlessChrome 153 on Linux, deviceType cpu)"
    assert lines == []  # nothing to wait for
    mine, theirs = probed_target(on_device), probed_target(local)
    ext, their_ext = mine.pop("webnn-converter"), theirs.pop("webnn-converter")
    assert mine == theirs  # the narrowed limits
    assert ext["name"] == "alpha-cpu-probed"
    for key in ("refusedDataTypes", "refusedOptions", "maxConstantByteLength", "notes"):
        assert ext.get(key) == their_ext.get(key), key
    assert ext["refusedOptions"] == {"pad": {"mode": ["edge"]}}
    assert ext["maxConstantByteLength"] == 128 * 2**20
    # check on the device's target agrees with build() on every case
    target = load_target(write_target({**mine, "webnn-converter": ext}, tmp_path / "t.json"))
    disagreeing = [r.name for r in on_device.results
                   if (not check(case_of(r).graph, target)) != r.built]
    assert not disagreeing, disagreeing
    refused = {r.name for r in on_device.results if r.listed and not r.built}
    assert {"pad float32 mode=edge", "constant float32 of 134217732 bytes"} <= refused
    assert all(r.error.startswith("WebNN on device 'alpha'") for r in on_device.results
               if not r.built)  # every refusal is the device's own word


@pytest.mark.browser
def test_the_cli_probes_a_device_and_writes_its_target(alpha, tmp_path, monkeypatch):
    monkeypatch.setenv("WEBNN_CONVERTER_CACHE", str(alpha.cache))
    client.use_server(None)  # the record `serve` wrote
    out = tmp_path / "alpha.json"
    result = CliRunner().invoke(main, ["probe", "--runtime", "device:alpha:cpu", "--op", "pad",
                                       "-o", str(out)])
    client.use_server(alpha.url)
    assert result.exit_code == 0, result.output
    assert "pad float32 mode=edge: refused by build(): WebNN on device 'alpha'" in result.output
    doc = json.loads(out.read_text())["webnn-converter"]
    assert doc["name"] == "alpha-cpu-probed"
    assert doc["refusedOptions"] == {"pad": {"mode": ["edge"]}}
    assert alpha.wait_for("sent to device 'alpha' (cpu)")


# -- a device that hangs on one case and goes away on others -----------------------------------
class UnrulyDevice:
    """A websocket client registering as `fake` with the shipped chromium-litert limits, taking
    jobs concurrently: it refuses every graph at build (its answer), except that it never
    answers clamp_int32, and closes its connection (as a crashed page does) on clamp_uint32
    every time and on clamp_int8 the first time, then connects again under the same name."""

    HANG, CRASH, CRASH_ONCE = "clamp_int32", "clamp_uint32", "clamp_int8"

    def __init__(self, server: Served, comes_back: bool = True):
        self.server = server
        self.comes_back = comes_back
        self.seen: list[str] = []
        self.stopping = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_until_complete,
                                        args=(self._run(),), daemon=True)
        self._ready = threading.Event()
        self._thread.start()
        assert self._ready.wait(60), "the fake device did not register"

    async def _run(self) -> None:
        import aiohttp

        url = self.server.url.replace("http://", "ws://", 1) + "ws?name=fake"
        async with aiohttp.ClientSession() as session:
            while not self.stopping:
                await self._gone(session)
                async with session.ws_connect(url) as ws:
                    await ws.send_str(json.dumps(registration()))
                    assert json.loads((await ws.receive()).data)["name"] == "fake"
                    self._ready.set()
                    tasks = []
                    async for message in ws:
                        if message.type != aiohttp.WSMsgType.TEXT:
                            break
                        tasks.append(asyncio.ensure_future(
                            self._answer(json.loads(message.data), ws, session)))
                    for task in tasks:
                        task.cancel()

    async def _gone(self, session) -> None:
        """Until the server has let go of the last connection's name."""
        while True:
            async with session.get(self.server.url + "api/devices") as response:
                if all(d["name"] != "fake" for d in await response.json()):
                    return
            await asyncio.sleep(0.1)

    async def _answer(self, job, ws, session) -> None:
        async with session.get(self.server.origin.rstrip("/") + job["module"]) as response:
            first = (await response.text()).splitlines()[0]
        name = first.split('"')[1]  # // WebNN graph "NAME", written by webnn-converter.
        self.seen.append(name)
        if name == self.HANG:
            await asyncio.sleep(3600)
        if name == self.CRASH or (name == self.CRASH_ONCE and self.seen.count(name) == 1):
            self.stopping |= not self.comes_back
            await ws.close()
            return
        await ws.send_str(json.dumps({"type": "result", "id": job["id"], "error": {
            "stage": "build", "name": "NotSupportedError", "message": f"fake refuses {name}"}}))

    def close(self) -> None:
        self.stopping = True
        self._thread.join(0)  # a daemon: it ends with the server


def test_a_hung_case_and_a_crashing_case_are_recorded_and_the_probe_goes_on(tmp_path):
    server = Served(tmp_path / "cache", "--no-qr", "--job-timeout", "2")
    device = None
    try:
        device = UnrulyDevice(server)
        client.use_server(server.url)
        lines = []
        probe = run_probe("device:fake", ["clamp"], say=lines.append)
        planned = [r for r in probe.results if r.rank is None]
        by_type = {r.data_type: r for r in planned}
        assert len(by_type) == len(planned) >= 8  # every case has its verdict, once
        assert any(r.rank is not None for r in probe.results)  # and the probe went on
        hung, crashed, once = by_type["int32"], by_type["uint32"], by_type["int8"]
        assert not hung.built and "gave no result in 2 s" in hung.error
        assert not crashed.built and crashed.error == \
            "the page on device 'fake' went away while running it, twice (a renderer crash)"
        # the case in flight with the crash, run again alone, has its own verdict
        assert once.error.endswith("failed at build: NotSupportedError: fake refuses clamp_int8")
        for data_type, result in by_type.items():
            if data_type not in ("int32", "uint32"):
                assert result.error.endswith(f"fake refuses clamp_{data_type}"), result.error
        assert device.seen.count("clamp_uint32") == 2 and device.seen.count("clamp_int8") >= 2
        # what it waited for, if the page was not back at once
        assert all(line.startswith("device 'fake' ") for line in lines), lines
    finally:
        client.use_server(None)
        if device is not None:
            device.close()
        server.stop()


def test_a_device_that_does_not_come_back_stops_the_probe_in_one_line(tmp_path, monkeypatch):
    from converter.probe import on_device

    monkeypatch.setattr(on_device, "RECONNECT_SECONDS", 1.0)
    server = Served(tmp_path / "cache", "--no-qr", "--job-timeout", "2")
    device = None
    try:
        device = UnrulyDevice(server, comes_back=False)
        client.use_server(server.url)
        with pytest.raises(ConverterError) as caught:
            run_probe("device:fake", ["clamp"])
        assert caught.value.line() == (
            "device 'fake' disconnected during the probe and did not come back in 1 s; reload "
            "the page on it (with ?name=fake) and probe again")
    finally:
        client.use_server(None)
        if device is not None:
            device.close()
        server.stop()
