"""Constant indices of the indexing ops lie within the axes they index (an invariant of
graph_problems).

gather, gatherElements, gatherND, scatterElements and scatterND leave an out-of-range index to
the implementation (one clamps, one reads other memory, one fails), so a graph that holds such
an index as a constant computes nothing definite: it is invalid, as the ONNX importer refuses
the same model (importers/onnx/checks.py, with the same rule and message). An index may count
from the end, so along an axis of size N it lies in [-N, N-1]. Indices computed at run time
cannot be checked here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .operation import Operation

__all__ = ["index_problem"]

_ALONG_AXIS = ("gather", "gatherElements", "scatterElements")  # one index into `axis`
_COORDINATES = ("gatherND", "scatterND")  # indices' last dimension: one index per axis


def index_problem(op: "Operation") -> str | None:
    """What is wrong with `op`'s constant indices, or None (also when they are not constant,
    or `op` takes none). Call it once the op's shapes are known to be valid."""
    if op.op_type not in _ALONG_AXIS + _COORDINATES or len(op.inputs) < 2:
        return None
    data, indices = op.inputs[0], op.inputs[1]
    if data is None or indices is None or indices.constant is None or indices.size == 0:
        return None
    held = indices.constant
    if held.data_type != indices.data_type or held.shape != indices.shape or \
            (held.fill is None and held.held.nbytes != held.nbytes):
        return None  # a problem of the constant itself, reported as such
    if op.op_type in _ALONG_AXIS:
        axis = int(op.attrs.get("axis", 0))
        low, high = _range(indices.constant)
        return _outside(low, high, axis, data.shape[axis])
    for axis in range(indices.shape[-1]):  # coordinate j indexes axis j
        low, high = _range(indices.constant, component=axis)
        problem = _outside(low, high, axis, data.shape[axis])
        if problem:
            return problem
    return None


def _range(constant, component: int | None = None) -> tuple[int, int]:
    """The least and greatest index held (of one coordinate component, for the ND ops);
    a fill's one value without laying it out."""
    if constant.fill is not None:
        return int(constant.fill), int(constant.fill)
    values = constant.numpy()
    if component is not None:
        values = values[..., component]
    return int(np.min(values)), int(np.max(values))


def _outside(low: int, high: int, axis: int, size: int) -> str | None:
    if low >= -size and high < size:
        return None
    bad = low if low < -size else high
    return (f"index {bad} is out of range for axis {axis} of size {size} (indices must lie in "
            f"[{-size}, {size - 1}])")
