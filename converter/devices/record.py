"""Which device server `serve` started last on this machine: CACHE/devices/server.json.

`serve` writes it once it listens (atomically, readable by its owner only: the URL holds the
token) and removes it when it stops, if it is still its own; commands given no `--server` read
it. A record left by a killed server points at a port nothing answers on: the client says so.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import ConverterError
from .registry import write_atomically

__all__ = ["record_path", "write_record", "read_record", "remove_record", "NO_SERVER_FIX"]

NO_SERVER_FIX = "start one with `webnn-convert serve` (or give --server URL)"


def record_path() -> Path:
    from ..files.cache import cache_dir

    return cache_dir() / "devices" / "server.json"


def write_record(url: str) -> Path:
    path = record_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps({"url": url, "pid": os.getpid()}) + "\n")
    return path


def read_record() -> str:
    """The URL of the server `serve` started last; ConverterError when none is recorded."""
    path = record_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConverterError("no device server is running", fix=NO_SERVER_FIX) from None
    try:
        url = json.loads(text)["url"]
    except (ValueError, KeyError, TypeError):
        url = None
    if not isinstance(url, str):
        raise ConverterError("the record of the last device server is not one", where=str(path),
                             fix=NO_SERVER_FIX)
    return url


def remove_record(url: str) -> None:
    """Remove the record if it still names `url` (a later `serve` may have replaced it)."""
    try:
        if read_record() == url:
            record_path().unlink(missing_ok=True)
    except ConverterError:
        pass
