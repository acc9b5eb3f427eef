"""Weights at float32's edges through `--weights int8|int4`: the scales stay finite and
positive, and the quantized graph gives a number wherever the float one does (tools/fuzz.py's
values-* cases found int8 turning a weight of 3.4e38 into inf, and a sum into NaN)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import converter
from converter.passes.integer_weights import quantize

MAX = np.finfo(np.float32).max


def _weight(kind: str) -> np.ndarray:
    """[64, 16] normal weights whose column 3 holds `kind`."""
    w = np.random.default_rng(0).standard_normal((64, 16)).astype(np.float32)
    if kind == "float-max":
        w[5, 3], w[6, 3] = MAX, -MAX
    elif kind == "denormal":
        w[:, 3] = np.float32(1e-40) * np.sign(w[:, 3])
    elif kind == "smallest-denormal":
        w[:, 3] = np.float32(1.4e-45)
    elif kind == "zero":
        w[:, 3] = 0
    return w


@pytest.mark.parametrize("kind", ["float-max", "denormal", "smallest-denormal", "zero"])
@pytest.mark.parametrize("weights", ["int8", "int4"])
def test_scales_are_finite_positive_and_dequantize_to_finite_values(kind, weights):
    w = _weight(kind)
    q, scale = quantize(w, weights, 1, 0, 32)
    assert np.all(np.isfinite(scale)) and np.all(scale > 0)
    with np.errstate(over="raise"):  # what dequantizeLinear computes, per element
        values = q.astype(np.float32) * np.repeat(scale, w.shape[0] // scale.shape[0], axis=0)
    assert np.all(np.isfinite(values))
    if kind == "float-max":  # the extremes are kept within a step of themselves
        step = scale[0, 3]  # rows 5 and 6: the first block, or the channel
        assert abs(values[5, 3] - MAX) <= step and abs(values[6, 3] + MAX) <= step


@pytest.mark.parametrize("weights", ["int8", "int4"])
def test_a_weight_of_float_max_gives_no_nan_on_onnx_runtime(weights, tmp_path):
    w = _weight("float-max")
    vi = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [vi("x", TensorProto.FLOAT, [1, 64])],
                              [vi("y", TensorProto.FLOAT, [1, 16])],
                              [numpy_helper.from_array(w, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              tmp_path / "m.onnx")
    converter.convert(tmp_path / "m.onnx", tmp_path / "q.onnx", weights=weights)
    x = np.random.default_rng(1).random((1, 64), dtype=np.float32)
    want, got = (ort.InferenceSession(str(tmp_path / p), providers=["CPUExecutionProvider"])
                 .run(None, {"x": x})[0] for p in ("m.onnx", "q.onnx"))
    assert np.all(np.isfinite(want))
    assert np.all(np.isfinite(got)), got
