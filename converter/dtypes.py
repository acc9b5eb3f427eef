"""WebNN operand data types: names, file tokens, numpy storage and sizes.

The spec's MLOperandDataType has eight members. Chromium also accepts int4 and uint4 (packed two
a byte, first value in the low nibble), which the file formats carry, so they are here too but
kept out of SPEC_DATA_TYPES.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ConverterError

__all__ = [
    "DataTypeInfo",
    "DATA_TYPES",
    "SPEC_DATA_TYPES",
    "FLOAT_TYPES",
    "info",
    "from_token",
    "from_numpy",
    "numpy_dtype",
    "byte_length",
    "MAX_DIMENSION",
    "MAX_ELEMENT_COUNT",
    "MAX_RANK",
]

# Each dimension is an [EnforceRange] unsigned long and must be > 0.
MAX_DIMENSION = 2**32 - 1
# The element count must fit in a WebIDL `long` (spec #926); Chromium enforces the same int32 bound.
MAX_ELEMENT_COUNT = 2**31 - 1
# The most axes a shape may have. The spec sets none, but every value the converter computes is a
# numpy array, and numpy holds at most 32 axes (1.x; 64 from 2.0); no backend takes more than 8.
MAX_RANK = 32


@dataclass(frozen=True)
class DataTypeInfo:
    name: str  # the spec's name, e.g. "float32"
    token: str  # the .webnn text token, e.g. "f32"
    numpy: np.dtype  # storage dtype of one unpacked element
    bits: int  # bits per element as stored in a weights file

    @property
    def is_float(self) -> bool:
        return self.numpy.kind == "f"

    @property
    def is_signed(self) -> bool:
        return self.numpy.kind in "fi"


def _make(name: str, token: str, np_name: str, bits: int) -> DataTypeInfo:
    return DataTypeInfo(name, token, np.dtype(np_name).newbyteorder("<"), bits)


DATA_TYPES: dict[str, DataTypeInfo] = {
    t.name: t
    for t in (
        _make("float32", "f32", "float32", 32),
        _make("float16", "f16", "float16", 16),
        _make("int32", "i32", "int32", 32),
        _make("uint32", "u32", "uint32", 32),
        _make("int64", "i64", "int64", 64),
        _make("uint64", "u64", "uint64", 64),
        _make("int8", "i8", "int8", 8),
        _make("uint8", "u8", "uint8", 8),
        _make("int4", "i4", "int8", 4),
        _make("uint4", "u4", "uint8", 4),
    )
}
SPEC_DATA_TYPES: tuple[str, ...] = (
    "float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8",
)
FLOAT_TYPES = frozenset({"float32", "float16"})
_BY_TOKEN = {t.token: t for t in DATA_TYPES.values()}
_BY_NUMPY = {t.numpy.newbyteorder("="): t.name for t in DATA_TYPES.values() if t.bits >= 8}


def info(name: str) -> DataTypeInfo:
    try:
        return DATA_TYPES[name]
    except (KeyError, TypeError):
        raise ConverterError(
            f"unknown data type {name!r}", fix=f"use one of {', '.join(DATA_TYPES)}"
        ) from None


def from_token(token: str) -> str:
    """The data type named by a .webnn token (`f32` -> `float32`)."""
    try:
        return _BY_TOKEN[token].name
    except KeyError:
        raise ConverterError(
            f"unknown data type token {token!r}", fix=f"use one of {', '.join(_BY_TOKEN)}"
        ) from None


def from_numpy(dtype) -> str:
    """The WebNN data type that stores a numpy dtype (bool maps to uint8, as WebNN has no bool)."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return "uint8"
    try:
        return _BY_NUMPY[dt.newbyteorder("=")]
    except KeyError:
        raise ConverterError(f"numpy dtype {dt} has no WebNN data type") from None


def numpy_dtype(name: str) -> np.dtype:
    return info(name).numpy


def byte_length(name: str, shape) -> int:
    """Bytes that a tensor occupies packed (4-bit types round up to whole bytes)."""
    count = 1
    for d in shape:
        count *= int(d)
    return (count * info(name).bits + 7) // 8
