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
"""
from __future__ import annotations

from typing import BinaryIO

import numpy as np
import onnx

from ...errors import ConverterError
from ...formats.weights import release_mapped_pages
from ...ir import Graph

__all__ = ["write_onnx"]

_MODEL_GRAPH, _GRAPH_INITIALIZER, _TENSOR_RAW_DATA = 7, 5, 9
_CHUNK = 16 << 20
# protobuf cannot parse a message over 2 GiB, so neither can onnx.load or ONNX Runtime
_PROTOBUF_LIMIT = (1 << 31) - 1


def write_onnx(graph: Graph, f: BinaryIO, opset: int | None = None) -> int:
    """Write the ONNX model computing `graph` to the binary file `f`; returns its size."""
    from . import lower

    lowered = lower(graph, opset, external_min_bytes=0)
    model, arrays = lowered.model, lowered.external
    headers: list[tuple[bytes, np.ndarray]] = []
    kept = []
    for tensor in model.graph.initializer:
        arr = arrays.get(tensor.name)
        if arr is None:
            kept.append(tensor)
            continue
        header = onnx.TensorProto()
        header.name, header.data_type = tensor.name, tensor.data_type
        header.dims.extend(tensor.dims)
        headers.append((header.SerializeToString(), arr))
    rest = onnx.GraphProto()
    rest.CopyFrom(model.graph)  # small: every weight of it is in `arrays`
    del rest.initializer[:]
    rest.initializer.extend(kept)
    model.ClearField("graph")
    head, body = model.SerializeToString(), rest.SerializeToString()
    entries = []
    for header, arr in headers:
        data = len(header) + _field_size(_TENSOR_RAW_DATA, arr.nbytes)
        entries.append((header, arr, data))
    graph_size = len(body) + sum(_field_size(_GRAPH_INITIALIZER, n) for *_, n in entries)
    total = len(head) + _field_size(_MODEL_GRAPH, graph_size)
    if total > _PROTOBUF_LIMIT:
        raise ConverterError(f"the ONNX model would be {total / 2**30:.2f} GiB; protobuf, and so "
                             f"every ONNX reader, stops at 2 GiB",
                             fix="write a .webnn or .json graph (its weights go to a file of "
                                 "their own)")
    f.write(head)
    f.write(_key(_MODEL_GRAPH) + _varint(graph_size))
    f.write(body)
    for header, arr, size in entries:
        f.write(_key(_GRAPH_INITIALIZER) + _varint(size) + header)
        f.write(_key(_TENSOR_RAW_DATA) + _varint(arr.nbytes))
        view = memoryview(arr.reshape(-1)).cast("B")
        for start in range(0, len(view), _CHUNK):
            chunk = view[start:start + _CHUNK]
            f.write(chunk)
            release_mapped_pages(chunk)  # memory stays near one chunk, not the whole model
    return total


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
