"""Indexing ops: gather, gatherElements, gatherND, scatterElements, scatterND.

Index values are only known at run time, so the rules check shapes only; the spec leaves
out-of-range indices to the implementation (clamping or negative-index handling is a lowering
concern, not a validation step). Indices held as a constant are the exception: the graph's
invariants check them (converter/ir/constant_indices.py), as the ONNX importer does. Data types and ranks (indices int32/uint32/int64, updates of
input's type, same-rank operands) are checked by `infer()` from the spec's tables.
"""
from __future__ import annotations

from ..ir.operand import TensorDesc
from .registry import Param, ShapeContext, op

_AXIS = Param("axis", "uint", 0)


def _indices_match_input(c: ShapeContext, axis: int) -> None:
    """gatherElements/scatterElements: indices equals input's shape except along axis."""
    x, indices = c["input"], c["indices"]
    expected = list(x.shape)
    expected[axis] = indices.shape[axis]
    c.check(list(indices.shape) == expected, "indices",
            f"shape {list(indices.shape)} must equal input's {list(x.shape)} in every "
            f"dimension except axis {axis}")


def _coordinate_size(c: ShapeContext) -> int:
    """gatherND/scatterND: indices' last dimension is the length of one coordinate into input."""
    x, indices = c["input"], c["indices"]
    k = indices.shape[-1]
    c.check(k <= x.rank, "indices",
            f"last dimension {k} (the coordinate length) exceeds input's rank {x.rank}")
    return k


@op("gather", operands=("input", "indices"), options=(_AXIS,))
def gather(c: ShapeContext) -> TensorDesc:
    """input.shape[:axis] + indices.shape + input.shape[axis + 1:]."""
    x, indices = c["input"], c["indices"]
    axis = c.axis_in_range("axis", c.attr("axis"), x.rank)
    shape = x.shape[:axis] + indices.shape + x.shape[axis + 1:]
    return TensorDesc(x.data_type, tuple(shape))


@op("gatherElements", operands=("input", "indices"), options=(_AXIS,))
def gather_elements(c: ShapeContext) -> TensorDesc:
    """One output element per index: the result has indices' shape and input's data type."""
    x, indices = c["input"], c["indices"]
    axis = c.axis_in_range("axis", c.attr("axis"), x.rank)
    _indices_match_input(c, axis)
    return TensorDesc(x.data_type, indices.shape)


@op("gatherND", operands=("input", "indices"))
def gather_nd(c: ShapeContext) -> TensorDesc:
    """indices.shape[:-1] + input.shape[k:], where k = indices.shape[-1]."""
    x, indices = c["input"], c["indices"]
    k = _coordinate_size(c)
    return TensorDesc(x.data_type, tuple(indices.shape[:-1] + x.shape[k:]))


@op("scatterElements", operands=("input", "indices", "updates"), options=(_AXIS,))
def scatter_elements(c: ShapeContext) -> TensorDesc:
    """updates has indices' shape; the result is a copy of input's descriptor."""
    x, indices, updates = c["input"], c["indices"], c["updates"]
    axis = c.axis_in_range("axis", c.attr("axis"), x.rank)
    _indices_match_input(c, axis)
    c.shape_is("updates", updates, indices.shape)
    return x


@op("scatterND", operands=("input", "indices", "updates"))
def scatter_nd(c: ShapeContext) -> TensorDesc:
    """updates must be indices.shape[:-1] + input.shape[k:]; the result has input's descriptor."""
    x, indices, updates = c["input"], c["indices"], c["updates"]
    k = _coordinate_size(c)
    c.shape_is("updates", updates, indices.shape[:-1] + x.shape[k:])
    return x
