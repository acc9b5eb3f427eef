"""A source model that crashes its runtime (ONNX Runtime dies of SIGSEGV loading some float16
models) is one error line and exit 2, and the converter lives on: the first run of a model
happens in a forked child (converter/runtimes/crash_guard.py)."""
from __future__ import annotations

import ctypes
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto as TP
from onnx import helper as H

from cli.main import main
from converter.errors import ConverterError
from converter.runtimes import crash_guard
from converter.runtimes.source_runs import run_onnx

pytestmark = pytest.mark.skipif(not crash_guard.can_guard(), reason="needs fork")


def _relu(path):
    model = H.make_model(H.make_graph(
        [H.make_node("Relu", ["x"], ["y"])], "g",
        [H.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
        [H.make_tensor_value_info("y", TP.FLOAT, [2, 3])]),
        opset_imports=[H.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return path


def _segfault(*args, **kwargs):
    """What ORT does loading the crashing model: a real SIGSEGV, reading address 0."""
    ctypes.string_at(0)


def _crashing_ort(monkeypatch):
    import onnxruntime

    monkeypatch.setattr(onnxruntime, "InferenceSession", _segfault)


def test_a_runtime_that_crashes_on_the_model_is_one_error(tmp_path, monkeypatch):
    path = _relu(tmp_path / "m.onnx")
    _crashing_ort(monkeypatch)
    with pytest.raises(ConverterError) as e:
        run_onnx(path, {"x": np.ones((2, 3), np.float32)})
    assert e.value.where == str(path)
    assert "ONNX Runtime crashed running the model (it died of SIGSEGV)" in e.value.line()
    assert "\n" not in e.value.line()
    assert os.getpid()  # (this process is alive to say so)


def test_verify_on_a_crashing_source_exits_2_with_one_line(tmp_path, monkeypatch):
    path = _relu(tmp_path / "m.onnx")
    _crashing_ort(monkeypatch)
    result = CliRunner().invoke(main, ["verify", str(path)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error")]
    assert len(lines) == 1 and "crashed" in lines[0] and "SIGSEGV" in lines[0]
    assert "Traceback" not in result.output


def test_outputs_come_back_whole_and_a_model_run_once_stays_in_process(tmp_path, monkeypatch):
    path = _relu(tmp_path / "m.onnx")
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    np.testing.assert_array_equal(run_onnx(path, {"x": x})["y"], np.maximum(x, 0))
    forks = []
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or pytest.fail("forked again"))
    np.testing.assert_array_equal(run_onnx(path, {"x": -x})["y"], np.maximum(-x, 0))
    assert not forks


def test_errors_of_the_child_keep_their_line(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(ConverterError) as e:
        run_onnx(bad, {})
    assert "ONNX Runtime cannot load the source model" in e.value.line()
    assert e.value.where == str(bad)


@pytest.mark.parametrize("value", [np.arange(6, dtype=np.float16).reshape(2, 3),
                                   np.array([True, False]), np.array(["a", "bc"], object),
                                   np.zeros((0, 4), np.int64)])
def test_every_output_type_crosses_the_pipe(value):
    got = crash_guard.guarded_run(("test", repr(value)), lambda: {"v": value}, what="w",
                                  where="here", fix="f")["v"]
    assert got.shape == value.shape and got.tolist() == value.tolist()


def test_litert_crashing_on_a_tflite_source_is_one_error(tmp_path, monkeypatch):
    import ai_edge_litert.interpreter as interpreter

    from converter.runtimes.source_runs import run_source
    from converter.testing.tflite_fixtures import TfliteBuilder

    b = TfliteBuilder()
    x = b.input("x", [2, 3])
    y = b.tensor("y", [2, 3])
    b.op("RELU", [x], [y])
    path = tmp_path / "m.tflite"
    path.write_bytes(b.build([y]))
    monkeypatch.setattr(interpreter, "Interpreter", _segfault)
    with pytest.raises(ConverterError) as e:
        run_source(path, {"x": np.ones((2, 3), np.float32)})
    assert "LiteRT crashed running the model (it died of SIGSEGV)" in e.value.line()
    assert e.value.where == str(path)


def test_the_childs_error_keeps_its_class():
    from converter.errors import NoSourceRuntimeError

    def refuse():
        raise NoSourceRuntimeError("no kernel", where="w", fix="f")

    with pytest.raises(NoSourceRuntimeError) as e:
        crash_guard.guarded_run(("class test",), refuse, what="w", where="here", fix="f")
    assert e.value.line() == "w: no kernel; f"


OPTIMUM = Path(__file__).resolve().parents[2] / "models" / "optimum-tiny"


@pytest.mark.parametrize("source, extra, crashed", [
    ("llama/model.onnx", ["--prompt", "1,5"], "llama/model.onnx"),
    ("llama/decoder_model.onnx", ["--prompt", "1,5"], "llama/decoder_model.onnx"),
    ("llama/decoder_model_merged.onnx", ["--prompt", "1,5", "--cache-capacity", "8"],
     "llama/decoder_model_merged.onnx"),
    ("bart/decoder_model_merged.onnx", ["--prompt", "5,9,14"], "bart/encoder_model.onnx")])
def test_verify_steps_on_a_decoder_that_crashes_ort_is_one_line(monkeypatch, source, extra,
                                                                crashed):
    """The decoders' source runs (ORT's greedy loop, a seq2seq's encoder) go through the same
    guard: a crash of ORT on the source files is one line naming the file, exit 2. Only the
    source files crash here (the graph's own ORT session is left alone), so a source run
    outside the guard takes this test's process down."""
    import onnxruntime

    # a model a child has run to the end is trusted for the process (crash_guard._TRUSTED):
    # a test earlier in this worker may have run these files, so start with none trusted
    monkeypatch.setattr(crash_guard, "_TRUSTED", set())
    real = onnxruntime.InferenceSession

    def crashes_on_the_source(model, *args, **kwargs):
        if isinstance(model, str) and str(OPTIMUM) in model:
            _segfault()
        return real(model, *args, **kwargs)

    monkeypatch.setattr(onnxruntime, "InferenceSession", crashes_on_the_source)
    result = CliRunner().invoke(main, ["verify", str(OPTIMUM / source), "--steps", "2",
                                       *extra])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert result.output.startswith(f"error: {OPTIMUM / crashed}: ONNX Runtime crashed "
                                    "running the model (it died of SIGSEGV)"), result.output
