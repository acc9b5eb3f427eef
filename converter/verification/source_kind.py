"""What verify needs to know of a source model before it runs: which runtime runs it
(`source_kind`), how its integer inputs are bounded (`source_int_limits`: embedding rows),
each input's declared shape, and the inputs a dim empties (`empty_inputs`). Read from the
model's structure only (ONNX: its protobuf without the weights' bytes)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import ConverterError
from ..runtimes.source_runs import run_source

__all__ = ["SourceKind", "source_kind", "source_int_limits", "empty_inputs"]


@dataclass(frozen=True)
class SourceKind:
    """How to run a source model on its own runtime, and how to draw its integer inputs."""

    runtime: str
    run: Callable[[Path, Mapping[str, np.ndarray]], dict[str, np.ndarray]]
    int_limits: Callable[[Path], dict[str, int]]
    # each input's declared shape (None for a dim the model leaves open)
    input_shapes: Callable[[Path], dict[str, list[int | None]]]


_SOURCES = {
    ".onnx": SourceKind("onnxruntime", run_source, lambda p: _embedding_limits(p),
                         lambda p: _onnx_input_shapes(p)),
    ".tflite": SourceKind("litert", run_source, lambda p: {}, lambda p: _tflite_input_shapes(p)),
}


def source_int_limits(path: Path) -> dict[str, int]:
    """How the source bounds its integer inputs (embedding rows), for drawing them."""
    return source_kind(path).int_limits(path)


def source_kind(path: Path) -> SourceKind:
    kind = _SOURCES.get(path.suffix.lower())
    if kind is None:
        raise ConverterError(f"cannot verify a {path.suffix or 'suffix-less'} source",
                             where=str(path), fix=f"give one of {', '.join(_SOURCES)}")
    return kind


def _structure(path: Path):
    """The ONNX model without its weights' bytes: only the graph's structure."""
    import onnx

    from ..importers.onnx.wire import WireError, map_model

    try:
        stripped, _, _ = map_model(path)
    except (OSError, WireError) as e:
        raise ConverterError(f"cannot read the ONNX model: {e}", where=str(path),
                             fix="give a readable, well-formed .onnx file") from None
    model = onnx.ModelProto()
    model.ParseFromString(stripped)
    return model


def empty_inputs(path: Path, dims: Mapping[str, int], fed: Mapping[str, Any]
                  ) -> dict[str, np.ndarray]:
    """Zeros for each source input the dims give no elements (a decoder's past at
    past_sequence_length=0): the graph holds it as a constant, the source is fed it."""
    import onnx

    from ..importers.onnx.dim_expressions import evaluate

    empty = {}
    for vi in _structure(path).graph.input:
        if vi.name in fed or not vi.type.tensor_type.HasField("shape"):
            continue
        shape = []
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            elif d.dim_param in dims:
                shape.append(int(dims[d.dim_param]))
            else:
                shape.append(evaluate(d.dim_param, dims))
        if 0 in shape and None not in shape:
            elem = onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
            empty[vi.name] = np.zeros(shape, elem)
    return empty


def _onnx_input_shapes(path: Path) -> dict[str, list[int | None]]:
    return {vi.name: [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                      for d in vi.type.tensor_type.shape.dim]
            for vi in _structure(path).graph.input if vi.type.tensor_type.HasField("shape")}


def _tflite_input_shapes(path: Path) -> dict[str, list[int | None]]:
    from ..runtimes.litert import input_shapes

    return input_shapes(path)


def _embedding_limits(path: Path) -> dict[str, int]:
    """Integer inputs that index Gather data given as an initializer: draw within its rows."""
    model = _structure(path)
    inits = {t.name: t for t in model.graph.initializer}
    inputs = {i.name for i in model.graph.input}
    rows: dict[str, list[int]] = {}  # input -> the rows of every table it indexes
    for node in model.graph.node:
        if node.op_type == "Gather" and len(node.input) > 1 and node.input[1] in inputs \
                and node.input[0] in inits:
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
            dims = list(inits[node.input[0]].dims)
            if -len(dims) <= axis < len(dims):  # else no such axis: the importer refuses it
                rows.setdefault(node.input[1], []).append(dims[axis])
    return {name: min(counts) for name, counts in rows.items()}  # within every table
