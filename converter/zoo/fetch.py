"""Real public models, fetched from their pip packages and checked against their sha256.

    path = fetch_model(entry)   # entry: {"package", "version", "path", "sha256", ...}

The wheel is downloaded once with `pip download` into the cache folder (`WEBNN_CONVERTER_CACHE`,
default ~/.cache/webnn-converter), the file is read out of it, and its sha256 is checked before
it is used. Nothing is fetched from anywhere but the package index.

An entry is data, never a command: `check_source` accepts only a PEP 508 project name (so no
direct reference, URL, path or pip option), a PEP 440 version, a plain relative path inside the
wheel and a 64-digit sha256, and every fetch checks it first. pip is told `--only-binary :all:`
(a source distribution would run its own build code), `--no-deps`, and `--` before the one
requirement `name==version`; every folder it makes is inside the cache, named from checked
data only.
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from ..errors import ConverterError
from ..files.cache import cache_dir  # (shared with the device server)

__all__ = ["cache_dir", "cached_model_path", "fetch_model", "sha256_of", "check_source",
           "PROJECT_NAME", "VERSION", "MEMBER_PATH", "SHA256"]

# The same rules as schemas/zoo-manifest.schema.json, enforced here for every caller.
# PEP 508's project name (ASCII letters and digits, with `.`, `_`, `-` inside): it cannot start
# with `-` (a pip option), hold a space, `@`, `/` or `:` (a direct reference or a path).
PROJECT_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
# A PEP 440 public version in its canonical spelling: [N!]N(.N)*[{a|b|rc}N][.postN][.devN].
# No local part (`+...`), no spaces, no operator, no `/`: it names a cache folder as it is.
VERSION = re.compile(r"(?:[0-9]+!)?[0-9]+(?:\.[0-9]+)*(?:(?:a|b|rc)[0-9]+)?(?:\.post[0-9]+)?"
                     r"(?:\.dev[0-9]+)?")
# A path inside a wheel: parts separated by `/`, none empty, hidden, `.` or `..`, and no
# separator, space or control byte in a part.
MEMBER_PATH = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]*(?:/[A-Za-z0-9_+-][A-Za-z0-9._+-]*)*")
SHA256 = re.compile(r"[0-9a-f]{64}")
_RULES = (  # member, pattern, longest, what it must be
    ("package", PROJECT_NAME, 100, "a PEP 508 project name (letters, digits, '.', '_', '-'; "
                                   "not a URL, path or option)"),
    ("version", VERSION, 120, "a PEP 440 version such as 1.4.2 (no operator, URL or local "
                              "part)"),
    ("path", MEMBER_PATH, 4096, "a relative path inside the wheel (parts separated by '/', "
                                "none empty, hidden, '.' or '..')"),
    ("sha256", SHA256, 64, "64 lowercase hex digits"))


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_source(entry: dict, where: str | None = None) -> None:
    """Refuse a package entry whose package, version, path or sha256 is anything but the plain
    data it should be (see the module doc), naming the member and what it may be."""
    if not isinstance(entry, dict):
        raise ConverterError("a package source must be an object", where=where)
    for member, pattern, longest, what in _RULES:
        value = entry.get(member)
        if not isinstance(value, str) or len(value) > longest or not pattern.fullmatch(value):
            raise ConverterError(f"source.{member} {_shown(value)} is not {what}", where=where,
                                 fix="a manifest names a package, never a command or a file")


def _shown(value) -> str:
    """A hostile value quoted for a one-line message: escaped, and cut if long."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _wheel_folder(package: str, version: str) -> Path:
    """The cache folder of one package version: PEP 503's normalised name and the version,
    both checked, so it is a single folder inside the cache."""
    name = re.sub(r"[-_.]+", "-", package).lower()
    return cache_dir() / "wheels" / f"{name}-{version}"


def _wheel(package: str, version: str) -> Path:
    folder = _wheel_folder(package, version)
    found = sorted(folder.glob("*.whl")) if folder.exists() else []
    if not found:
        folder.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
             "--no-input", "--quiet", "-d", str(folder), "--", f"{package}=={version}"],
            capture_output=True, text=True)
        found = sorted(folder.glob("*.whl"))
        if proc.returncode != 0 or not found:
            last = (proc.stderr.strip().splitlines() or ["no wheel"])[-1]
            raise ConverterError(f"could not download {package}=={version}: {last}",
                                 fix="check the network access to the package index")
    return found[0]


def cached_model_path(entry: dict) -> Path:
    """Where `fetch_model` keeps a model file from a pip package (it may not be there yet):
    a folder named by its sha256, the file by the last part of its path in the wheel."""
    check_source(entry)
    return cache_dir() / "models" / entry["sha256"][:16] / entry["path"].rsplit("/", 1)[-1]


def fetch_model(entry: dict) -> Path:
    """The local path of a model file from a pip package, downloaded once and hash-checked."""
    target = cached_model_path(entry)  # checks the entry before anything else
    package, version = entry["package"], entry["version"]
    inner, sha = entry["path"], entry["sha256"]
    if target.is_file() and sha256_of(target) == sha:
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
