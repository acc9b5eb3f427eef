"""What the device server and its clients agree on: the token, names, runtimes, the upload.

A job is uploaded as one body (`pack`/`unpack`): a magic line, the header's length (4 bytes,
little-endian), the header as JSON, then the files' bytes in the header's order. The header
names the device and deviceType (and, for a bench, how many timed runs and warm-up runs
the page repeats after the first), lists the files ([name, size]; the names are fixed: the graph
as model.webnn with its manifest and weights if it has constants, each input as inN.bin) and maps each graph input
to its file. Everything in it is checked here before the server looks at anything else: a
client with the token is still a program that may send anything.
"""
from __future__ import annotations

import hmac
import json
import re
import secrets
from typing import Any, Mapping

from ..errors import ConverterError

__all__ = ["DEVICE_TYPES", "GRAPH_FILES", "MAGIC", "DEFAULT_MAX_UPLOAD", "new_token",
           "token_matches", "check_name", "parse_runtime", "pack", "unpack", "browser_of"]

DEVICE_TYPES = ("cpu", "gpu", "npu")
GRAPH_FILES = ("model.webnn", "model.manifest.json", "model.weights")
MAGIC = b"webnn-device-job 1\n"
# The largest upload (and device result) the server takes unless `serve --max-upload-mb`
# says otherwise: a model's weights and inputs, or its outputs, in one body.
DEFAULT_MAX_UPLOAD = 1 << 30
_MAX_HEADER = 1 << 20
_MAX_FILES = 10_000
_MAX_RUNS = 1000
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")
_FILE = re.compile(r"in[0-9]{1,5}\.bin")
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,128}")


def new_token() -> str:
    """A random token for the server's URLs (128 bits, URL-safe)."""
    return secrets.token_urlsafe(16)


def token_matches(given: str, token: str) -> bool:
    """Whether `given` is the token, compared in constant time (no timing says how much of a
    guess was right)."""
    return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())


def check_token(token: str, where: str) -> str:
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        raise ConverterError("the server's token is not a URL-safe word of 16 to 128 characters",
                             where=where, fix="give the URL `webnn-convert serve` printed")
    return token


def check_name(name: Any, where: str = "device name") -> str:
    """A device name as given (a page's ?name=, a runtime's device:NAME): 1 to 40 letters,
    digits, '.', '_' or '-', starting with a letter or digit."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConverterError(f"{_shown(name)} is not a device name", where=where,
                             fix="use 1 to 40 letters, digits, '.', '_' or '-'")
    return name


def parse_runtime(runtime: str) -> tuple[str | None, str | None]:
    """`device`, `device:NAME` or `device:NAME:TYPE` as (name or None, deviceType or None)."""
    parts = runtime.split(":")
    if parts[0] != "device" or len(parts) > 3:
        raise ConverterError(f"{_shown(runtime)} is not a device runtime",
                             fix="use device, device:NAME or device:NAME:TYPE")
    name = check_name(parts[1], "--runtime") if len(parts) > 1 else None
    device_type = parts[2] if len(parts) > 2 else None
    if device_type is not None and device_type not in DEVICE_TYPES:
        raise ConverterError(f"{_shown(device_type)} is not a WebNN deviceType",
                             where="--runtime", fix=f"use one of {', '.join(DEVICE_TYPES)}")
    return name, device_type


def pack(header: Mapping[str, Any], files: Mapping[str, bytes]) -> bytes:
    """One upload body: `header` (without its file list, which this adds) and the files."""
    listed = dict(header, files=[[name, len(data)] for name, data in files.items()])
    text = json.dumps(listed).encode()
    return b"".join([MAGIC, len(text).to_bytes(4, "little"), text, *files.values()])


def unpack(body: bytes) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The header and files of an upload, every field checked; ConverterError otherwise."""
    if not body.startswith(MAGIC) or len(body) < len(MAGIC) + 4:
        raise ConverterError("not a device job upload")
    start = len(MAGIC) + 4
    size = int.from_bytes(body[len(MAGIC):start], "little")
    if size > _MAX_HEADER or start + size > len(body):
        raise ConverterError("the upload's header is cut short or too long")
    try:
        header = json.loads(body[start:start + size].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ConverterError("the upload's header is not JSON") from None
    if not isinstance(header, dict):
        raise ConverterError("the upload's header is not an object")
    if header.get("device") is not None:
        check_name(header["device"], "the upload's device")
    if header.get("deviceType") is not None and header["deviceType"] not in DEVICE_TYPES:
        raise ConverterError(f"{_shown(header['deviceType'])} is not a WebNN deviceType",
                             where="the upload's deviceType")
    listed = header.get("files")
    if not isinstance(listed, list) or len(listed) > _MAX_FILES:
        raise ConverterError("the upload's file list is missing or too long")
    files, offset = {}, start + size
    for entry in listed:
        if (not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], str)
                or type(entry[1]) is not int or entry[1] < 0):
            raise ConverterError("an entry of the upload's file list is not [name, size]")
        name, length = entry
        if not (name in GRAPH_FILES or _FILE.fullmatch(name)) or name in files:
            raise ConverterError(f"the upload holds a file named {_shown(name)}",
                                 fix=f"files are {', '.join(GRAPH_FILES)} and inN.bin, once each")
        if offset + length > len(body):
            raise ConverterError(f"the upload's {name} is cut short")
        files[name] = body[offset:offset + length]
        offset += length
    if offset != len(body):
        raise ConverterError("the upload holds bytes its file list does not account for")
    if GRAPH_FILES[0] not in files:
        raise ConverterError(f"the upload lacks {GRAPH_FILES[0]}")
    for key, low in (("runs", 1), ("warmup", 0)):  # timed runs the page repeats (benches)
        value = header.get(key)
        if value is not None and (type(value) is not int or not low <= value <= _MAX_RUNS):
            raise ConverterError(f"the upload's {key} is not a whole number from {low} to "
                                 f"{_MAX_RUNS}")
    inputs = header.get("inputs")
    if not isinstance(inputs, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and _FILE.fullmatch(v) and v in files
            for k, v in inputs.items()):
        raise ConverterError("the upload's inputs do not map input names to its inN.bin files")
    return header, files


def browser_of(user_agent: str) -> str:
    """The browser and its major version a user agent names ("Chrome 153", "Edge 140"), or
    "unknown browser"."""
    for token, name in (("Edg/", "Edge"), ("OPR/", "Opera"), ("Firefox/", "Firefox"),
                        ("HeadlessChrome/", "HeadlessChrome"), ("Chrome/", "Chrome"),
                        ("Version/", "Safari")):
        found = re.search(re.escape(token) + r"([0-9]{1,6})", user_agent)
        if found:
            return f"{name} {found.group(1)}"
    return "unknown browser"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
