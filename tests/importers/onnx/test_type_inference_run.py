"""ONNX's type inference runs in a child while the import goes on (inference.start_inference):
values take their types from it when a rule first asks, a crash of it is still the model's
error, and the child is reaped on every path."""
from __future__ import annotations

import os
import signal

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper

import converter
from converter.errors import FormatError
from converter.importers.onnx import inference
from converter.importers.onnx.inference import PendingType, start_inference


def _no_child_left() -> bool:
    """No child of this process has exited unreaped (an unreaped one is reaped here)."""
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True  # no children at all
    return pid == 0


def _compare_model() -> onnx.ModelProto:
    """y = Cast(CastLike(a, Equal(a, b)), FLOAT): CastLike and Cast read the ONNX types of
    values rules produced (BOOL for both), which inference gives."""
    nodes = [helper.make_node("Equal", ["a", "b"], ["same"]),
             helper.make_node("CastLike", ["a", "same"], ["nonzero"]),
             helper.make_node("Cast", ["nonzero"], ["y"], to=T.FLOAT)]
    graph = helper.make_graph(
        nodes, "compare",
        [helper.make_tensor_value_info(n, T.FLOAT, [2, 3]) for n in ("a", "b")],
        [helper.make_tensor_value_info("y", T.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def test_a_pending_type_is_the_inferred_one_else_the_rules():
    run = start_inference(_compare_model(), "compare.onnx", isolate=True)
    assert PendingType(run, "same", lambda arg: arg, T.UINT8).resolve() == T.BOOL
    assert PendingType(run, "y", lambda arg: arg, T.UINT8).resolve() == T.FLOAT
    # a name inference does not know keeps the type of what the rule produced
    assert PendingType(run, "nowhere", lambda arg: arg, T.INT32).resolve() == T.INT32
    run.finish()
    run.finish()  # answered once: asking again neither blocks nor fails
    assert _no_child_left()


def test_rules_asking_types_see_inferred_ones_and_compute_what_onnx_runtime_does(
        tmp_path, monkeypatch):
    model = _compare_model()
    path = tmp_path / "compare.onnx"
    onnx.save(model, path)
    asked = []
    resolve = PendingType.resolve
    monkeypatch.setattr(PendingType, "resolve",
                        lambda self: asked.append(self.name) or resolve(self))
    graph = converter.load(path)  # a model file: inference isolated in a child
    # CastLike asked the Equal result's type, Cast CastLike's, while inference ran
    assert {"same", "nonzero"} <= set(asked)
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, (2, 3)).astype(np.float32)
    b = rng.integers(0, 3, (2, 3)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"a": a, "b": b})[0]
    got = converter.run(graph, {"a": a, "b": b})["y"]
    np.testing.assert_array_equal(got, want)
    assert _no_child_left()


def _segfault(model):
    os.kill(os.getpid(), signal.SIGSEGV)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="inference is isolated by fork")
def test_a_crash_of_inference_is_the_models_error_over_its_nodes_own(tmp_path, monkeypatch):
    # ONNX's C++ inference dies of SIGSEGV on some hostile models (onnx 1.23's
    # LayerNormalization on axis 2**31, test_onnx_hostile.py); the onnx installed may not, so
    # the child's inference is made to die of that same signal here.
    monkeypatch.setattr(inference, "_infer", _segfault)
    nodes = [helper.make_node("NoSuchOp", ["x"], ["t"]),  # unsupported: reported if alone
             helper.make_node("Relu", ["x"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", T.FLOAT, None),
         helper.make_tensor_value_info("t", T.FLOAT, None)])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    with pytest.raises(FormatError, match=r"crashed on this model \(SIGSEGV\)"):
        converter.load(path)
    assert _no_child_left()
    # a model without an error of its own is refused the same way
    del graph.node[0]
    del graph.output[1]
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    with pytest.raises(FormatError, match=r"crashed on this model \(SIGSEGV\)"):
        converter.load(path)
    assert _no_child_left()


def _relu_model(path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", T.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", T.FLOAT, [2, 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def _stopped_by_sigterm(*args):
    from cli.main import Stopped

    raise Stopped(signal.SIGTERM)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="inference is isolated by fork")
def test_a_stop_during_import_stays_a_stop_when_inference_crashed_too(tmp_path, monkeypatch):
    # Was: the inference's crash, reported as the model's error, replaced the stop: SIGTERM
    # during the import of such a model exited 2 ("crashed on this model") instead of 143.
    from click.testing import CliRunner

    import converter.importers.onnx as onnx_importer
    from cli.main import Stopped, main

    monkeypatch.setattr(inference, "_infer", _segfault)
    monkeypatch.setattr(onnx_importer, "import_node", _stopped_by_sigterm)
    path = tmp_path / "m.onnx"
    _relu_model(path)
    with pytest.raises(Stopped) as e:
        converter.load(path)
    assert e.value.signum == signal.SIGTERM
    assert _no_child_left()
    result = CliRunner().invoke(main, ["convert", str(path), "-o", str(tmp_path / "o.webnn")])
    assert result.exit_code == 128 + signal.SIGTERM, result.output
    assert "stopped by SIGTERM" in result.output and "crashed" not in result.output
    assert _no_child_left()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


def _a_bug(*args):
    raise ValueError("a bug")


def test_an_error_during_import_gives_way_to_the_crash_of_inference(tmp_path, monkeypatch):
    import converter.importers.onnx as onnx_importer

    monkeypatch.setattr(inference, "_infer", _segfault)
    monkeypatch.setattr(onnx_importer, "import_node", _a_bug)
    path = tmp_path / "m.onnx"
    _relu_model(path)
    with pytest.raises(FormatError, match=r"crashed on this model \(SIGSEGV\)"):
        converter.load(path)
    assert _no_child_left()


def test_inference_in_process_answers_at_once():
    run = start_inference(_compare_model(), "compare.onnx", isolate=False)
    assert run.get("same") == T.BOOL and run.get("nonzero") == T.BOOL
    assert inference.isolated(lambda: {"v": 1}, "here", isolate=False) == {"v": 1}
