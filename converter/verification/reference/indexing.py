"""Reference kernels for gather, gatherElements, gatherND, scatterElements and scatterND.

Index values count from the end when negative (-1 is the last element). The spec leaves
out-of-range indices to the implementation; here they are clamped into [-size, size - 1] first,
the behaviour the spec's notes describe for implementations that must not read out of bounds.
"""
from __future__ import annotations

import numpy as np

from .core import kernel


def resolve(indices: np.ndarray, size: int) -> np.ndarray:
    """Indices into a dimension of `size`: clamped to [-size, size - 1], negatives wrapped."""
    i = np.clip(indices.astype(np.int64), -size, size - 1)
    return np.where(i < 0, i + size, i)


@kernel("gather")
def gather(op, ins, env):
    """input.shape[:axis] + indices.shape + input.shape[axis + 1:]."""
    x, indices = ins
    axis = op.attr("axis")
    return np.take(x, resolve(indices, x.shape[axis]), axis=axis)


@kernel("gatherElements")
def gather_elements(op, ins, env):
    """out[..., i, ...] = input[..., indices[..., i, ...], ...] along axis."""
    x, indices = ins
    axis = op.attr("axis")
    return np.take_along_axis(x, resolve(indices, x.shape[axis]), axis=axis)


def _coordinates(x: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, ...]:
    """gatherND/scatterND: the last dimension of indices is a coordinate into x's leading
    dimensions; one index array per coordinate component."""
    k = indices.shape[-1]
    return tuple(resolve(indices[..., j], x.shape[j]) for j in range(k))


@kernel("gatherND")
def gather_nd(op, ins, env):
    x, indices = ins
    return x[_coordinates(x, indices)]


@kernel("scatterElements")
def scatter_elements(op, ins, env):
    """A copy of input with updates written at indices along axis (the later of two updates
    to one element wins; the spec leaves that order unspecified)."""
    x, indices, updates = ins
    axis = op.attr("axis")
    out = x.copy()
    np.put_along_axis(out, resolve(indices, x.shape[axis]), updates, axis=axis)
    return out


@kernel("scatterND")
def scatter_nd(op, ins, env):
    x, indices, updates = ins
    out = x.copy()
    out[_coordinates(x, indices)] = updates
    return out
