"""The concat form of a decoder's KV cache: each step appends its rows to the past, so the
state grows and every length is another static graph. `ConcatLoop` converts the model once per
(past length, new tokens) it meets and carries the present outputs into the next step's past.

    loop = ConcatLoop("model.onnx")
    converter.generate(loop, prompt_ids, max_new_tokens=8)   # 1 + 7 conversions
    loop.conversions                                           # graphs made so far

The first step has no past: a zero-row tensor, which WebNN has no operand for. Its graph is
converted from the model with the past inputs taken out (`without_past`): a Concat that reads
one drops it, an attention op (GroupQueryAttention, MultiHeadAttention) gets no past; any
other reader is refused. Each conversion costs what a `convert` does, so this form suits short
runs and checks; a fixed capacity (`--cache-capacity`) makes one graph for every step.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..errors import ConverterError
from ..ir import Graph
from .kv_cache import DecoderSpec, read_decoder_spec

__all__ = ["ConcatLoop", "without_past"]

# Attention ops whose past key / value inputs may be left out (their input positions).
_PAST_SLOTS = {("com.microsoft", "GroupQueryAttention"): (3, 4),
               ("com.microsoft", "MultiHeadAttention"): (6, 7),
               ("", "Attention"): (4, 5)}


def without_past(model, past_names: Sequence[str], where: str) -> None:
    """Edit `model` (a ModelProto) in place: the inputs `past_names` removed, and each of
    their readers told there is no past."""
    past = set(past_names)
    for node in model.graph.node:
        readers = [i for i, name in enumerate(node.input) if name in past]
        if not readers:
            continue
        slots = _PAST_SLOTS.get((node.domain if node.domain != "ai.onnx" else "", node.op_type))
        if node.op_type == "Concat" and node.domain in ("", "ai.onnx"):
            kept = [name for name in node.input if name not in past]
            del node.input[:]
            node.input.extend(kept)
        elif slots is not None and set(readers) <= set(slots):
            for i in readers:
                node.input[i] = ""
        else:
            raise ConverterError(f"'{node.input[readers[0]]}' is read by {node.op_type} node "
                                 f"'{node.name}', which an empty past cannot be taken out of",
                                 where=where,
                                 fix="convert with --cache-capacity N if the model takes it")
    kept_inputs = [v for v in model.graph.input if v.name not in past]
    del model.graph.input[:]
    model.graph.input.extend(kept_inputs)


class ConcatLoop:
    """A decoder in its concat form on ONNX Runtime, converted once per length."""

    def __init__(self, path: str | Path, *, patterns: Sequence[tuple[str, str]] | None = None,
                 dims: Mapping[str, int] | None = None, logits: str = "logits",
                 max_graphs: int = 8):
        self.path = Path(path)
        self.spec: DecoderSpec = read_decoder_spec(self.path, patterns, dims)
        self.extra = dict(dims or {})
        self.logits = logits
        self.max_graphs = max_graphs  # converted graphs kept (the oldest dropped first)
        self._graphs: dict[tuple[int, int], Graph] = {}
        self.conversions = 0
        self.reset()

    def reset(self) -> None:
        self.last_graph: Graph | None = None  # the graph of the latest step
        self.past: dict[str, np.ndarray] | None = None
        self.position = 0

    def graph(self, past: int, step: int) -> Graph:
        """The static graph of `step` new tokens after `past` rows (converted on first use)."""
        key = (past, step)
        if key not in self._graphs:
            from ..importers.onnx import import_model
            from ..importers.onnx.model_file import read_model

            model, arrays, budget = read_model(self.path)
            if past == 0:
                without_past(model, [p for p, _ in self.spec.pairs], str(self.path))
            dims = self.spec.dims(past=past, step=step, extra=self.extra)
            if past == 0:  # no past input left to size
                dims.pop(self.spec.past_dim, None)
            graph = import_model(model, arrays, dims=dims, where=str(self.path),
                                 name=self.path.stem, budget=budget, isolate=True)
            if len(self._graphs) >= self.max_graphs:
                self._graphs.pop(next(iter(self._graphs)))
            self._graphs[key] = graph
            self.conversions += 1
        return self._graphs[key]

    def prefill(self, tokens: Sequence[int]) -> list[np.ndarray]:
        """Feed `tokens` in one step; the logits row of each."""
        from ..runtimes.execute import run
        from .kv_cache import check_tokens

        spec = self.spec
        graph = self.graph(self.position, len(tokens))
        check_tokens(tokens, graph.outputs[self.logits].shape[-1])
        feeds = {spec.input_ids: np.array([list(tokens)], _dtype(graph, spec.input_ids))}
        if spec.attention_mask:
            feeds[spec.attention_mask] = np.ones((1, self.position + len(tokens)),
                                                 _dtype(graph, spec.attention_mask))
        if spec.position_ids:
            feeds[spec.position_ids] = np.arange(self.position, self.position + len(tokens),
                                                 dtype=_dtype(graph, spec.position_ids)
                                                 ).reshape(1, -1)
        if self.past is not None:
            feeds.update(self.past)
        out = run(graph, feeds)
        self.last_graph = graph
        self.past = {name: out[present] for name, present in spec.pairs}
        self.position += len(tokens)
        return list(np.asarray(out[self.logits]).reshape(len(tokens), -1))

    def feed(self, token: int) -> np.ndarray:
        return self.prefill([token])[0]


def _dtype(graph: Graph, name: str):
    from .. import dtypes

    return dtypes.numpy_dtype(graph.inputs[name].data_type)
