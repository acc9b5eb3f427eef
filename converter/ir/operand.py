"""Operands: the values that flow through a WebNN graph.

An operand is a graph input, a constant, or the result of an operation (intermediate). It knows
its producer and its uses, in order, each as (operation, input slot): passes rewrite through
these and never through a separate edge list, so an input's slot is never lost.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .. import dtypes

if TYPE_CHECKING:
    from .graph import Graph
    from .operation import Operation

__all__ = ["Operand", "Use", "ConstantData", "TensorDesc", "pack4", "unpack4",
           "array_from_bytes"]


class TensorDesc(NamedTuple):
    """A data type and a static shape: what MLOperandDescriptor holds."""

    data_type: str
    shape: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __str__(self) -> str:
        return f"{dtypes.info(self.data_type).token}[{', '.join(map(str, self.shape))}]"


class Use(NamedTuple):
    """One use of an operand: `op.inputs[index] is operand`."""

    op: "Operation"
    index: int


class ConstantData:
    """The value of a constant operand, held without copying.

    Exactly one of these is set:
      * `array`: an ndarray of the operand's shape (a view into a weights file, a source model's
        buffer, or the caller's array; never copied here). For int4/uint4 it is the packed bytes,
        a uint8 array of byte_length(dtype, shape) elements.
      * `fill`: one number that every element has (the `.webnn` `@scalar(...)` form).

    `origin` records how the value was written (`weights`, `scalar`, `bytes`) so a file loads and
    saves to the same structure.
    """

    __slots__ = ("data_type", "shape", "_array", "fill", "origin")

    def __init__(self, data_type: str, shape, *, array: np.ndarray | None = None,
                 fill: float | int | None = None, origin: str | None = None):
        if (array is None) == (fill is None):
            raise ValueError("ConstantData takes exactly one of array= and fill=")
        self.data_type = data_type
        self.shape = tuple(int(d) for d in shape)
        self._array = array
        self.fill = fill
        self.origin = origin or ("scalar" if fill is not None else "weights")

    @property
    def packed(self) -> bool:
        return dtypes.info(self.data_type).bits == 4

    @property
    def nbytes(self) -> int:
        return dtypes.byte_length(self.data_type, self.shape)

    def numpy(self) -> np.ndarray:
        """The value as an ndarray of the operand's shape (read-only where it is a view).

        A fill becomes a broadcast view (no memory per element); 4-bit types are unpacked.
        """
        info = dtypes.info(self.data_type)
        if self.fill is not None:
            return np.broadcast_to(np.array(self.fill, dtype=info.numpy), self.shape)
        if self.packed:
            return unpack4(self._array, self.shape, signed=info.is_signed)
        return self._array.reshape(self.shape)

    @property
    def held(self) -> np.ndarray | None:
        """The array as held (None for a fill): possibly a strided view of another shape whose
        row-major order is the value's (a re-laid filter or permuted dense weights), which
        writers may lay out piece by piece instead of copying whole."""
        return self._array

    def raw_bytes(self) -> memoryview:
        """The little-endian bytes as stored in a weights file (a view where possible)."""
        if self.fill is not None:
            arr = np.full(self.shape, self.fill, dtype=dtypes.info(self.data_type).numpy)
            if self.packed:
                arr = pack4(arr)
            return memoryview(arr.tobytes())
        arr = self._array
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        return memoryview(arr).cast("B")


def unpack4(packed: np.ndarray, shape, *, signed: bool) -> np.ndarray:
    """4-bit values packed two a byte (first in the low nibble) as one value an element."""
    raw = np.asarray(packed, dtype=np.uint8).reshape(-1)
    out = np.empty(raw.size * 2, dtype=np.uint8)
    out[0::2] = raw & 0x0F
    out[1::2] = raw >> 4
    count = int(np.prod(shape, dtype=np.int64))
    out = out[:count]
    if signed:
        return np.where(out >= 8, out.astype(np.int8) - 16, out.astype(np.int8)).reshape(shape)
    return out.reshape(shape)



def array_from_bytes(data: bytes, data_type: str, shape) -> np.ndarray:
    """A tensor's little-endian bytes, as a runtime hands them back (4-bit types packed two a
    byte), as a fresh array of `shape` (never a view of `data`)."""
    info = dtypes.info(data_type)
    if info.bits == 4:
        return unpack4(np.frombuffer(data, np.uint8), shape, signed=info.is_signed)
    return np.frombuffer(data, info.numpy).reshape(shape).copy()

def pack4(values: np.ndarray) -> np.ndarray:
    """One value an element into 4-bit values packed two a byte, first in the low nibble."""
    flat = (np.asarray(values).reshape(-1).astype(np.int16) & 0x0F).astype(np.uint8)
    if flat.size % 2:
        flat = np.concatenate([flat, np.zeros(1, np.uint8)])
    return flat[0::2] | (flat[1::2] << 4)


class Operand:
    """A value in a graph: name, data type, static shape, where it comes from, where it goes.

    kind is "input", "constant" or "intermediate". `producer`/`index` are set for intermediates.
    """

    __slots__ = ("name", "data_type", "shape", "kind", "producer", "index", "constant",
                 "graph", "_uses")

    def __init__(self, name: str, data_type: str, shape, kind: str, *,
                 constant: ConstantData | None = None):
        if kind not in ("input", "constant", "intermediate"):
            raise ValueError(f"bad operand kind {kind!r}")
        self.name = name
        self.data_type = data_type
        self.shape = tuple(int(d) for d in shape)
        self.kind = kind
        self.constant = constant
        self.producer: Operation | None = None
        self.index: int | None = None
        self.graph: Graph | None = None
        self._uses: list[Use] = []

    # -- description -------------------------------------------------------------------------
    @property
    def desc(self) -> TensorDesc:
        return TensorDesc(self.data_type, self.shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return self.desc.size

    @property
    def is_constant(self) -> bool:
        return self.kind == "constant"

    @property
    def is_input(self) -> bool:
        return self.kind == "input"

    def is_graph_output(self) -> bool:
        return self.graph is not None and any(o is self for o in self.graph.outputs.values())

    # -- uses ---------------------------------------------------------------------------------
    def uses(self) -> tuple[Use, ...]:
        return tuple(self._uses)

    def consumers(self) -> list["Operation"]:
        """The operations that read this operand, each once, in order of first use."""
        seen: dict[int, Operation] = {}
        for u in self._uses:
            seen.setdefault(id(u.op), u.op)
        return list(seen.values())

    def _add_use(self, op: "Operation", index: int) -> None:
        self._uses.append(Use(op, index))

    def _remove_use(self, op: "Operation", index: int) -> None:
        for i, u in enumerate(self._uses):
            if u.op is op and u.index == index:
                del self._uses[i]
                return
        raise ValueError(f"operand '{self.name}' has no use ({op.name}, {index})")

    def replace_all_uses_with(self, other: "Operand", *, replace_graph_outputs: bool = False):
        """Make every operation that reads this operand read `other` instead.

        Graph outputs that name this operand move to `other` only when asked: renaming what a
        user reads is a decision, not a side effect.
        """
        for use in list(self._uses):
            use.op.replace_input(use.index, other)
        if replace_graph_outputs and self.graph is not None:
            for key, value in self.graph.outputs.items():
                if value is self:
                    self.graph.outputs[key] = other

    def __repr__(self) -> str:
        return f"Operand({self.name!r}, {self.desc}, {self.kind})"
