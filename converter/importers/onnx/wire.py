"""Reading an ONNX file without copying its weights.

An ONNX file is a protobuf ModelProto. Parsing it with protobuf copies every initializer's
raw_data into memory (and reading the file first copies it once more). Instead the file is
memory-mapped and scanned at the protobuf wire level: each top-level initializer's raw_data
payload is located (its offset and length in the file) and left out of a small copy of the model
that protobuf then parses. The weights are numpy views into the mapped file: nothing is read
until it is used, and nothing is copied.

Only the fields on the path to the weights are decoded (ModelProto.graph = 7,
GraphProto.initializer = 5, TensorProto.raw_data = 9); every other field is copied as it is.
"""
from __future__ import annotations

import mmap
import os
import stat
from pathlib import Path

from ...file_guard import note_read
from ...mapped_files import map_file

__all__ = ["map_model"]

_MODEL_GRAPH, _GRAPH_INITIALIZER, _TENSOR_RAW_DATA = 7, 5, 9


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def _varint(buf, pos: int, end: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= end or shift > 63:
            raise WireError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _fields(buf, start: int, end: int):
    """Yield (field number, wire type, field start, payload start, payload end) in order."""
    pos = start
    while pos < end:
        field_start = pos
        tag, pos = _varint(buf, pos, end)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            _, pos = _varint(buf, pos, end)
            yield number, wire, field_start, pos, pos
            continue
        if wire == 2:
            length, pos = _varint(buf, pos, end)
            if pos + length > end:
                raise WireError("a length-delimited field runs past its message")
            yield number, wire, field_start, pos, pos + length
            pos += length
            continue
        size = {1: 8, 5: 4}.get(wire)
        if size is None:
            raise WireError(f"unsupported wire type {wire}")
        if pos + size > end:
            raise WireError("truncated fixed-size field")
        yield number, wire, field_start, pos, pos + size
        pos += size


def _strip_tensor(buf, start: int, end: int) -> tuple[bytes, tuple[int, int] | None]:
    out, raw = bytearray(), None
    for number, wire, fstart, pstart, pend in _fields(buf, start, end):
        if number == _TENSOR_RAW_DATA and wire == 2:
            raw = (pstart, pend - pstart)
        else:
            out += buf[fstart:pend]
    return bytes(out), raw


def _strip_graph(buf, start: int, end: int, spans: list) -> bytes:
    out = bytearray()
    for number, wire, fstart, pstart, pend in _fields(buf, start, end):
        if number == _GRAPH_INITIALIZER and wire == 2:
            body, raw = _strip_tensor(buf, pstart, pend)
            spans.append(raw)
            out += _encode_varint((number << 3) | 2) + _encode_varint(len(body)) + body
        else:
            out += buf[fstart:pend]
    return bytes(out)


def map_model(path: str | Path
              ) -> tuple[bytes, list[memoryview | None], mmap.mmap | memoryview | bytes]:
    """Map an ONNX file: the model's bytes without initializer raw_data, each top-level
    initializer's raw_data as a view into the mapping (None where it has none), and the map.

    Raises WireError when the file is not a regular file or not well-formed protobuf.
    """
    # Opened without blocking and checked to be a regular file: a FIFO named like a model
    # must neither hang the converter nor be read.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise WireError("not a regular file")
        note_read(path, "the ONNX model", st)
        mapped = map_file(fd, str(path), "ONNX model")
    finally:
        os.close(fd)
    view = memoryview(mapped)
    spans: list = []
    out = bytearray()
    for number, wire, fstart, pstart, pend in _fields(view, 0, len(view)):
        if number == _MODEL_GRAPH and wire == 2:
            body = _strip_graph(view, pstart, pend, spans)
            out += _encode_varint((number << 3) | 2) + _encode_varint(len(body)) + body
        else:
            out += view[fstart:pend]
    raws = [None if s is None else view[s[0]:s[0] + s[1]] for s in spans]
    return bytes(out), raws, mapped
