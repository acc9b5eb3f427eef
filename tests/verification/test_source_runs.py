"""converter.runtimes.source_runs on small ONNX models whose outputs are worked out by hand: feeds
converted to the types ONNX Runtime's session declares, feeds it lacks left out, its failures as
one ConverterError line, and the float64 copy's rules (which tensors and Cast targets widen,
which models cannot be widened)."""
from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as nh

from converter.errors import ConverterError
from converter.runtimes.source_runs import (double_copy, run_onnx, run_source, run_source_f64,
                                   source_alternates)


def _save(path, nodes, inputs, outputs, inits=(), opset=18):
    model = H.make_model(H.make_graph(nodes, "m", inputs, outputs, list(inits)),
                         opset_imports=[H.make_opsetid("", opset)])
    model.ir_version = 9
    onnx.save(model, str(path))
    return path


def test_feeds_take_the_sessions_types_and_unknown_feeds_are_left_out(tmp_path):
    path = _save(tmp_path / "add.onnx", [H.make_node("Add", ["a", "b"], ["y"])],
                 [H.make_tensor_value_info("a", TP.INT64, [2]),
                  H.make_tensor_value_info("b", TP.INT64, [2])],
                 [H.make_tensor_value_info("y", TP.INT64, [2])])
    out = run_onnx(path, {"a": np.array([1, 2], np.int32), "b": np.array([3.0, 4.0]),
                          "not_an_input": np.zeros(1)})
    assert out["y"].dtype == np.int64 and out["y"].tolist() == [4, 6]
    assert run_source(path, {"a": np.array([5, 1]), "b": np.array([6, 1])})["y"].tolist() == [11, 2]
    assert run_onnx(path, {"a": np.array([1, 1]), "b": np.array([2, 2])}, level="all")[
        "y"].tolist() == [3, 3]


def test_a_model_ort_cannot_load_or_run_is_one_line(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model at all")
    with pytest.raises(ConverterError) as e:
        run_onnx(bad, {})
    line = e.value.line()
    assert "ONNX Runtime cannot load the source model: " in line and "\n" not in line
    assert e.value.where == str(bad)
    path = _save(tmp_path / "g.onnx", [H.make_node("Gather", ["t", "i"], ["y"])],
                 [H.make_tensor_value_info("i", TP.INT64, [1])],
                 [H.make_tensor_value_info("y", TP.FLOAT, [1])],
                 [nh.from_array(np.ones(3, np.float32), "t")])
    with pytest.raises(ConverterError) as e:
        run_onnx(path, {"i": np.array([7])}, where="the source")
    line = e.value.line()
    assert line.startswith("the source: ONNX Runtime failed running the source model: ")
    assert "\n" not in line and len(line) > len("the source: ONNX Runtime failed running the "
                                                "source model: ")


def test_the_float64_copy_widens_float_tensors_and_casts_only(tmp_path):
    path = _save(tmp_path / "m.onnx", [
        H.make_node("Constant", [], ["c"], value=nh.from_array(np.array([0.25], np.float32))),
        H.make_node("Add", ["x", "c"], ["s"]),
        H.make_node("Cast", ["s"], ["f"], to=TP.FLOAT),
        H.make_node("Cast", ["s"], ["i"], to=TP.INT32),
        H.make_node("Gather", ["x", "k"], ["y"]),
    ], [H.make_tensor_value_info("x", TP.FLOAT, [3])],
        [H.make_tensor_value_info("f", TP.FLOAT, [3]), H.make_tensor_value_info("i", TP.INT32, [3]),
         H.make_tensor_value_info("y", TP.FLOAT, [1])],
        [nh.from_array(np.array([2], np.int64), "k")])
    copy = double_copy(onnx.load(str(path)))
    assert copy.graph.input[0].type.tensor_type.elem_type == TP.DOUBLE
    assert [o.type.tensor_type.elem_type for o in copy.graph.output] == [TP.DOUBLE, TP.INT32,
                                                                          TP.DOUBLE]
    assert [n.attribute[0].i for n in copy.graph.node if n.op_type == "Cast"] == [TP.DOUBLE,
                                                                                  TP.INT32]
    assert copy.graph.node[0].attribute[0].t.data_type == TP.DOUBLE
    assert copy.graph.initializer[0].data_type == TP.INT64
    x = np.array([1.0, 2.0, 3.0], np.float32)
    out, note = run_source_f64(path, {"x": x})
    assert out["f"].dtype == np.float64 and out["f"].tolist() == [1.25, 2.25, 3.25]
    assert out["i"].tolist() == [1, 2, 3] and out["y"].tolist() == [3.0]


def test_a_model_with_a_subgraph_has_no_float64_run(tmp_path):
    branch = H.make_graph([H.make_node("Identity", ["x"], ["o"])], "b", [],
                          [H.make_tensor_value_info("o", TP.FLOAT, [1])])
    path = _save(tmp_path / "if.onnx",
                 [H.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch)],
                 [H.make_tensor_value_info("c", TP.BOOL, []),
                  H.make_tensor_value_info("x", TP.FLOAT, [1])],
                 [H.make_tensor_value_info("y", TP.FLOAT, [1])])
    out, note = run_source_f64(path, {"c": np.array(True), "x": np.ones(1, np.float32)})
    assert out is None and note == "no float64 run: If has a subgraph; not widened"
    out, note = run_source_f64(tmp_path / "m.tflite", {})
    assert out is None and note == ".tflite sources cannot run in float64"


def test_an_alternate_run_that_fails_is_left_out(tmp_path):
    # Gather past the end: ORT fails on the 1-ULP run and the ENABLE_ALL run alike
    path = _save(tmp_path / "g.onnx", [H.make_node("Gather", ["t", "i"], ["y"])],
                 [H.make_tensor_value_info("i", TP.INT64, [1])],
                 [H.make_tensor_value_info("y", TP.FLOAT, [1])],
                 [nh.from_array(np.ones(3, np.float32), "t")])
    assert source_alternates(path, {"i": np.array([7])}, set()) == {}
    runs = source_alternates(path, {"i": np.array([2])}, set())
    assert {k: v["y"].tolist() for k, v in runs.items()} == {
        "ORT_ENABLE_ALL vs ORT_DISABLE_ALL": [1.0], "input moved 1 ULP": [1.0]}


def test_a_tflite_source_runs_on_litert_with_its_own_alternates(tmp_path):
    from converter.testing.tflite_fixtures import TfliteBuilder

    b = TfliteBuilder()
    x = b.input("x", [2])
    y = b.tensor("y", [2])
    b.op("ADD", [x, b.constant("k", np.array([0.5, -1.0], np.float32))], [y])
    path = b.save(tmp_path / "add.tflite", [y])
    feeds = {"x": np.array([1.0, 2.0], np.float32)}
    assert run_source(path, feeds)["y"].tolist() == [1.5, 1.0]
    runs = source_alternates(path, feeds, {"x"})
    assert sorted(runs) == ["LiteRT builtin kernels vs XNNPACK", "input moved 1 ULP"]
    assert runs["LiteRT builtin kernels vs XNNPACK"]["y"].tolist() == [1.5, 1.0]
    # each input moved up by one float32 ULP: 1 + 2**-23 and 2 + 2**-22, plus k exactly
    moved = [1.5 + 2.0**-23, 1.0 + 2.0**-22]
    assert runs["input moved 1 ULP"]["y"].tolist() == moved


@pytest.mark.parametrize("count, external", [(1 << 18, True), ((1 << 18) - 1, False)])
def test_weights_of_exactly_one_mib_are_read_from_the_file(tmp_path, count, external):
    import onnxruntime as ort

    from converter.runtimes import source_runs

    # 4 bytes each: 1 MiB, or 4 bytes less; small integers, so every partial sum is exact
    w = (np.arange(count) % 4).astype(np.float32)
    path = _save(tmp_path / "m.onnx", [H.make_node("ReduceSum", ["w"], ["y"], keepdims=0)],
                 [], [H.make_tensor_value_info("y", TP.FLOAT, [])], [nh.from_array(w, "w")])
    view = source_runs._external_view(path, ort.SessionOptions())
    assert isinstance(view, bytes) == external
    if external:  # the weight left out of the bytes, located in the file
        model = onnx.ModelProto()
        model.ParseFromString(view)
        (tensor,) = model.graph.initializer
        assert tensor.data_location == TP.EXTERNAL and not tensor.raw_data
        entries = {e.key: e.value for e in tensor.external_data}
        data = path.read_bytes()
        at, size = int(entries["offset"]), int(entries["length"])
        assert entries["location"] == "m.onnx" and size == w.nbytes
        assert data[at:at + size] == w.tobytes()
    assert run_onnx(path, {})["y"] == np.float32(w.sum(dtype=np.float64))


def test_ort_logs_nothing_of_its_own(tmp_path, capfd):
    # an unused initializer: ORT warns about it on stderr unless its logging is off
    path = _save(tmp_path / "m.onnx", [H.make_node("Relu", ["x"], ["y"])],
                 [H.make_tensor_value_info("x", TP.FLOAT, [2])],
                 [H.make_tensor_value_info("y", TP.FLOAT, [2])],
                 [nh.from_array(np.ones(3, np.float32), "unused")])
    capfd.readouterr()
    out = run_onnx(path, {"x": np.array([-1.0, 2.0], np.float32)})
    assert out["y"].tolist() == [0.0, 2.0]
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_the_source_model_runs_as_many_threads_as_it_is_told(monkeypatch, tmp_path):
    # WEBNN_CONVERTER_THREADS (converter.threads) sets ONNX Runtime's pool for the source too:
    # a session made under it adds count - 1 threads to the process while it is made.
    import onnxruntime

    from converter.threads import THREADS_ENV

    def threads_now() -> int:
        return len(os.listdir("/proc/self/task"))

    model = H.make_model(H.make_graph(
        [H.make_node("MatMul", ["x", "x"], ["y"])], "g",
        [H.make_tensor_value_info("x", TP.FLOAT, [64, 64])],
        [H.make_tensor_value_info("y", TP.FLOAT, [64, 64])]),
        opset_imports=[H.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "m.onnx")
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) % 5
    seen = {}
    real = onnxruntime.InferenceSession

    def counting(*args, **kwargs):  # the real session, its thread count noted as it is made
        before = threads_now()
        session = real(*args, **kwargs)
        seen["added"] = threads_now() - before
        return session

    monkeypatch.setattr(onnxruntime, "InferenceSession", counting)
    run_onnx(tmp_path / "m.onnx", {"x": x})  # ONNX Runtime loaded (and its own threads)
    for count in (1, 3):
        monkeypatch.setenv(THREADS_ENV, str(count))
        out = run_onnx(tmp_path / "m.onnx", {"x": x})
        np.testing.assert_allclose(out["y"], x @ x, rtol=1e-6)
        assert seen.pop("added") == count - 1
