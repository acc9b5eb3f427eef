"""Bad ONNX input: one clear line, a non-zero exit, and nothing written."""
import re

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

import converter
from cli.main import main
from converter.errors import ConverterError, FormatError, UnsupportedError


def _model(nodes, inputs, outputs, inits=(), opsets=(("", 17),)):
    g = helper.make_graph(nodes, "m", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = 8  # what the installed ONNX Runtime loads
    return m


def _relu_model():
    return _model([helper.make_node("Relu", ["x"], ["y"])],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])


def _convert(src, tmp_path):
    out = tmp_path / "out" / "model.webnn"
    out.parent.mkdir()
    result = CliRunner().invoke(main, ["convert", str(src), "-o", str(out)])
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.output
    assert list(out.parent.iterdir()) == []  # nothing written, not even a temporary file
    return lines[0]


def test_truncated_file(tmp_path):
    data = _relu_model().SerializeToString()
    src = tmp_path / "cut.onnx"
    src.write_bytes(data[: len(data) // 2])
    line = _convert(src, tmp_path)
    assert str(src) in line and "not a readable ONNX model" in line


def test_not_an_onnx_file(tmp_path):
    src = tmp_path / "text.onnx"
    src.write_text("this is not a model\n" * 10)
    line = _convert(src, tmp_path)
    assert "ONNX model" in line


def test_external_data_leaving_the_model_folder(tmp_path):
    (tmp_path / "secret.bin").write_bytes(np.ones(6, np.float32).tobytes())
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../secret.bin"), ("offset", "0"), ("length", "24")):
        entry = w.external_data.add()
        entry.key, entry.value = k, v
    m = _model([helper.make_node("Add", ["x", "w"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [w])
    src = model_dir / "m.onnx"
    src.write_bytes(m.SerializeToString())
    line = _convert(src, tmp_path)
    assert "external data path '../secret.bin' leaves the model's folder" in line
    with pytest.raises(FormatError, match="leaves the model's folder"):
        converter.load(src)


def test_op_from_an_unknown_domain(tmp_path):
    m = _model([helper.make_node("Relu", ["x"], ["r"]),
                helper.make_node("Frobnicate", ["r"], ["y"], domain="com.example")],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
               opsets=(("", 17), ("com.example", 1)))
    src = tmp_path / "m.onnx"
    src.write_bytes(m.SerializeToString())
    line = _convert(src, tmp_path)
    assert "Frobnicate 'Frobnicate_1': op from unknown domain 'com.example'" in line


def test_every_unsupported_node_is_reported_at_once(tmp_path):
    m = _model([helper.make_node("Frob", ["x"], ["a"], domain="com.example"),
                helper.make_node("Relu", ["a"], ["b"]),   # reads a failed node: not repeated
                helper.make_node("Blorp", ["x"], ["c"], domain="com.example")],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
               [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2]),
                helper.make_tensor_value_info("c", TensorProto.FLOAT, [2])],
               opsets=(("", 17), ("com.example", 1)))
    src = tmp_path / "m.onnx"
    src.write_bytes(m.SerializeToString())
    with pytest.raises(UnsupportedError) as info:
        converter.load(src)
    items = info.value.items
    assert len(items) == 2 and items[0].startswith("Frob 'Frob_0'") \
        and items[1].startswith("Blorp 'Blorp_2'")


def test_dynamic_dimension_without_a_value(tmp_path):
    m = _model([helper.make_node("Add", ["x", "y"], ["z"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3]),
                helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", None])],
               [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    src = tmp_path / "dyn.onnx"
    src.write_bytes(m.SerializeToString())
    line = _convert(src, tmp_path)
    # Every input and dimension that needs a value, in one line, with what to do.
    assert re.search(r"input 'x' axis 0 \('batch'\), input 'y' axis 0 \('batch'\), "
                     r"input 'y' axis 1 \(unnamed\)", line)
    assert "--dim NAME=VALUE" in line
    graph = converter.load(src, dims={"batch": 2}, input_shapes={"y": [2, 3]})
    assert graph.input_descs() == {"x": ("float32", (2, 3)), "y": ("float32", (2, 3))}


def test_input_shape_naming_no_input_is_an_error(tmp_path):
    src = tmp_path / "m.onnx"
    src.write_bytes(_relu_model().SerializeToString())
    with pytest.raises(ConverterError, match="'nope', which is not a graph input"):
        converter.load(src, input_shapes={"nope": [1]})


def test_an_input_webnn_needs_as_a_value_can_be_fixed_with_const(tmp_path):
    # Reshape's shape comes from a graph input: WebNN takes it as a plain list.
    m = _model([helper.make_node("Reshape", ["x", "shape"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    src = tmp_path / "r.onnx"
    src.write_bytes(m.SerializeToString())
    with pytest.raises(UnsupportedError) as info:
        converter.load(src)
    assert info.value.needs_known == ["shape"] and "--const" in str(info.value)
    out = tmp_path / "r.webnn"
    r = CliRunner().invoke(main, ["convert", str(src), "-o", str(out), "--const", "shape=3,2",
                                  "--verify", "--json"])
    assert r.exit_code == 0, r.output
    graph = converter.load(out)
    assert list(graph.inputs) == ["x"] and graph.outputs["y"].shape == (3, 2)


def test_the_fix_holds_for_reasons_that_are_not_missing_ops(tmp_path):
    """A refused attribute, a node with no WebNN form and a value needed at conversion time, in
    one line through the CLI: every reason is kept, and the fix claims none of their kinds."""
    m = _model([helper.make_node("GlobalLpPool", ["x"], ["a"], p=0),
                helper.make_node("Unique", ["x"], ["b"]),
                helper.make_node("Reshape", ["x", "s"], ["c"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2]),
                helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
               [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "abc"])
    src = tmp_path / "m.onnx"
    src.write_bytes(m.SerializeToString())
    line = _convert(src, tmp_path)
    assert line.endswith(
        "3 unsupported: GlobalLpPool 'GlobalLpPool_0': p=0.0 is not a norm order (must be "
        "positive); Unique 'Unique_1': no WebNN equivalent; Reshape 'Reshape_2': the shape "
        "input must be known at conversion time, but it is computed from graph inputs; give "
        "'s' a value at conversion time (--const NAME=VALUE); change or remove each part named "
        "above (its reason says what stops it); `webnn-convert ops` lists the WebNN ops with "
        "the data types and ranks each takes")
