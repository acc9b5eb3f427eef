"""Findings of the full fuzz run (tools/fuzz.py --seed 1 --count 1000), each a bit flip of a real
model that reached a rule's arithmetic or a writer: now one clear line, exit 2, nothing written."""
from __future__ import annotations

import onnx
from click.testing import CliRunner
from onnx import TensorProto, helper

from cli.main import main


def _softmax_model(path, *, axis_type=None, name="g"):
    node = helper.make_node("Softmax", ["x"], ["y"], axis=1)
    if axis_type is not None:
        node.attribute[0].type = axis_type  # a flipped type tag: the int is still stored
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 4])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [1, 4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _refused(tmp_path, model, message):
    out = tmp_path / "out"
    out.mkdir()
    for args in (["validate", str(model)], ["convert", str(model), "-o", str(out / "m.webnn")],
                 ["convert", str(model), "-o", str(out / "m.onnx")]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code in (1, 2), (args, r.output)
        assert "internal error" not in r.output and "Traceback" not in r.output
        assert message in r.output, (args, r.output)
    assert list(out.iterdir()) == []


def test_an_attribute_whose_type_tag_is_flipped(tmp_path):
    model = _softmax_model(tmp_path / "m.onnx", axis_type=onnx.AttributeProto.UNDEFINED)
    _refused(tmp_path, model, "attribute 'axis' has type UNDEFINED, but ONNX's Softmax "
                              "(opset 17) declares INT")


def test_an_attribute_of_another_kind(tmp_path):
    model = _softmax_model(tmp_path / "m.onnx", axis_type=onnx.AttributeProto.STRING)
    _refused(tmp_path, model, "attribute 'axis' has type STRING, but ONNX's Softmax "
                              "(opset 17) declares INT")


def _fused_matmul_model(path, trans_a_type):
    """com.microsoft's FusedMatMul: a domain the onnx package has no schemas for, so its rule's
    own reading of each attribute is what refuses a flipped type tag."""
    node = helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain="com.microsoft",
                            transA=0)
    node.attribute[0].type = trans_a_type
    graph = helper.make_graph([node], "g", [
        helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 2]),
        helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
    onnx.save(helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]), path)
    return path


def test_a_contrib_attribute_whose_type_tag_is_flipped(tmp_path):
    model = _fused_matmul_model(tmp_path / "m.onnx", onnx.AttributeProto.UNDEFINED)
    _refused(tmp_path, model, "attribute 'transA' holds no value of its type UNDEFINED")


def test_a_contrib_attribute_of_another_kind(tmp_path):
    model = _fused_matmul_model(tmp_path / "m.onnx", onnx.AttributeProto.STRING)
    # STRING with no `s` set reads as b"" -> "": not the int that transA takes
    _refused(tmp_path, model, "attribute 'transA' holds a str, not the int it takes")


def test_a_graph_name_that_is_not_utf8(tmp_path):
    path = _softmax_model(tmp_path / "m.onnx", name="GRAPHNAME")
    data = path.read_bytes()
    path.write_bytes(data.replace(b"GRAPHNAME", b"G\xe4\xff\xfeNAME!"))  # same length
    _refused(tmp_path, path, "model.graph.name is not valid UTF-8 text")
