"""A tiny ONNX model shaped like DeBERTa-v2's relative-position lookup, for the tests of
constants that differ between a module's dims.

The model holds a [32, 32] int64 table of relative-position buckets, slices it to the sequence
length read from its input's shape (as DeBERTa-v2 does) and uses the slice as gatherElements
indices. Converted at several lengths, the table's slice is a different constant at each length,
each the leading corner of the largest: stored once, and it must stay a constant in every
variant (Chromium's gatherElements takes constant indices only). Every bucket is below 8, the
smallest length converted, so each slice indexes its own input in range.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["BUCKETS", "position_table_model"]

BUCKETS = 8


def position_table_model(path: Path) -> Path:
    """Write the model to `path` (its input `x` is [1, s, s] float32, its output `y` too)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rows, cols = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    table = ((rows + 2 * cols) % BUCKETS).astype(np.int64)
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["s"], axis=0),
        helper.make_node("Unsqueeze", ["s", "axis0"], ["s1"]),
        helper.make_node("Concat", ["s1", "s1"], ["ends"], axis=0),
        helper.make_node("Slice", ["table", "zeros", "ends"], ["buckets"]),
        helper.make_node("Unsqueeze", ["buckets", "axis0"], ["indices"]),
        helper.make_node("GatherElements", ["x", "indices"], ["y"], axis=2),
    ]
    constants = [numpy_helper.from_array(table, "table"),
                 numpy_helper.from_array(np.array(1, np.int64), "one"),
                 numpy_helper.from_array(np.array([0], np.int64), "axis0"),
                 numpy_helper.from_array(np.array([0, 0], np.int64), "zeros")]
    graph = helper.make_graph(
        nodes, "position_table",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "s", "s"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "s", "s"])], constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return path
