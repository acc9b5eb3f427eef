"""The weights manifest (`wg-weights-manifest` v1) and the WGWT weights file.

A weights file starts with the 4 bytes `WGWT` and a little-endian uint32 version (1); the
tensors follow one after another, in manifest order, little-endian and row-major (int4/uint4
packed two a byte, first value in the low nibble). The manifest gives each tensor's data type,
shape, byteOffset (from the start of the file) and byteLength.

Reading maps the file read-only and hands out `numpy.frombuffer` views: a 2 GB model is not
copied, and the arrays keep the mapping alive for as long as the graph uses them. Everything
that could make a view read the wrong bytes is rejected first, naming the tensor.
"""
from __future__ import annotations

import json
import mmap
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterable

import numpy as np

from .. import dtypes
from ..errors import WeightsError
from ..ir.graph import shape_problem
from ..ir.operand import ConstantData
from ..files.mapped import map_file
from ..schemas import validate
from ._files import LONE_SURROGATE, open_model_file, parse_json, read_text

__all__ = ["MAGIC", "VERSION", "HEADER_SIZE", "ManifestEntry", "WeightsFile", "check_key",
           "safe_key", "read_manifest", "write_weights", "manifest_text", "release_mapped_pages",
           "release_array_pages", "release_constant_pages"]

MAGIC = b"WGWT"
VERSION = 1
HEADER_SIZE = 8
_HEADER = struct.Struct("<4sI")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")  # and lone surrogates
_DRIVE = re.compile(r"^[A-Za-z]:/")


def key_problem(key: str) -> str | None:
    """Why a weights key is not a plain name (so could reach outside the file), or None.

    Keys are names such as `conv1.weight` or `model/conv/kernel:0`; `/` is allowed inside a
    name, as source models use it, but not a leading `/`, a `.` or `..` component, a
    backslash, a drive letter or control characters.
    """
    if not key:
        return "is empty"
    if LONE_SURROGATE.search(key):
        return "contains a lone surrogate"
    if _CONTROL.search(key):
        return "contains a control character"
    if "\\" in key:
        return "contains '\\'"
    if key.startswith("/") or _DRIVE.match(key):
        return "is an absolute path"
    if any(part in (".", "..") for part in key.split("/")):
        return "has a '.' or '..' path component"
    return None


def check_key(key: str, where: str) -> None:
    problem = key_problem(key)
    if problem:
        raise WeightsError(f"weights key {key!r} {problem}; a key is a name, never a path",
                           where=where)


def safe_key(name: str) -> str:
    """A weights key for an operand name: the name itself when it is a plain name, else the
    name with its path-like parts replaced (deterministic; uniqueness is the caller's job)."""
    if key_problem(name) is None:
        return name
    text = _CONTROL.sub("_", name.replace("\\", "/"))
    parts = [p if p not in (".", "..") else "_" for p in text.split("/") if p]
    # Control characters and surrogates are gone, no component is empty, '.' or '..', and no
    # ':/' is left for a drive letter: the result is always a plain name (tests check it).
    return "/".join(parts).replace(":/", "_/") or "tensor"


@dataclass(frozen=True)
class ManifestEntry:
    key: str
    data_type: str
    shape: tuple[int, ...]
    offset: int
    length: int

    def desc(self) -> str:
        return f"{self.data_type}{list(self.shape)}"


# A manifest takes about 150 bytes a tensor: this is room for 200,000 tensors. A larger file is
# refused before it is read (parsed JSON takes several times the text's size).
MAX_MANIFEST_BYTES = 32 << 20


def read_manifest(path: Path) -> dict[str, ManifestEntry]:
    """Parse and check a manifest on its own: schema, keys, shapes and byte lengths."""
    where = str(path)
    text = read_text(path, "weights manifest",
                     fix="the graph references weights; keep NAME.manifest.json and "
                         "NAME.weights next to the graph file", error=WeightsError,
                     max_bytes=MAX_MANIFEST_BYTES, sidecar=True)
    obj = parse_json(text, where, "weights manifest")
    validate(obj, "weights-manifest", where)
    entries: dict[str, ManifestEntry] = {}
    for key, t in obj["tensors"].items():
        at = f"{where}: tensor '{key}'"
        check_key(key, at)
        shape = tuple(t["shape"])
        problem = shape_problem(shape)
        if problem:
            raise WeightsError(problem, where=at)
        expected = dtypes.byte_length(t["dataType"], shape)
        if t["byteLength"] != expected:
            raise WeightsError(
                f"byteLength {t['byteLength']} does not match {t['dataType']}{list(shape)}, "
                f"which takes {expected} bytes", where=at)
        entries[key] = ManifestEntry(key, t["dataType"], shape, t["byteOffset"], t["byteLength"])
    return entries


class WeightsFile:
    """A manifest and its weights file, checked and mapped read-only.

    `tensor()` returns views into the mapping (no copy). The mapping stays open for as long as
    any view exists: numpy keeps it as the arrays' base.
    """

    def __init__(self, manifest_path: str | Path, weights_path: str | Path):
        self.manifest_path = Path(manifest_path)
        self.path = Path(weights_path)
        self.entries = read_manifest(self.manifest_path)
        self._map = self._open()
        self._check_layout(len(self._map))

    def _open(self) -> mmap.mmap | memoryview:
        where = str(self.path)
        with open_model_file(self.path, "weights file", error=WeightsError,
                             fix=f"it belongs next to {self.manifest_path.name}",
                             sidecar=True) as f:
            size = os.fstat(f.fileno()).st_size
            if size < HEADER_SIZE:
                raise WeightsError(f"the file has {size} bytes, less than the 8-byte header",
                                   where=where, fix="it is not a WGWT weights file")
            mapping = map_file(f.fileno(), where, "weights file")
        magic, version = _HEADER.unpack_from(mapping, 0)
        if magic != MAGIC or version != VERSION:
            if isinstance(mapping, mmap.mmap):  # the traceback keeps this frame: unmap now
                mapping.close()
        if magic != MAGIC:
            raise WeightsError(f"the file starts with {magic!r}, not {MAGIC!r}", where=where,
                               fix="it is not a WGWT weights file")
        if version != VERSION:
            raise WeightsError(f"weights file version {version} is not supported (only "
                               f"{VERSION})", where=where)
        return mapping

    def _check_layout(self, size: int) -> None:
        where = str(self.manifest_path)
        for e in self.entries.values():
            at = f"{where}: tensor '{e.key}'"
            if e.offset < HEADER_SIZE:
                raise WeightsError(f"byteOffset {e.offset} is inside the 8-byte file header",
                                   where=at, fix="the first tensor starts at byte 8")
            if e.offset + e.length > size:
                raise WeightsError(
                    f"bytes {e.offset}..{e.offset + e.length} lie outside the weights file "
                    f"{self.path.name} ({size} bytes)", where=at,
                    fix="the manifest and the weights file do not belong together")
        ordered = sorted(self.entries.values(), key=lambda e: (e.offset, e.key))
        for a, b in zip(ordered, ordered[1:]):
            if b.offset < a.offset + a.length:
                raise WeightsError(
                    f"tensor '{b.key}' (bytes {b.offset}..{b.offset + b.length}) overlaps "
                    f"tensor '{a.key}' (bytes {a.offset}..{a.offset + a.length})", where=where)

    def tensor(self, key: str, data_type: str, shape, where: str) -> np.ndarray:
        """The bytes of `key` as an array view; the declaration must match the manifest."""
        check_key(key, where)
        entry = self.entries.get(key)
        if entry is None:
            raise WeightsError(f"weights key '{key}' is not in the manifest "
                               f"{self.manifest_path.name}", where=where)
        declared = f"{data_type}{list(shape)}"
        if entry.data_type != data_type or entry.shape != tuple(shape):
            raise WeightsError(f"tensor '{key}' is {entry.desc()} in the manifest, but the graph "
                               f"declares {declared}", where=where)
        info = dtypes.info(data_type)
        if info.bits == 4:  # ConstantData keeps 4-bit values packed, as stored
            return np.frombuffer(self._map, dtype=np.uint8, count=entry.length,
                                 offset=entry.offset)
        count = entry.length // info.numpy.itemsize
        view = np.frombuffer(self._map, dtype=info.numpy, count=count, offset=entry.offset)
        return view.reshape(shape)


# Bytes written (and their source pages released) at a time: a large tensor is never resident
# whole, and a write of this size costs nothing next to the disk's own work.
_CHUNK = 16 << 20


def _mapping_of(buffer) -> mmap.mmap | None:
    """The mmap a buffer's memory belongs to (following numpy bases and memoryviews), if any."""
    while buffer is not None:  # numpy bases and memoryview objects never form a cycle
        if isinstance(buffer, mmap.mmap):
            return buffer
        buffer = buffer.obj if isinstance(buffer, memoryview) else getattr(buffer, "base", None)
    return None


def release_mapped_pages(raw: memoryview) -> None:
    """Tell the kernel this process is done with the mapped file pages under `raw`.

    A model's weights are views into its mapped file; writing them reads every page, and each
    page read stays resident, so a conversion would peak at the whole model. Once a tensor is
    written its whole pages are released (a later read faults them back in from the page
    cache, unchanged: the mapping is read-only and file-backed), so memory stays near one
    tensor. Partial pages at the edges are kept: a neighbour may still be read.
    """
    if raw.nbytes == 0:
        return
    start = np.frombuffer(raw, dtype=np.uint8).ctypes.data
    _release_span(_mapping_of(raw.obj), start, start + raw.nbytes)


def release_constant_pages(graph) -> None:
    """`release_mapped_pages` for every constant of `graph` held as a view of a mapped file
    (an ONNX source's weights): before a step that does not read them (a source runtime's own
    run), or after one that read only some and let readahead bring in their neighbours (the
    lowering copying the small constants)."""
    for operand in graph.operands():
        data = operand.constant
        if data is not None and data.fill is None and not data.packed:
            release_mapped_pages(data.raw_bytes())


def release_array_pages(arr: np.ndarray) -> None:
    """`release_mapped_pages` for an array that may be a strided view (a constant re-laid as a
    transposed view of its source): the whole pages of the memory it spans are released."""
    if arr.size == 0:
        return
    low, high = np.lib.array_utils.byte_bounds(arr)
    _release_span(_mapping_of(arr), low, high)


def _release_span(mapping: mmap.mmap | None, start: int, end: int) -> None:
    """Release the whole pages of [start, end) (addresses) inside `mapping`."""
    if mapping is None or not hasattr(mmap, "MADV_DONTNEED"):
        return
    base = np.frombuffer(mapping, dtype=np.uint8, count=1).ctypes.data
    page = mmap.PAGESIZE
    first = -(-(start - base) // page) * page
    last = (end - base) // page * page
    if last > first:
        mapping.madvise(mmap.MADV_DONTNEED, first, last - first)


def _write_strided(stream: BinaryIO, held: np.ndarray) -> int:
    """Write a strided view's row-major bytes a few first-axis slices at a time (the bytes of
    consecutive slices follow each other), so no copy of the whole tensor is ever made."""
    per_slice = held[0].nbytes  # > 0: an empty array is contiguous, never written here
    step = max(1, _CHUNK // per_slice)
    for start in range(0, held.shape[0], step):
        piece = np.ascontiguousarray(held[start:start + step])
        stream.write(memoryview(piece.reshape(-1).view(np.uint8)))
    return held.nbytes


def write_weights(stream: BinaryIO, tensors: Iterable[tuple[str, ConstantData]],
                  where: str = "weights") -> dict:
    """Stream the header and each tensor's bytes; return the manifest that describes them.

    Each tensor's bytes are checked against its shape before they are written, so a bad
    constant fails the save (which then leaves no file behind) instead of shifting every
    later offset.
    """
    stream.write(_HEADER.pack(MAGIC, VERSION))
    offset = HEADER_SIZE
    manifest: dict = {"format": "wg-weights-manifest", "version": VERSION,
                      "endianness": "little", "tensors": {}}
    for key, data in tensors:
        at = f"{where}: tensor '{key}'"
        check_key(key, at)
        if key in manifest["tensors"]:
            raise WeightsError(f"weights key '{key}' is used twice", where=at)
        held = data.held
        if held is not None and held.ndim and not held.flags.c_contiguous \
                and held.dtype.byteorder != ">" and not data.packed:
            written = held.nbytes  # re-laid: laid out piece by piece, once checked
            if written == data.nbytes:
                _write_strided(stream, held)
        else:
            raw = data.raw_bytes()
            written = raw.nbytes
            if written == data.nbytes:
                for chunk_start in range(0, raw.nbytes, _CHUNK):
                    chunk = raw[chunk_start:chunk_start + _CHUNK]
                    stream.write(chunk)
                    release_mapped_pages(chunk)
            raw = chunk = None  # a copy made by raw_bytes goes before the next is made
        if written != data.nbytes:
            raise WeightsError(f"the data has {written} bytes, but "
                               f"{data.data_type}{list(data.shape)} takes {data.nbytes}", where=at)
        if held is not None and not data.packed:  # a re-laid view: its source's pages too
            release_array_pages(held)
        manifest["tensors"][key] = {"dataType": data.data_type, "shape": list(data.shape),
                                    "byteOffset": offset, "byteLength": written,
                                    "layout": "row-major"}
        offset += written
    return manifest


def manifest_text(manifest: dict) -> str:
    """The manifest as JSON, one tensor a line."""
    lines = ["{"]
    for k in ("format", "version", "endianness"):
        lines.append(f"  {json.dumps(k)}: {json.dumps(manifest[k])},")
    tensors = manifest["tensors"]
    if not tensors:
        lines.append('  "tensors": {}')
    else:
        lines.append('  "tensors": {')
        items = [f"    {json.dumps(k, ensure_ascii=False)}: "
                 f"{json.dumps(v, separators=(', ', ': '))}" for k, v in tensors.items()]
        lines.append(",\n".join(items))
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"
