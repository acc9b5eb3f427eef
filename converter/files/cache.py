"""The converter's cache folder: WEBNN_CONVERTER_CACHE, else ~/.cache/webnn-converter. The zoo
keeps fetched models and results there, the device server its record and devices' targets."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    """The cache folder, created if it is not there yet."""
    root = os.environ.get("WEBNN_CONVERTER_CACHE") or Path.home() / ".cache" / "webnn-converter"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path
