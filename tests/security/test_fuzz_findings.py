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
    _refused(tmp_path, model, "attribute 'axis' holds no value of its type UNDEFINED")


def test_an_attribute_of_another_kind(tmp_path):
    model = _softmax_model(tmp_path / "m.onnx", axis_type=onnx.AttributeProto.STRING)
    # STRING with no `s` set reads as b"" -> "": not the int that axis takes
    _refused(tmp_path, model, "attribute 'axis' holds a str, not the int it takes")


def test_a_graph_name_that_is_not_utf8(tmp_path):
    path = _softmax_model(tmp_path / "m.onnx", name="GRAPHNAME")
    data = path.read_bytes()
    path.write_bytes(data.replace(b"GRAPHNAME", b"G\xe4\xff\xfeNAME!"))  # same length
    _refused(tmp_path, path, "the graph's name is not valid UTF-8 text")
