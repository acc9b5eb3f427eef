"""A zoo manifest: the models `webnn-convert zoo` validates, read from JSON or TOML.

    manifest = load_manifest("models/zoo.json")
    for entry in manifest.select(only=["mul_1"]):
        entry.id, entry.sha256, entry.spec()

A model is a local file (`path`, relative to the manifest's folder and inside it; `sha256`
optional, checked when given) or a file inside a pip package's wheel (`source`: package,
version, path, sha256), downloaded once into the cache by `converter.zoo.fetch`. The document
follows `schemas/zoo-manifest.schema.json`; an id appears once; an entry without `expect`
expects `verified`.

A manifest is data, never a command: it is read only up to MAX_MANIFEST_BYTES and nested at
most MAX_NESTING deep; a package must be a plain project name and version (`fetch.check_source`,
checked here, before any job runs, and again by every fetch); a local path must stay inside
the manifest's folder (`files.local_model_path`). Anything else refuses the whole manifest in
one line.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..errors import ConverterError, FormatError
from .fetch import SHA256, check_source
from ..schemas import validate
from .files import MAX_MANIFEST_BYTES, local_model_path, parse_document, read_bounded

__all__ = ["ZooEntry", "ZooManifest", "load_manifest", "STATUSES"]

# In order of severity: a model's status over several targets and runtimes is the worst one.
STATUSES = ("verified", "mismatch", "unsupported", "error", "timeout", "crash")


@dataclass(frozen=True)
class ZooEntry:
    """One model of a manifest, its location resolved."""

    id: str
    format: str
    path: Path | None = None            # a local file (absolute, inside `folder`)
    source: dict | None = None          # or a file in a pip package's wheel
    sha256: str | None = None           # the expected hash (always known for `source`)
    input_shapes: dict[str, list[int]] = field(default_factory=dict)
    dims: dict[str, int] = field(default_factory=dict)
    const_inputs: dict[str, Any] = field(default_factory=dict)
    tolerances: dict[str, float] = field(default_factory=dict)
    seed: int = 0
    expect: str = "verified"
    folder: Path | None = None          # the manifest's folder, which a local file must be in

    def content_id(self) -> str:
        """What identifies the model's content for --resume, known without reading it: the
        manifest's sha256 for a package file; for a local file, its identity and change time
        (`file-` and a digest of device, inode, size and the modification and change times:
        any write changes the change time), so the parent never reads a model (a huge one
        would hold every job back, outside any timeout); the job hashes it, under its
        timeout. A missing file is `missing-` and a digest of its path."""
        if self.source is not None:
            return self.source["sha256"]
        assert self.path is not None
        try:
            st = os.stat(self.path)
        except OSError:
            facts, kind = [str(self.path)], "missing"
        else:
            facts = [str(self.path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                     st.st_ctime_ns]
            kind = "file"
        return f"{kind}-{hashlib.sha256(json.dumps(facts).encode()).hexdigest()[:32]}"

    def spec(self) -> dict[str, Any]:
        """The JSON-serialisable description a job process receives."""
        return {"id": self.id, "format": self.format,
                "path": str(self.path) if self.path else None, "source": self.source,
                "sha256": self.sha256, "inputShapes": self.input_shapes, "dims": self.dims,
                "constInputs": self.const_inputs, "tolerances": self.tolerances,
                "seed": self.seed, "expect": self.expect,
                "folder": str(self.folder) if self.folder else None}


@dataclass
class ZooManifest:
    path: Path
    entries: list[ZooEntry]
    about: str = ""

    def inputs(self) -> list[tuple[str, Path]]:
        """The files a run reads, as (label, path): the manifest and every local model. No
        output may be one of them (files.check_outputs)."""
        return [("the manifest", self.path)] + [(f"model {e.id!r}", e.path)
                                                for e in self.entries if e.path is not None]

    def select(self, only: Iterable[str] | None = None) -> list[ZooEntry]:
        """The entries named by `only` (manifest order), or all; an unknown id raises."""
        if not only:
            return list(self.entries)
        wanted = list(dict.fromkeys(only))
        known = {e.id for e in self.entries}
        unknown = [i for i in wanted if i not in known]
        if unknown:
            raise ConverterError(f"no model with id {', '.join(repr(u) for u in unknown)}",
                                 where=str(self.path),
                                 fix="--only takes ids from the manifest's `models`")
        return [e for e in self.entries if e.id in wanted]


def load_manifest(path: str | Path) -> ZooManifest:
    """Read and check a manifest (`.json` or `.toml`); refuse it in one line if anything in
    it is not what it should be (see the module doc)."""
    path = Path(path)
    doc = parse_document(read_bounded(path, "zoo manifest", MAX_MANIFEST_BYTES), path,
                         "zoo manifest")
    validate(doc, "zoo-manifest", str(path))
    folder = Path(os.path.realpath(path)).parent
    entries, seen = [], set()
    for index, model in enumerate(doc["models"]):
        if model["id"] in seen:
            raise FormatError(f"$.models[{index}].id: '{model['id']}' appears twice",
                              where=str(path), fix="give every model its own id")
        seen.add(model["id"])
        entries.append(_entry(model, folder, f"{path}: $.models[{index}]"))
    return ZooManifest(path, entries, doc.get("about", ""))


def _entry(model: dict, folder: Path, where: str) -> ZooEntry:
    if not _ID.fullmatch(model["id"]):  # the schema's pattern lets a final newline through
        raise FormatError(f"id {model['id']!r} holds other characters than letters, digits "
                          f"and '_.+-'", where=where)
    if "source" in model:
        source = dict(model["source"])
        check_source(source, where)
        local, sha, inner = None, source["sha256"], source["path"]
    else:
        local = local_model_path(folder, model["path"], where)
        source, sha, inner = None, model.get("sha256"), model["path"]
        if sha is not None and not SHA256.fullmatch(sha):
            raise FormatError(f"sha256 {sha!r} is not 64 lowercase hex digits", where=where)
    fmt = model.get("format") or Path(inner).suffix.lower().lstrip(".")
    if fmt not in ("onnx", "tflite"):
        raise FormatError(f"cannot tell the format of '{inner}'", where=where,
                          fix="name a .onnx or .tflite file, or give `format`")
    return ZooEntry(id=model["id"], format=fmt, path=local, source=source, sha256=sha,
                    input_shapes={k: list(v) for k, v in model.get("inputShapes", {}).items()},
                    dims=dict(model.get("dims", {})),
                    const_inputs=dict(model.get("constInputs", {})),
                    tolerances=dict(model.get("tolerances", {})), seed=model.get("seed", 0),
                    expect=model.get("expect", "verified"),
                    folder=folder if local is not None else None)


_ID = re.compile(r"[A-Za-z0-9_.+-]{1,200}")
