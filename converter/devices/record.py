"""Which device server `serve` started last on this machine: CACHE/devices/server.json.

`serve` writes it once it listens (atomically, readable by its owner only: the URL holds the
token) and removes it when it stops, if it is still its own; commands given no `--server` read
it. A record left by a killed server points at a port nothing answers on: the client says so.
An https server's record holds its certificate's SHA-256 fingerprint too: the clients pin it
(`pinned_fingerprint`), so no other program on that port is sent the token or a job.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import ConverterError
from .registry import write_atomically

__all__ = ["record_path", "write_record", "read_record", "pinned_fingerprint", "remove_record",
           "NO_SERVER_FIX"]

NO_SERVER_FIX = "start one with `webnn-convert serve` (or give --server URL)"


def record_path() -> Path:
    from ..files.cache import cache_dir

    return cache_dir() / "devices" / "server.json"


def write_record(url: str, fingerprint: str | None = None) -> Path:
    """Record the server at `url`; `fingerprint`: its certificate's, when it speaks https."""
    path = record_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"url": url, "pid": os.getpid()}
    if fingerprint is not None:
        entry["fingerprint"] = fingerprint
    write_atomically(path, json.dumps(entry) + "\n")
    return path


def read_record() -> str:
    """The URL of the server `serve` started last; ConverterError when none is recorded."""
    return _read()["url"]


def pinned_fingerprint(token: str) -> str | None:
    """The certificate fingerprint recorded for the server whose URL holds `token` (the same
    server however it is addressed: 127.0.0.1, its LAN address), or None when the record is
    of another server or of one without https."""
    from .tls import check_fingerprint

    try:
        entry = _read()
    except ConverterError:
        return None
    if entry["url"].rstrip("/").rsplit("/", 1)[-1] != token or "fingerprint" not in entry:
        return None
    return check_fingerprint(entry["fingerprint"], str(record_path()))


def _read() -> dict:
    path = record_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConverterError("no device server is running", fix=NO_SERVER_FIX) from None
    try:
        entry = json.loads(text)
    except ValueError:
        entry = None
    if not isinstance(entry, dict) or not isinstance(entry.get("url"), str) \
            or not isinstance(entry.get("fingerprint", ""), str):
        raise ConverterError("the record of the last device server is not one", where=str(path),
                             fix=NO_SERVER_FIX)
    return entry


def remove_record(url: str) -> None:
    """Remove the record if it still names `url` (a later `serve` may have replaced it)."""
    try:
        if read_record() == url:
            record_path().unlink(missing_ok=True)
    except ConverterError:
        pass
