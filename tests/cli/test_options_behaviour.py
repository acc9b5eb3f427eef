"""Issue 27: what each option the vocabulary brought to another command does there. convert
--verify takes verify's options and gives verify's report; run takes --inputs and --json and
names every input it made up; validate --json; inspect --target; zoo -t; Ctrl-C exits 130."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

import converter
from cli.main import main
from converter.verification.core import make_inputs

from .test_steps import _accumulator_tflite

ROOT = Path(__file__).parents[2]
TINY_CNN = ROOT / "models" / "tiny_cnn.onnx"


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def _add_model(path: Path) -> Path:
    """y = relu(x + w) + t, x float32[2, 3], t an int64-free float input [3]."""
    w = numpy_helper.from_array(np.array([[1, -2, 3], [-4, 5, -6]], np.float32), "w")
    nodes = [helper.make_node("Add", ["x", "w"], ["s"]), helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("Add", ["r", "t"], ["y"])]
    graph = helper.make_graph(
        nodes, "add",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("t", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def _expected(x, t):
    w = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    return np.maximum(x + w, 0) + t


def _report(output: str) -> dict:
    report = json.loads(output)
    report.pop("graph")  # the graph's path: convert's output, or none for verify
    return report


# -- convert --verify takes verify's options -----------------------------------------------------
def test_convert_verify_gives_verifys_report_with_its_options(tmp_path):
    model = _add_model(tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.full((2, 3), 0.5, np.float32))
    options = ["--input", f"x={tmp_path / 'x.npy'}", "--seed", 7, "--oracle", "always",
               "--atol", 0.01, "--json"]
    r = run("convert", model, "-o", tmp_path / "m.webnn", "--verify", *options)
    assert r.exit_code == 0, r.output
    converted = _report(r.stdout)
    r = run("verify", model, *options)
    assert r.exit_code == 0, r.output
    assert converted == _report(r.stdout)  # the same report, option for option
    assert converted["seed"] == 7 and converted["inputs"]["x"]["range"] == "given"
    (out,) = converted["outputs"]
    assert out["bounds"]["atol"] == 0.01
    assert out["sourceVsF64"] is not None  # --oracle always: the figures in every row
    assert (tmp_path / "m.webnn").exists()


def test_convert_verify_takes_an_inputs_folder(tmp_path):
    model = _add_model(tmp_path / "m.onnx")
    folder = tmp_path / "inputs"
    folder.mkdir()
    np.save(folder / "x.npy", np.ones((2, 3), np.float32))
    np.save(folder / "t.npy", np.zeros(3, np.float32))
    r = run("convert", model, "-o", tmp_path / "m.webnn", "--verify", "--inputs", folder,
            "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["inputs"]["x"]["range"] == report["inputs"]["t"]["range"] == "given"


def test_convert_verify_bisects_a_mismatch_and_writes_nothing(tmp_path, monkeypatch):
    from converter.lowering.onnx import elementwise

    model = _add_model(tmp_path / "m.onnx")
    monkeypatch.setitem(elementwise._BINARY, "add", "Sub")  # an executor bug: add subtracts
    (tmp_path / "out").mkdir()
    r = run("convert", model, "-o", tmp_path / "out" / "m.webnn", "--verify", "--bisect",
            "--json")
    assert r.exit_code == 1, r.output
    found = json.loads(r.stdout)["bisect"]
    graph = converter.load(model)
    first_add = next(op for op in graph.operations if op.op_type == "add")
    assert found["stage"] == "executor" and found["op"] == first_add.name
    assert "nothing written" in r.stderr and list((tmp_path / "out").iterdir()) == []


def test_convert_verify_steps_a_stateful_model(tmp_path):
    model = _accumulator_tflite(tmp_path / "acc.tflite", np.full((1, 3), 0.25, np.float32))
    r = run("convert", model, "-o", tmp_path / "acc.webnn", "--verify", "--steps", 12,
            "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["stepCount"] == 12 and len(report["steps"]) == 12
    assert report["sourceRuntime"] == "litert" and report["summary"]["out"]["elements"] == 36
    assert (tmp_path / "acc.webnn").exists()


@pytest.mark.parametrize("option", [["--runtime", "ort"], ["--seed", "1"], ["--bisect"],
                                    ["--steps", "2"], ["--prompt", "1,2"], ["--oracle", "never"],
                                    ["--input", "x=x.npy"], ["--atol", "1"]])
def test_convert_refuses_a_verify_option_without_verify(tmp_path, option):
    r = run("convert", TINY_CNN, "-o", tmp_path / "t.webnn", *option)
    assert r.exit_code == 2
    assert f"{option[0]} applies with --verify" in r.output
    assert list(tmp_path.iterdir()) == []


def test_convert_json_without_verify_names_the_files_written(tmp_path):
    r = run("convert", TINY_CNN, "-o", tmp_path / "t.webnn", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["written"] == [str(tmp_path / n) for n in
                              ("t.webnn", "t.manifest.json", "t.weights")]
    assert doc["operations"] == len(converter.load(TINY_CNN).operations)


def _batched_relu(path: Path) -> Path:
    """y = relu(x), x float32[batch, 3]."""
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             ["batch", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                             ["batch", 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_convert_json_of_several_dims_names_the_files_and_variants(tmp_path):
    model = _batched_relu(tmp_path / "m.onnx")
    r = run("convert", model, "-o", tmp_path / "v.webnn", "--dim", "batch=1,4", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc == {"written": [str(tmp_path / "v.webnn")], "variants": [{"batch": 1},
                                                                         {"batch": 4}]}


def test_convert_verify_of_several_dims_takes_the_runtime_and_seed(tmp_path):
    model = _batched_relu(tmp_path / "m.onnx")
    r = run("convert", model, "-o", tmp_path / "v.webnn", "--dim", "batch=1,4", "--verify",
            "--seed", 9, "--runtime", "ort", "--json")
    assert r.exit_code == 0, r.output
    reports = [v["report"] for v in json.loads(r.stdout)["variants"]]
    assert [rep["seed"] for rep in reports] == [9, 9]
    np.save(tmp_path / "x.npy", np.ones((1, 3), np.float32))
    r = run("convert", model, "-o", tmp_path / "w.webnn", "--dim", "batch=1,4", "--verify",
            "--input", f"x={tmp_path / 'x.npy'}")
    assert r.exit_code == 2 and "take one shape" in r.output
    assert not (tmp_path / "w.webnn").exists()


# -- run: --inputs, --json, and the inputs it makes up -------------------------------------------
def test_run_takes_an_inputs_folder(tmp_path):
    model = _add_model(tmp_path / "m.onnx")
    folder = tmp_path / "inputs"
    folder.mkdir()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = np.array([10, 20, 30], np.float32)
    np.save(folder / "x.npy", x)
    np.save(folder / "t.npy", t)
    r = run("run", model, "--inputs", folder, "--output-dir", tmp_path / "out")
    assert r.exit_code == 0, r.output
    np.testing.assert_allclose(np.load(tmp_path / "out" / "y.npy"), _expected(x, t))
    assert "not given" not in r.stderr  # nothing made up


def test_run_names_each_seeded_input_and_its_seed(tmp_path):
    model = _add_model(tmp_path / "m.onnx")
    x = np.full((2, 3), 2.0, np.float32)
    np.save(tmp_path / "x.npy", x)
    r = run("run", model, "--input", f"x={tmp_path / 'x.npy'}", "--seed", 5, "--output-dir",
            tmp_path / "out")
    assert r.exit_code == 0, r.output
    lines = r.stderr.splitlines()
    assert lines == ["run: input 't' not given: float32[3] seeded uniform in [0, 1), seed 5 "
                     "(--input t=FILE.npy or --inputs DIR gives it)"]
    seeded, _ = make_inputs(converter.load(model), 5)
    np.testing.assert_allclose(np.load(tmp_path / "out" / "y.npy"), _expected(x, seeded["t"]))


def test_run_json_gives_the_files_and_the_seeded_inputs(tmp_path):
    model = _add_model(tmp_path / "m.onnx")
    r = run("run", model, "--seed", 3, "--json", "--output-dir", tmp_path / "out")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["outputs"] == {"y": {"file": str(tmp_path / "out" / "y.npy"),
                                    "dataType": "float32", "shape": [2, 3]}}
    assert sorted(doc["seededInputs"]) == ["t", "x"]
    assert doc["seededInputs"]["x"]["seed"] == 3 and not doc["seededInputs"]["x"]["seedPerStep"]
    seeded, _ = make_inputs(converter.load(model), 3)
    np.testing.assert_allclose(np.load(doc["outputs"]["y"]["file"]),
                               _expected(seeded["x"], seeded["t"]))


def test_run_steps_names_the_seeded_input_per_step(tmp_path):
    model = _accumulator_tflite(tmp_path / "acc.tflite", np.zeros((1, 3), np.float32))
    r = run("run", model, "--steps", 3, "--output-dir", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert "run: input 'x' not given: float32[1, 3] seeded uniform in [0, 1), seed 0 + step" \
        in r.stderr


def test_run_refuses_an_inputs_file_the_graph_does_not_take(tmp_path):
    model = _add_model(tmp_path / "m.onnx")
    folder = tmp_path / "inputs"
    folder.mkdir()
    np.save(folder / "z.npy", np.zeros(3, np.float32))
    r = run("run", model, "--inputs", folder, "--output-dir", tmp_path / "out")
    assert r.exit_code == 2 and "the graph has no input 'z'" in r.output
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


# -- validate --json, inspect --target, zoo -t ---------------------------------------------------
def test_validate_json_of_a_valid_and_an_invalid_graph(tmp_path):
    r = run("validate", TINY_CNN, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == {"file": str(TINY_CNN), "valid": True, "problems": [],
                                    "operations": len(converter.load(TINY_CNN).operations)}
    bad = tmp_path / "bad.webnn"
    bad.write_text("this is not a graph")
    r = run("validate", bad, "--json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["valid"] is False and len(doc["problems"]) >= 1 and r.stderr == ""


def test_inspect_target_shows_the_graph_after_the_targets_passes(tmp_path):
    plain = json.loads(run("inspect", TINY_CNN, "--json").stdout)
    r = run("inspect", TINY_CNN, "-t", "chromium-litert", "--json")
    assert r.exit_code == 0, r.output
    rewritten = json.loads(r.stdout)
    graph = converter.convert(TINY_CNN, target="chromium-litert")
    assert rewritten["target"] == "chromium-litert"
    assert rewritten["operations"] == len(graph.operations) != plain["operations"]
    assert rewritten["opHistogram"] != plain["opHistogram"]
    text = run("inspect", TINY_CNN, "--target", "chromium-litert").stdout
    assert "after the passes of target chromium-litert" in text.splitlines()[0]


def test_zoo_takes_t_for_target(tmp_path):
    (tmp_path / "m.onnx").write_bytes(TINY_CNN.read_bytes())
    manifest = tmp_path / "zoo.json"
    manifest.write_text(json.dumps({"models": [{"id": "tiny", "path": "m.onnx"}]}))
    r = run("zoo", manifest, "-t", "spec", "--json", "--results", tmp_path / "r.jsonl")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert list(doc["summary"]["byTarget"]) == ["spec"]
    assert doc["summary"]["byTarget"]["spec"]["verified"] == 1


# -- Ctrl-C ---------------------------------------------------------------------------------------
def _interrupt(*_, **__):
    raise KeyboardInterrupt


def test_ctrl_c_during_verify_exits_130_not_mismatch(monkeypatch):
    monkeypatch.setattr(converter, "verify", _interrupt)
    r = run("verify", TINY_CNN)
    assert r.exit_code == 130  # was 1: "mismatch"
    assert r.stderr.splitlines()[-1] == "stopped by SIGINT; nothing was left half written"


def test_ctrl_c_during_convert_verify_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(converter, "verify", _interrupt)
    out = tmp_path / "out"
    out.mkdir()
    r = run("convert", TINY_CNN, "-o", out / "t.webnn", "--verify")
    assert r.exit_code == 130
    assert list(out.iterdir()) == []  # the staged outputs removed


def test_ctrl_c_during_a_run_exits_130(tmp_path, monkeypatch):
    monkeypatch.setattr(converter, "run", _interrupt)
    r = run("run", TINY_CNN, "--output-dir", tmp_path / "out")
    assert r.exit_code == 130 and "stopped by SIGINT" in r.stderr
