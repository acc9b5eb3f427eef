"""Ops ONNX defines as functions, imported by expanding their function body (SwiGLU,
CausalConvWithState, LinearAttention). These opsets are newer than ONNX Runtime, so the
oracles are hand-computed values and the onnx package's reference evaluator."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from .helpers import imported, rand

F32 = onnx.TensorProto.FLOAT


def _model(nodes, inputs: dict, outputs, inits=None, opset=28):
    graph = helper.make_graph(
        nodes, "f", [helper.make_tensor_value_info(n, F32, a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(o, F32, None) for o in outputs],
        [numpy_helper.from_array(a, n) for n, a in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=11)


def test_two_swiglu_nodes_expand_without_name_clashes():
    a, b = rand(2, 4), rand(2, 4)
    nodes = [helper.make_node("SwiGLU", ["a", "b"], ["y1"], alpha=1.5, name="first"),
             helper.make_node("SwiGLU", ["y1", "b"], ["y"], name="second")]
    _, (y,) = imported(_model(nodes, {"a": a, "b": b}, ["y"]), {"a": a, "b": b})

    def swiglu(gate, value, alpha=1.0):
        return gate / (1 + np.exp(-alpha * gate)) * value

    np.testing.assert_allclose(y, swiglu(swiglu(a, b, 1.5), b), rtol=1e-5, atol=1e-6)


def test_causal_conv_with_state_matches_the_reference_evaluator():
    x, w, past = rand(2, 3, 5), rand(3, 1, 3), rand(2, 3, 2)
    node = helper.make_node("CausalConvWithState", ["x", "w", "", "past"], ["y", "state"],
                            activation="silu")
    model = _model([node], {"x": x}, ["y", "state"], {"w": w, "past": past}, opset=27)
    _, got = imported(model, {"x": x})
    want = ReferenceEvaluator(model).run(None, {"x": x})
    for have, expected in zip(got, want):
        np.testing.assert_allclose(have, expected, rtol=1e-5, atol=1e-6)
    # output 0 at t = 0 by hand: the kernel over [past0, past1, x0], then SiLU
    pre = (w[:, 0, 0] * past[:, :, 0] + w[:, 0, 1] * past[:, :, 1] + w[:, 0, 2] * x[:, :, 0])
    np.testing.assert_allclose(got[0][:, :, 0], pre / (1 + np.exp(-pre)), rtol=1e-5,
                               atol=1e-6)
