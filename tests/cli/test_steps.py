"""`run --steps N` and `verify --steps N`: stateful graphs step by step on the command line,
against LiteRT (which keeps its variables) and against an ONNX source fed its own state."""
from __future__ import annotations

import json

import numpy as np
import onnx
from click.testing import CliRunner
from onnx import TensorProto, helper

import converter
from cli.main import main
from converter.testing.tflite_fixtures import TfliteBuilder


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def _accumulator_tflite(path, start):
    """out = (start + x_0 + ... + x_k) at step k, in a resource variable."""
    b = TfliteBuilder()
    x = b.input("x", [1, 3])
    h, v, s = b.tensor("acc", [], "resource"), b.tensor("v", [1, 3]), b.tensor("out", [1, 3])
    b.op("CALL_ONCE", [], [], initSubgraphIndex=1)
    b.op("VAR_HANDLE", [], [h], sharedName="acc")
    b.op("READ_VARIABLE", [h], [v])
    b.op("ADD", [x, v], [s])
    b.op("ASSIGN_VARIABLE", [h, s], [])
    b.add_subgraph("init")
    hi = b.tensor("acc_init", [], "resource")
    b.op("VAR_HANDLE", [], [hi], sharedName="acc")
    b.op("ASSIGN_VARIABLE", [hi, b.constant("start", start)], [])
    return b.save(path, [s])


def test_verify_steps_against_litert_as_json(tmp_path):
    model = _accumulator_tflite(tmp_path / "acc.tflite", np.full((1, 3), 0.25, np.float32))
    r = run("verify", model, "--steps", 20, "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["stepCount"] == 20 and report["passed"] and len(report["steps"]) == 20
    assert report["sourceRuntime"] == "litert" and report["state"] == ["acc <- acc/next"]
    assert report["summary"]["out"]["elements"] == 60
    assert report["summary"]["out"]["maxAbs"] <= 1e-5


def test_verify_of_a_stateful_model_without_steps_runs_one_step(tmp_path):
    model = _accumulator_tflite(tmp_path / "acc.tflite", np.ones((1, 3), np.float32))
    r = run("verify", model)
    assert r.exit_code == 0, r.output
    assert "1 steps" in r.output and "pass" in r.output


def test_run_steps_stacks_each_output(tmp_path):
    model = _accumulator_tflite(tmp_path / "acc.tflite", np.ones((1, 3), np.float32))
    xs = np.arange(12, dtype=np.float32).reshape(4, 1, 3)
    np.save(tmp_path / "x.npy", xs)
    r = run("run", model, "--steps", 4, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir",
            tmp_path / "out")
    assert r.exit_code == 0, r.output
    out = np.load(tmp_path / "out" / "out.npy")
    assert out.shape == (4, 1, 3)
    np.testing.assert_array_equal(out, 1 + np.cumsum(xs, axis=0))
    assert not (tmp_path / "out" / "acc_next.npy").exists()  # state stays in the session


def test_run_refuses_to_feed_state(tmp_path):
    model = _accumulator_tflite(tmp_path / "acc.tflite", np.ones((1, 3), np.float32))
    np.save(tmp_path / "acc.npy", np.zeros((1, 3), np.float32))
    r = run("run", model, "--steps", 2, "--input", f"acc={tmp_path / 'acc.npy'}",
            "--output-dir", tmp_path / "out")
    assert r.exit_code == 2
    assert r.output.strip().splitlines()[-1].startswith("error: 'acc' is state")


def _onnx_running_sum(path, scale: float = 2.0):
    """y = scale * (x + past); present = x + past: a state pair the ONNX source carries."""
    nodes = [helper.make_node("Add", ["x", "past"], ["present"]),
             helper.make_node("Mul", ["present", "k"], ["y"])]
    graph = helper.make_graph(
        nodes, "running_sum",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("past", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("present", TensorProto.FLOAT, [2])],
        [helper.make_tensor("k", TensorProto.FLOAT, [], [scale])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_verify_steps_feeds_an_onnx_source_its_own_state(tmp_path):
    source = _onnx_running_sum(tmp_path / "sum.onnx")
    graph = converter.load(source)
    graph.declare_state("past", "present", np.array([1.0, -1.0], np.float32))
    converter.save(graph, tmp_path / "sum.webnn")
    r = run("verify", source, "--graph", tmp_path / "sum.webnn", "--steps", 6, "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["sourceRuntime"] == "onnxruntime" and report["stepCount"] == 6
    assert report["summary"]["y"]["maxAbs"] <= 1e-6
    # The same graph against a source that computes otherwise fails from the first step.
    other = _onnx_running_sum(tmp_path / "other.onnx", scale=3.0)
    r = run("verify", other, "--graph", tmp_path / "sum.webnn", "--steps", 6, "--json")
    assert r.exit_code == 1
    assert json.loads(r.output)["summary"]["y"]["firstFailingStep"] == 0
