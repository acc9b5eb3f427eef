"""An ONNX model whose inputs have dims with no value yet: what can be told of it without them.

The WebNN graph (its ops, constants, transposes) is only made at values of every dim; the
signature with the dims' names (`[batch, 3, height, width]`), the dims themselves, the ONNX op
histogram and the model's own structure (converter.importers.onnx.checks) need none. `inspect`
and `validate` show this instead of refusing a model that is merely open.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

__all__ = ["onnx_open_summary", "open_summary_if_onnx"]

UNNAMED = "?"  # an axis with neither a size nor a name: only --input-shape can set it


def onnx_open_summary(path: str | Path, dims: Mapping[str, int] | None = None,
                      input_shapes: Mapping[str, Sequence[int]] | None = None
                      ) -> dict[str, Any] | None:
    """The model's signature with its open dims named, or None when every input dim has a value
    (from the file, `dims` or `input_shapes`). Raises FormatError for a model that breaks
    ONNX's own rules (checks.check_model), as the import would."""
    from ..importers.onnx.checks import check_model
    from ..importers.onnx.model_file import read_model

    dims, input_shapes = dict(dims or {}), dict(input_shapes or {})
    model, _, _ = read_model(path)
    check_model(model, str(path))
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    inputs = {vi.name: _desc(vi, dims, input_shapes) for vi in graph.input
              if vi.name not in initializers}
    named = {d for desc in inputs.values() if desc["shape"] is not None
             for d in desc["shape"] if isinstance(d, str) and d != UNNAMED}
    # a dim named by an expression of the others ('past + new') is computed from them
    open_dims = sorted(d for d in named if not _computed(d, named | set(dims)))
    unnamed = sorted(name for name, desc in inputs.items()
                     if desc["shape"] is None or UNNAMED in desc["shape"])
    if not open_dims and not unnamed:
        return None
    return {
        "name": graph.name or Path(path).stem,
        "openDims": open_dims,
        "inputsWithUnnamedDims": unnamed,
        "inputs": inputs,
        "outputs": {vi.name: _desc(vi, dims, {}) for vi in graph.output},
        "nodes": len(graph.node),
        "sourceOpHistogram": dict(sorted(Counter(
            n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}:{n.op_type}"
            for n in graph.node).items())),
    }


def _computed(dim: str, names: set[str]) -> bool:
    from ..importers.onnx.dim_expressions import names_in

    parts = names_in(dim)
    return bool(parts) and all(p in names for p in parts)


def _desc(vi, dims: Mapping[str, int], input_shapes: Mapping[str, Sequence[int]]) -> dict:
    from ..importers.onnx.dim_expressions import evaluate
    from ..importers.onnx.model_file import ONNX_TO_WEBNN, onnx_dtype_name

    tt = vi.type.tensor_type
    elem = tt.elem_type
    data_type = ONNX_TO_WEBNN[elem][0] if elem in ONNX_TO_WEBNN else onnx_dtype_name(elem)
    if vi.name in input_shapes:
        return {"dataType": data_type, "shape": [int(d) for d in input_shapes[vi.name]]}
    if not tt.HasField("shape"):
        return {"dataType": data_type, "shape": None}  # not even the rank is known
    shape: list[int | str] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value") and d.dim_value > 0:
            shape.append(int(d.dim_value))
        elif d.HasField("dim_param") and d.dim_param:
            value = int(dims[d.dim_param]) if d.dim_param in dims else \
                evaluate(d.dim_param, dims)
            shape.append(d.dim_param if value is None or value < 0 else value)
        else:
            shape.append(UNNAMED)
    return {"dataType": data_type, "shape": shape}


def open_summary_if_onnx(path: str | Path, dims: Mapping[str, int] | None = None,
                         input_shapes: Mapping[str, Sequence[int]] | None = None
                         ) -> dict[str, Any] | None:
    """`onnx_open_summary` of an ONNX model the import refused for want of dim values; None for
    another kind of file, or when the summary cannot be made (the model breaks ONNX's rules:
    the import's own error, which the caller reports, says which)."""
    from ..errors import ConverterError

    if Path(path).suffix.lower() != ".onnx":
        return None
    try:
        return onnx_open_summary(path, dims, input_shapes)
    except ConverterError:
        return None
