"""Step-wise parity of a decoder: greedy decoding through the WebNN graph
(state/generation.py, on ONNX Runtime or in Chromium) against the source decoder on ONNX
Runtime in its own concat form.

    report = verify_decoding("model.onnx", graph, prompt=[1, 5, 9], steps=32)
    report.passed   # the same greedy tokens, and every position's logits within the bounds

Positions are compared while both sides have been fed the same tokens: the prompt's, then each
new token up to (and including) the step where the two first choose differently, after which
they decode different texts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import ConverterError
from .parity import OutputParity, compare, with_overrides
from .core import output_bounds

__all__ = ["DecodeReport", "verify_decoding"]


@dataclass
class DecodeReport:
    source: str
    graph: str | None
    prompt: list[int]
    source_tokens: list[int]
    graph_tokens: list[int]
    positions: list[OutputParity] = field(default_factory=list)
    source_runtime: str = "onnxruntime"
    graph_runtime: str = "webnn-onnx"

    @property
    def first_divergence(self) -> int | None:
        """The index of the first new token the two sides chose differently."""
        for k, (a, b) in enumerate(zip(self.source_tokens, self.graph_tokens)):
            if a != b:
                return k
        return None

    @property
    def passed(self) -> bool:
        return self.first_divergence is None and bool(self.positions) and \
            len(self.source_tokens) == len(self.graph_tokens) and \
            all(p.passed for p in self.positions)

    @property
    def worst(self) -> OutputParity:
        return max(self.positions, key=lambda p: (not p.passed, p.max_abs))

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "graph": self.graph, "prompt": self.prompt,
                "sourceRuntime": self.source_runtime, "graphRuntime": self.graph_runtime,
                "sourceTokens": self.source_tokens, "graphTokens": self.graph_tokens,
                "firstDivergence": self.first_divergence, "passed": self.passed,
                "positions": [p.to_json() for p in self.positions]}


def verify_decoding(source: str | Path, graph, *, prompt: Sequence[int], steps: int,
                    patterns: Sequence[tuple[str, str]] | None = None,
                    dims: Mapping[str, int] | None = None, atol: float | None = None,
                    rtol: float | None = None, ulp: int | None = None,
                    graph_path: str | None = None, runtime: str = "ort") -> DecodeReport:
    """`steps` greedy tokens after `prompt` on both sides; every shared position's logits
    compared under the logits output's bounds (the whole-model policy unless overridden).
    `graph` is a fixed-capacity decoder Graph, run on `runtime` ('ort', or 'chromium': a
    Session whose caches stay on the browser's context), or a loop generate() drives (a
    ConcatLoop, a graph per length, on ONNX Runtime only)."""
    from ..state.generation import DecoderLoop, generate, generate_on_onnxruntime
    from ..runtimes.session import Session

    if hasattr(graph, "prefill"):  # a ConcatLoop
        if runtime != "ort":
            raise ConverterError("the concat form (a graph per length) runs on ort",
                                 fix="give --cache-capacity N: one graph for every step, which "
                                     "the browser steps")
        loop = graph
        ours = generate(loop, prompt, steps)
        graph = loop.last_graph
    else:
        with Session(graph, runtime=runtime) as session:
            loop = DecoderLoop(session)
            ours = generate(loop, prompt, steps)
    theirs = generate_on_onnxruntime(source, prompt, steps, patterns=patterns, dims=dims)
    report = DecodeReport(str(source), graph_path, [int(t) for t in prompt], theirs.tokens,
                          ours.tokens, graph_runtime="webnn-onnx" if runtime == "ort" else runtime)
    split = report.first_divergence
    shared = len(prompt) + (len(ours.tokens) - 1 if split is None else split)
    bounds = with_overrides(output_bounds(graph, loop.logits), atol, rtol, ulp)
    data_type = graph.outputs[loop.logits].data_type
    for k in range(min(shared, len(ours.logits), len(theirs.logits))):
        report.positions.append(compare(f"{loop.logits}[{k}]", ours.logits[k],
                                        theirs.logits[k], bounds, data_type))
    return report
