"""Small uint4 MatMulNBits weights (2,048 values each, fewer than fold_constants folds by
size) converted for chromium-litert reach Chromium as int4 dequantizeLinear with blockwise
scales, and compute what ONNX Runtime computes on the source, within the float32 whole-model
policy (the q4 fixtures' weights are all this small)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort

from converter.importers.onnx import import_model
from converter.runtimes.chromium import run_chromium_many
from converter.targets.pipeline import convert_for_target
from tests.passes.quantized_models import decoder_block


def test_small_int4_weights_build_and_match_onnxruntime_in_chromium(browser_limits):
    model, feeds = decoder_block(seed=3, hidden=32, inner=64)
    graph = import_model(onnx.ModelProto.FromString(model.SerializeToString()))
    convert_for_target(graph, "chromium-litert")
    weights = [op.inputs[0] for op in graph.operations if op.op_type == "dequantizeLinear"]
    assert [(w.data_type, w.shape) for w in weights] == [("int4", (64, 32)), ("int4", (32, 64))]
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    [got] = run_chromium_many([(graph, feeds)])
    np.testing.assert_allclose(got["y"], want, atol=1e-4, rtol=1e-3)
