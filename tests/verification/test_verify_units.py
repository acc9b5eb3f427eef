"""The parts of verify() that decide what is compared and how: the seeded inputs and their
description, the report's verdict and JSON, the bounds per output, feeds converted for the
graph, and the refusals (unknown oracle mode, a feed or an output that does not exist, a source
of a kind that cannot be run). The expected values follow from the rules in the docstrings of
converter.verification.core, worked out by hand; the source runs are ONNX Runtime's."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as nh

from converter import GraphBuilder
from converter.errors import ConverterError
from converter.verification.parity import Bounds, OutputParity
from converter.verification.core import (BISECT_HINT, VerifyReport, as_graph_feeds, make_inputs,
                                    output_bounds, source_int_limits, verify)


def _graph(*inputs):
    b = GraphBuilder("g")
    ops = [b.input(name, dtype, shape) for name, dtype, shape in inputs]
    outs = {f"o{i}": b.identity(x) for i, x in enumerate(ops)}
    return b.build(outs)


def test_seeded_draws_and_what_the_report_says_about_them():
    g = _graph(("x", "float32", [2, 3]), ("ids", "int32", [4]), ("flag", "uint8", [5]),
               ("tokens", "int64", [6]))
    feeds, made = make_inputs(g, 5, {"tokens": 3})
    rng = np.random.default_rng(5)  # one generator, drawn in input order
    assert np.array_equal(feeds["x"], rng.random((2, 3), dtype=np.float64).astype(np.float32))
    assert np.array_equal(feeds["ids"], rng.integers(0, 10, (4,)).astype(np.int32))
    assert np.array_equal(feeds["flag"], rng.integers(0, 2, (5,)).astype(np.uint8))
    assert np.array_equal(feeds["tokens"], rng.integers(0, 3, (6,)).astype(np.int64))
    assert made["x"] == {"dataType": "float32", "shape": [2, 3], "range": [0.0, 1.0],
                         "made": "seeded uniform in [0, 1)"}
    assert made["ids"] == {"dataType": "int32", "shape": [4], "range": [0, 10],
                           "made": "seeded integers in [0, 10)"}
    assert made["flag"]["range"] == [0, 2] and made["flag"]["made"] == "seeded integers in [0, 2)"
    assert made["tokens"]["range"] == [0, 3]
    assert made["tokens"]["made"] == "seeded within the embedding's 3 rows"


def test_position_ids_by_any_path_and_only_when_integers():
    g = _graph(("position_ids", "int64", [1, 4]), ("dec.position_ids", "int32", [3]),
               ("dec/position_ids", "int32", []), ("float/position_ids", "float32", [3]),
               ("position_ids_x", "int32", [2]))
    feeds, made = make_inputs(g, 0)
    assert feeds["position_ids"].tolist() == [[0, 1, 2, 3]]
    assert made["position_ids"]["range"] == [0, 3]
    assert feeds["dec.position_ids"].tolist() == [0, 1, 2]
    assert feeds["dec.position_ids"].dtype == np.int32
    assert feeds["dec/position_ids"].tolist() == 0 and made["dec/position_ids"]["range"] == [0, 0]
    assert made["float/position_ids"]["made"] == "seeded uniform in [0, 1)"
    assert made["position_ids_x"]["made"] == "seeded integers in [0, 10)"


def test_lengths_come_from_token_ids_when_there_is_no_mask():
    g = _graph(("lengths1d", "int32", [7]), ("input_ids", "int64", [2, 5]),
               ("past_length", "int32", [1]), ("seqlens_k", "int32", [2]))
    feeds, made = make_inputs(g, 0)
    assert feeds["past_length"].tolist() == [5] and made["past_length"]["range"] == [5, 5]
    assert made["past_length"]["made"] == \
        "the sequence length 5, the last axis of 'input_ids'"
    assert feeds["seqlens_k"].tolist() == [4, 4]
    assert made["seqlens_k"]["made"] == ("the sequence length 5 - 1 (counted from zero), the "
                                         "last axis of 'input_ids'")
    # a length input with nothing to take the length from keeps its draw
    g = _graph(("total_length", "int32", [3]), ("x", "float32", [2, 2]))
    _, made = make_inputs(g, 0)
    assert made["total_length"]["made"] == "seeded integers in [0, 10)"


def test_a_float_mask_is_ones_and_a_float_length_is_drawn():
    g = _graph(("MyMask", "float32", [3]), ("seq_length", "float32", [1]))
    feeds, made = make_inputs(g, 0)
    assert feeds["MyMask"].tolist() == [1.0, 1.0, 1.0] and made["MyMask"]["range"] == [1, 1]
    assert made["seq_length"]["made"] == "seeded uniform in [0, 1)"


def test_bool_feeds_become_uint8_only_for_a_uint8_input():
    g = _graph(("b", "uint8", [2]), ("f", "float32", [2]))
    out = as_graph_feeds(g, {"b": np.array([True, False]), "f": np.array([True, False]),
                             "other": [1, 2]})
    assert out["b"].dtype == np.uint8 and out["b"].tolist() == [1, 0]
    assert out["f"].dtype == np.bool_ and out["other"].tolist() == [1, 2]


def _parity(passed: bool) -> OutputParity:
    return OutputParity("y", passed, [1], "float32", 0.0, 0.0, 0, 1.0, None, 0, Bounds())


def test_the_report_passes_only_with_outputs_all_passing_and_says_how_to_find_a_failure():
    report = VerifyReport("m.onnx", None, 0, "onnxruntime", "webnn-onnx", {})
    assert not report.passed  # nothing compared is not a pass
    report.outputs = [_parity(True)]
    assert report.passed and "hint" not in report.to_json()
    report.others = {"tflite": [_parity(True), _parity(False)]}
    j = report.to_json()
    assert not report.passed and j["passed"] is False and j["hint"] == BISECT_HINT
    assert [o["passed"] for o in j["others"]["tflite"]] == [True, False]
    report.others = {}
    report.outputs = [_parity(True), _parity(False)]
    assert not report.passed


def test_a_quantized_output_may_be_one_step_off():
    b = GraphBuilder("q")
    x = b.input("x", "float32", [4])
    q = b.quantizeLinear(x, b.constant(np.array([0.5], np.float32)),
                         b.constant(np.array([3], np.int8)))
    g = b.build({"q": q, "i": b.cast(q, "int8"), "f": b.relu(x)})
    assert output_bounds(g, "q") == Bounds(atol=1.0, rtol=0.0)
    assert output_bounds(g, "i") == Bounds(exact=True)
    assert output_bounds(g, "f") == Bounds(atol=1e-4, rtol=1e-3, cosine=0.9999)


def test_a_quantized_output_moved_after_its_quantizeLinear_is_still_quantized():
    """litert-torch ends an NCHW model with a transpose of the last quantized op's int8 result
    (every static int8 model of tools/vision_sweep.py): one step, not exact. Values that only
    part of come from a quantizeLinear (a concat with an int8 input) stay exact."""
    b = GraphBuilder("q")
    x = b.input("x", "float32", [1, 2, 2, 3])
    q = b.quantizeLinear(x, b.constant(np.full([1, 1, 1, 1], 0.5, np.float32)),
                         b.constant(np.full([1, 1, 1, 1], 3, np.int8)))
    moved = b.reshape(b.transpose(q, permutation=[0, 3, 1, 2]), [1, 12])
    doubled = b.concat([moved, moved], 1)  # two paths to the same quantizeLinear
    raw = b.input("raw", "int8", [1, 12])
    picked = b.gather(moved, b.constant(np.array([0, 2], np.int32)), axis=1)  # int32 indices
    g = b.build({"moved": moved, "doubled": doubled, "picked": picked,
                 "mixed": b.concat([moved, raw], 1),
                 "raw": b.transpose(raw, permutation=[1, 0]), "computed": b.add(moved, moved)})
    assert output_bounds(g, "moved") == Bounds(atol=1.0, rtol=0.0)
    assert output_bounds(g, "doubled") == Bounds(atol=1.0, rtol=0.0)
    assert output_bounds(g, "picked") == Bounds(atol=1.0, rtol=0.0)
    for name in ("mixed", "raw", "computed"):
        assert output_bounds(g, name) == Bounds(exact=True), name


def _relu_model(path, gathers=()):
    nodes = [H.make_node("Relu", ["x"], ["y"])]
    inits, inputs = [], [H.make_tensor_value_info("x", TP.FLOAT, [2, 3])]
    outputs = [H.make_tensor_value_info("y", TP.FLOAT, [2, 3])]
    for k, (table, axis, index) in enumerate(gathers):
        inits.append(nh.from_array(np.zeros(table, np.float32), f"t{k}"))
        if index not in [i.name for i in inputs]:
            inputs.append(H.make_tensor_value_info(index, TP.INT64, [2]))
        nodes.append(H.make_node("Gather", [f"t{k}", index], [f"g{k}"], axis=axis))
        outputs.append(H.make_tensor_value_info(f"g{k}", TP.FLOAT, None))
    model = H.make_model(H.make_graph(nodes, "m", inputs, outputs, inits),
                         opset_imports=[H.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.save(model, str(path))
    return path


def test_embedding_rows_bound_integer_inputs_along_the_gather_axis(tmp_path):
    path = _relu_model(tmp_path / "m.onnx", [((7, 2), 0, "ids"), ((3, 5), 1, "cols"),
                                             ((4, 2), 0, "cols")])
    assert source_int_limits(path) == {"ids": 7, "cols": 4}  # the smallest table wins
    assert source_int_limits(tmp_path / "m.tflite") == {}


def test_verify_refusals(tmp_path):
    path = _relu_model(tmp_path / "m.onnx")
    with pytest.raises(ConverterError, match="unknown oracle mode 'sometimes'"):
        verify(path, oracle="sometimes")
    with pytest.raises(ConverterError, match="no graph input named 'z'") as e:
        verify(path, feeds={"z": np.zeros(1)})
    assert e.value.fix == "inputs are: x"
    with pytest.raises(ConverterError, match="cannot verify a .pb source"):
        verify(tmp_path / "m.pb")
    (tmp_path / "bad.onnx").write_bytes(b"\x0a\xff\xff\xff\xff\x0f")
    with pytest.raises(ConverterError, match="cannot read the ONNX model"):
        source_int_limits(tmp_path / "bad.onnx")


def test_verify_on_given_feeds_reports_them_as_given(tmp_path):
    path = _relu_model(tmp_path / "m.onnx")
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    report = verify(path, feeds={"x": x}, oracle="never")
    assert report.passed and report.oracle is None
    assert report.inputs["x"] == {"dataType": "float32", "shape": [2, 3], "range": "given",
                                  "made": "given"}
    assert report.outputs[0].max_abs == 0.0 and report.source_runtime == "onnxruntime"
    assert report.graph_runtime == "webnn-onnx"
    assert report.session_options == "ONNX Runtime at ORT_DISABLE_ALL on both sides"
    always = verify(path, feeds={"x": x}, oracle="always")
    assert always.oracle == "the graph in float64 (reference interpreter)"
    assert always.source_f64 == "ONNX Runtime on a float64 copy of the model"
    assert sorted(always.noise_runs) == ["ORT_ENABLE_ALL vs ORT_DISABLE_ALL",
                                         "input moved 1 ULP"]
    assert always.outputs[0].extra["decidedBy"] == "webnn vs source within the budget"


def _add_model(path):
    model = H.make_model(H.make_graph(
        [H.make_node("Add", ["x", "k"], ["y"])], "m",
        [H.make_tensor_value_info("x", TP.FLOAT, [2]),
         H.make_tensor_value_info("k", TP.FLOAT, [2])],
        [H.make_tensor_value_info("y", TP.FLOAT, [2])]), opset_imports=[H.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.save(model, str(path))
    return path


def test_an_input_fixed_at_conversion_is_fed_to_the_source(tmp_path):
    path = _add_model(tmp_path / "add.onnx")
    k = np.array([10.0, 20.0], np.float32)
    report = verify(path, known_inputs={"k": k}, feeds={"x": np.array([1, 2], np.float32)},
                    oracle="never")
    assert report.passed
    assert report.inputs["k"] == {"shape": [2], "range": "fixed at conversion",
                                  "made": "fixed at conversion (--const)"}
    assert report.outputs[0].max_abs == 0.0


def test_a_further_opinion_is_compared_with_the_source_and_a_missing_output_refused(tmp_path):
    import converter

    path = _add_model(tmp_path / "add.onnx")
    report = verify(path, also={"again": str(path)}, oracle="never")
    assert report.passed and [o.name for o in report.others["again"]] == ["y"]
    assert report.others["again"][0].max_abs == 0.0
    assert report.to_json()["others"]["again"][0]["passed"] is True
    b = converter.GraphBuilder("other")
    g = b.build({"z": b.add(b.input("x", "float32", [2]), b.input("k", "float32", [2]))})
    with pytest.raises(ConverterError, match="no output 'y' in the graph where the source has "
                                             "one") as e:
        verify(path, graph=g)
    assert e.value.where == "graph 'other'"


def test_verify_a_tflite_source_on_litert(tmp_path):
    from converter.testing.tflite_fixtures import TfliteBuilder

    b = TfliteBuilder()
    x = b.input("x", [2])
    y = b.tensor("y", [2])
    b.op("ADD", [x, b.constant("k", np.array([0.5, -1.0], np.float32))], [y])
    path = b.save(tmp_path / "add.tflite", [y])
    report = verify(path, feeds={"x": np.array([1.0, 2.0], np.float32)}, oracle="never")
    assert report.passed and report.source_runtime == "litert"
    assert report.session_options == "LiteRT with its default kernels (XNNPACK)"
    assert report.outputs[0].max_abs == 0.0 and report.outputs[0].name == "y"


def test_the_default_seed_is_zero(tmp_path):
    path = _relu_model(tmp_path / "m.onnx")
    report = verify(path, oracle="never")
    assert report.seed == 0 and report.to_json()["seed"] == 0 and report.passed


def test_the_source_kinds_table_cannot_be_changed_by_accident():
    import dataclasses

    from converter.verification import source_kind as verification

    with pytest.raises(dataclasses.FrozenInstanceError):
        verification._SOURCES[".onnx"].runtime = "other"
    assert verification._SOURCES[".onnx"].runtime == "onnxruntime"


def test_a_rank_one_mask_gives_the_length_and_a_scalar_mask_gives_none():
    g = _graph(("attention_mask", "int64", [5]), ("seqlens_k", "int32", [1]),
               ("past_length", "int64", [1]))
    feeds, made = make_inputs(g, 0)
    assert feeds["seqlens_k"].tolist() == [4] and feeds["past_length"].tolist() == [5]
    assert made["past_length"]["made"] == \
        "the sequence length 5, the last axis of 'attention_mask'"
    # a scalar mask has no last axis: the length comes from the token ids instead
    g = _graph(("mask", "int64", []), ("ids", "int64", [1, 3]), ("seqlens_k", "int32", [1]))
    feeds, made = make_inputs(g, 0)
    assert feeds["mask"].tolist() == 1 and feeds["seqlens_k"].tolist() == [2]
    assert made["seqlens_k"]["made"].endswith("the last axis of 'ids'")


def test_gathers_of_a_hostile_file_bound_nothing(tmp_path):
    # Gather with its data only, and Gathers naming an axis the table does not have: the
    # limits are read without failing (the importer refuses such a model with its own line)
    path = _relu_model(tmp_path / "m.onnx", [((5, 2), 2, "ids"), ((6, 2), -3, "ids")])
    model = onnx.load(str(path))
    model.graph.node.append(H.make_node("Gather", ["t0"], ["lonely"]))
    onnx.save(model, str(path))
    assert source_int_limits(path) == {}
    # the last and the first axis counted from the end are axes
    path = _relu_model(tmp_path / "n.onnx", [((5, 2), -1, "ids"), ((3, 9), -2, "cols")])
    assert source_int_limits(path) == {"ids": 2, "cols": 3}
