"""The paths through verify() the other files here do not take: a graph with state (one step
from its initial state, on both sides; LiteRT keeping its own variables), an emitted JavaScript
module given as the graph (refused unless it is a .js run in Chromium; built at the dims asked),
and the float64 oracle's ways of giving no answer (a missing feed, an op without a reference
kernel, no memory). Outputs are checked against ONNX Runtime, LiteRT and numpy."""
from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as H

import converter
from converter import GraphBuilder
from converter.errors import ConverterError
from converter.ir.state import StateVar
from converter.testing.tflite_fixtures import TfliteBuilder
from converter.verification.core import _float64_oracle, verify


def _accumulator(path, start):
    """LiteRT model: out = (start + x) * x on its first step, `acc` a resource variable that
    CALL_ONCE sets to `start` and the step reads, adds x to, assigns and reads again."""
    b = TfliteBuilder()
    x = b.input("x", [1, 4])
    h, v, s, v2, out = (b.tensor("acc", [], "resource"), b.tensor("v", [1, 4]),
                        b.tensor("s", [1, 4]), b.tensor("v2", [1, 4]), b.tensor("out", [1, 4]))
    b.op("CALL_ONCE", [], [], initSubgraphIndex=1)
    b.op("VAR_HANDLE", [], [h], sharedName="acc")
    b.op("READ_VARIABLE", [h], [v])
    b.op("ADD", [x, v], [s])
    b.op("ASSIGN_VARIABLE", [h, s], [])
    b.op("READ_VARIABLE", [h], [v2])
    b.op("MUL", [v2, x], [out])
    b.add_subgraph("init")
    hi = b.tensor("acc_init", [], "resource")
    b.op("VAR_HANDLE", [], [hi], sharedName="acc")
    b.op("ASSIGN_VARIABLE", [hi, b.constant("start", start)], [])
    return b.save(path, [out])


def test_a_tflite_state_starts_from_its_initial_value_and_litert_keeps_its_own(tmp_path):
    start = np.array([[3.0, -2.0, 0.5, 40.0]], np.float32)
    # an upper-case suffix: the source kind and the state rule both read it case-blind
    path = _accumulator(tmp_path / "acc.TFLITE", start)
    x = np.array([[1.0, 2.0, -4.0, 0.25]], np.float32)
    graph = converter.load(path)
    assert [(v.input, v.output) for v in graph.state] == [("acc", "acc/next")]
    report = verify(path, feeds={"x": x}, oracle="never")
    # LiteRT computed (start + x) * x from its own variable; the graph from the fed initial
    # value: a drawn state (uniform in [0, 1)) would be off by ~40 * 0.25 in the last element
    assert report.passed and report.source_runtime == "litert"
    assert [o.name for o in report.outputs] == ["out"] and report.outputs[0].max_abs == 0.0
    assert report.inputs["acc"] == {"dataType": "float32", "shape": [1, 4],
                                    "range": "initial state", "made": "the initial state"}
    got = converter.run(graph, {"x": x, "acc": start})
    np.testing.assert_array_equal(got["out"], (start + x) * x)


def _onnx_state_model(path):
    """ONNX: y = past * 2 + x, present = past + x (a state pair the caller declares)."""
    two = onnx.numpy_helper.from_array(np.array(2.0, np.float32), "two")
    model = H.make_model(H.make_graph(
        [H.make_node("Mul", ["past", "two"], ["p2"]), H.make_node("Add", ["p2", "x"], ["y"]),
         H.make_node("Add", ["past", "x"], ["present"])], "m",
        [H.make_tensor_value_info("x", TP.FLOAT, [3]),
         H.make_tensor_value_info("past", TP.FLOAT, [3])],
        [H.make_tensor_value_info("y", TP.FLOAT, [3]),
         H.make_tensor_value_info("present", TP.FLOAT, [3])], [two]),
        opset_imports=[H.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.save(model, str(path))
    return path


def test_an_onnx_state_is_fed_its_initial_value_on_both_sides(tmp_path):
    from converter.ir.operand import ConstantData

    path = _onnx_state_model(tmp_path / "m.onnx")
    graph = converter.load(path)
    start = np.array([100.0, -7.0, 0.5], np.float32)
    graph.state.append(StateVar("past", "present", ConstantData("float32", [3], array=start)))
    report = verify(path, graph=graph, seed=4, oracle="never")
    assert report.passed and [o.name for o in report.outputs] == ["y", "present"]
    assert report.inputs["past"] == {"dataType": "float32", "shape": [3],
                                     "range": "initial state", "made": "the initial state"}
    assert report.inputs["x"]["made"] == "seeded uniform in [0, 1)"
    assert all(o.max_abs == 0.0 for o in report.outputs)


def test_a_graph_path_must_be_a_js_module_run_in_chromium(tmp_path):
    path = _onnx_state_model(tmp_path / "m.onnx")
    with pytest.raises(ConverterError, match="verify takes a Graph, or the path of an emitted "
                                             ".js module") as e:
        verify(path, graph=tmp_path / "g.webnn")
    assert e.value.where == str(tmp_path / "g.webnn")
    assert e.value.fix == "load a .webnn/.json graph first"
    with pytest.raises(ConverterError, match="a JavaScript module runs in the browser") as e:
        verify(path, graph=str(tmp_path / "g.js"))
    assert e.value.where == str(tmp_path / "g.js")
    assert e.value.fix == "give runtime='chromium' (CLI: --runtime chromium)"


def _chromium_or_skip():
    from converter.runtimes.chromium import op_support_limits

    try:
        op_support_limits()
    except ConverterError as e:
        if os.environ.get("CI"):
            pytest.fail(f"the browser must run in CI: {e.line()}")
        pytest.skip(f"no WebNN browser: {e.line()}")


def test_a_js_module_is_built_at_the_dims_asked_and_judged_against_the_source(tmp_path):
    _chromium_or_skip()
    model = H.make_model(H.make_graph(
        [H.make_node("Sigmoid", ["x"], ["s"]), H.make_node("Mul", ["s", "x"], ["y"])], "swish",
        [H.make_tensor_value_info("x", TP.FLOAT, [1, "n"])],
        [H.make_tensor_value_info("y", TP.FLOAT, [1, "n"])]),
        opset_imports=[H.make_opsetid("", 18)])
    model.ir_version = 9
    source = tmp_path / "swish.onnx"
    onnx.save(model, str(source))
    module = tmp_path / "swish.js"
    converter.convert(source, module, dims={"n": [2, 4]})
    report = verify(source, module, dims={"n": 3}, runtime="chromium", seed=1)
    (out,) = report.outputs
    assert report.passed and report.graph_runtime == "chromium", out.to_json()
    assert report.graph == str(module) and list(out.shape) == [1, 3]
    assert report.inputs["x"]["shape"] == [1, 3] and out.cosine >= 0.9999
    x = np.random.default_rng(1).random((1, 3)).astype(np.float32)
    assert out.max_abs <= 1e-4 + 1e-3 * float(np.max(np.abs(x / (1 + np.exp(-x)))))


def _two_adds():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [2])
    return b.build({"y": b.add(x, b.constant(np.array([1.0, 2.0], np.float32)))})


def test_the_float64_oracle_evaluates_the_graph_in_double():
    truth, note = _float64_oracle(_two_adds(), {"x": np.array([0.1, 0.2], np.float32)})
    assert note == "the graph in float64 (reference interpreter)"
    assert truth["y"].dtype == np.float64
    assert truth["y"].tolist() == [float(np.float32(0.1)) + 1.0, float(np.float32(0.2)) + 2.0]


def test_the_float64_oracle_says_why_it_has_no_answer(monkeypatch):
    graph = _two_adds()
    truth, note = _float64_oracle(graph, {})  # the executor's feed check refuses
    assert truth is None and note.startswith("no float64 oracle: graph 'g' feeds: input 'x'")
    assert "\n" not in note
    graph.operations[0].op_type = "opWithoutKernel"
    truth, note = _float64_oracle(graph, {"x": np.zeros(2, np.float32)})
    assert truth is None
    assert note == "no float64 oracle: no reference kernel for WebNN op 'opWithoutKernel'"

    def out_of_memory(*args, **kwargs):  # 16 GB of float64 is not allocated in a unit test
        raise MemoryError

    monkeypatch.setattr("converter.verification.reference.evaluate", out_of_memory)
    truth, note = _float64_oracle(_two_adds(), {"x": np.zeros(2, np.float32)})
    assert truth is None
    assert note == "no float64 oracle: out of memory evaluating the graph in float64"


def test_a_further_opinion_without_an_output_of_the_source_is_refused(tmp_path):
    path = _onnx_state_model(tmp_path / "m.onnx")
    other = H.make_model(H.make_graph(
        [H.make_node("Add", ["x", "past"], ["y"])], "m",
        [H.make_tensor_value_info("x", TP.FLOAT, [3]),
         H.make_tensor_value_info("past", TP.FLOAT, [3])],
        [H.make_tensor_value_info("y", TP.FLOAT, [3])]), opset_imports=[H.make_opsetid("", 18)])
    other.ir_version = 9
    onnx.save(other, str(tmp_path / "other.onnx"))
    with pytest.raises(ConverterError, match="no output 'present' where the source has one") as e:
        verify(path, also={"other": str(tmp_path / "other.onnx")}, oracle="never")
    assert e.value.where == str(tmp_path / "other.onnx")


def test_a_big_weight_read_from_the_file_beside_small_ones_kept_in_typed_fields(tmp_path):
    from converter.runtimes.source_runs import run_onnx

    # 1 MiB of weights (read by ORT from the file) and a shape kept in int64_data, not
    # raw_data: the reader has no raw bytes for it, and it stays in the model as it is
    w = (np.arange(1 << 18) % 5).astype(np.float32)
    shape = H.make_tensor("shape", TP.INT64, [2], [2, 1 << 17])
    model = H.make_model(H.make_graph(
        [H.make_node("Reshape", ["w", "shape"], ["r"]),
         H.make_node("ReduceSum", ["r"], ["y"], keepdims=0)], "m", [],
        [H.make_tensor_value_info("y", TP.FLOAT, [])],
        [onnx.numpy_helper.from_array(w, "w"), shape]), opset_imports=[H.make_opsetid("", 18)])
    model.ir_version = 9
    assert not model.graph.initializer[1].raw_data
    onnx.save(model, str(tmp_path / "m.onnx"))
    assert run_onnx(tmp_path / "m.onnx", {})["y"] == np.float32(w.sum(dtype=np.float64))


def _times_1000(path):
    k = onnx.numpy_helper.from_array(np.array(1000.0, np.float32), "k")
    model = H.make_model(H.make_graph(
        [H.make_node("Mul", ["x", "k"], ["y"])], "m",
        [H.make_tensor_value_info("x", TP.FLOAT, [4])],
        [H.make_tensor_value_info("y", TP.FLOAT, [4])], [k]),
        opset_imports=[H.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.save(model, str(path))
    return path


def test_auto_computes_the_truth_only_for_a_failing_output_and_never_not_at_all(tmp_path):
    path = _times_1000(tmp_path / "m.onnx")
    report = verify(path, oracle="auto")  # passes plainly: nothing more is run
    assert report.passed and report.oracle is None and report.source_f64 is None
    assert report.noise_runs == [] and "decidedBy" not in report.outputs[0].extra
    b = GraphBuilder("wrong")  # x * 1000 + 1: every element 1 off
    x = b.input("x", "float32", [4])
    wrong = b.build({"y": b.add(b.mul(x, b.constant(np.full([4], 1000.0, np.float32))),
                                b.constant(np.ones([4], np.float32)))})
    never = verify(path, graph=wrong, oracle="never")
    assert not never.passed and never.oracle is None and never.noise_runs == []
    assert never.outputs[0].max_abs == pytest.approx(1.0, abs=1e-4)
    assert "decidedBy" not in never.outputs[0].extra
    auto = verify(path, graph=wrong, oracle="auto")
    assert not auto.passed and auto.oracle == "the graph in float64 (reference interpreter)"
    assert auto.source_f64 == "ONNX Runtime on a float64 copy of the model"
    assert auto.outputs[0].extra["decidedBy"] != "webnn vs source within the budget"
    assert auto.outputs[0].extra["sourceF64VsF64"] == pytest.approx(1.0, abs=1e-4)


def test_the_one_ulp_run_moves_every_float_input_and_its_spread_is_the_noise(tmp_path):
    path = _times_1000(tmp_path / "m.onnx")
    x = np.array([0.1, 0.7, 0.3333, 0.999], np.float32)
    report = verify(path, feeds={"x": x}, oracle="always")
    moved = np.nextafter(x, np.float32(np.inf))
    # ORT's float32 Mul rounds as numpy does; the ENABLE_ALL run equals the reference run
    spread = float(np.max(np.abs(moved * np.float32(1000) - x * np.float32(1000))))
    assert spread > 0
    extra = report.outputs[0].extra
    assert extra["sourceNoise"] == spread and extra["sourceNoiseFrom"] == "input moved 1 ULP"
