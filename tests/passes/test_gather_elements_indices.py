"""gatherElements with computed indices on a target that builds it only with constant ones
(Chromium 153 on LiteRT: "gatherElements only supports constant indices", found by a
grid_sample model of tools/vision_sweep.py): the constant_operands pass rewrites it as a gather
from the flattened input. Checked against numpy's take_along_axis (the spec's definition) and,
for the ONNX form a grid_sample exports, against ONNX Runtime on the source model."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from converter import dtypes
from converter.ops.builder import GraphBuilder
from converter.runtimes.execute import run
from converter.ops.registry import all_ops
from converter.passes import PassContext, run_passes
from converter.targets import Target, load_target
from converter.targets.check import check
from converter.targets.pipeline import convert_for_target
from tests.importers.onnx.helpers import imported, ort_outputs

RNG = np.random.default_rng(31)
CONSTANT_INDICES = {"gatherElements": ["indices"]}


def _target() -> Target:
    return Target(name="constant-indices", limits={o: {} for o in all_ops()},
                  constant_operands=CONSTANT_INDICES)


def _graph(x_shape, indices: np.ndarray, axis: int, *, constant: bool = False):
    b = GraphBuilder()
    x = b.input("x", "float32", x_shape)
    i = (b.constant(indices) if constant else
         b.input("i", dtypes.from_numpy(indices.dtype), indices.shape))
    return b.build({"y": b.gatherElements(x, i, axis=axis)})


def _indices(x_shape, i_shape, axis, dtype, negative: bool) -> np.ndarray:
    n = x_shape[axis]
    low = -n if negative else 0
    return RNG.integers(low, n, i_shape).astype(dtype)


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32])
def test_computed_indices_become_a_gather_of_the_same_elements(axis, dtype):
    x_shape = [3, 4, 5]
    i_shape = list(x_shape)
    i_shape[axis] = 2  # indices may be shorter than the input along the axis
    indices = _indices(x_shape, i_shape, axis, dtype, negative=np.dtype(dtype).kind == "i")
    x = RNG.standard_normal(x_shape).astype(np.float32)
    graph = _graph(x_shape, indices, axis)
    [(_, result)] = run_passes(graph, ["constant_operands"], PassContext(target=_target()))
    ops = [op.op_type for op in graph.operations]
    assert result.changed and "gatherElements" not in ops and ops.count("gather") == 1
    assert result.counts["decomposed gatherElements"] == 1
    got = run(graph, {"x": x, "i": indices})["y"]
    want = np.take_along_axis(x, np.where(indices < 0, indices + x_shape[axis], indices)
                              .astype(np.int64), axis)
    np.testing.assert_array_equal(got, want)  # data movement: exact


def test_the_offsets_are_worked_out_by_hand():
    """x 2x3, axis 1, indices [[2, -3], [0, 1]]: flat positions [[2, 0], [3, 4]]."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3) * 10
    indices = np.array([[2, -3], [0, 1]], np.int64)
    graph = _graph([2, 3], indices, 1)
    run_passes(graph, ["constant_operands"], PassContext(target=_target()))
    np.testing.assert_array_equal(run(graph, {"x": x, "i": indices})["y"],
                                  [[20, 0], [30, 40]])


def test_a_stride_of_two_multiplies_the_index():
    """x 3x2, axis 0 (stride 2), indices [[2, 0], [1, -1]]: flat positions [[4, 1], [2, 5]]."""
    x = np.arange(6, dtype=np.float32).reshape(3, 2) * 10
    indices = np.array([[2, 0], [1, -1]], np.int32)
    graph = _graph([3, 2], indices, 0)
    run_passes(graph, ["constant_operands"], PassContext(target=_target()))
    np.testing.assert_array_equal(run(graph, {"x": x, "i": indices})["y"],
                                  [[40, 10], [20, 50]])


def test_constant_indices_stay_a_gather_elements():
    indices = np.array([[1, 0], [2, 2]], np.int32)
    graph = _graph([3, 2], indices, 0, constant=True)
    [(_, result)] = run_passes(graph, ["constant_operands"], PassContext(target=_target()))
    assert not result.changed
    assert [op.op_type for op in graph.operations] == ["gatherElements"]


def test_chromium_litert_needs_constant_gather_elements_indices():
    target = load_target("chromium-litert")
    assert target.must_be_constant("gatherElements") == ["indices"]
    graph = _graph([3, 4], np.zeros((3, 4), np.int64), 1)
    [violation] = check(graph, target)
    assert violation.kind == "not-constant" and violation.operand == "indices"
    assert "constant_operands" in violation.fix


def _onnx_gather_elements(x_shape, i_shape, axis):
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape),
              helper.make_tensor_value_info("i", TensorProto.INT64, i_shape)]
    node = helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)
    graph = helper.make_graph([node], "gather_elements", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, i_shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_onnx_gather_elements_converted_for_chromium_litert_matches_onnx_runtime():
    """The shape grid_sample's export gathers with: [N, C, H*W] along the last axis."""
    x = RNG.standard_normal((1, 3, 20)).astype(np.float32)
    indices = RNG.integers(-20, 20, (1, 3, 12)).astype(np.int64)
    model = _onnx_gather_elements([1, 3, 20], [1, 3, 12], 2)
    feeds = {"x": x, "i": indices}
    graph, _ = imported(model, feeds)
    report = convert_for_target(graph, "chromium-litert")
    assert report.passed, report.violations
    assert "gatherElements" not in [op.op_type for op in graph.operations]
    [want] = ort_outputs(model, feeds)
    np.testing.assert_array_equal(run(graph, feeds)["y"], want)
