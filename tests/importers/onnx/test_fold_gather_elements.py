"""GatherElements on known values is computed at conversion time by numpy, also along an axis
longer than 64 (where the onnx reference evaluator's np.choose gives up: the legacy BERT export's
token-type ids gathered from a 64-row buffer), checked against ONNX Runtime."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import converter
from converter.importers.onnx.folding import _gather_elements
from converter.importers.onnx.registry import Unsupported


def _model(data, index, axis, path):
    out_shape = list(index.shape)
    graph = helper.make_graph(
        [helper.make_node("GatherElements", ["data", "index"], ["g"], axis=axis),
         helper.make_node("Add", ["g", "x"], ["y"])], "gather_elements_fold",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, out_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        [numpy_helper.from_array(data, "data"), numpy_helper.from_array(index, "index")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("axis, data_shape, index_shape", [
    (1, (2, 100), (2, 8)), (0, (130, 3), (5, 2)), (-1, (3, 4, 70), (2, 4, 9))])
def test_folded_gather_elements_matches_onnx_runtime(tmp_path, axis, data_shape, index_shape):
    rng = np.random.default_rng(3)
    data = rng.standard_normal(data_shape).astype(np.float32)
    size = data_shape[axis]
    index = rng.integers(-size, size, index_shape).astype(np.int64)
    path = _model(data, index, axis, tmp_path / "m.onnx")
    graph = converter.load(path)
    assert "gatherElements" not in graph.op_histogram()  # computed, not left to run time
    x = rng.standard_normal(index_shape).astype(np.float32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    np.testing.assert_array_equal(converter.run(graph, {"x": x})["y"], want)


def test_an_index_outside_the_axis_or_wider_than_the_data_is_refused():
    data = np.zeros((2, 3), np.float32)
    with pytest.raises(Unsupported, match="outside -3..2"):
        _gather_elements(data, np.array([[3]]), 1)
    with pytest.raises(Unsupported, match="does not fit"):
        _gather_elements(data, np.zeros((3, 1), np.int64), 1)
