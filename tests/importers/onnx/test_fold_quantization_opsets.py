"""(De)QuantizeLinear and DynamicQuantizeLinear folded at conversion time at every opset their
schemas exist in, checked against ONNX Runtime.

The onnx reference evaluator that folding runs has DequantizeLinear kernels from version 19
only, so a model of opset 10 to 18 whose DequantizeLinear had known inputs (ORT's
quantize_dynamic quantizes a position-embedding Gather and dequantizes its constant rows) was
refused with "No implementation for operator 'DequantizeLinear' ... version 18".
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from .helpers import imported, ort_outputs

_RNG = np.random.default_rng(31)


def _float_model(opset: int) -> onnx.ModelProto:
    """Token and position embeddings (Gather), MatMul and Gemm: the shapes quantize_dynamic
    rewrites. The positions are a constant, so their Gather and its DequantizeLinear fold."""
    f32 = lambda *s: _RNG.standard_normal(s).astype(np.float32)  # noqa: E731
    weights = {"tokens": f32(10, 16), "positions": f32(6, 16), "w": f32(16, 8), "g": f32(8, 4),
               "b": f32(4), "pos": np.array([0, 1, 2], np.int64)}
    nodes = [helper.make_node("Gather", ["tokens", "ids"], ["tok"]),
             helper.make_node("Gather", ["positions", "pos"], ["where"]),
             helper.make_node("Add", ["tok", "where"], ["emb"]),
             helper.make_node("MatMul", ["emb", "w"], ["mm"]),
             helper.make_node("Gemm", ["mm", "g", "b"], ["y"])]
    graph = helper.make_graph(
        nodes, "embed", [helper.make_tensor_value_info("ids", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


@pytest.mark.parametrize("opset", [10, 11, 13, 17, 18, 19, 21, 23])
def test_quantize_dynamic_uint8_models_convert_at_every_opset(opset, tmp_path):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    source, quantized = tmp_path / "model.onnx", tmp_path / "model_quantized.onnx"
    onnx.save(_float_model(opset), source)
    quantize_dynamic(source, quantized, weight_type=QuantType.QUInt8,
                     op_types_to_quantize=["MatMul", "Gemm", "Gather"])
    model = onnx.load(quantized)
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [opset]
    assert "DequantizeLinear" in [n.op_type for n in model.graph.node]
    feeds = {"ids": np.array([1, 5, 9], np.int64)}
    _, (got,) = imported(model, feeds)
    (want,) = ort_outputs(model, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _folded_model(op_type: str, opset: int, inputs: dict, outputs: int = 1,
                  **attrs) -> onnx.ModelProto:
    """`op_type` on constant inputs, its first result added to the graph input x (so folding,
    not the graph, computes it); every other result is a graph output too."""
    names = [f"y{i}" for i in range(outputs)]
    first = "y0f"
    nodes = [helper.make_node(op_type, list(inputs), names, **attrs),
             helper.make_node("Cast", ["y0"], [first], to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", first], ["sum"])]
    outs = [helper.make_tensor_value_info("sum", TensorProto.FLOAT, None)]
    outs += [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(dt)), None)
             for n, dt in zip(names[1:], (np.float32, np.uint8))]
    graph = helper.make_graph(
        nodes, "fold", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])], outs,
        [numpy_helper.from_array(v, k) for k, v in inputs.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def _check_folded(model: onnx.ModelProto):
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3) / 7}
    graph, got = imported(model, feeds)
    for have, want in zip(got, ort_outputs(model, feeds)):
        assert have.dtype == want.dtype
        np.testing.assert_array_equal(have, want)
    ops = [op.op_type for op in graph.operations]
    assert not {"quantizeLinear", "dequantizeLinear"} & set(ops), ops  # folded, not graph ops


_Q = np.array([[0, 3, 255], [128, 7, 200]], np.uint8)
_F = np.array([[-1.0, 0.26, 300.0], [2.5, -0.5, 7.74]], np.float32)


@pytest.mark.parametrize("opset", [10, 13, 18, 19, 21, 23])
def test_dequantize_linear_folds_per_tensor(opset):
    _check_folded(_folded_model("DequantizeLinear", opset, {
        "q": _Q, "s": np.array(0.25, np.float32), "z": np.array(3, np.uint8)}))


@pytest.mark.parametrize("opset", [13, 18, 19, 21, 23])
def test_dequantize_linear_folds_per_axis(opset):
    _check_folded(_folded_model("DequantizeLinear", opset, {
        "q": _Q, "s": np.array([0.5, 0.125, 2.0], np.float32),
        "z": np.array([1, 0, 200], np.uint8)}, axis=1))


@pytest.mark.parametrize("opset", [10, 13, 18, 19, 21, 23])
def test_quantize_linear_folds_per_tensor(opset):
    _check_folded(_folded_model("QuantizeLinear", opset, {
        "f": _F, "s": np.array(0.5, np.float32), "z": np.array(10, np.uint8)}))


@pytest.mark.parametrize("opset", [13, 18, 19, 21, 23])
def test_quantize_linear_folds_per_axis(opset):
    _check_folded(_folded_model("QuantizeLinear", opset, {
        "f": _F, "s": np.array([0.5, 0.25], np.float32), "z": np.array([10, 0], np.uint8)},
        axis=0))


@pytest.mark.parametrize("opset", [11, 13, 18, 19, 21, 23])
def test_dynamic_quantize_linear_folds(opset):
    _check_folded(_folded_model("DynamicQuantizeLinear", opset, {"f": _F}, outputs=3))
