"""Issue 15: shared source options, results-only stdout, quiet runtimes, --debug's message, and
refusing to overwrite an input."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

from cli.main import main

ROOT = Path(__file__).parents[2]
TINY_CNN = ROOT / "models" / "tiny_cnn.onnx"
SOURCE_OPTIONS = ["--dim", "--input-shape", "--const", "--max-tensor-bytes", "--max-total-bytes"]


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def _relu_model(path: Path, shape, *, unused_initializer=False) -> Path:
    """y = relu(x), x float32 of `shape` (names are symbolic dimensions)."""
    inits = [numpy_helper.from_array(np.ones(2, np.float32), "unused")] \
        if unused_initializer else []
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("command", ["convert", "verify", "run", "check", "inspect", "validate"])
def test_every_command_that_reads_a_model_takes_the_source_options(command):
    r = run(command, "--help")
    assert r.exit_code == 0
    for option in SOURCE_OPTIONS:
        assert option in r.output, (command, option)
    assert ("--target" in r.output) == (command in ("convert", "verify", "run", "check", "inspect"))


@pytest.mark.parametrize("command", ["inspect", "validate", "run"])
def test_help_says_models_are_accepted(command):
    text = " ".join(run(command, "--help").output.split())
    assert ".onnx" in text and ".tflite" in text


def test_inspect_and_validate_take_dim_and_input_shape(tmp_path):
    model = _relu_model(tmp_path / "m.onnx", ["batch", 3])
    r = run("inspect", model, "--json")  # open: shown with the dim's name (test_open_dims.py)
    assert r.exit_code == 0 and json.loads(r.stdout)["inputs"]["x"]["shape"] == ["batch", 3]
    r = run("inspect", model, "--dim", "batch=5", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["inputs"]["x"] == {"dataType": "float32", "shape": [5, 3]}
    r = run("validate", model, "--input-shape", "x=4,3")
    assert r.exit_code == 0 and r.stdout.strip() == f"{model}: valid (1 operations)"


def test_validate_names_the_file_once(tmp_path):
    model = _relu_model(tmp_path / "m.onnx", ["batch", 3])
    r = run("validate", model, "--input-shape", "nope=1,2")
    assert r.exit_code == 1
    first = r.stderr.splitlines()[0]
    assert first.startswith(f"{model}: --input-shape names") and first.count(str(model)) == 1
    assert r.stderr.splitlines()[-1] == f"{model}: invalid (1 problem)"


def test_convert_for_a_target_prints_results_only(tmp_path):
    out = tmp_path / "t.webnn"
    r = run("convert", TINY_CNN, "-o", out, "--target", "coreml")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [f"wrote {out}, {tmp_path / 't.manifest.json'}, "
                                     f"{tmp_path / 't.weights'} (11 operations)"]
    assert r.stderr == ""
    r = run("convert", TINY_CNN, "-o", out, "--target", "coreml", "--verbose")
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 1
    assert "fold_constants:" in r.stderr and "layout:" in r.stderr


def test_runtime_logs_are_quiet_unless_debug(tmp_path, capfd):
    """ONNX Runtime warns through its default logger (coloured) about an unused initializer;
    after a command that runs ORT, such warnings stay off stderr unless --debug."""
    import onnxruntime as ort

    model = _relu_model(tmp_path / "u.onnx", [2], unused_initializer=True)
    assert run("verify", model).exit_code == 0
    capfd.readouterr()
    ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    assert "Removing initializer" not in capfd.readouterr().err
    assert run("--debug", "verify", model).exit_code == 0
    capfd.readouterr()
    ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    assert "Removing initializer 'unused'" in capfd.readouterr().err
    assert run("verify", model).exit_code == 0  # leave the process quiet for other tests


def test_debug_does_not_ask_for_debug(tmp_path, monkeypatch):
    import cli.commands.inspect_graph as inspect_graph

    def broken(*_):
        raise RuntimeError("boom")

    monkeypatch.setattr(inspect_graph, "summarize", broken)
    model = _relu_model(tmp_path / "m.onnx", [2])
    plain = run("inspect", model)
    assert plain.exit_code == 2
    assert plain.stderr.strip() == ("internal error: RuntimeError: boom; rerun with --debug "
                                    "and report it")
    debug = run("--debug", "inspect", model)
    assert debug.exit_code == 2 and "Traceback" in debug.stderr
    assert debug.stderr.strip().splitlines()[-1] == "internal error: RuntimeError: boom"


def test_convert_refuses_to_overwrite_its_source(tmp_path):
    model = _relu_model(tmp_path / "m.onnx", [2])
    before = model.read_bytes()
    os.link(model, tmp_path / "hard.onnx")
    for output in (model, tmp_path / "." / "m.onnx", tmp_path / "hard.onnx"):
        r = run("convert", model, "-o", output)
        assert r.exit_code == 2, (output, r.output)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "input" in lines[0]
    assert model.read_bytes() == before
    # A graph file's weights and manifest are inputs too: a.json would rewrite a.weights.
    assert run("convert", model, "-o", tmp_path / "a.webnn").exit_code == 0
    weights = (tmp_path / "a.weights").read_bytes() if (tmp_path / "a.weights").exists() else None
    r = run("convert", tmp_path / "a.webnn", "-o", tmp_path / "a.json")
    assert r.exit_code == 2 and "a.manifest.json" in r.stderr
    assert not (tmp_path / "a.json").exists()
    if weights is not None:
        assert (tmp_path / "a.weights").read_bytes() == weights
    # Another name in the same folder is fine.
    assert run("convert", tmp_path / "a.webnn", "-o", tmp_path / "b.json").exit_code == 0


def test_convert_refuses_to_overwrite_a_const_file(tmp_path):
    model = _relu_model(tmp_path / "m.onnx", [2])
    np.save(tmp_path / "x.npy", np.ones(2, np.float32))
    # The output's suffix is checked after the inputs: the .npy is never touched.
    (tmp_path / "x.js").symlink_to(tmp_path / "x.npy")
    r = run("convert", model, "--const", f"x={tmp_path / 'x.npy'}", "-o", tmp_path / "x.js")
    assert r.exit_code == 2 and "x.npy" in r.stderr
    assert np.load(tmp_path / "x.npy").tolist() == [1.0, 1.0]


def test_python_dash_m_converter_is_the_cli():
    proc = subprocess.run([sys.executable, "-m", "converter", "--version"], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    import converter
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"webnn-convert, version {converter.__version__}"
    proc = subprocess.run([sys.executable, "-m", "converter", "inspect", "no/such.webnn"],
                          capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2 and proc.stderr.startswith("error: ")


def test_run_takes_a_model_with_its_source_options_and_a_target(tmp_path):
    model = _relu_model(tmp_path / "m.onnx", ["batch", 3])
    x = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)
    np.save(tmp_path / "x.npy", x)
    r = run("run", model, "--dim", "batch=2", "--target", "coreml", "--input",
            f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert np.load(tmp_path / "out" / "y.npy").tolist() == [[0.0, 2.0, 0.0], [4.0, 0.0, 6.0]]
    r = run("run", model, "--output-dir", tmp_path / "out2")
    assert r.exit_code == 2 and "--dim" in r.stderr and not (tmp_path / "out2").exists()
