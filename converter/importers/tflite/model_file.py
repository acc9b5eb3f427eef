"""Reading a .tflite file: the flatbuffer parsed into plain records, weights as views.

The file is memory-mapped and read with the flatbuffer reader classes of the schema that ships
with ai-edge-litert, so every constant tensor is a numpy view into the mapping: its bytes are
never copied unless an op needs them rearranged. Buffers stored after the flatbuffer (models
over 2 GB put them there, located by Buffer.offset/size from the start of the file) are views
into the same mapping.

Everything is parsed eagerly, so a truncated or corrupt file fails here, as one FormatError,
and not halfway through an import.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from ...dtypes import MAX_RANK
from ...errors import FormatError
from ...formats._files import open_model_file
from ...files.mapped import map_file

__all__ = ["TfliteModel", "Subgraph", "Tensor", "Operator", "Quantization", "read_tflite",
           "TYPES", "TypeInfo", "OP_NAMES"]

FILE_IDENTIFIER = b"TFL3"
SCHEMA_VERSION = 3

OP_NAMES: dict[int, str] = {v: k for k, v in vars(schema.BuiltinOperator).items()
                            if not k.startswith("_") and isinstance(v, int)}


@dataclass(frozen=True)
class TypeInfo:
    name: str  # TFLite's TensorType name
    numpy: np.dtype | None  # storage of one element (None: not a numeric array)
    webnn: str | None  # the WebNN data type holding it (None: WebNN has none)


_T = schema.TensorType
TYPES: dict[int, TypeInfo] = {
    _T.FLOAT32: TypeInfo("FLOAT32", np.dtype("<f4"), "float32"),
    _T.FLOAT16: TypeInfo("FLOAT16", np.dtype("<f2"), "float16"),
    _T.INT32: TypeInfo("INT32", np.dtype("<i4"), "int32"),
    _T.UINT8: TypeInfo("UINT8", np.dtype("u1"), "uint8"),
    _T.INT64: TypeInfo("INT64", np.dtype("<i8"), "int64"),
    _T.STRING: TypeInfo("STRING", None, None),
    # WebNN has no bool: comparisons give uint8 0/1, and so does every BOOL tensor here.
    _T.BOOL: TypeInfo("BOOL", np.dtype("u1"), "uint8"),
    _T.INT16: TypeInfo("INT16", np.dtype("<i2"), None),
    _T.COMPLEX64: TypeInfo("COMPLEX64", None, None),
    _T.INT8: TypeInfo("INT8", np.dtype("i1"), "int8"),
    _T.FLOAT64: TypeInfo("FLOAT64", np.dtype("<f8"), None),
    _T.COMPLEX128: TypeInfo("COMPLEX128", None, None),
    _T.UINT64: TypeInfo("UINT64", np.dtype("<u8"), "uint64"),
    _T.RESOURCE: TypeInfo("RESOURCE", None, None),
    _T.VARIANT: TypeInfo("VARIANT", None, None),
    _T.UINT32: TypeInfo("UINT32", np.dtype("<u4"), "uint32"),
    _T.UINT16: TypeInfo("UINT16", np.dtype("<u2"), None),
    # Packed two a byte, first value in the low nibble: the layout WebNN's int4 has too.
    _T.INT4: TypeInfo("INT4", np.dtype("u1"), "int4"),
    _T.BFLOAT16: TypeInfo("BFLOAT16", None, None),
}


def type_info(code: int) -> TypeInfo:
    return TYPES.get(code, TypeInfo(f"type {code}", None, None))


@dataclass(frozen=True)
class Quantization:
    """Affine quantization: real = (q - zero_point) * scale, per tensor or along `axis`."""

    scale: np.ndarray  # float32, 1 value or one per channel
    zero_point: np.ndarray  # int64, as many values as scale
    axis: int

    @property
    def per_channel(self) -> bool:
        return self.scale.size > 1

    def same_as(self, other: "Quantization | None") -> bool:
        return other is not None and self.axis == other.axis \
            and np.array_equal(self.scale, other.scale) \
            and np.array_equal(self.zero_point, other.zero_point)


@dataclass
class Tensor:
    index: int
    name: str
    type: int
    shape: tuple[int, ...]  # as LiteRT allocates it (a missing shape is a scalar, as there)
    signature: tuple[int, ...] | None  # shape_signature: -1 marks a dynamic dimension
    buffer: int
    data: np.ndarray | None  # the stored bytes as a flat uint8 view; None when there are none
    quant: Quantization | None
    sparsity: Any  # SparsityParametersT, or None for a dense tensor
    is_variable: bool

    @property
    def info(self) -> TypeInfo:
        return type_info(self.type)

    @property
    def type_name(self) -> str:
        return self.info.name

    @property
    def is_bool(self) -> bool:
        return self.type == _T.BOOL

    def __str__(self) -> str:
        return f"tensor {self.index} '{self.name}'"


@dataclass
class Operator:
    index: int
    code: int  # BuiltinOperator value
    custom_code: str | None
    version: int
    inputs: tuple[int, ...]  # tensor indices; -1 marks an omitted optional input
    outputs: tuple[int, ...]
    options: Any  # the builtin options object (e.g. Conv2DOptionsT), or None
    custom_options: bytes | None

    @property
    def name(self) -> str:
        """The op's name as users know it: `CONV_2D`, or `CUSTOM:<code>` for a custom op."""
        if self.code == schema.BuiltinOperator.CUSTOM:
            return f"CUSTOM:{self.custom_code}"
        return OP_NAMES.get(self.code, f"BUILTIN_{self.code}")


@dataclass
class Subgraph:
    index: int
    name: str
    tensors: list[Tensor]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    operators: list[Operator]


@dataclass
class TfliteModel:
    where: str
    version: int
    description: str
    subgraphs: list[Subgraph]
    buffers: list[np.ndarray | None] = field(repr=False)  # flat uint8 views, None when empty
    size: int = 0


def read_tflite(source: str | Path | bytes) -> TfliteModel:
    """Parse a .tflite file (or its bytes). Raises FormatError, one line, for a file that is not
    a TFLite model, is truncated, or whose buffers do not fit its tensors or the file."""
    where, buf = _open(source)
    if len(buf) < 8:
        raise FormatError(f"not a TFLite model: the file has {len(buf)} bytes, too few for a "
                          f"flatbuffer", where=where)
    ident = bytes(buf[4:8])
    if ident != FILE_IDENTIFIER:
        raise FormatError(f"not a TFLite model: its file identifier is {ident!r}, not "
                          f"{FILE_IDENTIFIER!r}", where=where,
                          fix="give a .tflite flatbuffer (TFLite schema version 3)")
    root = struct.unpack_from("<I", buf, 0)[0]
    if root + 4 > len(buf):
        raise _corrupt(where, f"its root table offset {root} points past the end of the file "
                              f"({len(buf)} bytes)")
    trail = _Trail()
    try:
        return _parse(buf, where, trail)
    except FormatError:
        raise
    except (struct.error, IndexError, ValueError, TypeError, OverflowError) as e:
        raise _corrupt(where, f"{_what_broke(e, len(buf))} while reading {trail.at}") from None


class _Trail:
    """Where the parse is (`subgraph 0, tensor 5`), so that a corrupt offset can be located:
    the flatbuffer reader only knows the byte it failed on."""

    def __init__(self) -> None:
        self.at = "the model table"


def _what_broke(e: Exception, size: int) -> str:
    text = str(e)
    if isinstance(e, struct.error):
        # "unpack_from requires a buffer of at least N bytes for unpacking K bytes at offset O"
        words = text.split()
        if "offset" in words:
            offset = words[words.index("offset") + 1]
            return f"an offset points to byte {offset}, past the end of the file ({size} bytes)"
        return f"an offset is out of range ({text})"
    if isinstance(e, IndexError):
        return f"an offset or vector length points outside the file ({size} bytes)"
    if isinstance(e, ValueError) and "buffer" in text:
        return f"a vector runs past the end of the file ({size} bytes)"
    if isinstance(e, TypeError) and text.startswith("bad number"):
        # flatbuffers' own check of an offset it computed: negative or past 32 bits
        return f"an offset resolves to {text.split()[2]}, outside the file ({size} bytes)"
    return f"a field has an impossible value ({type(e).__name__}: {text})"


def _corrupt(where: str, detail: str) -> FormatError:
    return FormatError(f"corrupt or truncated TFLite flatbuffer: {detail}", where=where,
                       fix="check that the .tflite file is complete and was written by a "
                           "TFLite converter")


def _open(source) -> tuple[str, Any]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return "<tflite bytes>", memoryview(source).cast("B")
    path = Path(source)
    where = str(path)
    with open_model_file(path, "TFLite model") as f:
        if os.fstat(f.fileno()).st_size == 0:
            raise FormatError("not a TFLite model: the file is empty", where=where)
        # The mapping stays alive as long as any weight view into it does.
        return where, map_file(f.fileno(), where, "TFLite model")


def _parse(buf, where: str, trail: _Trail) -> TfliteModel:
    model = schema.Model.GetRootAs(buf, 0)
    version = model.Version()
    if version != SCHEMA_VERSION:
        raise FormatError(f"TFLite schema version {version}; this importer reads version "
                          f"{SCHEMA_VERSION}", where=where,
                          fix="re-export the model with a current TFLite converter")
    size = len(buf)
    trail.at = "the buffer table"
    buffers = []
    for i in range(model.BuffersLength()):
        trail.at = f"buffer {i}"
        buffers.append(_buffer(model.Buffers(i), i, buf, size, where))
    codes = []
    trail.at = "the operator code table"
    for i in range(model.OperatorCodesLength()):
        trail.at = f"operator code {i}"
        oc = model.OperatorCodes(i)
        # Codes past 127 live in builtin_code; older files only fill the deprecated byte.
        code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        custom = oc.CustomCode()
        codes.append((code, custom.decode("utf-8", "replace") if custom else None, oc.Version()))
    trail.at = "the subgraph table"
    subgraphs = [_subgraph(model.Subgraphs(i), i, buffers, codes, where, trail)
                 for i in range(model.SubgraphsLength())]
    if not subgraphs:
        raise FormatError("the model has no subgraph", where=where)
    trail.at = "the model description"
    description = model.Description()
    return TfliteModel(where, version, description.decode("utf-8", "replace") if description
                       else "", subgraphs, buffers, size)


def _buffer(b, index: int, buf, size: int, where: str) -> np.ndarray | None:
    offset, length = b.Offset(), b.Size()
    if offset > 1:  # stored outside the flatbuffer; the schema reserves 0 and 1
        if offset + length > size:
            raise FormatError(f"buffer {index} lies at bytes [{offset}, {offset + length}), "
                              f"outside the file's {size} bytes", where=where,
                              fix="the file is truncated or its buffer table is corrupt")
        return np.frombuffer(buf, np.uint8, length, offset) if length else None
    if b.DataIsNone() or b.DataLength() == 0:
        return None
    return b.DataAsNumpy()


def _subgraph(sg, index: int, buffers: list, codes: list, where: str, trail: _Trail) -> Subgraph:
    trail.at = f"subgraph {index}"
    name = sg.Name()
    name = name.decode("utf-8", "replace") if name else f"subgraph{index}"
    tensors = []
    for i in range(sg.TensorsLength()):
        trail.at = f"subgraph {index}, tensor {i}"
        tensors.append(_tensor(sg.Tensors(i), i, buffers, where))
    trail.at = f"subgraph {index}, its input and output lists"
    count = len(tensors)

    def indices(values, what: str, optional: bool = False) -> tuple[int, ...]:
        out = tuple(int(v) for v in values)
        for v in out:
            if not (0 <= v < count or (optional and v == -1)):
                raise FormatError(f"subgraph '{name}': {what} names tensor {v}, but there are "
                                  f"{count} tensors", where=where)
        return out

    inputs = indices(_ints(sg, "Inputs"), "an input")
    outputs = indices(_ints(sg, "Outputs"), "an output")
    operators = []
    for i in range(sg.OperatorsLength()):
        trail.at = f"subgraph {index}, operator {i}"
        op = sg.Operators(i)
        k = op.OpcodeIndex()
        if not 0 <= k < len(codes):
            raise FormatError(f"subgraph '{name}': operator {i} has opcode index {k}, but the "
                              f"model has {len(codes)} operator codes", where=where)
        code, custom, version = codes[k]
        options = schema.BuiltinOptionsCreator(op.BuiltinOptionsType(), op.BuiltinOptions())
        raw = None if op.CustomOptionsIsNone() else bytes(op.CustomOptionsAsNumpy())
        operators.append(Operator(
            i, code, custom, version,
            indices(_ints(op, "Inputs"), f"operator {i}'s input", optional=True),
            indices(_ints(op, "Outputs"), f"operator {i}'s output", optional=True),
            options, raw))
    return Subgraph(index, name, tensors, inputs, outputs, operators)


def _ints(table, what: str) -> np.ndarray:
    if getattr(table, f"{what}IsNone")():
        return np.zeros(0, np.int32)
    return getattr(table, f"{what}AsNumpy")()


def _tensor(t, index: int, buffers: list, where: str) -> Tensor:
    raw_name = t.Name()
    name = raw_name.decode("utf-8", "replace") if raw_name else f"tensor{index}"
    shape = tuple(int(d) for d in _ints(t, "Shape"))
    if len(shape) > MAX_RANK:
        raise FormatError(f"tensor {index} '{name}' has rank {len(shape)}; the converter handles "
                          f"up to {MAX_RANK} axes", where=where)
    if any(d < 0 for d in shape):
        raise FormatError(f"tensor {index} '{name}' has a negative dimension in its shape "
                          f"{list(shape)} (a dynamic axis is -1 in its shape signature only)",
                          where=where, fix="the file is corrupt: re-export it")
    signature = None if t.ShapeSignatureIsNone() else tuple(int(d) for d in
                                                             t.ShapeSignatureAsNumpy())
    b = t.Buffer()
    if not 0 <= b < max(len(buffers), 1):
        raise FormatError(f"tensor {index} '{name}' names buffer {b}, but the model has "
                          f"{len(buffers)} buffers", where=where)
    data = buffers[b] if buffers else None
    sparsity = None
    sp = t.Sparsity()
    if sp is not None:
        sparsity = schema.SparsityParametersT.InitFromObj(sp)
    tensor = Tensor(index, name, t.Type(), shape, signature, b, data, _quantization(t),
                    sparsity, bool(t.IsVariable()))
    if data is not None and sparsity is None:
        _check_size(tensor, where)
    return tensor


def _quantization(t) -> Quantization | None:
    q = t.Quantization()
    if q is None or q.ScaleIsNone() or q.ScaleLength() == 0:
        return None  # no parameters, or only the min/max of a float range (no quantization)
    scale = np.asarray(q.ScaleAsNumpy(), np.float32)
    zero = np.zeros(scale.size, np.int64) if q.ZeroPointIsNone() else \
        np.asarray(q.ZeroPointAsNumpy(), np.int64)
    if zero.size == 1 and scale.size > 1:
        zero = np.repeat(zero, scale.size)
    return Quantization(scale, zero, int(q.QuantizedDimension()))


def _check_size(tensor: Tensor, where: str) -> None:
    info = tensor.info
    if info.numpy is None:
        return  # strings, resources: no fixed byte length to check
    count = int(np.prod(tensor.shape, dtype=np.int64))
    need = (count + 1) // 2 if tensor.type == _T.INT4 else count * info.numpy.itemsize
    if tensor.data.size != need:
        raise FormatError(f"{tensor} has shape {list(tensor.shape)} of {info.name} "
                          f"({need} bytes), but its buffer {tensor.buffer} holds "
                          f"{tensor.data.size} bytes", where=where,
                          fix="the file is corrupt: a tensor and its buffer disagree")
