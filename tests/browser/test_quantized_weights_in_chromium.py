"""Quantized weights converted for chromium-litert run in Chromium's WebNN: the uint4
MatMulNBits weights re-based to int4 (and the int8 per-axis ones kept) compute what ONNX Runtime
computes on the source model, within the float32 whole-model policy; so does --dequantize."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from converter.importers.onnx import import_model
from converter.runtimes.chromium import run_chromium_many
from converter.targets.pipeline import convert_for_target
from tests.passes.quantized_models import decoder_block, dequantize_matmul


def _ort(model, feeds):
    # Basic level: the default fuses DequantizeLinear + MatMul into a dynamically quantized
    # matmul (tests/passes/test_quantized_weights.py says by how much).
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]


@pytest.mark.parametrize("dequantize", [False, True])
def test_quantized_weights_for_chromium_litert_match_onnxruntime_in_chromium(browser_limits,
                                                                             dequantize):
    cases, wants, stored = [], [], []
    for make in (decoder_block, dequantize_matmul):
        model, feeds = make()
        graph = import_model(onnx.ModelProto.FromString(model.SerializeToString()))
        convert_for_target(graph, "chromium-litert", dequantize=dequantize)
        stored.append({c.data_type for c in graph.constants.values() if c.size >= 4096})
        cases.append((graph, feeds))
        wants.append(_ort(model, feeds))
    assert stored == ([{"float32"}] * 2 if dequantize else [{"int4"}, {"int8"}])
    for got, want in zip(run_chromium_many(cases), wants):
        np.testing.assert_allclose(got["y"], want, atol=1e-4, rtol=1e-3)
