"""Decompositions of indexing ops: gatherElements as a gather from the flattened input.

Chromium's WebNN on LiteRT builds gatherElements only with constant indices ("gatherElements
only supports constant indices", measured on Chromium 153), while gather takes computed ones.
A grid_sample (spatial transformers, optical flow, deformable sampling) computes its indices
from the input, so it needs this rule on that backend.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import Operand, Operation
from .decompositions import Emitter, decomposition


@decomposition("gatherElements")
def gather_elements(e: Emitter, op: Operation) -> Operand:
    """gather(reshape(input, [n]), flat) with flat[i] = index[i] * stride[axis] + the offset
    of i's other coordinates in the input: every output element names one input element by
    its row-major position. A negative index counts from the end of the axis, as the spec's
    indices may (the spec leaves out-of-range indices to the implementation; they pick some
    other element here)."""
    x, indices = op.input("input"), op.input("indices")
    axis = int(op.attr("axis"))
    dt = indices.data_type
    # A flat position fits the indices' type: the IR refuses operands of more than 2**31 - 1
    # elements (the spec's limit), int32's largest value.
    count = math.prod(x.shape)
    strides = [math.prod(x.shape[d + 1:]) for d in range(x.rank)]
    position = indices
    if not dt.startswith("uint"):
        negative = e.lesser(indices, e.scalar(0, dt))
        position = e.where(negative, e.add(indices, e.scalar(x.shape[axis], dt)), indices)
    if strides[axis] != 1:
        position = e.mul(position, e.scalar(strides[axis], dt))
    # The other coordinates' share of each position depends on the output's shape only.
    grid = np.indices(indices.shape, dtype=np.int64)
    offsets = sum((grid[d] * strides[d] for d in range(x.rank) if d != axis),
                  np.zeros(indices.shape, np.int64))
    if np.any(offsets):
        position = e.add(position, e.tensor(offsets, dt))
    return e.gather(e.reshape_to(x, [count]), position, axis=0)
