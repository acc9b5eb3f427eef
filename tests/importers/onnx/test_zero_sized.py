"""Zero-sized values in ONNX graphs: WebNN has no empty tensors, but an empty value holds
nothing, so it is known at conversion time: unused Split parts and empty slices are dropped,
Concat skips them, ops computed at conversion time fold them, and an empty model output is
left out (named in a warning); only an empty value a WebNN op needs is refused, by name.
Compared with ONNX Runtime on the same models."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from converter.runtimes.execute import run
from converter.importers.dropped_outputs import DroppedOutputWarning
from converter.importers.onnx import import_model

from .helpers import check, ops_of, ort_outputs, refused

F32 = onnx.TensorProto.FLOAT


def _model(nodes, inits, outputs=("y",), opset=18):
    graph = helper.make_graph(nodes, "z", [helper.make_tensor_value_info("x", F32, [2, 3])],
                              [helper.make_tensor_value_info(o, F32, None) for o in outputs],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=9)


X = np.arange(6, dtype=np.float32).reshape(2, 3)


def _ints(*values):
    return np.array(values, np.int64)


def test_unused_zero_sized_split_part_is_dropped():
    nodes = [helper.make_node("Split", ["x", "sizes"], ["empty", "all"], axis=1),
             helper.make_node("Relu", ["all"], ["y"])]
    graph, (y,) = check(_model(nodes, {"sizes": _ints(0, 3)}), {"x": X})
    np.testing.assert_array_equal(y, X)
    assert ops_of(graph) == ["split", "relu"] or ops_of(graph) == ["relu"]


def test_empty_slice_concatenated_adds_nothing():
    nodes = [helper.make_node("Slice", ["x", "s", "e", "a"], ["empty"]),
             helper.make_node("Concat", ["empty", "x"], ["y"], axis=1)]
    inits = {"s": _ints(3), "e": _ints(3), "a": _ints(1)}
    graph, (y,) = check(_model(nodes, inits), {"x": X})
    np.testing.assert_array_equal(y, X)
    assert "slice" not in ops_of(graph)


def test_reduction_of_an_empty_slice_folds_to_its_identity():
    # ReduceSum over an empty set is 0 whatever x holds; the graph adds it to x
    nodes = [helper.make_node("Slice", ["x", "s", "e", "a"], ["empty"]),
             helper.make_node("ReduceSum", ["empty", "axes"], ["zero"], keepdims=1),
             helper.make_node("Add", ["x", "zero"], ["y"])]
    inits = {"s": _ints(0), "e": _ints(0), "a": _ints(1), "axes": _ints(1)}
    graph, (y,) = check(_model(nodes, inits), {"x": X})
    np.testing.assert_array_equal(y, X)


def test_an_empty_graph_output_is_dropped_and_the_rest_matches_onnx_runtime():
    nodes = [helper.make_node("Slice", ["x", "s", "e", "a"], ["empty"]),
             helper.make_node("Relu", ["empty"], ["nothing"]),
             helper.make_node("Neg", ["x"], ["y"])]
    inits = {"s": _ints(1), "e": _ints(1), "a": _ints(0)}
    model = _model(nodes, inits, outputs=("nothing", "y"))
    nothing, y = ort_outputs(model, {"x": X})
    assert nothing.shape == (0, 3)  # ONNX Runtime gives the empty output
    with pytest.warns(DroppedOutputWarning, match=r"output 'nothing' dropped: it is empty "
                                                  r"\(shape \[0, 3\]\)"):
        graph = import_model(model, input_shapes={"x": [2, 3]})
    assert list(graph.outputs) == ["y"]
    np.testing.assert_array_equal(run(graph, {"x": X})["y"], y)


def test_an_empty_operand_of_a_run_time_op_is_refused_by_name():
    nodes = [helper.make_node("Slice", ["x", "s", "e", "a"], ["empty"]),
             helper.make_node("Gather", ["x", "i"], ["row"], axis=0),
             helper.make_node("Mul", ["empty", "row"], ["y"])]
    inits = {"s": _ints(1), "e": _ints(1), "a": _ints(0), "i": _ints(0)}
    reason = refused(_model(nodes, inits), {"x": X})
    assert "Mul" in reason and "'empty' has shape [0, 3]" in reason
