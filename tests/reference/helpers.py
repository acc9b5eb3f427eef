"""Build one-op graphs and run them on the reference interpreter."""
from __future__ import annotations

import numpy as np

from converter.ops.builder import GraphBuilder
from converter.verification.reference import evaluate


def ref1(op: str, *inputs, **options) -> np.ndarray:
    """Run `op` with its ndarray arguments as graph inputs (other positional arguments, such
    as an axis or a padding list, passed as they are) and return its output."""
    b = GraphBuilder(op)
    operands, feeds = [], {}
    for i, value in enumerate(inputs):
        if not isinstance(value, np.ndarray):
            operands.append(value)
            continue
        operands.append(b.input(f"x{i}", _webnn_type(value.dtype), list(value.shape)))
        feeds[f"x{i}"] = value
    graph = b.build({"y": getattr(b, op)(*operands, **options)})
    return evaluate(graph, feeds)["y"]


def _webnn_type(dtype) -> str:
    from converter import dtypes

    return dtypes.from_numpy(np.dtype(dtype))
