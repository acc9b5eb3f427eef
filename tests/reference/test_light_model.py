"""A resnet50-sized graph (the onnx package's light_resnet50 with seeded random weights, 176
WebNN ops) runs on the reference and agrees with ONNX Runtime on the source model within the
whole-model bounds: the interpreter is fast enough for verification and right on a deep net."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort

import converter
from converter.verification.parity import compare, default_bounds
from converter.verification.reference import evaluate
from converter.testing.light_models import light_model


def test_light_resnet50_matches_onnx_runtime_on_the_source(tmp_path):
    source = light_model("resnet50", tmp_path, seed=0)
    graph = converter.load(source)
    (name, operand), = graph.inputs.items()
    x = np.random.default_rng(3).random(operand.shape).astype(np.float32)
    session = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    (want,) = session.run(None, {name: x})
    (out_name,) = graph.outputs
    got = evaluate(graph, {name: x})[out_name]
    assert got.dtype == np.float64 and got.shape == want.shape
    parity = compare(out_name, got.astype(np.float32), want, default_bounds("float32"))
    assert parity.passed, parity.to_json()
    assert parity.max_abs < 1e-5  # float32 noise on outputs of size ~0.2, not a tolerance edge
