"""Greedy decoding of the tiny genai-builder Llama (fp32 and int4) in Chromium's WebNN: 32 new
tokens after a 4-token prompt, token for token what ONNX Runtime gives on the source model.

Our side is one graph for every step (converter.load_decoder: a fixed-capacity KV cache, each
cache a state pair kept as MLTensors on the browser's context by the emitted module's
createSession), converted with `--target chromium-litert` (int4: MatMulNBits' uint4 weights
re-based to int4 and kept int4), driven by converter.generate; ONNX Runtime runs the source
as exported, its past growing by concatenation (generation.generate_on_onnxruntime)."""
from __future__ import annotations

import numpy as np
import pytest

import converter
from converter.state.generation import generate_on_onnxruntime
from converter.targets import load_target
from converter.targets.pipeline import convert_for_target
from converter.testing import decoding

pytestmark = pytest.mark.skipif(
    not decoding.source("fp32").exists(),
    reason="models/tiny-llama/ (the fixtures models/make_tiny_llama.py writes) is not here")


@pytest.fixture(scope="module", params=["fp32", "int4"])
def decoded(request):
    """(precision, ONNX Runtime's generation on the source, the converted graph, its report)."""
    path = decoding.source(request.param)
    graph = decoding.fixed_cache_graph(path)
    report = convert_for_target(graph, load_target("chromium-litert"))
    want = generate_on_onnxruntime(path, decoding.PROMPT, decoding.NEW_TOKENS)
    return request.param, want, graph, report


def test_chromium_generates_the_same_32_tokens_as_onnx_runtime(decoded, browser_limits):
    precision, want, graph, _ = decoded
    with converter.Session(graph, runtime="chromium") as session:
        got = converter.generate(session, decoding.PROMPT, decoding.NEW_TOKENS)
        state = session.read_state()
    assert len(got.tokens) == decoding.NEW_TOKENS == 32
    assert got.tokens == want.tokens
    assert len(set(want.tokens)) > 8  # a sequence, not one token repeated
    # every position's logits (prompt and new tokens) within the whole-model float32 policy
    assert len(got.logits) == len(want.logits) == 35
    np.testing.assert_allclose(np.stack(got.logits), np.stack(want.logits), atol=1e-4,
                               rtol=1e-3)
    # the caches the browser holds: ONNX Runtime's final presents in the rows written so far,
    # and nothing written after them
    presents = decoding.final_presents_on_source(decoding.source(precision), want.tokens)
    used = len(decoding.PROMPT) + decoding.NEW_TOKENS - 1
    for past, present in decoding.cache_pairs():
        assert presents[present].shape[2] == used
        np.testing.assert_allclose(state[past][:, :, :used], presents[present], atol=1e-4,
                                   rtol=1e-3)
        assert not state[past][:, :, used:].any()


def test_the_int4_weights_stay_int4_for_chromium(decoded):
    precision, _, graph, report = decoded
    weights = {op.inputs[0].data_type for op in graph.operations
               if op.op_type == "dequantizeLinear" and op.inputs[0].is_constant}
    if precision == "int4":
        assert weights == {"int4"}
        assert dict(report.passes)["quantized_weights"].changed
    else:
        assert weights == set()
