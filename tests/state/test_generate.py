"""Greedy decoding through our graph on ONNX Runtime (state/generation.py) against the source
decoder on ONNX Runtime in its own concat form: the tiny genai-builder Llama, fp32 and int4 (uint4
MatMulNBits), 32 new tokens identical and every position's logits within the whole-model
float32 bounds (atol 1e-4, rtol 1e-3, cosine >= 0.9999)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import converter
from converter.errors import ConverterError
from converter.state.generation import DecoderLoop, generate_on_onnxruntime

FIXTURES = Path(__file__).resolve().parents[2] / "models" / "tiny-llama"
PROMPT = [1, 5, 9, 33, 71]


@pytest.mark.parametrize("precision", ["fp32", "int4"])
def test_32_greedy_tokens_match_onnxruntime(precision):
    path = FIXTURES / precision / "model.onnx"
    graph = converter.load_decoder(path, capacity=40)
    ours = converter.generate(graph, PROMPT, max_new_tokens=32)
    source = generate_on_onnxruntime(path, PROMPT, max_new_tokens=32)
    assert len(source.tokens) == 32 and len(set(source.tokens)) > 10  # not a stuck model
    assert ours.tokens == source.tokens
    assert len(ours.logits) == len(source.logits) == len(PROMPT) + 31
    for got, want in zip(ours.logits, source.logits):
        assert np.all(np.abs(got - want) <= 1e-4 + 1e-3 * np.abs(want))
        cosine = float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want)))
        assert cosine >= 0.9999
        assert np.abs(want).max() > 1.0  # logits of a size that a wrong cache would move


def test_the_cache_carries_the_context():
    """The same last token after different prompts predicts differently: the cache is read."""
    graph = converter.load_decoder(FIXTURES / "fp32" / "model.onnx", capacity=8)
    loop = DecoderLoop(graph)
    a = converter.generate(loop, [1, 5, 9], max_new_tokens=1)
    b = converter.generate(loop, [1, 200, 9], max_new_tokens=1)  # generate resets the loop
    assert not np.allclose(a.logits[-1], b.logits[-1], atol=1e-2)
    again = converter.generate(loop, [1, 5, 9], max_new_tokens=1)
    np.testing.assert_array_equal(again.logits[-1], a.logits[-1])


def test_a_full_cache_and_a_stateless_graph_are_refused():
    graph = converter.load_decoder(FIXTURES / "fp32" / "model.onnx", capacity=4)
    with pytest.raises(ConverterError, match="the cache holds 4 tokens"):
        converter.generate(graph, [1, 5, 9], max_new_tokens=3)  # feeds a 5th
    graph.state.clear()
    with pytest.raises(ConverterError, match="declares no state"):
        converter.generate(graph, [1], max_new_tokens=1)
    graph = converter.load_decoder(FIXTURES / "fp32" / "model.onnx", capacity=4)
    with pytest.raises(ConverterError, match="token id 256 is outside the vocabulary 0..255"):
        converter.generate(graph, [1, 256], max_new_tokens=1)
    with pytest.raises(ConverterError, match="prompt is empty"):
        generate_on_onnxruntime(FIXTURES / "fp32" / "model.onnx", [], 1)


def test_verification_catches_a_miswired_cache():
    """Keys carried into the value buffers and back: the first step (empty cache) agrees,
    the later ones do not, and the report says where."""
    from converter.ir.state import StateVar
    from converter.verification.decode import verify_decoding

    path = FIXTURES / "fp32" / "model.onnx"
    graph = converter.load_decoder(path, capacity=16)
    swap = {"present.0.key": "present.0.value", "present.0.value": "present.0.key"}
    graph.state = [StateVar(v.input, swap.get(v.output, v.output)) for v in graph.state]
    report = verify_decoding(path, graph, prompt=[1, 5, 9], steps=4)
    assert not report.passed
    assert report.positions[0].passed  # nothing carried yet
    assert not all(p.passed for p in report.positions[1:])
    good = verify_decoding(path, converter.load_decoder(path, capacity=16), prompt=[1, 5, 9],
                           steps=4)
    assert good.passed and good.first_divergence is None
