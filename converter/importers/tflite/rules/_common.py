"""Helpers the TFLite rule families share: padding arithmetic, axes, small emitters."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ....dtypes import MAX_RANK
from ....ir import Operand
from ..context import ImportContext
from ..registry import Unsupported

# Padding enum of the schema (Conv2DOptions, Pool2DOptions ...).
SAME, VALID = 0, 1


def same_padding(size: int, window: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TFLite's SAME padding of one spatial dimension: ceil(size / stride) outputs, the total
    padding they need split with the odd element at the end."""
    effective = (window - 1) * dilation + 1
    out = (size + stride - 1) // stride
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


def spatial_padding(code: int, in_hw: Sequence[int], window: Sequence[int],
                    strides: Sequence[int], dilations: Sequence[int] = (1, 1)) -> list[int]:
    """WebNN's [beginH, endH, beginW, endW] for a Padding code."""
    if code == VALID:
        return [0, 0, 0, 0]
    if code != SAME:
        raise Unsupported(f"padding code {code} is neither SAME nor VALID")
    h = same_padding(in_hw[0], window[0], strides[0], dilations[0])
    w = same_padding(in_hw[1], window[1], strides[1], dilations[1])
    return [h[0], h[1], w[0], w[1]]


def options(op) -> Any:
    """The op's builtin options table, which its kernel reads (strides, padding ...)."""
    if op.options is None:
        raise Unsupported(f"it has no options table; {op.name} needs one")
    return op.options


def positive(value: int, what: str) -> int:
    if value is None or value < 1:
        raise Unsupported(f"its {what} is {value}; it must be at least 1")
    return int(value)


def axis_of(value, rank: int, what: str = "axis") -> int:
    """A TFLite axis (negative counts from the end) as WebNN's non-negative one."""
    axis = int(np.asarray(value).reshape(-1)[0]) if np.ndim(value) else int(value)
    if not -rank <= axis < max(rank, 1):
        raise Unsupported(f"its {what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def axes_of(values, rank: int, what: str = "axes") -> list[int]:
    axes = sorted({axis_of(a, rank, what) for a in np.asarray(values).reshape(-1)})
    return axes


def emit(ctx: ImportContext, op: str, *inputs: Operand | None, suffix: str | None = None,
         **attrs) -> Operand:
    return ctx.emit(op, list(inputs), attrs, suffix=suffix)


def reshape(ctx: ImportContext, x: Operand, shape: Sequence[int], suffix: str = "reshape"
            ) -> Operand:
    shape = [int(d) for d in shape]
    if list(x.shape) == shape:
        return x
    return ctx.emit("reshape", [x], {"newShape": shape}, suffix=suffix)


def transpose(ctx: ImportContext, x: Operand, perm: Sequence[int], suffix: str = "transpose"
              ) -> Operand:
    perm = [int(p) for p in perm]
    if perm == list(range(len(perm))):
        return x
    return ctx.emit("transpose", [x], {"permutation": perm}, suffix=suffix)


def resolve_shape(new_shape: Sequence[int], size: int, what: str = "shape") -> list[int]:
    """A reshape target with at most one -1 (the remaining size) resolved."""
    if len(new_shape) > MAX_RANK:
        raise Unsupported(f"its {what} has {len(new_shape)} axes; the converter handles up to "
                          f"{MAX_RANK}")
    shape = [int(d) for d in new_shape]
    if shape.count(-1) > 1:
        raise Unsupported(f"its {what} {shape} has more than one -1")
    known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
    if -1 in shape:
        if known == 0 or size % known:
            raise Unsupported(f"its {what} {shape} does not fit {size} elements")
        shape[shape.index(-1)] = size // known
    if int(np.prod(shape, dtype=np.int64)) != size:
        raise Unsupported(f"its {what} {shape} does not hold {size} elements")
    return shape
