"""Greedy decoding of the tiny genai-builder Llama (models/tiny-llama/, made by
models/make_tiny_llama.py), for tests/browser/test_decode_in_chromium.py and
bench/bench_decode.py.

The reference is ONNX Runtime on the source as onnxruntime-genai's users would run it without a
shared buffer: the prompt in one call, then one token a call, the past growing by concatenation
(`present.N.*` fed back as `past_key_values.N.*`). Our side is one graph for every step: the
model imported with a fixed-capacity cache (past and total sequence length both `capacity`,
GroupQueryAttention's shared-buffer form, importers/onnx/rules/attention_cache.py), each cache a
state pair (zeros at first), fed one token a step with the attention mask covering the
positions so far."""
from __future__ import annotations

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]  # the repository
TINY_LLAMA = ROOT / "models" / "tiny-llama"
PROMPT = (1, 17, 42, 99)
NEW_TOKENS = 32
CAPACITY = 40  # the prompt and every new token but the last fed back
LAYERS, KV_HEADS, HEAD, VOCAB = 2, 2, 16, 256  # models/make_tiny_llama.py's CONFIG

__all__ = ["PROMPT", "NEW_TOKENS", "CAPACITY", "source", "cache_pairs", "greedy_on_source",
           "fixed_cache_graph", "step_feeds", "greedy_in_session"]


def source(precision: str) -> Path:
    return TINY_LLAMA / precision / "model.onnx"


def cache_pairs() -> list[tuple[str, str]]:
    return [(f"past_key_values.{i}.{kv}", f"present.{i}.{kv}")
            for i in range(LAYERS) for kv in ("key", "value")]


def greedy_on_source(path: Path, prompt=PROMPT, count: int = NEW_TOKENS):
    """(tokens, logits of each step that chose one, final presents) on ONNX Runtime."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    past = {p: np.zeros((1, KV_HEADS, 0, HEAD), np.float32) for p, _ in cache_pairs()}
    seen, fed, tokens, logits = list(prompt), list(prompt), [], []
    while len(tokens) < count:
        results = dict(zip(names, session.run(None, {
            "input_ids": np.array([fed], np.int64),
            "attention_mask": np.ones((1, len(seen)), np.int64), **past})))
        past = {p: results[q] for p, q in cache_pairs()}
        logits.append(results["logits"][0, -1])
        tokens.append(int(logits[-1].argmax()))
        seen.append(tokens[-1])
        fed = [tokens[-1]]
    return tokens, np.stack(logits), {q: results[q] for _, q in cache_pairs()}


def fixed_cache_graph(path: Path, capacity: int = CAPACITY):
    """The decoder as one graph for every step: one new token, caches of `capacity` slots as
    state pairs."""
    import converter

    graph = converter.load(path, dims={"batch_size": 1, "sequence_length": 1,
                                       "past_sequence_length": capacity,
                                       "total_sequence_length": capacity,
                                       "kv_cache_dim": HEAD})
    for past, present in cache_pairs():
        graph.declare_state(past, present)  # zeros
    return graph


def step_feeds(position: int, token: int, capacity: int = CAPACITY) -> dict[str, np.ndarray]:
    mask = np.zeros((1, capacity), np.int64)
    mask[0, :position + 1] = 1
    return {"input_ids": np.array([[token]], np.int64), "attention_mask": mask}


def greedy_in_session(session, prompt=PROMPT, count: int = NEW_TOKENS,
                      capacity: int = CAPACITY):
    """(tokens, logits of each step that chose one) stepping a converter.Session one token at
    a time: the prompt's tokens, then each chosen one."""
    tokens, logits = [], []
    for position in range(len(prompt) + count - 1):
        token = prompt[position] if position < len(prompt) else tokens[-1]
        out = session.step(step_feeds(position, token, capacity))["logits"]
        if position >= len(prompt) - 1:
            logits.append(out[0, -1])
            tokens.append(int(logits[-1].argmax()))
    return tokens, np.stack(logits)
