"""Greedy decoding: a decoder graph run token by token with its KV cache carried as state.

    graph = converter.load_decoder("model.onnx", capacity=64)      # fixed-capacity cache
    result = converter.generate(graph, [1, 5, 9], max_new_tokens=32)
    result.tokens                                                  # the 32 new token ids

The graph is the fixed-capacity form (state/kv_cache.py): its cache pairs are state of one
shape, and each step feeds one token, an attention mask of the capacity's length (ones on the
rows filled so far and this step's, from the left), and position_ids when the model has them.
A GroupQueryAttention cache is a buffer the step writes into; one that grows by a Concat
(optimum's exports) is a window that slides (state/window_form.py). The prompt is fed one token
a step too, so one graph serves the whole run.

The concat form (the cache grows by a step's tokens) converts a static graph per length:
`state.concat_form.ConcatLoop` (the prompt in one step), which `generate` drives the same way.
`generate_on_onnxruntime` runs the source in that form on ONNX Runtime, feeding each of
optimum's files what optimum does: the reference the tests and `verify --steps` compare with.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..errors import ConverterError
from ..ir import Graph
from ..runtimes.session import Session
from .kv_cache import check_tokens, declare_kv_state, is_seq2seq, read_decoder_spec

__all__ = ["Generation", "load_decoder", "generate", "generate_on_onnxruntime", "DecoderLoop"]


@dataclass
class Generation:
    """The new tokens, and the logits row of every position fed (prompt tokens, then each new
    token but the last): row i is what the model predicts after token i."""

    tokens: list[int]
    logits: list[np.ndarray] = field(default_factory=list)


def load_decoder(path: str | Path, *, capacity: int,
                 patterns: Sequence[tuple[str, str]] | None = None,
                 dims: Mapping[str, int] | None = None) -> Graph:
    """An ONNX decoder as a fixed-capacity graph: one token a step into caches of `capacity`
    rows, its past/present pairs declared as state (`patterns`, else the known names). A
    cache GroupQueryAttention reads is a buffer it writes into; one that grows by a Concat
    (optimum's exports) slides instead (state/window_form.py). Both take the attention mask
    alike: [1, capacity], ones on the rows filled so far and this step's."""
    from ..conversion.by_suffix import load_any
    from .window_form import load_window

    if is_seq2seq(path):
        raise ConverterError("an encoder-decoder's decoder takes no attention mask over its own "
                             "rows and no position ids, so a cache of fixed capacity could "
                             "neither mask its empty rows nor keep the positions",
                             where=str(path), fix="step its concat form: run/verify --prompt "
                             "IDS --steps N without --cache-capacity (converter.load_seq2seq)")
    spec = read_decoder_spec(path, patterns, dims)
    if spec.capacity_form() == "buffer":
        graph = load_any(spec.path, dims=spec.dims(past=0, step=1, capacity=capacity,
                                                   extra=dims),
                         known_inputs=spec.known(1) or None)
    else:
        graph = load_window(spec, capacity, dims)
    declare_kv_state(graph, spec.pairs)
    graph.verify()
    return graph


class DecoderLoop:
    """A fixed-capacity decoder graph in a Session, fed one token a step."""

    def __init__(self, graph_or_session: Graph | Session, *, input_ids: str = "input_ids",
                 attention_mask: str | None = "attention_mask",
                 position_ids: str | None = "position_ids", logits: str = "logits"):
        self.session = graph_or_session if isinstance(graph_or_session, Session) else \
            Session(graph_or_session)
        graph = self.session.graph
        if not graph.state:
            raise ConverterError("the graph declares no state: its KV cache would not be "
                                 "carried", fix="load it with converter.load_decoder(path, "
                                 "capacity=N), or convert with --cache-capacity N")
        feeds = self.session.feed_names
        if input_ids not in feeds or logits not in self.session.output_names:
            raise ConverterError(f"a decoder graph takes '{input_ids}' and gives '{logits}'",
                                 fix="inputs: " + ", ".join(feeds))
        shape = graph.inputs[input_ids].shape
        if shape != (1, 1):
            raise ConverterError(f"'{input_ids}' is {list(shape)}: the loop feeds one token "
                                 f"a step, [1, 1]", fix="convert with sequence length 1")
        self.input_ids, self.logits = input_ids, logits
        self.attention_mask = attention_mask if attention_mask in feeds else None
        self.position_ids = position_ids if position_ids in feeds else None
        other = set(feeds) - {input_ids, self.attention_mask, self.position_ids}
        if other:
            raise ConverterError(f"the loop does not know what to feed '{sorted(other)[0]}'",
                                 fix="a decoder step takes token ids, an attention mask and "
                                     "position ids")
        if self.attention_mask is None:
            raise ConverterError("the graph has no attention mask input to say which cache "
                                 "rows are filled",
                                 fix="name it with attention_mask= (a fixed-capacity cache "
                                     "is read through its mask)")
        self.capacity = graph.inputs[self.attention_mask].shape[-1]
        self.vocabulary = graph.outputs[logits].shape[-1]
        self.position = 0

    def reset(self) -> None:
        self.session.reset()
        self.position = 0

    def prefill(self, tokens: Sequence[int]) -> list[np.ndarray]:
        """The prompt, one token a step; the logits row of each."""
        return [self.feed(token) for token in tokens]

    def feed(self, token: int) -> np.ndarray:
        """One token at the next position; the logits row it gives."""
        if self.position >= self.capacity:
            raise ConverterError(f"the cache holds {self.capacity} tokens; token "
                                 f"{self.position + 1} does not fit",
                                 fix="convert with a larger --cache-capacity")
        check_tokens([token], self.vocabulary)
        graph = self.session.graph
        feeds = {self.input_ids: np.full((1, 1), token, _np(graph, self.input_ids))}
        if self.attention_mask:
            mask = np.zeros(graph.inputs[self.attention_mask].shape,
                            _np(graph, self.attention_mask))
            mask[..., :self.position + 1] = 1
            feeds[self.attention_mask] = mask
        if self.position_ids:
            feeds[self.position_ids] = np.full((1, 1), self.position,
                                               _np(graph, self.position_ids))
        out = self.session.step(feeds)
        self.position += 1
        return np.asarray(out[self.logits]).reshape(-1)


def generate(model, prompt_ids: Sequence[int], max_new_tokens: int, *,
             eos_token_id: int | None = None, **names) -> Generation:
    """Greedy decoding: feed the prompt, then the arg-max token of each step's logits, until
    `max_new_tokens` tokens (or `eos_token_id`).

    `model` is a fixed-capacity decoder Graph or Session (`names`: input_ids=,
    attention_mask=, position_ids=, logits= rename its inputs and output), a DecoderLoop, or
    a state.concat_form.ConcatLoop (the concat form, converted once per length)."""
    loop = model if hasattr(model, "prefill") else DecoderLoop(model, **names)
    prompt = [int(t) for t in prompt_ids]
    _check_request(prompt, max_new_tokens)
    loop.reset()
    result = Generation([])
    result.logits.extend(loop.prefill(prompt))
    while True:
        token = int(np.argmax(result.logits[-1]))
        result.tokens.append(token)
        if len(result.tokens) == max_new_tokens or token == eos_token_id:
            return result
        result.logits.append(loop.feed(token))


def generate_on_onnxruntime(path: str | Path, prompt_ids: Sequence[int], max_new_tokens: int,
                            *, patterns: Sequence[tuple[str, str]] | None = None,
                            dims: Mapping[str, int] | None = None,
                            eos_token_id: int | None = None,
                            float_activations: bool = False,
                            prompt_in_one_step: bool = True, moved: int = 0,
                            forced: Sequence[int] | None = None) -> Generation:
    """The reference: the source decoder on ONNX Runtime in its own concat form, the whole
    prompt in the first step, then one token a step, each step fed the present outputs of
    the one before. The first step is what the exporter's runtime feeds it: an unmerged
    pair's decoder_model.onnx, a merged decoder's no-cache branch (use_cache_branch false),
    else an empty past. `float_activations`: its MatMulNBits nodes at accuracy_level 0
    (source_runs.run_onnx). `prompt_in_one_step=False` feeds the prompt one token a step,
    as the fixed-capacity graph takes it: the like-for-like reference for a model whose
    numbers depend on the rows computed together (DynamicQuantizeLinear's one scale per
    tensor). `moved` (+1 or -1): each DynamicQuantizeLinear rounds its input moved by float32
    noise (runtimes/dynamic_quantize.py). `forced`: the new tokens fed (and reported) in
    place of the arg-max, so that another run's positions line up with these."""
    from ..runtimes.source_runs import run_onnx

    spec = read_decoder_spec(path, patterns, dims)
    if forced is not None:
        max_new_tokens = len(forced)
    prompt = [int(t) for t in prompt_ids]
    _check_request(prompt, max_new_tokens)
    empty = spec.past_shape(0)
    past = {name: np.zeros(empty, np.float32) for name, _ in spec.pairs}
    result = Generation([])
    fed, new = 0, prompt if prompt_in_one_step else prompt[:1]
    while True:
        first = fed == 0 and spec.first_path is not None
        feeds = {spec.input_ids: np.array([new], np.int64), **({} if first else past)}
        if spec.branch:
            feeds[spec.branch] = np.array([fed > 0])
        if spec.attention_mask:
            feeds[spec.attention_mask] = np.ones((1, fed + len(new)), np.int64)
        if spec.position_ids:
            feeds[spec.position_ids] = np.arange(fed, fed + len(new)).reshape(1, -1)
        out = run_onnx(Path(spec.first_path if first else spec.path), feeds,
                       float_activations=float_activations, moved=moved)
        rows = np.asarray(out["logits"]).reshape(len(new), -1)
        result.logits.extend(list(rows))
        fed += len(new)
        past = {name: out[present] for name, present in spec.pairs}
        if fed < len(prompt):  # the prompt one token a step: its next token, no choice yet
            new = prompt[fed:fed + 1]
            continue
        token = int(np.argmax(rows[-1]) if forced is None else forced[len(result.tokens)])
        result.tokens.append(token)
        if len(result.tokens) == max_new_tokens or token == eos_token_id:
            return result
        new = [token]


def _check_request(prompt: list[int], max_new_tokens: int) -> None:
    if not prompt:
        raise ConverterError("the prompt is empty", fix="give at least one token id")
    if max_new_tokens < 1:
        raise ConverterError(f"max_new_tokens must be at least 1, not {max_new_tokens}")


def _np(graph: Graph, name: str) -> np.dtype:
    from .. import dtypes

    return dtypes.numpy_dtype(graph.inputs[name].data_type)
