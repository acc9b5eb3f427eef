"""Hostile ONNX models built with onnx.helper, and the CLI driven through click's runner: the
pieces tests/security/test_onnx_*.py share."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from click.testing import CliRunner
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from cli.main import main

CANARY = b"CANARY-7f3a9c1e-do-not-copy-" * 4  # 112 bytes: 28 float32 values


# -- building models ----------------------------------------------------------------------------
def model(nodes, inputs, outputs, inits=(), opset=17, sparse=()):
    g = helper.make_graph(nodes, "hostile", inputs, outputs, list(inits),
                          sparse_initializer=list(sparse))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def vi(name, elem=T.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def external(tensor: onnx.TensorProto, location: str, offset="0", length=None):
    """Point `tensor` at external data (its own bytes dropped)."""
    tensor.ClearField("raw_data")
    tensor.data_location = T.EXTERNAL
    fields = [("location", location), ("offset", offset)]
    if length is not None:
        fields.append(("length", length))
    for key, value in fields:
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


def canary_setup(tmp_path: Path) -> tuple[Path, Path]:
    """(the canary file outside the model folder, the model folder)."""
    canary = tmp_path / "secret" / "canary.bin"
    canary.parent.mkdir()
    canary.write_bytes(CANARY)
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    return canary, model_dir


def constant_from(location: str, count: int = 28, offset="0", length=None) -> onnx.ModelProto:
    """y = x + Constant, the Constant's value kept in external data at `location`."""
    value = external(numpy_helper.from_array(np.zeros(count, np.float32), "c"), location,
                      offset, length)
    return model([helper.make_node("Constant", [], ["c"], value=value),
                   helper.make_node("Add", ["x", "c"], ["y"])],
                  [vi("x", shape=[count])], [vi("y", shape=[count])])


def if_branch_from(location: str) -> onnx.ModelProto:
    """An If whose then-branch initializer is kept in external data at `location`."""
    w = external(numpy_helper.from_array(np.zeros(28, np.float32), "w"), location)
    then = helper.make_graph([helper.make_node("Add", ["x", "w"], ["t"])], "then", [],
                             [vi("t", shape=[28])], [w])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                              [vi("e", shape=[28])])
    cond = numpy_helper.from_array(np.array(True), "cond")
    return model([helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)],
                  [vi("x", shape=[28])], [vi("y", shape=[28])], [cond])


def nested_if_from(location: str) -> onnx.ModelProto:
    """An If inside an If: the inner then-branch holds a Constant kept in external data."""
    value = external(numpy_helper.from_array(np.zeros(28, np.float32), "c"), location)
    inner_then = helper.make_graph([helper.make_node("Constant", [], ["it"], value=value)],
                                   "inner_then", [], [vi("it", shape=[28])])
    inner_else = helper.make_graph([helper.make_node("Neg", ["x"], ["ie"])], "inner_else", [],
                                   [vi("ie", shape=[28])])
    outer_then = helper.make_graph(
        [helper.make_node("If", ["cond"], ["ot"], then_branch=inner_then,
                          else_branch=inner_else)], "outer_then", [], [vi("ot", shape=[28])])
    outer_else = helper.make_graph([helper.make_node("Relu", ["x"], ["oe"])], "outer_else", [],
                                   [vi("oe", shape=[28])])
    cond = numpy_helper.from_array(np.array(True), "cond")
    return model([helper.make_node("If", ["cond"], ["y"], then_branch=outer_then,
                                    else_branch=outer_else)],
                  [vi("x", shape=[28])], [vi("y", shape=[28])], [cond])


def loop_body_from(location: str) -> onnx.ModelProto:
    """A Loop whose body holds a Constant kept in external data (no rule imports Loop: the
    file is refused when it is read, before any rule runs)."""
    value = external(numpy_helper.from_array(np.zeros(28, np.float32), "c"), location)
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Constant", [], ["c"], value=value),
         helper.make_node("Add", ["acc_in", "c"], ["acc_out"])], "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc_in", shape=[28])],
        [vi("cond_out", T.BOOL, []), vi("acc_out", shape=[28])])
    trips = numpy_helper.from_array(np.array(2, np.int64), "trips")
    return model([helper.make_node("Loop", ["trips", "", "x"], ["y"], body=body)],
                  [vi("x", shape=[28])], [vi("y", shape=[28])], [trips])


def sparse_from(location: str) -> onnx.ModelProto:
    """y = x + s, s a sparse initializer whose values are kept in external data."""
    values = external(numpy_helper.from_array(np.zeros(28, np.float32), "s"), location)
    indices = numpy_helper.from_array(np.arange(28, dtype=np.int64), "s_indices")
    sparse = helper.make_sparse_tensor(values, indices, [28])
    return model([helper.make_node("Add", ["x", "s"], ["y"])], [vi("x", shape=[28])],
                  [vi("y", shape=[28])], sparse=[sparse])


def tensors_attribute_from(location: str) -> onnx.ModelProto:
    """A node attribute of type TENSORS holding an external tensor."""
    t = external(numpy_helper.from_array(np.zeros(28, np.float32), "t"), location)
    node = helper.make_node("Relu", ["x"], ["y"])
    node.attribute.append(helper.make_attribute("extra", [t]))
    return model([node], [vi("x", shape=[28])], [vi("y", shape=[28])])


def write(model: onnx.ModelProto, folder: Path, name="m.onnx") -> Path:
    path = folder / name
    path.write_bytes(model.SerializeToString())
    return path


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_error_line(result) -> str:
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    return lines[0]


def convert_refused(src: Path, out_dir: Path, *flags) -> str:
    out_dir.mkdir(exist_ok=True)
    line = one_error_line(cli("convert", src, "-o", out_dir / "out.webnn", *flags))
    assert list(out_dir.iterdir()) == []
    return line


def no_canary_in(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            assert CANARY[:16] not in path.read_bytes(), f"canary bytes in {path}"
