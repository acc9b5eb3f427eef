"""`verify --bisect` names the operation a bug was injected into, on light_resnet50, both for a
conversion bug (the graph changed) and for an executor bug (a lowering changed)."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter.verification.bisect import bisect
from converter.verification.op_budgets import op_ulp_budget
from converter.lowering.onnx import elementwise

from .mutations import sub_for_add, transposed_filter


def test_bisect_names_an_injected_conversion_bug_from_the_cli(resnet50, tmp_path):
    graph = converter.load(resnet50)
    injected = sub_for_add(graph)
    converter.save(graph, tmp_path / "bad.webnn")
    dump = tmp_path / "dump"
    result = CliRunner().invoke(main, ["verify", str(resnet50), "--graph",
                                       str(tmp_path / "bad.webnn"), "--bisect", "--dump",
                                       str(dump), "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    found = report["bisect"]
    assert found["op"] == injected and found["opType"] == "sub" and found["stage"] == "conversion"
    node = injected.split("/")[0]
    assert found["sourceNodes"] == [f"ONNX node '{node}' (Sum)"]
    assert found["errorBefore"] < 1e-4 < 1 < found["errorAfter"]
    assert found["inputShapes"] == [[1, 1024, 14, 14]] * 2
    from converter.schemas import validate

    validate(report, "verify-report", "verify --json")
    # the dump reproduces it: the one-op graph on its inputs is far from the source's value
    sub = converter.load(dump / "subgraph.webnn")
    assert [op.op_type for op in sub.operations] == ["sub"]
    feeds = {name: np.load(dump / f"{name}.npy") for name in sub.inputs}
    got = converter.run(sub, feeds)
    (expected,) = dump.glob("expected_*.npy")
    want = np.load(expected)
    assert np.allclose(want, sum(feeds.values()), rtol=1e-4, atol=1e-4)  # the source adds
    assert np.abs(next(iter(got.values())) - want).max() > 1


def test_bisect_table_output_names_the_op_and_the_hint_is_always_there(resnet50, tmp_path):
    graph = converter.load(resnet50)
    injected = transposed_filter(graph)
    converter.save(graph, tmp_path / "bad.webnn")
    plain = CliRunner().invoke(main, ["verify", str(resnet50), "--graph",
                                      str(tmp_path / "bad.webnn")])
    assert plain.exit_code == 1 and "--bisect" in plain.output
    result = CliRunner().invoke(main, ["verify", str(resnet50), "--graph",
                                       str(tmp_path / "bad.webnn"), "--bisect"])
    assert result.exit_code == 1
    assert f"first operation out of budget (conversion): conv2d '{injected}'" in result.output
    assert "from source node(s): ONNX node" in result.output


def test_bisect_finds_an_executor_bug_against_the_independent_oracle(resnet50, monkeypatch):
    # the ONNX lowering of add made wrong: the graph is right, the executor is not
    graph = converter.load(resnet50)
    monkeypatch.setitem(elementwise._BINARY, "add", "Sub")
    report = converter.verify(resnet50, graph, seed=0)
    (out,) = report.outputs
    assert not report.passed and out.reason.startswith("webnn vs f64")
    found = bisect(resnet50, graph, seed=0)
    first_add = next(op for op in graph.operations if op.op_type == "add")
    assert found.stage == "executor" and found.op == first_add.name
    assert found.budget == "1 ULP" and found.error_after > 1


def test_bisect_finds_nothing_in_a_correct_graph(small_model):
    assert bisect(small_model, converter.load(small_model), seed=0) is None


def test_dump_needs_bisect(small_model, tmp_path):
    result = CliRunner().invoke(main, ["verify", str(small_model), "--dump", str(tmp_path)])
    assert result.exit_code == 2 and "--dump writes what --bisect finds" in result.output


def test_op_budgets_follow_the_shared_tolerances():
    b = converter.GraphBuilder("b")
    x = b.input("x", "float32", [1, 8, 6, 6])
    conv = b.conv2d(x, b.constant(np.ones((4, 8, 3, 3), np.float32)))
    grouped = b.conv2d(x, b.constant(np.ones((8, 2, 3, 3), np.float32)), groups=4)
    soft = b.softmax(b.reshape(x, [8, 36]), axis=1)
    mean = b.reduceMean(x, axes=[2, 3])
    g = b.build({"a": conv, "b": grouped, "c": soft, "d": mean, "e": b.sigmoid(x)})
    budget = {op.op_type + str(op.output.shape): op_ulp_budget(op) for op in g.operations}
    assert budget["conv2d(1, 4, 4, 4)"] == 3 * 3 * 8 * 2  # kh * kw * Cin/groups * 2
    assert budget["conv2d(1, 8, 4, 4)"] == 3 * 3 * 2 * 2
    assert budget["softmax(8, 36)"] == 36 * 3 + 3
    assert budget["reduceMean(1, 8)"] == 36
    assert budget["sigmoid(1, 8, 6, 6)"] == 34 and budget["reshape(8, 36)"] == 0


def test_bisect_names_the_tflite_op_index_in_the_noisy_deep_stack(tmp_path):
    from converter.exporters.tflite import to_tflite

    from .test_situations import deep_conv_stack

    graph, x = deep_conv_stack()
    source = tmp_path / "deep.tflite"
    source.write_bytes(to_tflite(graph))
    # the correct import of the noisy model: no operation leaves its budget (its noise is
    # within 2x LiteRT's own spread at every tensor; every op alone within its ULP budget)
    assert bisect(source, converter.load(source), feeds={"x": x}) is None
    bad = converter.load(source)
    injected = transposed_filter(bad)  # the middle conv2d: TFLite op #12
    assert not converter.verify(source, bad, feeds={"x": x}).passed
    found = bisect(source, bad, feeds={"x": x})
    assert found.op == injected and found.source_nodes == ["TFLite op #12 (CONV_2D)"]
    assert found.error_before < 1e-4 and found.error_after > 1
