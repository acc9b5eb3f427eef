"""Step-wise parity of a decoder: greedy decoding through the WebNN graph
(state/generation.py, on ONNX Runtime or in Chromium) against the source decoder on ONNX
Runtime in its own concat form (the prompt one token a step, as the window takes it, where
DynamicQuantizeLinear makes a row's numbers depend on the rows computed with it: q8).

    report = verify_decoding("model.onnx", graph, prompt=[1, 5, 9], steps=32)
    report.passed   # the same greedy tokens, and every position's logits within the bounds

A source that quantizes its activations at run time (DynamicQuantizeLinear) has the positions
outside float32's bounds judged against its own spread instead (quantized_spread.py), each
position saying in `decidedBy` what judged it, a note saying why.

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
from ..runtimes.source_runs import dynamic_quantize_nodes, int8_activation_nodes
from .output_bounds import output_bounds
from .notes import dynamic_quantize_note, spread_overruled
from .quantized_spread import SPREAD_RUNS, judge_by_spread, needs_spread

__all__ = ["DecodeReport", "verify_decoding", "compare_positions"]


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
    # What the logits were judged against, when ORT's own run is not the model's math
    # (MatMulNBits with int8 activations) or float32's bounds are not the yardstick
    # (DynamicQuantizeLinear: the source's own spread).
    notes: list[str] = field(default_factory=list)

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
    def verdict(self) -> str:
        """"pass" or "mismatch": a stepped comparison always has a source runtime (no
        unjudged form), named alike with VerifyReport.verdict for the callers of both."""
        return "pass" if self.passed else "mismatch"

    @property
    def worst(self) -> OutputParity:
        return max(self.positions, key=lambda p: (not p.passed, p.max_abs))

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "graph": self.graph, "prompt": self.prompt,
                "sourceRuntime": self.source_runtime, "graphRuntime": self.graph_runtime,
                "sourceTokens": self.source_tokens, "graphTokens": self.graph_tokens,
                "firstDivergence": self.first_divergence, "passed": self.passed,
                "positions": [p.to_json() for p in self.positions],
                **({"notes": self.notes} if self.notes else {})}


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

    one_step = hasattr(graph, "prefill")  # a ConcatLoop takes the prompt in one step
    if one_step:
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
    int8_nodes = int8_activation_nodes(Path(source))
    quantizers = dynamic_quantize_nodes(Path(source))
    # A window takes the prompt one token a step; where one scale quantizes all the rows
    # computed together, the source is fed so too (else its prompt rows are other numbers).
    dynamic_nodes = 0 if one_step else quantizers

    def on_ort(**how):
        return generate_on_onnxruntime(source, prompt, steps, patterns=patterns, dims=dims,
                                       float_activations=bool(int8_nodes),
                                       prompt_in_one_step=not dynamic_nodes, **how)

    theirs = on_ort()
    report = DecodeReport(str(source), graph_path, [int(t) for t in prompt], theirs.tokens,
                          ours.tokens, graph_runtime="webnn-onnx" if runtime == "ort" else runtime)
    if int8_nodes:
        # The graph computes the model's float math; ORT at accuracy_level 4 quantizes the
        # activations at run time, which moves the logits by more than float32's bounds.
        report.source_runtime = "onnxruntime (MatMulNBits at accuracy_level 0)"
        quantized = generate_on_onnxruntime(source, prompt, steps, patterns=patterns,
                                            dims=dims).tokens
        report.notes.append(
            f"ONNX Runtime quantizes the activations of {int8_nodes} MatMulNBits node"
            f"{'s' * (int8_nodes != 1)} to int8 at run time (accuracy_level 4); the logits "
            f"are compared with ORT at accuracy_level 0, the model's float math; at "
            f"accuracy_level 4 ORT chooses {_same_or(quantized, ours.tokens)}")
    if dynamic_nodes:
        report.source_runtime = (report.source_runtime[:-1] + "; " if int8_nodes else
                                 "onnxruntime (") + "the prompt one token a step)"
        whole = generate_on_onnxruntime(source, prompt, steps, patterns=patterns, dims=dims,
                                        float_activations=bool(int8_nodes)).tokens
        report.notes.append(
            f"{dynamic_nodes} DynamicQuantizeLinear node{'s' * (dynamic_nodes != 1)} quantize "
            f"each tensor with one scale over all its rows, so the prompt's logits depend on "
            f"how many tokens a step takes; the logits are compared with ORT fed the prompt "
            f"one token a step, as this graph takes it; fed the whole prompt in one step ORT "
            f"chooses {_same_or(whole, ours.tokens)}")
    compare_positions(report, graph, loop.logits, ours, theirs, len(prompt), atol, rtol, ulp)
    if quantizers:
        judge_quantized_positions(report, theirs, quantizers,
                                  lambda direction: on_ort(moved=direction,
                                                           forced=theirs.tokens),
                                  explicit=dict(atol=atol, rtol=rtol, ulp=ulp))
    return report


def judge_quantized_positions(report: DecodeReport, theirs, quantizers: int, rerun, *,
                              explicit: Mapping[str, object] | None = None) -> None:
    """A source with `quantizers` DynamicQuantizeLinear nodes: the positions outside their
    bounds judged against the source's own spread (quantized_spread.py), `rerun(direction)`
    being ORT's generation on theirs.tokens with every quotient moved that way; a note says
    how each position was judged, and which bounds the user gave (`explicit`: --atol/--rtol/
    --ulp) the spread overruled. Nothing is run when every position is within its bounds."""
    if not needs_spread(report):
        return
    moved = {label: rerun(direction).logits for direction, label in SPREAD_RUNS.items()}
    judged = judge_by_spread(report, theirs.logits, moved)
    passed = [k for k in judged if report.positions[k].passed]
    report.notes.append(dynamic_quantize_note(quantizers, judged, len(passed)))
    overruled = spread_overruled(len(passed), explicit)
    if overruled:
        report.notes.append(overruled)


def compare_positions(report: DecodeReport, graph, logits: str, ours, theirs, prompt_length: int,
                      atol, rtol, ulp) -> None:
    """Each position both sides were fed the same tokens for (the prompt's, then the new
    tokens up to the first that differs), its logits row compared under the bounds of
    `graph`'s output `logits`, into report.positions."""
    split = report.first_divergence
    shared = prompt_length + (len(ours.tokens) - 1 if split is None else split)
    bounds = with_overrides(output_bounds(graph, logits), atol, rtol, ulp)
    data_type = graph.outputs[logits].data_type
    for k in range(min(shared, len(ours.logits), len(theirs.logits))):
        report.positions.append(compare(f"{logits}[{k}]", ours.logits[k],
                                        theirs.logits[k], bounds, data_type))


def _same_or(theirs: list[int], ours: list[int]) -> str:
    """'the same tokens', or which tokens and where they first differ."""
    same = next((k for k, (a, b) in enumerate(zip(theirs, ours)) if a != b), None)
    if same is None and len(theirs) == len(ours):
        return "the same tokens"
    return f"tokens {theirs} (first differs at new token {same})"
