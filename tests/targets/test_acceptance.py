"""Issue 5's acceptance cases, end to end through the command line: convert --target T --verify,
then check --target T on what was written."""
import re

import numpy as np
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

import converter
from cli.main import main
from converter.targets import builtin_targets

RNG = np.random.default_rng(5)


def _save(tmp_path, name, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(m.SerializeToString())
    return path


def _convert(src, out, target, *extra):
    r = CliRunner().invoke(main, ["convert", str(src), "-o", str(out), "--target", target,
                                  "--verify", "--verbose", *extra])
    assert r.exit_code == 0, r.output
    assert "transposes:" in r.stderr and "transposes:" not in r.stdout  # statistics: stderr
    check = CliRunner().invoke(main, ["check", str(out), "--target", target])
    assert check.exit_code == 0, check.output
    return r.stderr, converter.load(out)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("target", builtin_targets())
def test_whisper_style_conv1d_then_gelu_for_every_target(tmp_path, target):
    w, b = _f32(8, 4, 3), _f32(8)
    src = _save(tmp_path, "conv1d", [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1], strides=[2]),
        helper.make_node("Gelu", ["c"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")], opset=20)
    _, graph = _convert(src, tmp_path / "out.webnn", target)
    ops = [op.op_type for op in graph.operations]
    conv = ops.index("conv2d")
    assert "reshape" in ops[:conv] and "reshape" in ops[conv + 1:]  # conv2d between reshapes


def test_batchnorm_statistics_from_the_input_for_coreml(tmp_path):
    # mean and variance computed from the input (ReduceMean over N, H, W), not constants.
    axes = numpy_helper.from_array(np.array([0, 2, 3], np.int64), "axes")
    src = _save(tmp_path, "bn", [
        helper.make_node("ReduceMean", ["x", "axes"], ["m4"], keepdims=1),
        helper.make_node("Sub", ["x", "m4"], ["d"]),
        helper.make_node("Mul", ["d", "d"], ["d2"]),
        helper.make_node("ReduceMean", ["d2", "axes"], ["v4"], keepdims=1),
        helper.make_node("Flatten", ["m4"], ["m2"], axis=0),
        helper.make_node("Flatten", ["v4"], ["v2"], axis=0),
        helper.make_node("Squeeze", ["m2", "zero"], ["mean"]),
        helper.make_node("Squeeze", ["v2", "zero"], ["var"]),
        helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4, 5])],
        [axes, numpy_helper.from_array(np.array([0], np.int64), "zero"),
         numpy_helper.from_array(_f32(3), "scale"), numpy_helper.from_array(_f32(3), "bias")],
        opset=18)
    _, graph = _convert(src, tmp_path / "bn.webnn", "coreml")
    for op in graph.operations:
        if op.op_type == "batchNormalization":
            for name in ("mean", "variance", "scale", "bias"):
                operand = op.input(name)
                assert operand is None or operand.kind == "constant", name


def test_gru_with_hardsigmoid_gates(tmp_path):
    hidden, size = 4, 3
    src = _save(tmp_path, "gru", [helper.make_node(
        "GRU", ["x", "W", "R", "B"], ["Y", "Y_h"], hidden_size=hidden,
        activations=["HardSigmoid", "Tanh"], activation_alpha=[0.2], activation_beta=[0.5])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 2, size])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [5, 1, 2, hidden]),
         helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, 2, hidden])],
        [numpy_helper.from_array(_f32(1, 3 * hidden, size), "W"),
         numpy_helper.from_array(_f32(1, 3 * hidden, hidden), "R"),
         numpy_helper.from_array(_f32(1, 6 * hidden), "B")], opset=14)
    _, graph = _convert(src, tmp_path / "gru.webnn", "spec")
    hist = graph.op_histogram()
    assert "gru" not in hist and hist.get("hardSigmoid", 0) >= 5  # decomposed per step


def test_tflite_nhwc_cnn_for_an_nchw_target_has_boundary_transposes_only(tmp_path):
    from converter.zoo.fetch import fetch_model
    from tests.importers.tflite.test_public_models import ZOO  # the public models' manifest

    entry = next(m for m in ZOO["models"] if m["id"] == "face_landmark")
    src = fetch_model(entry["source"])
    out, graph = _convert(src, tmp_path / "fl.webnn", "coreml")
    counts = re.search(r"transposes: (\d+) before, (\d+) after", out)
    assert counts and counts.group(1) == "0"
    from converter.passes.layout import count_transposes

    counted = count_transposes(graph)
    assert counted["inside"] == 0 and counted["boundary"] == counted["total"] >= 1
    assert "at the graph boundary, 0 inside" in out


def test_int64_indices_and_shape_arithmetic_for_coreml(tmp_path):
    table = _f32(10, 4)
    src = _save(tmp_path, "idx", [
        helper.make_node("Gather", ["table", "ids"], ["e"]),
        helper.make_node("Shape", ["e"], ["s"]),
        helper.make_node("Slice", ["s", "start", "end"], ["lead"]),
        helper.make_node("Concat", ["lead", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["e", "shape"], ["flat"]),
        helper.make_node("ArgMax", ["flat"], ["best"], axis=1, keepdims=0),
        helper.make_node("Add", ["best", "ids_last"], ["y"])],
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [2])],
        [numpy_helper.from_array(table, "table"),
         numpy_helper.from_array(np.array([0], np.int64), "start"),
         numpy_helper.from_array(np.array([1], np.int64), "end"),
         numpy_helper.from_array(np.array([-1], np.int64), "minus1"),
         numpy_helper.from_array(np.array([5, 7], np.int64), "ids_last")])
    _, graph = _convert(src, tmp_path / "idx.webnn", "coreml")
    leftover = [o.name for o in graph.operands() if o.data_type == "int64"]
    assert leftover == []
