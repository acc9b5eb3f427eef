"""Writing a lowered model to an `.onnx` file with each weight written once, never copied.

`SerializeToString()` of a model that holds its weights copies every weight twice: into the
TensorProto (`raw_data = bytes(...)`) and into the serialized string. Instead the model is
lowered with its constants left as arrays (`lower(..., external_min_bytes=0)`), and the file is
assembled at the protobuf wire level: the model without its graph, then the graph field
(ModelProto field 7) whose body is the graph without those initializers followed by one
`initializer` (GraphProto field 5) per array, each a TensorProto header (name, dims, type)
plus its `raw_data` (TensorProto field 9) streamed from the array. Protobuf readers accept
fields in any order and repeated fields stay in the order written, so `onnx.load` reads the
same model `to_onnx` would have given.

A model that would pass protobuf's 2 GiB (EXTERNAL_OVER) keeps its weights in a data file
beside it instead (ONNX's external data: NAME.onnx.data, named relative to the model), each
streamed from its array to an aligned offset, and the model's TensorProtos point at them.
"""
from __future__ import annotations

from typing import BinaryIO, Callable

import numpy as np
import onnx

from ...errors import ConverterError
from ...formats.weights import release_mapped_pages
from ...ir import Graph

__all__ = ["write_onnx", "EXTERNAL_OVER"]

_MODEL_GRAPH, _GRAPH_INITIALIZER, _TENSOR_RAW_DATA = 7, 5, 9
_CHUNK = 16 << 20
# protobuf cannot parse a message over 2 GiB, so neither can onnx.load or ONNX Runtime
_PROTOBUF_LIMIT = (1 << 31) - 1
# A model that would be larger than this keeps its weights in a data file beside it (ONNX's
# external data): 64 MiB under protobuf's limit, so that a reader's own additions (ONNX
# Runtime's graph optimizations save nothing, but tools that add metadata do) stay under it.
EXTERNAL_OVER = _PROTOBUF_LIMIT - (64 << 20)
_EXTERNAL_MIN = 1024  # smaller weights stay in the model (as onnx.save_model does)
# Where each weight starts in the data file: 64 KiB, the allocation granularity that memory
# mapping on Windows needs (ONNX Runtime maps aligned weights of 1 MiB and more), for those;
# 64 bytes for smaller ones, so every weight is aligned for any element type.
_ALIGN_MAPPED, _MAPPED_MIN, _ALIGN = 64 << 10, 1 << 20, 64
# The opener of the data file, called only when one is written: (binary file, its name as the
# model refers to it, relative to the model's folder).
DataOpener = Callable[[], tuple[BinaryIO, str]]


def write_onnx(graph: Graph, f: BinaryIO, opset: int | None = None, *,
               data: DataOpener | None = None, external_over: int | None = None,
               where: str | None = None) -> int:
    """Write the ONNX model computing `graph` to the binary file `f`; returns its size.

    A model larger than `external_over` bytes (default EXTERNAL_OVER, under protobuf's 2 GiB)
    keeps its weights of 1 KiB and more in the file `data()` opens, at aligned offsets, each
    streamed from its array; without `data`, a model over 2 GiB is refused (an error naming
    `where`, the file being written)."""
    from . import lower

    limit = EXTERNAL_OVER if external_over is None else external_over
    lowered = lower(graph, opset, external_min_bytes=0)
    model, arrays = lowered.model, lowered.external
    weights: list[tuple[onnx.TensorProto, np.ndarray]] = []
    kept = []
    for tensor in model.graph.initializer:
        arr = arrays.get(tensor.name)
        if arr is None:
            kept.append(tensor)
            continue
        header = onnx.TensorProto()
        header.name, header.data_type = tensor.name, tensor.data_type
        header.dims.extend(tensor.dims)
        weights.append((header, arr))
    rest = onnx.GraphProto()
    rest.CopyFrom(model.graph)  # small: every weight of it is in `arrays`
    del rest.initializer[:]
    rest.initializer.extend(kept)
    model.ClearField("graph")
    head, body = model.SerializeToString(), rest.SerializeToString()
    entries, total = _inline(head, body, weights)
    if total > limit and data is not None:
        return _write_external(f, head, body, weights, data, where)
    _check_limit(total, data is not None, where)
    _write_model(f, head, body, entries)
    return total


# (serialized TensorProto without its data, the array when its bytes follow as raw_data, the
# size of the TensorProto): one initializer of the model as written.
_Entry = tuple[bytes, "np.ndarray | None", int]


def _inline(head: bytes, body: bytes, weights: list) -> tuple[list[_Entry], int]:
    entries = []
    for header, arr in weights:
        serialized = header.SerializeToString()
        entries.append((serialized, arr, len(serialized)
                        + _field_size(_TENSOR_RAW_DATA, arr.nbytes)))
    return entries, _model_size(head, body, entries)


def _graph_size(body: bytes, entries: list[_Entry]) -> int:
    return len(body) + sum(_field_size(_GRAPH_INITIALIZER, n) for *_, n in entries)


def _model_size(head: bytes, body: bytes, entries: list[_Entry]) -> int:
    return len(head) + _field_size(_MODEL_GRAPH, _graph_size(body, entries))


def _check_limit(total: int, external: bool, where: str | None) -> None:
    if total > _PROTOBUF_LIMIT:
        what = " even with its weights in a data file" if external else ""
        raise ConverterError(f"the ONNX model would be {total / 2**30:.2f} GiB{what}; "
                             f"protobuf, and so every ONNX reader, stops at 2 GiB",
                             where=where,
                             fix="write a .webnn or .json graph (its weights go to a file of "
                                 "their own)")


def _write_model(f: BinaryIO, head: bytes, body: bytes, entries: list[_Entry]) -> None:
    f.write(head)
    f.write(_key(_MODEL_GRAPH) + _varint(_graph_size(body, entries)))
    f.write(body)
    for header, arr, size in entries:
        f.write(_key(_GRAPH_INITIALIZER) + _varint(size) + header)
        if arr is not None:
            f.write(_key(_TENSOR_RAW_DATA) + _varint(arr.nbytes))
            _stream(f, arr)


def _write_external(f: BinaryIO, head: bytes, body: bytes, weights: list,
                    data: DataOpener, where: str | None) -> int:
    """The model with its weights of _EXTERNAL_MIN bytes and more in the data file, each at
    an aligned offset; returns the model's size."""
    stream, location = data()
    placed: list[tuple[int, np.ndarray]] = []  # (offset, array) in the data file's order
    entries: list[_Entry] = []
    end = 0
    for header, arr in weights:
        if arr.nbytes < _EXTERNAL_MIN:
            serialized = header.SerializeToString()
            entries.append((serialized, arr, len(serialized)
                            + _field_size(_TENSOR_RAW_DATA, arr.nbytes)))
            continue
        align = _ALIGN_MAPPED if arr.nbytes >= _MAPPED_MIN else _ALIGN
        offset = -(-end // align) * align
        header.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (("location", location), ("offset", str(offset)),
                           ("length", str(arr.nbytes))):
            entry = header.external_data.add()
            entry.key, entry.value = key, value
        serialized = header.SerializeToString()
        entries.append((serialized, None, len(serialized)))
        placed.append((offset, arr))
        end = offset + arr.nbytes
    total = _model_size(head, body, entries)
    _check_limit(total, True, where)
    with stream:
        at = 0
        for offset, arr in placed:
            if offset > at:
                stream.write(bytes(offset - at))  # the padding up to the aligned offset
            _stream(stream, arr)
            at = offset + arr.nbytes
    _write_model(f, head, body, entries)
    return total


def _stream(f: BinaryIO, arr: np.ndarray) -> None:
    view = memoryview(np.ascontiguousarray(arr).reshape(-1)).cast("B")
    for start in range(0, len(view), _CHUNK):
        chunk = view[start:start + _CHUNK]
        f.write(chunk)
        release_mapped_pages(chunk)  # memory stays near one chunk, not the whole model


def _key(field: int) -> bytes:
    return _varint(field << 3 | 2)  # wire type 2: length-delimited


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field_size(field: int, length: int) -> int:
    return len(_key(field)) + len(_varint(length)) + length
