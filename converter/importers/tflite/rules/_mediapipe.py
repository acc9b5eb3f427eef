"""Helpers MediaPipe's custom-op families share: their flexbuffer options, float32 inputs,
the transform matrix they pass between them, small scalar arithmetic."""
from __future__ import annotations

from flatbuffers import flexbuffers

from ....ir import Operand
from ..context import ImportContext
from ..model_file import Operator
from ..registry import Unsupported
from ._common import reshape

__all__ = ["CustomOptions", "float32_input", "matrix_entries", "scalar_op"]


class CustomOptions:
    """A custom op's flexbuffer map, read one key at a time (nothing is built from the
    buffer beyond what is asked for, and every failure is one reason)."""

    def __init__(self, op: Operator):
        raw = bytes(op.custom_options or b"")
        self._size = len(raw)
        try:
            self._map = flexbuffers.GetRoot(raw).AsMap if raw else None
        except Exception:  # a malformed buffer fails in many ways inside the reader
            self._map = None
        if self._map is None:
            raise Unsupported("its custom options are not a flexbuffer map")

    def _ref(self, key: str):
        try:
            return self._map[key]
        except KeyError:
            raise Unsupported(f"its custom options have no '{key}'") from None
        except Exception:
            raise Unsupported(f"its custom option '{key}' cannot be read") from None

    def has(self, key: str) -> bool:
        try:
            self._map[key]
            return True
        except Exception:
            return False

    def text(self, key: str) -> str:
        try:
            return str(self._ref(key).AsString)
        except Unsupported:
            raise
        except Exception:
            raise Unsupported(f"its custom option '{key}' is not a string") from None

    def number(self, key: str) -> float:
        ref = self._ref(key)
        try:
            if ref.IsFloat:
                return float(ref.AsFloat)
            if ref.IsInt:
                return int(ref.AsInt)
        except Exception:
            pass
        raise Unsupported(f"its custom option '{key}' is not a number")

    def integer(self, key: str) -> int:
        value = self.number(key)
        return int(value)  # the kernels read AsInt32, which truncates a float

    def integers(self, key: str) -> list[int]:
        ref = self._ref(key)
        try:
            vector = ref.AsTypedVector if ref.IsTypedVector else ref.AsVector
            if len(vector) > self._size:
                raise ValueError
            return [int(vector[i].AsInt) for i in range(len(vector))]
        except Exception:
            raise Unsupported(f"its custom option '{key}' is not a list of integers") from None


def float32_input(ctx: ImportContext, k: int, what: str, rank: int | None = None) -> Operand:
    x = ctx.operand(k)
    if x.data_type != "float32" or (rank is not None and x.rank != rank):
        raise Unsupported(f"its {what} is {x.data_type} {list(x.shape)}; the kernel takes "
                          f"float32{f' of rank {rank}' if rank else ''}")
    return x


def matrix_entries(ctx: ImportContext, k: int) -> list[Operand]:
    """The first two rows of the 4x4 matrix at input k, as eight [1] operands (the kernels
    read its first 8 floats, whatever its shape)."""
    m = float32_input(ctx, k, "matrix")
    if m.size < 8:
        raise Unsupported(f"its matrix {list(m.shape)} has fewer than 8 values")
    flat = reshape(ctx, m, [m.size], "matrix_flat")
    return [ctx.emit("slice", [flat], {"starts": [i], "sizes": [1]}, suffix=f"m{i}")
            for i in range(8)]


def scalar_op(ctx: ImportContext, op_type: str, a: Operand, b, suffix: str) -> Operand:
    if not isinstance(b, Operand):
        b = ctx.scalar(b, "float32")
    return ctx.emit(op_type, [a, b], suffix=suffix)
