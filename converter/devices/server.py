"""The device server (aiohttp): the page devices open, their connections, and the jobs sent
to them.

Every URL starts with the token (`http[s]://HOST:PORT/TOKEN/`): a request without it, or with
another, gets 403 and one line, whatever path it names (`_guard`, compared in constant time).
Under it:

    /TOKEN/                 the device page (static: nothing a model or device says is in it)
    /TOKEN/device.js        the page's script
    /TOKEN/base64.js        the encoder it imports (converter/emit/base64.js, shared with the
                            chromium runtime's page)
    /TOKEN/ws?name=NAME     a device's connection: it registers, then takes jobs
    /TOKEN/api/devices      the connected devices, as JSON
    /TOKEN/api/limits/NAME/TYPE  that device's opSupportLimits() for that deviceType (probe)
    /TOKEN/api/run          POST a job (protocol.pack): the reply is the device's outputs
    /TOKEN/jobs/ID/FILE     a job's module, weights and inputs, fetched by the device

A job's graph is read by the converter's own loader (every check a hostile graph file meets on
the command line) and emitted as JavaScript here, by `write_js`: the only script a page ever
imports is a module this server wrote. Bodies, websocket messages and device results are
bounded by `max_upload`; the server listens on the host it is given and nothing else, over
TLS when it is given an SSL context (tls.py: a device's browser gives a page WebNN only in a
secure context, which an http page at a LAN address is not).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import re
import shutil
import ssl
import tempfile
from pathlib import Path
from typing import Any, Callable

from aiohttp import WSMsgType, web

from ..errors import ConverterError
from .protocol import DEVICE_TYPES, check_name, token_matches, unpack
from .registry import Device, Registry, check_registration

__all__ = ["DeviceServer", "page_url"]

_PAGE = Path(__file__).with_name("page")
# The base64 encoder device.js imports, shared with the chromium runtime's page (a path, not an
# import: the emitters are not needed to serve it).
_BASE64 = Path(__file__).parents[1] / "emit" / "base64.js"
_JOB_FILE = re.compile(r"model\.js|model\.weights|model\.manifest\.json|in[0-9]{1,5}\.bin")
_HEADERS = {
    # The page runs its own script and the module it is sent, both from this server.
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; connect-src 'self'; "
                               "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",  # the token is in every URL
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
}
_REGISTER_SECONDS = 60  # a connection that does not register in this time is closed
# Seconds stopping the server waits for open requests and connections before closing them.
_STOP_SECONDS = 2.0


def page_url(host: str, port: int, token: str, scheme: str = "http") -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port}/{token}/"


class DeviceServer:
    """The aiohttp application and the state behind it; `start` listens, `stop` closes."""

    def __init__(self, token: str, targets_dir: Path, *, max_upload: int, job_timeout: float,
                 say: Callable[[str], None]):
        self.token = token
        self.max_upload = max_upload
        self.job_timeout = job_timeout
        self.say = say
        self.registry = Registry(targets_dir)
        self.work = Path(tempfile.mkdtemp(prefix="webnn-devices-"))
        # Loading and emitting a graph is CPU work: one thread, off the event loop.
        self.pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="webnn-jobs")
        self.app = web.Application(client_max_size=max_upload, middlewares=[self._guard])
        self.app.on_response_prepare.append(self._headers)
        self.app.add_routes([
            web.get("/{token}/", self._page), web.get("/{token}/device.js", self._script),
            web.get("/{token}/base64.js", self._base64),
            web.get("/{token}/ws", self._connection),
            web.get("/{token}/api/devices", self._devices),
            web.get("/{token}/api/limits/{name}/{kind}", self._limits),
            web.post("/{token}/api/run", self._run),
            web.get("/{token}/jobs/{job}/{file}", self._job_file)])
        self._runner: web.AppRunner | None = None

    async def start(self, host: str, port: int, tls: ssl.SSLContext | None = None) -> int:
        """Listen on `host`:`port` (0: any free port), over TLS with `tls`; the port."""
        # shutdown_timeout: how long stopping waits for open requests and connections. aiohttp
        # waits 60 s by default, and a browser keeps idle (TLS) connections open: serve must
        # stop at once on Ctrl-C or SIGTERM, a device's job being lost either way.
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False,
                                     shutdown_timeout=_STOP_SECONDS)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, ssl_context=tls)
        await site.start()
        return site._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._runner is not None:
            try:  # a TLS close the peer never answers must not hold the process either
                await asyncio.wait_for(self._runner.cleanup(), 2 * _STOP_SECONDS)
            except asyncio.TimeoutError:
                pass
        self.pool.shutdown(wait=False, cancel_futures=True)
        shutil.rmtree(self.work, ignore_errors=True)

    # -- every request ---------------------------------------------------------------------
    @web.middleware
    async def _guard(self, request: web.Request, handler):
        first = request.path.lstrip("/").split("/", 1)[0]
        if not token_matches(first, self.token):
            return _line(403, "this URL lacks the server's token: open the URL "
                              "`webnn-convert serve` printed")
        try:
            return await handler(request)
        except ConverterError as e:
            return _line(400, e.line())

    async def _headers(self, request: web.Request, response: web.StreamResponse) -> None:
        response.headers.update(_HEADERS)

    # -- the page ----------------------------------------------------------------------------
    async def _page(self, request: web.Request) -> web.Response:
        return web.FileResponse(_PAGE / "device.html",
                                headers={"Content-Type": "text/html; charset=utf-8"})

    async def _script(self, request: web.Request) -> web.Response:
        return web.FileResponse(_PAGE / "device.js",
                                headers={"Content-Type": "text/javascript; charset=utf-8"})

    async def _base64(self, request: web.Request) -> web.Response:
        return web.FileResponse(_BASE64,
                                headers={"Content-Type": "text/javascript; charset=utf-8"})

    async def _devices(self, request: web.Request) -> web.Response:
        return web.json_response([d.to_json() for d in self.registry.devices.values()])

    async def _limits(self, request: web.Request) -> web.Response:
        device = self.registry.find(check_name(request.match_info["name"], "the device name"))
        kind = request.match_info["kind"]
        if kind not in device.limits:
            return _line(404, f"device '{device.name}' has no {kind[:10]!r} context; its "
                              f"deviceTypes: {', '.join(device.limits) or 'none'}")
        return web.json_response({"device": device.to_json(), "deviceType": kind,
                                  "limits": device.limits[kind]})

    async def _job_file(self, request: web.Request) -> web.StreamResponse:
        job, name = request.match_info["job"], request.match_info["file"]
        path = self.work / f"j{job}" / name
        if not (job.isdigit() and len(job) < 12 and _JOB_FILE.fullmatch(name) and path.is_file()):
            return _line(404, "no such job file")
        kind = "text/javascript" if name.endswith(".js") else \
            "application/json" if name.endswith(".json") else "application/octet-stream"
        return web.FileResponse(path, headers={"Content-Type": kind})

    # -- a device's connection ---------------------------------------------------------------
    async def _connection(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=self.max_upload, heartbeat=30)
        await ws.prepare(request)
        try:
            wanted = request.query.get("name") or None
            if wanted is not None:
                check_name(wanted, "the page's ?name=")
            first = await ws.receive(timeout=_REGISTER_SECONDS)
            if first.type != WSMsgType.TEXT:
                raise ConverterError("the connection closed before it registered")
            user_agent, platform, limits, refused = check_registration(_json(first.data))
            name = self.registry.free_name(wanted)
        except (ConverterError, asyncio.TimeoutError) as e:
            why = e.line() if isinstance(e, ConverterError) else "no registration in time"
            if not ws.closed:
                await ws.send_json({"type": "refused", "reason": why})
                await ws.close()
            self.say(f"a page was refused: {why}")
            return ws
        device = Device(name, user_agent, platform, limits, refused, ws.send_json)
        self.registry.add(device)
        self.say(f"{device.line()}; registered")
        for kind, path in device.targets.items():
            self.say(f"device '{name}': {kind} opSupportLimits() saved as target file {path}")
        try:
            await ws.send_json({"type": "registered", "name": name,
                                "deviceTypes": list(limits)})
            async for message in ws:
                if message.type != WSMsgType.TEXT:
                    break
                self._result(device, _json(message.data))
        except ConverterError as e:
            self.say(f"device '{name}' sent what is not a result ({e.line()}); disconnected")
        finally:
            self.registry.remove(device)
            if not ws.closed:
                await ws.close()
            self.say(f"device '{name}' disconnected")
        return ws

    def _result(self, device: Device, message: Any) -> None:
        """A job's result from the page: {type: result, id, outputs: {name: base64}} or
        {type: result, id, error: {stage, name, message}}, with times {buildMs, runMs,
        medianMs (of the job's repeated runs, if it asked for them)};
        checked, then handed to the job."""
        if not isinstance(message, dict) or message.get("type") != "result":
            raise ConverterError("a message that is not a result")
        number = message.get("id")
        if type(number) is not int:
            raise ConverterError("a result without a job number")
        job = device.jobs.get(number)
        if job is None or job.done():  # a job that timed out meanwhile
            return
        outputs, error, given = message.get("outputs"), message.get("error"), \
            message.get("times")
        # Milliseconds to build the graph and to run it, as the page measured them.
        times = {k: given.get(k) if type(given.get(k)) in (int, float) else None
                 for k in ("buildMs", "runMs", "medianMs")} if isinstance(given, dict) else {}
        if isinstance(outputs, dict) and all(isinstance(k, str) and isinstance(v, str)
                                             for k, v in outputs.items()):
            job.set_result({"outputs": outputs, "times": times})
        elif isinstance(error, dict):
            job.set_result({"error": {k: str(error.get(k, ""))[:2000]
                                      for k in ("stage", "name", "message")}, "times": times})
        else:
            raise ConverterError("a result with neither outputs nor an error")

    # -- a job -------------------------------------------------------------------------------
    async def _run(self, request: web.Request) -> web.Response:
        body = await request.read()  # more than client_max_size: 413 before this returns
        header, files = unpack(body)
        try:
            device = self.registry.find(header.get("device"))
        except ConverterError as e:
            return _line(404, e.line())
        kind = header.get("deviceType") or next(
            (k for k in DEVICE_TYPES if k in device.limits), None)
        if kind not in device.limits:
            why = device.refused.get(kind or "cpu")
            return _line(400, f"device '{device.name}' has no {kind or 'WebNN'} context"
                              + (f" ({why})" if why else "")
                              + f"; its deviceTypes: {', '.join(device.limits) or 'none'}")
        job = self.registry.next_job()
        folder = self.work / f"j{job}"
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self.pool, _prepare, folder, files, header["inputs"])
            result = loop.create_future()
            device.jobs[job] = result
            base = f"/{self.token}/jobs/{job}"
            # timeoutMs: the page gives up on a job when the server does, so that one hung
            # job does not hold up the jobs queued behind it.
            try:
                await device.send({"type": "job", "id": job, "deviceType": kind,
                                   "timeoutMs": round(self.job_timeout * 1000),
                                   "runs": header.get("runs"), "warmup": header.get("warmup"),
                                   "module": f"{base}/model.js",
                                   "inputs": {n: f"{base}/{f}"
                                              for n, f in header["inputs"].items()}})
            except ConnectionError:  # its connection is closing: it left as the job came
                return _line(502, f"device '{device.name}' disconnected before it took the "
                                  f"job; open the page on it again and rerun")
            self.say(f"job {job}: sent to device '{device.name}' ({kind})")
            try:
                done = await asyncio.wait_for(result, self.job_timeout)
            except asyncio.TimeoutError:
                return _line(504, f"device '{device.name}' gave no result in "
                                  f"{self.job_timeout:g} s")
            except ConverterError as e:  # the device left
                return _line(502, e.line())
        finally:
            device.jobs.pop(job, None)
            await loop.run_in_executor(None, shutil.rmtree, folder, True)
        self.say(f"job {job}: " + ("done" if "outputs" in done else
                                   f"failed at {done['error']['stage']}"))
        return web.json_response({"device": device.to_json(), "deviceType": kind, **done})


def _prepare(folder: Path, files: dict[str, bytes], inputs: dict[str, str]) -> None:
    """The job's folder: the uploaded graph read by the converter's loader and emitted as
    model.js (with its weights) by write_js, and the inputs, each checked against the graph's
    input of that name."""
    from .. import dtypes
    from ..conversion.by_suffix import load_any
    from ..emit.javascript import write_js

    source = folder / "upload"
    source.mkdir(parents=True)
    for name, data in files.items():
        (source / name).write_bytes(data)
    graph = load_any(source / "model.webnn")
    if set(inputs) != set(graph.inputs):
        raise ConverterError("the upload's inputs are not the graph's",
                             fix=f"give each of {', '.join(graph.inputs) or 'nothing'} once")
    for name, file in inputs.items():
        operand = graph.inputs[name]
        count = 1
        for d in operand.shape:
            count *= d
        size = (count * dtypes.info(operand.data_type).bits + 7) // 8
        if len(files[file]) != size:
            raise ConverterError(f"input '{name}' is {len(files[file])} bytes, the graph takes "
                                 f"{size} ({operand.desc})")
        shutil.copyfile(source / file, folder / file)
    write_js(graph, folder / "model.js")
    shutil.rmtree(source)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise ConverterError("a message that is not JSON") from None


def _line(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text.replace("\n", " ") + "\n")
