"""Reference kernels for data movement: concat, expand, pad, reshape, reverse, slice, split,
tile, transpose and triangular. All are exact, in every data type."""
from __future__ import annotations

import numpy as np

from .core import kernel


@kernel("concat")
def concat(op, ins, env):
    return np.concatenate(ins, axis=op.attr("axis"))


@kernel("expand")
def expand(op, ins, env):
    """input broadcast (unidirectionally) to newShape."""
    return np.broadcast_to(ins[0], tuple(op.attr("newShape"))).copy()


@kernel("reshape")
def reshape(op, ins, env):
    return ins[0].reshape(tuple(op.attr("newShape")))


# The spec's padding modes, by numpy's names: "edge" repeats the edge element, "reflection"
# mirrors without repeating it (numpy's "reflect").
_PAD_MODES = {"edge": "edge", "reflection": "reflect"}


@kernel("pad")
def pad(op, ins, env):
    x = ins[0]
    widths = list(zip(op.attr("beginningPadding"), op.attr("endingPadding")))
    mode = op.attr("mode")
    if mode == "constant":
        value = env.number(op.attr("value"), op.inputs[0].data_type)
        return np.pad(x, widths, mode="constant", constant_values=np.asarray(value, x.dtype))
    return np.pad(x, widths, mode=_PAD_MODES[mode])


@kernel("reverse")
def reverse(op, ins, env):
    """Reverse the given axes (all of them when axes is absent)."""
    axes = op.attr("axes")
    x = ins[0]
    axes = tuple(range(x.ndim)) if axes is None else tuple(axes)
    return np.flip(x, axis=axes) if axes else x


@kernel("slice")
def slice_(op, ins, env):
    x = ins[0]
    strides = op.attr("strides") or [1] * x.ndim
    index = tuple(slice(start, start + size, step)
                  for start, size, step in zip(op.attr("starts"), op.attr("sizes"), strides))
    return x[index]


@kernel("split")
def split(op, ins, env):
    x, axis, splits = ins[0], op.attr("axis"), op.attr("splits")
    if isinstance(splits, int):
        return np.split(x, splits, axis=axis)
    return np.split(x, np.cumsum(splits)[:-1], axis=axis)


@kernel("tile")
def tile(op, ins, env):
    return np.tile(ins[0], tuple(op.attr("repetitions")))


@kernel("transpose")
def transpose(op, ins, env):
    """output.shape[i] = input.shape[permutation[i]]; absent, the axes are reversed."""
    perm = op.attr("permutation")
    return np.transpose(ins[0], None if perm is None else tuple(perm))


@kernel("triangular")
def triangular(op, ins, env):
    """Keep the upper (column - row >= diagonal) or lower (column - row <= diagonal) triangle
    of each matrix in the last two dimensions; zero the rest."""
    x = ins[0]
    rows, cols = x.shape[-2:]
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    diagonal = int(op.attr("diagonal"))
    keep = offset >= diagonal if op.attr("upper") else offset <= diagonal
    return np.where(keep, x, np.zeros((), dtype=x.dtype))
