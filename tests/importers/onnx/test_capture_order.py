"""A subgraph that reads a value a later node of the main graph makes (ONNX Runtime's quantizer
leaves such orders): the import sorts the nodes as ONNX Runtime does, and matches it.

Before, the If was imported first and its branch's read failed ("input 'late' is not produced
by any node or initializer").
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter.errors import FormatError
from converter.runtimes.execute import run
from converter.importers.onnx import import_model
from converter.importers.onnx.node_order import node_order

from .helpers import ort_outputs

F = TensorProto.FLOAT
X = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)


def _value(name: str):
    return helper.make_tensor_value_info(name, F, [2, 3])


def _branch(name: str, node: onnx.NodeProto, out: str, **inits) -> onnx.GraphProto:
    return helper.make_graph([node], name, [], [_value(out)],
                             [numpy_helper.from_array(np.array(v, np.float32), k)
                              for k, v in inits.items()])


def _model(nodes, inputs=("x", "c"), outputs=("y",)) -> onnx.ModelProto:
    ins = [_value("x") if n == "x" else helper.make_tensor_value_info(n, TensorProto.BOOL, [])
           for n in inputs]
    graph = helper.make_graph(nodes, "reordered", ins, [_value(o) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _if(name: str, cond: str, then_g, else_g, out: str) -> onnx.NodeProto:
    return helper.make_node("If", [cond], [out], then_branch=then_g, else_branch=else_g,
                            name=name)


def _quantizer_order() -> onnx.ModelProto:
    """The If first, the Relu its then-branch reads after it; a Neg after both reads the If."""
    then_g = _branch("then", helper.make_node("Add", ["late", "one"], ["t"]), "t", one=1.0)
    else_g = _branch("else", helper.make_node("Neg", ["x"], ["e"]), "e")
    return _model([_if("branch", "c", then_g, else_g, "mid"),
                   helper.make_node("Relu", ["x"], ["late"], name="late_relu"),
                   helper.make_node("Neg", ["mid"], ["y"], name="after")])


@pytest.mark.parametrize("cond", [True, False])
def test_an_if_branch_reading_a_later_value_imports_and_matches_onnx_runtime(cond):
    model = _quantizer_order()
    feeds = {"x": X, "c": np.array(cond)}
    want = ort_outputs(model, feeds)  # ONNX Runtime sorts the graph and runs it
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = import_model(copy, input_shapes={"x": [2, 3], "c": []})
    got = run(graph, {"x": X, "c": np.array(cond, np.uint8)})
    np.testing.assert_array_equal(got["y"], want[0])


def test_a_nested_branch_capture_from_two_levels_up_is_sorted_too():
    # The outer If's then-branch holds an inner If whose branch reads 'late' from the main
    # graph: the outer If waits for it although none of its own nodes reads it directly.
    inner = _if("inner", "c",
                _branch("inner_then", helper.make_node("Mul", ["late", "two"], ["it"]), "it",
                        two=2.0),
                _branch("inner_else", helper.make_node("Abs", ["x"], ["ie"]), "ie"), "t")
    then_g = helper.make_graph([inner], "then", [], [_value("t")])
    else_g = _branch("else", helper.make_node("Neg", ["x"], ["e"]), "e")
    model = _model([_if("outer", "c", then_g, else_g, "y"),
                    helper.make_node("Relu", ["x"], ["late"], name="late_relu")])
    feeds = {"x": X, "c": np.array(True)}
    want = ort_outputs(model, feeds)
    graph = import_model(model, input_shapes={"x": [2, 3], "c": []})
    got = run(graph, {"x": X, "c": np.array(1, np.uint8)})
    np.testing.assert_array_equal(got["y"], want[0])


def test_the_order_moves_only_what_must_wait():
    model = _quantizer_order()
    # Relu (1) first, as the If (0) waits for it; the If next, then the Neg that reads it.
    assert node_order(model.graph, "model") == [1, 0, 2]
    model.graph.node[0].CopyFrom(helper.make_node("Relu", ["x"], ["mid"]))  # no capture
    assert node_order(model.graph, "model") == [0, 1, 2]


def test_a_cycle_through_a_captured_value_is_refused_as_onnx_runtime_refuses_it():
    # The branch reads 'late', which is made from the If's own result: no order works.
    then_g = _branch("then", helper.make_node("Add", ["late", "one"], ["t"]), "t", one=1.0)
    else_g = _branch("else", helper.make_node("Neg", ["x"], ["e"]), "e")
    model = _model([_if("branch", "c", then_g, else_g, "mid"),
                    helper.make_node("Relu", ["mid"], ["late"], name="late_relu"),
                    helper.make_node("Neg", ["late"], ["y"], name="after")])
    with pytest.raises(Exception):
        ort_outputs(model, {"x": X, "c": np.array(True)})
    with pytest.raises(FormatError) as info:
        import_model(model, input_shapes={"x": [2, 3], "c": []})
    message = str(info.value)
    assert "cycle through a subgraph's captured values" in message
    assert "If 'branch'" in message and "Relu 'late_relu'" in message
