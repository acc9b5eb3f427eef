"""The verify path's ORT sessions read big weights once: the source from its own file as
external data, the executor from a temporary external-data file. Same numbers either way."""
from __future__ import annotations

import os
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter.runtimes import execute, source_runs
from converter.lowering.onnx import executor
from converter.ops.builder import GraphBuilder

K, N = 512, 600  # a 1.2 MB weight: over the 1 MiB threshold of both paths


def _matmul_model(path, weight, bias) -> None:
    """y = reshape(x, [1, K]) @ W + b, with a small shape initializer ORT must read inline."""
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["flat"]),
         helper.make_node("MatMul", ["flat", "W"], ["mm"]),
         helper.make_node("Add", ["mm", "b"], ["y"])],
        "mm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, N])],
        [numpy_helper.from_array(weight, "W"), numpy_helper.from_array(bias, "b"),
         numpy_helper.from_array(np.array([1, K], np.int64), "shape")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    return (rng.standard_normal((K, N)).astype(np.float32),
            rng.standard_normal(N).astype(np.float32),
            rng.random(K, dtype=np.float64).astype(np.float32))


def _truth(weight, bias, x) -> np.ndarray:
    return (x.astype(np.float64)[None] @ weight.astype(np.float64) + bias).astype(np.float64)


def test_source_run_reads_big_initializers_from_the_file(tmp_path, data):
    weight, bias, x = data
    path = tmp_path / "m.onnx"
    _matmul_model(path, weight, bias)
    options = ort.SessionOptions()
    view = source_runs._external_view(path, options)
    assert isinstance(view, bytes) and len(view) < weight.nbytes // 100  # weights left out
    got = source_runs.run_onnx(path, {"x": x})["y"]
    np.testing.assert_allclose(got, _truth(weight, bias, x), atol=1e-4, rtol=1e-3)
    same = ort.SessionOptions()
    same.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    plain = ort.InferenceSession(str(path), same, providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(got, plain.run(None, {"x": x})[0])  # same bytes, same kernels


def test_source_run_through_a_symlink_reads_the_real_file(tmp_path, data):
    weight, bias, x = data
    (tmp_path / "real").mkdir()
    (tmp_path / "link").mkdir()
    _matmul_model(tmp_path / "real" / "m.onnx", weight, bias)
    os.symlink(tmp_path / "real" / "m.onnx", tmp_path / "link" / "other.onnx")
    got = source_runs.run_onnx(tmp_path / "link" / "other.onnx", {"x": x})["y"]
    np.testing.assert_allclose(got, _truth(weight, bias, x), atol=1e-4, rtol=1e-3)


def test_source_run_keeps_a_model_without_big_weights_as_a_path(tmp_path):
    weight = np.ones((4, 3), np.float32)
    path = tmp_path / "small.onnx"
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"])], "s",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
                              [numpy_helper.from_array(weight, "W")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    assert source_runs._external_view(path, ort.SessionOptions()) == str(path)
    got = source_runs.run_onnx(path, {"x": np.full((1, 4), 2, np.float32)})["y"]
    np.testing.assert_array_equal(got, np.full((1, 3), 8, np.float32))


def test_executor_reads_big_constants_from_a_temporary_file(monkeypatch, data):
    weight, bias, x = data
    monkeypatch.setattr(executor, "_VIA_FILE_MIN_BYTES", 1 << 20)  # this small weight qualifies
    made = []
    real = executor._session_via_file
    monkeypatch.setattr(executor, "_session_via_file",
                        lambda *a: made.append(1) or real(*a))
    before = set(os.listdir(tempfile.gettempdir()))
    b = GraphBuilder("mm")
    xin = b.input("x", "float32", [1, K])
    y = b.add(b.matmul(xin, b.constant(weight)), b.constant(bias.reshape(1, N)))
    got = execute.run(b.build({"y": y}), {"x": x[None]})["y"]
    assert made == [1]
    np.testing.assert_allclose(got, _truth(weight, bias, x), atol=1e-4, rtol=1e-3)
    left = {n for n in set(os.listdir(tempfile.gettempdir())) - before
            if n.startswith("webnn-exec-")}
    assert not left  # the folder is gone once the session has loaded it
