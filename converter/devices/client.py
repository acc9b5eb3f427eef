"""The commands' side of the device server: which devices are connected, and running a graph
on one of them.

    use_server("http://127.0.0.1:8765/TOKEN/")     # else the one `serve` started last here
    outputs, ran_on = run_on_device(graph, {"x": array}, "device:phone")

The graph goes up as a .webnn graph file (the server reads it with the converter's loader and
emits the module the page runs); the outputs come back as the graph's output data types and
shapes, their sizes checked (a device is another machine: what it sends is checked, not
trusted). Requests never go through a proxy: the token is in every URL.

An https server (`serve --tls`, the default off loopback) is pinned, not trusted blindly nor
through a CA: its certificate's SHA-256 fingerprint must be the one `serve` recorded when it
started (record.py), or the one given after the URL as `#sha256=FINGERPRINT`. It is checked
right after the TLS handshake, before the request (and the token in its path) is sent.
"""
from __future__ import annotations

import base64
import functools
import http.client
import json
import shutil
import ssl
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Mapping
from urllib.parse import urlsplit

import numpy as np

from .. import dtypes
from ..errors import ConverterError
from ..ir import Graph
from ..ir.operand import array_from_bytes
from .protocol import DEVICE_TYPES, GRAPH_FILES, check_name, check_token, pack, parse_runtime
from .record import NO_SERVER_FIX, pinned_fingerprint, read_record
from .tls import check_fingerprint, fingerprint

__all__ = ["use_server", "server_url", "devices", "device_limits", "run_on_device", "describe",
           "last_run", "forget_last_run"]

_CHOSEN: tuple[str, str | None] | None = None  # (URL, pinned fingerprint) of --server
# What the last `run_on_device` of this process did on its device (see `last_run`).
_LAST: dict | None = None
# The page's stages up to a built graph: a failure in one of them means it was not built.
_BEFORE_BUILT = ("import", "createContext", "weights", "build")
# Long enough for a big model to load, build and run on a phone; the server has its own limit.
_TIMEOUT = 3600
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def use_server(url: str | None) -> None:
    """Talk to the server at `url` (a URL `serve` printed, an https one optionally followed
    by #sha256=FINGERPRINT); None: the one it started last."""
    global _CHOSEN
    _CHOSEN = None if url is None else _checked_url(url)


def server_url() -> str:
    return _server()[0]


def _server() -> tuple[str, str | None]:
    """The server's URL and, for https, the fingerprint its certificate must have."""
    url, pin = _CHOSEN if _CHOSEN is not None else _checked_url(read_record())
    if url.startswith("https:") and pin is None:
        pin = pinned_fingerprint(url.rstrip("/").rsplit("/", 1)[-1])
        if pin is None:
            raise ConverterError("no certificate fingerprint is recorded here for this https "
                                 "device server", where=_shown(url),
                                 fix="run the command where `webnn-convert serve` runs, or "
                                     "append #sha256=FINGERPRINT (the one it printed) to the "
                                     "--server URL")
    return url, pin


def devices() -> list[dict]:
    """The connected devices as the server describes them."""
    return json.loads(_request("api/devices"))


def device_limits(runtime: str = "device") -> tuple[dict, str, dict]:
    """(the device as the server describes it, the deviceType, that context's
    opSupportLimits()) of the device `runtime` names; with no deviceType, its first."""
    name, device_type = parse_runtime(runtime)
    if name is None:
        listed = devices()
        if len(listed) != 1:
            names = ", ".join(sorted(str(d.get("name")) for d in listed)) or "none"
            raise ConverterError(f"{len(listed)} devices are connected, name one",
                                 fix=f"use --runtime device:NAME; connected: {names}")
        name = check_name(listed[0].get("name"), "the server's device list")
    if device_type is None:
        listed = {d.get("name"): d for d in devices()}
        kinds = listed.get(name, {}).get("deviceTypes") or ["cpu"]
        device_type = kinds[0] if kinds[0] in DEVICE_TYPES else "cpu"
    reply = _reply_of(_request(f"api/limits/{name}/{device_type}"))
    if not isinstance(reply.get("limits"), dict):
        raise ConverterError("the device server's reply holds no opSupportLimits()",
                             where=_shown(server_url()))
    return reply["device"], reply["deviceType"], reply["limits"]


def run_on_device(graph: Graph, feeds: Mapping[str, np.ndarray], runtime: str = "device",
                  *, runs: int | None = None, warmup: int = 0
                  ) -> tuple[dict[str, np.ndarray], str]:
    """Run `graph` on the device `runtime` names (device, device:NAME, device:NAME:TYPE) on
    `feeds`; ({output name: ndarray}, a description of where it ran). The browser's error is
    raised as ConverterError naming the device. With `runs` (a bench), the page then runs it
    `warmup` more times untimed and `runs` times timed: last_run()'s medianMs."""
    from ..ir.feeds import check_feeds
    from ..conversion.by_suffix import write_any

    global _LAST
    _LAST = None
    name, device_type = parse_runtime(runtime)
    arrays = check_feeds(graph, feeds)
    folder = Path(tempfile.mkdtemp(prefix="webnn-device-upload-"))
    try:
        write_any(graph, folder / "model.webnn")
        # A graph without constants has no manifest and weights files.
        files = {n: (folder / n).read_bytes() for n in GRAPH_FILES if (folder / n).is_file()}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    inputs = {}
    for j, (input_name, array) in enumerate(arrays.items()):
        files[f"in{j}.bin"] = _input_bytes(graph, input_name, array)
        inputs[input_name] = f"in{j}.bin"
    header = {"device": name, "deviceType": device_type, "inputs": inputs}
    if runs is not None:
        header.update(runs=runs, warmup=warmup)
    body = pack(header, files)
    reply = _reply(_request("api/run", body))
    device, kind = reply["device"], reply["deviceType"]
    ran_on = describe(device, kind)
    error = reply.get("error")
    times = reply.get("times") if isinstance(reply.get("times"), dict) else {}
    built = not isinstance(error, dict) or error.get("stage") not in _BEFORE_BUILT
    _LAST = {"device": device.get("name"), "deviceType": kind, "built": built,
             # the server's words for the device, strings or nothing (it is another program)
             **{k: v if isinstance(v := device.get(k), str) else None
                for k in ("browser", "platform", "userAgent")},
             "ran": error is None, "buildMs": _ms(times.get("buildMs")),
             "runMs": _ms(times.get("runMs")), "medianMs": _ms(times.get("medianMs"))}
    if error is not None:
        message = " ".join(f"{error.get('name')}: {error.get('message')}".split())
        failed = ConverterError(f"WebNN on {ran_on} failed at {error.get('stage')}: {message}",
                                where=f"graph '{graph.name}'")
        failed.stage = str(error.get("stage"))  # the page's stage: whether it was built
        raise failed
    return _outputs(graph, reply["outputs"], ran_on), ran_on


def last_run() -> dict | None:
    """What this process's last `run_on_device` did on the device: {device, browser,
    platform, userAgent, deviceType, built, ran, buildMs, runMs, medianMs} (the device as the
    server describes it; milliseconds as its page measured them, None where it did not get
    that far or, medianMs, was not asked for), or None when it reached no device. For the
    zoo's per-device record and the browser bench."""
    return None if _LAST is None else dict(_LAST)


def forget_last_run() -> None:
    global _LAST
    _LAST = None


def _ms(value) -> float | None:
    return round(float(value), 3) if type(value) in (int, float) else None


def _input_bytes(graph: Graph, name: str, array: np.ndarray) -> bytes:
    """An input's bytes as WebNN reads them: little-endian, 4-bit types packed two a byte."""
    if dtypes.info(graph.inputs[name].data_type).bits == 4:
        from ..ir.operand import pack4

        return pack4(array).tobytes()
    return np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()


def describe(device: dict, device_type: str) -> str:
    """"device 'NAME' (BROWSER on PLATFORM, deviceType TYPE)"."""
    return (f"device '{device.get('name')}' ({device.get('browser')} on "
            f"{device.get('platform') or 'an unknown platform'}, deviceType {device_type})")


def _outputs(graph: Graph, encoded, ran_on: str) -> dict[str, np.ndarray]:
    if not isinstance(encoded, dict):
        raise ConverterError(f"{ran_on} sent no outputs")
    outputs = {}
    for name, operand in graph.outputs.items():
        text = encoded.get(name)
        try:
            data = base64.b64decode(text, validate=True) if isinstance(text, str) else None
        except ValueError:
            data = None
        info = dtypes.info(operand.data_type)
        count = int(np.prod(operand.shape, dtype=np.int64))
        if data is None or len(data) != (count * info.bits + 7) // 8:
            raise ConverterError(f"{ran_on} sent output '{name}' "
                                 + ("not at all" if data is None else f"as {len(data)} bytes")
                                 + f", the graph gives {operand.desc}")
        outputs[name] = array_from_bytes(data, operand.data_type, operand.shape)
    return outputs


def _checked_url(url: str) -> tuple[str, str | None]:
    """(the URL in its one form, the fingerprint its #sha256= fragment pins, if any)."""
    parts = urlsplit(url)
    token = parts.path.strip("/")
    pin = parts.fragment or None
    try:  # urlsplit refuses a port not in ASCII digits ('٨٠', '8_0') only when asked for it
        port_ok = parts.netloc.isascii() and (parts.port is None or parts.port > 0)
    except ValueError:
        port_ok = False
    if parts.scheme not in ("http", "https") or not parts.hostname or "/" in token \
            or not port_ok \
            or (pin is not None and (parts.scheme != "https" or not pin.startswith("sha256="))):
        raise ConverterError(f"{json.dumps(url[:200])} is not a device server's URL",
                             where="--server",
                             fix="give the URL `webnn-convert serve` printed (http[s]://HOST:"
                                 "PORT/TOKEN/, an https one optionally followed by "
                                 "#sha256=FINGERPRINT)")
    check_token(token, "--server")
    if pin is not None:
        pin = check_fingerprint(pin[len("sha256="):], "--server")
    return f"{parts.scheme}://{parts.netloc}/{token}/", pin


class _PinnedConnection(http.client.HTTPSConnection):
    """An HTTPS connection that goes on only with the certificate of fingerprint `pin`."""

    def __init__(self, *args, pin: str, **kwargs):
        super().__init__(*args, **kwargs)
        self._pin = pin

    def connect(self) -> None:
        super().connect()
        seen = fingerprint(self.sock.getpeercert(binary_form=True))
        if seen != self._pin:
            self.close()
            raise ConverterError(f"the device server's certificate is not the one pinned for it "
                                 f"(SHA-256 {seen}, pinned {self._pin}); nothing was sent",
                                 where=f"https://{self.host}:{self.port}/",
                                 fix="another program may answer there: check the address, or "
                                     "use the URL and fingerprint `webnn-convert serve` printed")


class _PinnedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, pin: str):
        # No CA vouches for a self-signed certificate: the pin does, checked in connect().
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        super().__init__(context=context)
        self._pin = pin

    def https_open(self, req):
        return self.do_open(functools.partial(_PinnedConnection, pin=self._pin), req,
                            context=self._context)


def _request(path: str, body: bytes | None = None) -> bytes:
    url, pin = _server()
    opener = _OPENER if pin is None else \
        urllib.request.build_opener(urllib.request.ProxyHandler({}), _PinnedHTTPS(pin))
    request = urllib.request.Request(url + path, data=body, method="GET" if body is None else
                                     "POST", headers={"Content-Type": "application/octet-stream"})
    try:
        with opener.open(request, timeout=_TIMEOUT) as response:
            return response.read()
    except urllib.error.HTTPError as e:  # the server's one line says what and what to do
        line = e.read(4096).decode("utf-8", "replace").strip() or e.reason
        refused = ConverterError(f"the device server refused it ({e.code}): {line}",
                                 where=_shown(url))
        refused.status = e.code  # 504: the device gave no result in time; 502: it left
        raise refused from None
    except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
        why = getattr(e, "reason", e)
        raise ConverterError(f"no device server answers ({why})", where=_shown(url),
                             fix=NO_SERVER_FIX) from None


def _reply(raw: bytes) -> dict:
    return _reply_of(raw, "a job's result")


def _reply_of(raw: bytes, what: str = "a device's limits") -> dict:
    try:
        reply = json.loads(raw)
    except ValueError:
        reply = None
    if not isinstance(reply, dict) or not isinstance(reply.get("device"), dict) \
            or not isinstance(reply.get("deviceType"), str) \
            or not isinstance(reply.get("error", {}), dict):
        raise ConverterError(f"the device server's reply is not {what}",
                             where=_shown(server_url()))
    return reply


def _shown(url: str) -> str:
    """The URL without its token (errors are printed, logged, pasted into issues)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/"
