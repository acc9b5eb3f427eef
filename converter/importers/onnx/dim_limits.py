"""The dims the user gives, checked against the model: unknown names, wrong ranks, and values
past what the model's constant tables hold.

A transformer exported with symbolic `sequence` still has a fixed position table (GPT-2's wpe,
BERT's position embeddings: 64 rows in the test fixtures). At sequence=68 its import fails far
from the cause, in a Gather's index range or a broadcast of a position buffer sliced to 64
columns. When an import at given dims fails, `table_limit` looks for the cause: a Gather reading
a constant table whose indices are computed from the shape of an input carrying the dim (Shape
-> ... -> Range/Slice -> Gather), with fewer rows than the dim's value. The import is then tried
again with the dim at the table's rows; only when that converts is the error replaced by one
naming the dim, the value, the table and its node (no claim from the structure alone).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import onnx

from ...errors import ConverterError
from .dim_expressions import names_in

__all__ = ["model_dims", "check_dim_names", "check_input_ranks", "TableLimit", "table_limit",
           "explained"]

_MAX_WALK = 10_000  # values visited backwards from one Gather's indices


def model_dims(model: onnx.ModelProto, initializers: set[str]) -> list[str]:
    """The symbolic dim names of the model's inputs and outputs (a decoder's total length may
    be named on its outputs only), in order of first appearance."""
    names: list[str] = []
    for vi in [*model.graph.input, *model.graph.output]:
        if vi.name in initializers:
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param not in names:
                names.append(d.dim_param)
    return names


def _input_dims(model: onnx.ModelProto, initializers: set[str]) -> list[str]:
    """The symbolic dim names of the model's inputs: the dims a user sets."""
    names: list[str] = []
    for vi in model.graph.input:
        if vi.name not in initializers:
            names += [d.dim_param for d in vi.type.tensor_type.shape.dim
                      if d.HasField("dim_param") and d.dim_param not in names]
    return names


def check_dim_names(model: onnx.ModelProto, initializers: set[str], dims: Mapping[str, int],
                    where: str) -> None:
    """A dim name the model does not have is the user's mistake (a typo such as `sequnce`
    would otherwise be ignored): refused, naming the dims its inputs have. A name only its
    outputs carry is accepted (a decoder's total length, set with its past)."""
    known, settable = model_dims(model, initializers), _input_dims(model, initializers)
    known = known + [n for name in known for n in names_in(name)]  # 'past + new' reads both
    for name in dims:
        if name not in known:
            there = (f"its dims are: {', '.join(settable)}" if settable else
                     "it has no symbolic dims")
            raise ConverterError(f"--dim {name}: the model has no dim named '{name}'; {there}",
                                 where=where, fix="give a dim the model's inputs name "
                                                  "(`webnn-convert inspect` lists them)")


def check_input_ranks(model: onnx.ModelProto, overrides: Mapping[str, Sequence[int]],
                      where: str) -> None:
    """An --input-shape whose rank is not the input's is the user's mistake, said as such
    (rather than blamed on the first op that reads the input)."""
    for vi in model.graph.input:
        if vi.name not in overrides or not vi.type.tensor_type.HasField("shape"):
            continue
        dims = vi.type.tensor_type.shape.dim
        given = list(overrides[vi.name])
        if len(given) != len(dims):
            shown = ", ".join(d.dim_param if d.HasField("dim_param") else
                              str(d.dim_value) if d.dim_value > 0 else "?" for d in dims)
            raise ConverterError(
                f"--input-shape {vi.name}={','.join(map(str, given))}: {vi.name} has rank "
                f"{len(dims)} in the model ([{shown}])", where=where,
                fix=f"give {len(dims)} sizes for '{vi.name}'")


@dataclass(frozen=True)
class TableLimit:
    """A dim whose value passes the rows of a constant table indexed by positions along it."""

    dim: str
    value: int
    rows: int
    table: str
    node: str

    def error(self, where: str) -> ConverterError:
        return ConverterError(
            f"--dim {self.dim}={self.value} exceeds the {self.rows} rows of position table "
            f"'{self.table}' (node '{self.node}'), whose indices count along {self.dim}",
            where=where, fix=f"use a range within 1..{self.rows} (the model converts at "
                             f"{self.dim}={self.rows})")


def table_limit(model: onnx.ModelProto, dims: Mapping[str, int],
                arrays: Mapping[str, Any] | None = None) -> list[TableLimit]:
    """Every (dim, table) pair where a Gather of a constant table (an initializer or a Constant
    node) is indexed by positions counted along the dim, and the dim's value passes the
    table's rows along the gathered axis; the smallest tables first. Positions counted along
    a dim: a Range whose limit comes from the dim (GPT-2's arange), or a slice of a constant
    holding 0, 1, 2, ... (BERT's position_ids buffer) ending at it, through ops that keep the
    values (Unsqueeze, Reshape, Cast, Expand, an Add of an offset). `arrays`: the
    initializers' values (read_model's), when the proto does not hold them."""
    graph = model.graph
    walk = _Walk(model, arrays or {})
    found = []
    for node in graph.node:
        if node.op_type != "Gather" or len(node.input) < 2 or node.input[0] not in walk.shapes:
            continue
        table = walk.shapes[node.input[0]]
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        if not -len(table) <= axis < len(table):
            continue
        rows = table[axis]
        for dim in sorted(walk.counted_along(node.input[1])):
            value = dims.get(dim)
            if isinstance(value, int) and value > rows:
                found.append(TableLimit(dim, value, rows, node.input[0],
                                        node.name or node.output[0]))
    return sorted(found, key=lambda t: (t.rows, t.dim))


_KEEPS_VALUES = {"Unsqueeze", "Squeeze", "Reshape", "Cast", "Identity", "Flatten", "Expand"}


class _Walk:
    """The model's structure for walking back from a value: producers, constant shapes and
    values, the dim names of each input's axes."""

    def __init__(self, model: onnx.ModelProto, arrays: Mapping[str, Any]):
        graph = model.graph
        self.shapes = {t.name: list(t.dims) for t in graph.initializer}
        self.tensors = {t.name: t for t in graph.initializer}
        for node in graph.node:
            for attr in node.attribute:
                if node.op_type == "Constant" and node.output and attr.name == "value" \
                        and attr.type == onnx.AttributeProto.TENSOR:
                    self.shapes[node.output[0]] = list(attr.t.dims)
                    self.tensors[node.output[0]] = attr.t
        self.arrays = arrays
        self.input_dims = {vi.name: [d.dim_param if d.HasField("dim_param") else None
                                     for d in vi.type.tensor_type.shape.dim]
                           for vi in graph.input}
        self.scalars = _constant_scalars(model)
        self.producer = {out: node for node in graph.node for out in node.output if out}

    def counted_along(self, value: str) -> set[str]:
        """The dims `value` counts positions along (empty when it does not count)."""
        seen: set[str] = set()
        while value not in seen and len(seen) < _MAX_WALK:
            seen.add(value)
            node = self.producer.get(value)
            if node is None or not node.input:
                return set()
            if node.op_type in _KEEPS_VALUES:
                value = node.input[0]
            elif node.op_type == "Add" and len(node.input) == 2:  # an offset + positions
                return self.counted_along(node.input[0]) | self.counted_along(node.input[1])
            elif node.op_type == "Range" and len(node.input) == 3:
                return _dims_behind(node.input[1], self.producer, self.input_dims, self.scalars)
            elif node.op_type == "Slice" and len(node.input) >= 3 and self._counts(node.input[0]):
                return _dims_behind(node.input[2], self.producer, self.input_dims, self.scalars)
            else:
                return set()
        return set()

    def _counts(self, name: str) -> bool:
        """Whether constant `name` holds 0, 1, 2, ... along its last axis (a position buffer)."""
        import numpy as np
        from onnx import numpy_helper

        if name in self.arrays:
            data = self.arrays[name]
        elif name in self.tensors:
            try:
                data = numpy_helper.to_array(self.tensors[name])
            except (ValueError, TypeError, OSError):  # data not held here
                return False
        else:
            return False
        data = np.asarray(data)
        if data.ndim == 0 or data.size == 0 or data.dtype.kind not in "iu":
            return False
        return bool(np.array_equal(data, np.broadcast_to(np.arange(data.shape[-1]), data.shape)))


def _dims_behind(value: str, producer, input_dims, scalars) -> set[str]:
    """The dims of the inputs whose Shape the computation of `value` reads: the axes a Shape's
    start/end or a Gather of its result by a constant index pick, else all of the input's."""
    found: set[str] = set()
    seen, queue = {value}, deque([(value, None)])
    while queue and len(seen) < _MAX_WALK:
        name, reader = queue.popleft()
        node = producer.get(name)
        if node is None:
            continue
        if node.op_type == "Shape" and node.input and node.input[0] in input_dims:
            found |= _picked(node, reader, input_dims[node.input[0]], scalars)
            continue
        for given in node.input:
            if given and given not in seen:
                seen.add(given)
                queue.append((given, node))
    return found


def _picked(shape_node, reader, axes: list[str | None], scalars) -> set[str]:
    """The dims of `axes` (an input's dim names by axis) that a Shape node and the node
    reading its result select."""
    attrs = {a.name: a.i for a in shape_node.attribute}
    rank = len(axes)
    start, end = attrs.get("start", 0), attrs.get("end", rank)
    start, end = (start + rank if start < 0 else start), (end + rank if end < 0 else end)
    picked = list(range(max(start, 0), min(end, rank)))
    if reader is not None and reader.op_type == "Gather" and len(reader.input) > 1 \
            and reader.input[1] in scalars:
        index = scalars[reader.input[1]]
        if -len(picked) <= index < len(picked):
            picked = [picked[index]]
    return {axes[i] for i in picked if axes[i] is not None}


def _constant_scalars(model: onnx.ModelProto) -> dict[str, int]:
    """Integer constants of one element (a Gather's index into a shape), by value name."""
    from onnx import numpy_helper

    tensors = [(t.name, t) for t in model.graph.initializer]
    tensors += [(n.output[0], a.t) for n in model.graph.node if n.op_type == "Constant"
                and n.output for a in n.attribute if a.name == "value"
                and a.type == onnx.AttributeProto.TENSOR]
    found = {}
    for name, tensor in tensors:
        count = 1
        for d in tensor.dims:
            count *= d
        if count == 1 and tensor.data_type in (onnx.TensorProto.INT64, onnx.TensorProto.INT32):
            try:
                found[name] = int(numpy_helper.to_array(tensor).reshape(-1)[0])
            except (ValueError, TypeError, OSError):  # data not held here: not a shape index
                continue
    return found


def explained(model: onnx.ModelProto, dims: Mapping[str, int] | None, where: str,
              converts_at: Callable[[dict[str, int]], bool],
              arrays: Mapping[str, Any] | None = None) -> ConverterError | None:
    """The error naming the dim and table an import at `dims` failed on, when one is found
    and the import at the table's rows converts (`converts_at`); else None."""
    if not dims:
        return None
    for limit in table_limit(model, dims, arrays)[:2]:  # each check is one more import
        if converts_at({**dims, limit.dim: limit.rows}):
            return limit.error(where)
    return None
