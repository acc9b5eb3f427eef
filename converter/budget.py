"""A memory budget for what a conversion materialises.

A model file can ask for any amount of memory with a few bytes: a ConstantOfShape of
[30000, 30000, 4], an initializer that declares huge dims, a sparse tensor with a huge dense
shape. Every array the converter creates from a model's description (a folded value, decoded
typed-field or sparse data, external data copied into a subgraph's tensor) is claimed here
first, from its shape and item size, before it is allocated. Views of the model's own weights
(memory-mapped) cost nothing and are not claimed.

Two limits: one tensor (default 1 GiB) and the whole conversion (default twice the model's
weights, at least 256 MiB). Past either, the caller keeps the value as a graph op when it can;
otherwise `claim` raises a ConverterError saying what would be allocated and which flag
(`--max-tensor-bytes`, `--max-total-bytes`; Python `max_tensor_bytes=`, `max_total_bytes=`)
allows it.
"""
from __future__ import annotations

import json
import math
import re
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, NoReturn, Sequence

from .errors import ConverterError

__all__ = ["MemoryBudget", "parse_size", "format_size", "shape_bytes", "limits",
           "current_limits", "DEFAULT_MAX_TENSOR_BYTES", "MIN_TOTAL_BYTES"]

DEFAULT_MAX_TENSOR_BYTES = 1 << 30
MIN_TOTAL_BYTES = 256 << 20
TOTAL_PER_WEIGHT_BYTE = 2

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1 << 10, "m": 1000 ** 2, "mb": 1000 ** 2,
          "mib": 1 << 20, "g": 1000 ** 3, "gb": 1000 ** 3, "gib": 1 << 30, "t": 1000 ** 4,
          "tb": 1000 ** 4, "tib": 1 << 40}


# Limits set for a stretch of code (the CLI's flags, for one command): a budget made without
# explicit limits takes these, so every import and pass of that command sees the same flags.
_LIMITS: ContextVar[tuple[int | None, int | None]] = ContextVar("memory_limits",
                                                               default=(None, None))


@contextmanager
def limits(max_tensor_bytes: int | str | None = None,
           max_total_bytes: int | str | None = None) -> Iterator[None]:
    """Within the block, budgets made without explicit limits use these (None: the default)."""
    token = set_limits(max_tensor_bytes, max_total_bytes)
    try:
        yield
    finally:
        _LIMITS.reset(token)


def set_limits(max_tensor_bytes=None, max_total_bytes=None):
    """Set limits (None keeps the current one); returns the token that undoes it."""
    tensor, total = _LIMITS.get()
    return _LIMITS.set((tensor if max_tensor_bytes is None else parse_size(max_tensor_bytes),
                        total if max_total_bytes is None else parse_size(max_total_bytes)))


def reset_limits(token) -> None:
    _LIMITS.reset(token)


def current_limits() -> tuple[int, int | None]:
    """(per-tensor limit, total limit or None for the default that follows the weights)."""
    tensor, total = _LIMITS.get()
    return (DEFAULT_MAX_TENSOR_BYTES if tensor is None else tensor), total


def parse_size(text: str | int) -> int:
    """A byte count from `123`, `64MiB`, `2GiB`, `1.5GB` (units are case-insensitive)."""
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"{text}: a size cannot be negative")
        return text
    # ASCII digits only ([0-9], not \\d): Python reads '٣' or '３' as 3, which no other tool does.
    match = re.fullmatch(r"[ \t]*([0-9]{1,20}(?:\.[0-9]{1,20})?)[ \t]*([a-zA-Z]*)[ \t]*",
                         str(text))
    unit = match and match.group(2).lower()
    if not match or unit not in _UNITS:
        shown = json.dumps(str(text)[:80])  # ASCII, escaped: shows what was written
        raise ValueError(f"{shown} is not a size; write e.g. 512MiB, 2GiB or 1000000")
    return int(float(match.group(1)) * _UNITS[unit])


def format_size(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def shape_bytes(shape: Sequence[int], itemsize: float) -> int:
    """Bytes of a dense tensor (itemsize 0.5 for 4-bit types); Python ints, so never overflows."""
    return math.ceil(math.prod(int(d) for d in shape) * itemsize)


class MemoryBudget:
    """The limits of one conversion and what it has claimed so far."""

    def __init__(self, max_tensor_bytes: int | str | None = None,
                 max_total_bytes: int | str | None = None, weights_bytes: int = 0):
        tensor, total = current_limits()
        self.max_tensor = parse_size(tensor if max_tensor_bytes is None else max_tensor_bytes)
        max_total_bytes = total if max_total_bytes is None else max_total_bytes
        self.total_given = max_total_bytes is not None
        self.max_total = parse_size(max_total_bytes) if self.total_given else MIN_TOTAL_BYTES
        self.used = 0
        self.set_weights(weights_bytes)

    def set_weights(self, weights_bytes: int) -> None:
        """The model's weights are known: the default total becomes twice them (or the floor)."""
        if not self.total_given:
            self.max_total = max(MIN_TOTAL_BYTES, TOTAL_PER_WEIGHT_BYTE * weights_bytes)

    def fits(self, nbytes: int) -> bool:
        """Whether `nbytes` more would stay within both limits (nothing is claimed)."""
        return nbytes <= self.max_tensor and self.used + nbytes <= self.max_total

    def left(self) -> int:
        """What may still be claimed before the total limit."""
        return max(self.max_total - self.used, 0)

    def refuse_unsized(self, what: str, *, where: str | None = None) -> NoReturn:
        """Raise for `what`, whose size was not known beforehand and which, computed under a
        memory cap of what is left, needed more."""
        raise ConverterError(
            f"{what} needed more than the {format_size(self.left())} left of the "
            f"conversion's limit of {format_size(self.max_total)} ({format_size(self.used)} "
            f"used); its size depends on the model's values", where=where,
            fix=f"if the model is trusted, allow more with --max-total-bytes (above "
                f"{_flag_size(self.max_total)}; Python: max_total_bytes=)")

    def claim(self, nbytes: int, what: str, *, where: str | None = None) -> None:
        """Count `nbytes` about to be allocated for `what`; raise if a limit would be passed."""
        if nbytes > self.max_tensor:
            raise ConverterError(
                f"{what} would allocate {format_size(nbytes)}, over the per-tensor limit of "
                f"{format_size(self.max_tensor)}", where=where,
                fix=f"if the model is trusted, allow it with --max-tensor-bytes "
                    f"{_flag_size(nbytes)} (Python: max_tensor_bytes=)")
        if self.used + nbytes > self.max_total:
            raise ConverterError(
                f"{what} would allocate {format_size(nbytes)}, taking the conversion past its "
                f"limit of {format_size(self.max_total)} ({format_size(self.used)} used)",
                where=where,
                fix=f"if the model is trusted, allow it with --max-total-bytes "
                    f"{_flag_size(self.used + nbytes)} (Python: max_total_bytes=)")
        self.used += nbytes


def _flag_size(n: int) -> str:
    """A round size at least `n`, as the flags accept it."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= size:
            return f"{-(-n // size)}{unit}"
    return f"{-(-n // (1 << 20))}MiB"
