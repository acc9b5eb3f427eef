"""Reading an ONNX file: the model proto, initializers as views, and every tensor's data checked
and kept inside the model's folder (see tensor_data).

Initializers are turned into numpy arrays once and their bytes are dropped from the proto as we
go, so the weights are held once (not twice) while a model converts. External data files are
memory-mapped: their tensors are views into the mapping, never read into memory up front.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError

from ...budget import MemoryBudget
from ...errors import FormatError, MissingFileError
from .tensor_data import ONNX_TO_WEBNN, onnx_dtype_name, resolve_tensors, tensor_array

__all__ = ["read_model", "tensor_array", "ONNX_TO_WEBNN", "onnx_dtype_name"]


def read_model(path: str | Path, *, max_tensor_bytes: int | str | None = None,
               max_total_bytes: int | str | None = None
               ) -> tuple[onnx.ModelProto, dict[str, np.ndarray], MemoryBudget]:
    """Parse an ONNX file; return the proto, its initializers as arrays (views where possible)
    and the conversion's memory budget (its total default follows the model's weights).

    Raises FormatError for a file that is not ONNX, is truncated, holds a tensor whose data
    does not match its shape, or whose external data leaves the model's folder or its file.
    """
    from .wire import WireError, map_model

    path = Path(path)
    if not path.exists():
        raise MissingFileError("no such file", where=str(path))
    if not path.is_file():
        raise FormatError("not a regular file", where=str(path),
                          fix="give the path of an .onnx file")
    try:
        stripped, raws, _ = map_model(path)
    except WireError as e:  # said where: the byte, or the limit the file passes
        raise FormatError(f"not a readable ONNX model: {e}", where=str(path),
                          fix="check that the file is a complete .onnx file") from None
    try:
        model = onnx.load_model_from_string(stripped)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise FormatError(f"not a readable ONNX model ({type(e).__name__})", where=str(path),
                          fix="check that the file is a complete .onnx file") from None
    if not model.HasField("graph") or (not model.graph.node and not model.graph.output):
        raise FormatError("not an ONNX model: it has no graph", where=str(path),
                          fix="check that the file is a complete .onnx file")
    budget = MemoryBudget(max_tensor_bytes, max_total_bytes)
    folder = path.parent
    resolve_tensors(model, folder, str(path), budget)
    arrays = {}
    for tensor, raw in zip(model.graph.initializer, raws):
        arrays[tensor.name] = tensor_array(tensor, folder=folder, where=str(path), raw=raw,
                                           budget=budget)
    budget.set_weights(sum(a.nbytes for a in arrays.values()))
    return model, arrays, budget
