"""The commands' side of the device server: which devices are connected, and running a graph
on one of them.

    use_server("http://127.0.0.1:8765/TOKEN/")     # else the one `serve` started last here
    outputs, ran_on = run_on_device(graph, {"x": array}, "device:phone")

The graph goes up as a .webnn graph file (the server reads it with the converter's loader and
emits the module the page runs); the outputs come back as the graph's output data types and
shapes, their sizes checked (a device is another machine: what it sends is checked, not
trusted). Requests never go through a proxy: the token is in every URL.
"""
from __future__ import annotations

import base64
import json
import shutil
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
from .protocol import GRAPH_FILES, check_token, pack, parse_runtime
from .record import NO_SERVER_FIX, read_record

__all__ = ["use_server", "server_url", "devices", "run_on_device", "describe", "last_run",
           "forget_last_run"]

_CHOSEN: str | None = None
# What the last `run_on_device` of this process did on its device (see `last_run`).
_LAST: dict | None = None
# The page's stages up to a built graph: a failure in one of them means it was not built.
_BEFORE_BUILT = ("import", "createContext", "weights", "build")
# Long enough for a big model to load, build and run on a phone; the server has its own limit.
_TIMEOUT = 3600
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def use_server(url: str | None) -> None:
    """Talk to the server at `url` (a URL `serve` printed); None: the one it started last."""
    global _CHOSEN
    _CHOSEN = None if url is None else _checked_url(url)


def server_url() -> str:
    return _CHOSEN if _CHOSEN is not None else _checked_url(read_record())


def devices() -> list[dict]:
    """The connected devices as the server describes them."""
    return json.loads(_request("api/devices"))


def run_on_device(graph: Graph, feeds: Mapping[str, np.ndarray], runtime: str = "device"
                  ) -> tuple[dict[str, np.ndarray], str]:
    """Run `graph` on the device `runtime` names (device, device:NAME, device:NAME:TYPE) on
    `feeds`; ({output name: ndarray}, a description of where it ran). The browser's error is
    raised as ConverterError naming the device."""
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
    body = pack({"device": name, "deviceType": device_type, "inputs": inputs}, files)
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
             "runMs": _ms(times.get("runMs"))}
    if error is not None:
        message = " ".join(f"{error.get('name')}: {error.get('message')}".split())
        raise ConverterError(f"WebNN on {ran_on} failed at {error.get('stage')}: {message}",
                             where=f"graph '{graph.name}'")
    return _outputs(graph, reply["outputs"], ran_on), ran_on


def last_run() -> dict | None:
    """What this process's last `run_on_device` did on the device: {device, browser,
    platform, userAgent, deviceType, built, ran, buildMs, runMs} (the device as the server
    describes it; milliseconds as its page measured them, None where it did not get that
    far), or None when it reached no device. For the zoo's per-device record."""
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


def _checked_url(url: str) -> str:
    parts = urlsplit(url)
    token = parts.path.strip("/")
    if parts.scheme not in ("http", "https") or not parts.hostname or "/" in token:
        raise ConverterError(f"{url[:200]!r} is not a device server's URL", where="--server",
                             fix="give the URL `webnn-convert serve` printed (http://HOST:PORT/"
                                 "TOKEN/)")
    check_token(token, "--server")
    return f"{parts.scheme}://{parts.netloc}/{token}/"


def _request(path: str, body: bytes | None = None) -> bytes:
    url = server_url()
    request = urllib.request.Request(url + path, data=body, method="GET" if body is None else
                                     "POST", headers={"Content-Type": "application/octet-stream"})
    try:
        with _OPENER.open(request, timeout=_TIMEOUT) as response:
            return response.read()
    except urllib.error.HTTPError as e:  # the server's one line says what and what to do
        line = e.read(4096).decode("utf-8", "replace").strip() or e.reason
        raise ConverterError(f"the device server refused it ({e.code}): {line}",
                             where=_shown(url)) from None
    except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
        why = getattr(e, "reason", e)
        raise ConverterError(f"no device server answers ({why})", where=_shown(url),
                             fix=NO_SERVER_FIX) from None


def _reply(raw: bytes) -> dict:
    try:
        reply = json.loads(raw)
    except ValueError:
        reply = None
    if not isinstance(reply, dict) or not isinstance(reply.get("device"), dict) \
            or not isinstance(reply.get("deviceType"), str) \
            or not isinstance(reply.get("error", {}), dict):
        raise ConverterError("the device server's reply is not a job's result",
                             where=_shown(server_url()))
    return reply


def _shown(url: str) -> str:
    """The URL without its token (errors are printed, logged, pasted into issues)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/"
