"""The concat form of a decoder's KV cache: each step appends its rows to the past, so the
state grows and every length is another static graph. `ConcatLoop` converts the model once per
(past length, new tokens) it meets and carries the present outputs into the next step's past.

    loop = ConcatLoop("model.onnx")
    converter.generate(loop, prompt_ids, max_new_tokens=8)   # 1 + 7 conversions
    loop.conversions                                           # graphs made so far

The first step has no past. An unmerged pair's decoder_model.onnx is that step's model; a
merged decoder takes its no-cache branch (use_cache_branch fixed false); else the past inputs
are zero-row tensors, which WebNN has no operand for: the importer takes inputs of no elements
as constants (a Shape of one folds, a Concat drops it), and an attention op
(GroupQueryAttention, MultiHeadAttention) gets its past slots emptied (`without_past`). Each
conversion costs what a `convert` does, so this form suits short runs and checks; each step's
graph runs on ONNX Runtime, or (`runtime="chromium"`) in the emitted module's session in
Chromium; `target` (e.g. 'chromium-litert') fits each graph to a backend's limits as `convert
--target` does (a q4 model's uint4 weights, which Chromium refuses). A fixed capacity
(`--cache-capacity`) makes one graph for every step, the browser's.
An encoder-decoder's loop (state/seq2seq.py) adds the encoder's side through the hooks
`side_shapes`, `side_feeds` and `took`.
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
                                 fix="convert with --cache-capacity N (one graph, its cache a "
                                     "buffer or a sliding window)")
    kept_inputs = [v for v in model.graph.input if v.name not in past]
    del model.graph.input[:]
    model.graph.input.extend(kept_inputs)


class ConcatLoop:
    """A decoder in its concat form on ONNX Runtime, converted once per length."""

    def __init__(self, path: str | Path, *, patterns: Sequence[tuple[str, str]] | None = None,
                 dims: Mapping[str, int] | None = None, logits: str = "logits",
                 max_graphs: int = 8, runtime: str = "ort", target: str | None = None):
        if runtime not in ("ort", "chromium"):
            raise ConverterError(f"the concat form runs on 'ort' or 'chromium', not '{runtime}'")
        self.spec: DecoderSpec = read_decoder_spec(Path(path), patterns, dims)
        self.path = self.spec.path
        self.extra = dict(dims or {})
        self.logits = logits
        self.runtime = runtime  # each step's graph runs there (chromium: in the module's session)
        self.target = target  # each step's graph is fitted to it (None: WebNN as imported)
        self.max_graphs = max_graphs  # converted graphs kept (the oldest dropped first)
        self._graphs: dict[tuple[int, int], Graph] = {}
        self.conversions = 0
        self.reset()

    def reset(self) -> None:
        self.last_graph: Graph | None = None  # the graph of the latest step
        self.past: dict[str, np.ndarray] | None = None
        self.position = 0

    def graph(self, past: int, step: int) -> Graph:
        """The static graph of `step` new tokens after `past` rows (converted on first use).
        The first step (no past) is an unmerged pair's decoder_model.onnx, a merged
        decoder's no-cache branch, else the model with an empty past: inputs of no elements
        are constants to the importer (a Shape of one is known, a Concat drops it), and an
        attention op's past slots are left empty (`without_past`)."""
        key = (past, step)
        if key not in self._graphs:
            from ..importers.onnx import import_model
            from ..importers.onnx.model_file import read_model

            spec = self.spec
            first = past == 0 and spec.first_path is not None
            path = spec.first_path if first else spec.path
            model, arrays, budget = read_model(path)
            dims = spec.dims(past=past, step=step, extra=self.extra)
            attention = {op for ops in spec.readers.values() for op in ops} & \
                {op for _, op in _PAST_SLOTS}
            if past == 0 and not first and attention:
                without_past(model, [p for p, _ in spec.pairs], str(path))
            if past == 0 and (first or attention):  # no past input left to size
                dims.pop(spec.past_dim, None)
            if first:  # the no-past file names only some of the dims
                dims = {k: v for k, v in dims.items() if k in _dim_names(model)}
            graph = import_model(model, arrays, dims=dims, where=str(path),
                                 input_shapes={**spec.input_shapes(past + step),
                                               **self.side_shapes(past, model)},
                                 known_inputs=spec.known(past) if not first else None,
                                 name=Path(path).stem, budget=budget, isolate=True)
            self.fit(graph)
            if len(self._graphs) >= self.max_graphs:
                self._graphs.pop(next(iter(self._graphs)))
            self._graphs[key] = graph
            self.conversions += 1
        return self._graphs[key]

    def prefill(self, tokens: Sequence[int]) -> list[np.ndarray]:
        """Feed `tokens` in one step; the logits row of each."""
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
        feeds.update(self.side_feeds(graph))
        out = self._run(graph, feeds)
        self.last_graph = graph
        self.past = {name: out[present] for name, present in spec.pairs}
        self.took(out)
        self.position += len(tokens)
        return list(np.asarray(out[self.logits]).reshape(len(tokens), -1))

    def feed(self, token: int) -> np.ndarray:
        return self.prefill([token])[0]

    def fit(self, graph: Graph) -> None:
        """Rewrite a step's graph in place for the loop's target, if it has one."""
        if self.target is not None:
            from ..targets.pipeline import convert_for_target

            convert_for_target(graph, self.target)

    def _run(self, graph: Graph, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One run of a step's graph: on ONNX Runtime, or in Chromium through the emitted
        module's session (the graph has no state: a session of one step)."""
        if self.runtime == "ort":
            from ..runtimes.execute import run

            return run(graph, feeds)
        from ..runtimes.session import Session

        with Session(graph, runtime=self.runtime) as session:
            return session.step(feeds)

    # What an encoder-decoder adds to each step (state/seq2seq.py); a decoder adds nothing.
    def side_shapes(self, past: int, model) -> dict[str, list[int]]:
        """The shapes of the inputs `model` (the step's ModelProto) takes besides the tokens,
        mask, positions and self caches."""
        return {}

    def side_feeds(self, graph: Graph) -> dict[str, np.ndarray]:
        """Their values, for the inputs `graph` takes."""
        return {}

    def took(self, out: Mapping[str, np.ndarray]) -> None:
        """Keep what a step's outputs give beside the self caches."""


def _dim_names(model) -> set[str]:
    """The symbolic dims of a model's inputs and outputs, and the names their expressions
    read."""
    from ..importers.onnx.dim_expressions import names_in

    names = {d.dim_param for v in [*model.graph.input, *model.graph.output]
             for d in v.type.tensor_type.shape.dim if d.HasField("dim_param")}
    return names | {n for name in names for n in names_in(name)}


def _dtype(graph: Graph, name: str):
    from .. import dtypes

    return dtypes.numpy_dtype(graph.inputs[name].data_type)
