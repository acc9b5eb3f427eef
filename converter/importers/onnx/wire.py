"""Reading an ONNX file without copying its weights.

An ONNX file is a protobuf ModelProto. Parsing it with protobuf copies every initializer's
raw_data into memory (and reading the file first copies it once more). Instead the file is
memory-mapped and scanned at the protobuf wire level: each top-level initializer's raw_data
payload is located (its offset and length in the file) and left out of a small copy of the model
that protobuf then parses. The weights are numpy views into the mapped file: nothing is read
until it is used, and nothing is copied.

Only the fields on the path to the weights are decoded (ModelProto.graph = 7,
GraphProto.initializer = 5, TensorProto.raw_data = 9); every other field is stepped over and
copied as it is, in runs.

The file is hostile, so the scan's work is bounded before it is done: a tag protobuf forbids
(field number 0, as a zero-filled file starts with; a wire type ONNX never uses) is refused at
the byte it is found, the fields stepped over are counted (MAX_FIELDS in all), and the copy is
sized before it is made (protobuf parses no message over 2 GiB, so no larger copy is made).
"""
from __future__ import annotations

import mmap
import os
import stat
from pathlib import Path

from ...files.guard import note_read
from ...files.mapped import map_file

__all__ = ["map_model", "WireError", "MAX_FIELDS", "MAX_MESSAGE_BYTES"]

_MODEL_GRAPH, _GRAPH_INITIALIZER, _TENSOR_RAW_DATA = 7, 5, 9
_MAX_FIELD_NUMBER = (1 << 29) - 1  # protobuf's largest
# Fields the scan steps over in all: the model's own, its graph's (nodes, initializers, value
# infos...) and each top-level initializer's. Real models have a few per node; a file of tiny
# fields (2 bytes each would be 8 million in 16 MB) is refused here rather than walked.
MAX_FIELDS = 1 << 22
# What entering a message (the graph, an initializer) counts for against MAX_FIELDS: about what
# its bookkeeping costs, in fields stepped over, so a file of empty initializers is bounded too.
_ENTRY_COST = 16
# protobuf refuses to parse a message of 2 GiB or more: the model without its initializers'
# bytes must be smaller, so a larger copy of it is never made.
MAX_MESSAGE_BYTES = (1 << 31) - 1


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message, or not one the scan will walk."""


def _varint(buf, pos: int, end: int) -> tuple[int, int]:
    value, shift, start = 0, 0, pos
    while True:
        if pos >= end or shift > 63:
            raise WireError(f"a truncated or overlong varint at byte {start}")
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


class _Scan:
    """One file's scan: the bytes and the fields it may still step over."""

    def __init__(self, buf):
        self.buf = buf
        self.fields_left = MAX_FIELDS

    def find(self, start: int, end: int, wanted: int) -> list[tuple[int, int, int]]:
        """Step over the fields of the message buf[start:end]; return (field start, payload
        start, payload end) of each length-delimited field numbered `wanted`.

        Raises WireError at the first malformed field, or past MAX_FIELDS in all."""
        buf, found, pos = self.buf, [], start
        left = self.fields_left - _ENTRY_COST
        while pos < end:
            if left <= 0:
                raise WireError(f"it has more than {MAX_FIELDS} fields in its model, graph "
                                f"and initializer messages; no real model has")
            left -= 1
            field_start = pos
            tag = buf[pos]
            pos += 1
            if tag >= 0x80:
                tag, pos = _varint(buf, field_start, end)
            number, wire = tag >> 3, tag & 7
            if number == 0 or number > _MAX_FIELD_NUMBER:
                raise WireError(f"byte {field_start} starts a field numbered {number}, which "
                                f"protobuf does not allow")
            if wire == 2:
                if pos < end and buf[pos] < 0x80:  # the usual one-byte length, decoded here
                    length = buf[pos]
                    pos += 1
                else:
                    length, pos = _varint(buf, pos, end)
                if length > end - pos:
                    raise WireError(f"the field at byte {field_start} claims {length} bytes; "
                                    f"its message has {end - pos} left")
                if number == wanted:
                    found.append((field_start, pos, pos + length))
                pos += length
            elif wire == 0:
                if pos < end and buf[pos] < 0x80:
                    pos += 1
                else:
                    _, pos = _varint(buf, pos, end)
            elif wire == 1 or wire == 5:
                pos += 8 if wire == 1 else 4
                if pos > end:
                    raise WireError(f"the field at byte {field_start} is truncated")
            else:  # 3, 4: groups, which ONNX never uses; 6, 7: no such wire type
                raise WireError(f"byte {field_start} starts a field of wire type {wire}, which "
                                f"an ONNX model does not have")
        self.fields_left = left
        return found


def _framed(tag: bytes, size: int) -> bytes:
    return tag + (bytes((size,)) if size < 0x80 else _encode_varint(size))


_GRAPH_TAG = _encode_varint((_MODEL_GRAPH << 3) | 2)
_INITIALIZER_TAG = _encode_varint((_GRAPH_INITIALIZER << 3) | 2)


def _strip_graph(scan: _Scan, start: int, end: int, spans: list) -> tuple[list, int]:
    """The graph's pieces (spans of the file, or bytes) without its initializers' raw_data,
    and their size; each initializer's raw_data span (or None) goes to `spans`."""
    pieces, size, prev = [], 0, start
    for fstart, pstart, pend in scan.find(start, end, _GRAPH_INITIALIZER):
        raws = scan.find(pstart, pend, _TENSOR_RAW_DATA)
        if not raws:  # no raw_data: the initializer stays in the run copied as it is
            spans.append(None)
            continue
        pieces.append((prev, fstart))
        size += fstart - prev
        body_size = pend - pstart - sum(e - f for f, _, e in raws)
        head = _framed(_INITIALIZER_TAG, body_size)
        pieces.append(head)
        size += len(head) + body_size
        at = pstart
        for f, _, e in raws:
            pieces.append((at, f))
            at = e
        pieces.append((at, pend))
        spans.append((raws[-1][1], raws[-1][2] - raws[-1][1]))  # protobuf keeps the last
        prev = pend
    pieces.append((prev, end))
    return pieces, size + end - prev


def _stripped_model(buf, spans: list) -> bytes:
    """The model's bytes without its top-level initializers' raw_data (whose spans go to
    `spans`), sized before they are copied."""
    scan, end = _Scan(buf), len(buf)
    pieces, size, prev = [], 0, 0
    for fstart, pstart, pend in scan.find(0, end, _MODEL_GRAPH):
        body, body_size = _strip_graph(scan, pstart, pend, spans)
        head = _framed(_GRAPH_TAG, body_size)
        pieces += [(prev, fstart), head, *body]
        size += fstart - prev + len(head) + body_size
        prev = pend
    pieces.append((prev, end))
    size += end - prev
    if size > MAX_MESSAGE_BYTES:
        raise WireError(f"without its initializers' data it still takes {size} bytes; "
                        f"protobuf reads no message over 2 GiB")
    out = bytearray()
    for piece in pieces:
        if isinstance(piece, bytes):
            out += piece
        elif piece[1] > piece[0]:
            out += buf[piece[0]:piece[1]]
    return bytes(out)


def map_model(path: str | Path
              ) -> tuple[bytes, list[memoryview | None], mmap.mmap | memoryview | bytes]:
    """Map an ONNX file: the model's bytes without initializer raw_data, each top-level
    initializer's raw_data as a view into the mapping (None where it has none), and the map.

    Raises WireError when the file is not a regular file or not well-formed protobuf (at the
    first malformed field), has more than MAX_FIELDS fields in the messages scanned, or would
    leave a model too large for protobuf to parse.
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
    stripped = _stripped_model(view, spans)
    raws = [None if s is None else view[s[0]:s[0] + s[1]] for s in spans]
    return stripped, raws, mapped
