"""The tiny genai-builder Llama (models/tiny-llama/, made by models/make_tiny_llama.py) set up
for decoding, for tests/browser/test_decode_in_chromium.py and bench/bench_decode.py: the
prompt, the token count, the cache capacity, and the model as one fixed-capacity graph
(converter.load_decoder: each cache a state pair, one token a step)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]  # the repository
TINY_LLAMA = ROOT / "models" / "tiny-llama"
PROMPT = (1, 17, 42, 99)
NEW_TOKENS = 32
CAPACITY = 40  # the prompt and every new token but the last fed back
LAYERS, KV_HEADS, HEAD, VOCAB = 2, 2, 16, 256  # models/make_tiny_llama.py's CONFIG

__all__ = ["PROMPT", "NEW_TOKENS", "CAPACITY", "source", "cache_pairs", "fixed_cache_graph",
           "final_presents_on_source"]


def source(precision: str) -> Path:
    return TINY_LLAMA / precision / "model.onnx"


def cache_pairs() -> list[tuple[str, str]]:
    return [(f"past_key_values.{i}.{kv}", f"present.{i}.{kv}")
            for i in range(LAYERS) for kv in ("key", "value")]


def fixed_cache_graph(path: Path, capacity: int = CAPACITY):
    """The decoder as one graph for every step: one new token, caches of `capacity` rows."""
    import converter

    return converter.load_decoder(path, capacity=capacity)


def final_presents_on_source(path: Path, tokens: list[int], prompt=PROMPT) -> dict:
    """ONNX Runtime's present.* after feeding the prompt and then `tokens` but the last (the
    caches a greedy run ends with), the past growing by concatenation as exported."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    past = {p: np.zeros((1, KV_HEADS, 0, HEAD), np.float32) for p, _ in cache_pairs()}
    seen, results = 0, {}
    for chunk in [list(prompt)] + [[t] for t in tokens[:-1]]:
        seen += len(chunk)
        results = dict(zip(names, session.run(None, {
            "input_ids": np.array([chunk], np.int64),
            "attention_mask": np.ones((1, seen), np.int64), **past})))
        past = {p: results[q] for p, q in cache_pairs()}
    return {q: results[q] for _, q in cache_pairs()}
