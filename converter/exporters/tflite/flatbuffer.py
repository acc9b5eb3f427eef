"""Packing the model into flatbuffer bytes, weights included, without extra copies.

The object API (`ModelT.Pack`) would copy each weight twice (`tobytes`, then into the builder);
`ArrayBuffer` instead copies an array's memory straight into the builder's bytearray, which is
allocated once at its final size. A flatbuffer cannot pass 2 GiB, so a model whose weights come
near that keeps them after the flatbuffer instead (the schema's Buffer.offset/size, which LiteRT
reads the same way): the flatbuffer is packed with the offsets, then the weights follow it.

Written to a file, a model with at least `STREAM_MIN_BYTES` of weights takes that form too:
each weight is then written straight from its array (a filter re-laid for TFLite is a view,
laid out one tensor at a time) and its source's mapped pages are released, so the file is
written with about one tensor in memory rather than all the weights in a builder. Small models
and `to_tflite()` bytes keep the weights inside.
"""
from __future__ import annotations

from typing import BinaryIO

import flatbuffers
import numpy as np

from ...formats.weights import release_array_pages, release_mapped_pages
from .schema import fb

__all__ = ["ArrayBuffer", "pack", "INLINE_LIMIT", "STREAM_MIN_BYTES"]

# Weights up to this many bytes in total go inside the flatbuffer (whose limit is 2 GiB).
INLINE_LIMIT = 1_900_000_000
# Written to a file, weights of at least this many bytes in total go after the flatbuffer.
STREAM_MIN_BYTES = 16 << 20
_ALIGN = 16  # weights start 16-byte aligned, as XNNPACK prefers and the TFLite converter does
_OUTSIDE_ALIGN = 64


class ArrayBuffer(fb.BufferT):
    """A Buffer whose bytes are an ndarray's memory (held, not copied, until packing)."""

    def __init__(self, array: np.ndarray | None = None):
        super().__init__()
        self.array = array
        self.outside = False  # when set, Pack writes offset/size instead of the bytes

    @property
    def nbytes(self) -> int:
        return 0 if self.array is None else int(self.array.nbytes)

    def Pack(self, builder):  # noqa: N802 (the object API's name)
        data = None
        if self.nbytes and not self.outside:
            data = _byte_vector(builder, self.array)
        fb.BufferStart(builder)
        if data is not None:
            fb.BufferAddData(builder, data)
        fb.BufferAddOffset(builder, self.offset)
        fb.BufferAddSize(builder, self.size)
        return fb.BufferEnd(builder)


def _little_endian(array: np.ndarray) -> memoryview:
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    return memoryview(array).cast("B") if array.ndim else memoryview(array.reshape(1)).cast("B")


def _byte_vector(builder: flatbuffers.Builder, array: np.ndarray) -> int:
    view = _little_endian(array)
    n = len(view)
    builder.StartVector(1, n, _ALIGN)
    builder.head -= n
    builder.Bytes[builder.head:builder.head + n] = view
    return builder.EndVector()


def pack(model: fb.ModelT, out: BinaryIO | None = None,
         inline_limit: int = INLINE_LIMIT) -> bytes | None:
    """The model's .tflite bytes; or, given `out`, write them there and return None."""
    buffers: list[ArrayBuffer] = model.buffers
    weight_bytes = sum(b.nbytes for b in buffers)
    streamed = out is not None and weight_bytes >= STREAM_MIN_BYTES
    if weight_bytes <= inline_limit and not streamed:
        builder = flatbuffers.Builder(weight_bytes + _ALIGN * len(buffers) + (1 << 16))
        builder.Finish(model.Pack(builder), b"TFL3")
        view = memoryview(builder.Bytes)[builder.Head():]
        if out is None:
            return bytes(view)
        out.write(view)
        return None
    return _pack_outside(model, buffers, out)


def _pack_outside(model: fb.ModelT, buffers: list[ArrayBuffer], out: BinaryIO | None):
    """Weights after the flatbuffer. The offsets are only known once the flatbuffer's size is,
    and the size does not depend on their values (present uint64 fields), so pack twice."""
    placed = [b for b in buffers if b.nbytes]
    for b in placed:
        b.outside, b.offset, b.size = True, 1, b.nbytes
    head = _finish(model)
    position = _round_up(len(head), _OUTSIDE_ALIGN)
    for b in placed:
        b.offset = position
        position = _round_up(position + b.nbytes, _OUTSIDE_ALIGN)
    head = _finish(model)
    if out is None:
        pieces: list = [head]
        written = len(head)
        for b in placed:
            pieces.append(bytes(b.offset - written))
            view = _little_endian(b.array)
            pieces.append(view)
            written = b.offset + len(view)
        return b"".join(pieces)
    out.write(head)
    written = len(head)
    for b in placed:  # one weight at a time, its source's pages released once written
        out.write(bytes(b.offset - written))
        view = _little_endian(b.array)
        out.write(view)
        written = b.offset + len(view)
        release_mapped_pages(view)
        release_array_pages(b.array)
        del view
    return None


def _finish(model: fb.ModelT) -> bytes:
    builder = flatbuffers.Builder(1 << 16)
    builder.Finish(model.Pack(builder), b"TFL3")
    return bytes(builder.Output())


def _round_up(n: int, align: int) -> int:
    return (n + align - 1) // align * align
