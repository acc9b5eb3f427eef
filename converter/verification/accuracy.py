"""The accuracy cost of a compressed graph (`--weights float16|int8|int4`) against the FLOAT source.

    report = measure_accuracy("model.onnx", compressed, weights="int8", bytes_before=n,
                              samples=16, accuracy="cosine>=0.99,top1>=0.99")
    report.passed, report.lines(), report.to_json()

The source runs on its own runtime (ONNX Runtime for .onnx, LiteRT for .tflite), the compressed
graph on `runtime` (ort, chromium, a device), on `samples` seeded inputs (sample i drawn by
verification.core.make_inputs with seed + i, so sample 0 is `verify`'s own), on the inputs
given, or on many samples given (`given_samples`: `verify --weights S --inputs DIR` with one
subfolder of NAME.npy files per sample, e.g. real photos, which move a classifier's choice
where seeded noise does not). The metrics (accuracy_metrics.py) are judged against the
bounds (accuracy_bounds.py): given ones, else the scheme's default, which the report states. This is the compressed graph's
own verdict, named "accuracy"; the float tolerance policy is not loosened for it (`verify
--weights` judges the uncompressed conversion by that policy, as without the option).

A decoder (`--prompt` with `--steps`) is measured by `decoding_accuracy` from its decoding
report: greedy-token agreement (the share of the steps decoded before the first token that
differs: after it the two sides continue different texts) and its logits' errors over the
positions both sides were fed alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..budget import format_size
from ..errors import ConverterError
from ..ir import Graph, io_permutations
from .accuracy_bounds import bound_text, bounds_for
from .accuracy_metrics import CLASSIFIER_RULE, OutputAccuracy, measure_output

__all__ = ["AccuracyReport", "Check", "measure_accuracy", "decoding_accuracy", "weights_bytes",
           "DEFAULT_SAMPLES"]

DEFAULT_SAMPLES = 16


def weights_bytes(graph: Graph) -> int:
    """The bytes of the weights a graph stores: every constant's tensor, fills (one value
    repeated, stored as that value) not counted."""
    return sum(c.constant.nbytes for c in graph.constants.values() if c.constant.fill is None)


@dataclass
class Check:
    """One bound applied to one output (or to the decoded tokens)."""

    metric: str
    output: str
    value: float
    bound: tuple[str, float]

    @property
    def passed(self) -> bool:
        op, limit = self.bound
        return bool(self.value >= limit) if op == ">=" else bool(self.value <= limit)

    def line(self) -> str:
        return f"{self.text()}: {'pass' if self.passed else 'FAIL'}"

    def text(self) -> str:
        """'cosine of y 0.9991 < 0.9999': the value against its bound, the way it went."""
        op = self.bound[0] if self.passed else _failed(self.bound[0])
        return f"{self.metric} of {self.output} {self.value:.10g} {op} {self.bound[1]:.12g}"

    def to_json(self) -> dict:
        value = self.value if np.isfinite(self.value) else str(self.value)
        return {"metric": self.metric, "output": self.output, "value": value,
                "bound": bound_text(self.metric, self.bound), "passed": self.passed}


def _failed(op: str) -> str:
    return "<" if op == ">=" else ">"


@dataclass
class AccuracyReport:
    weights: str
    bytes_before: int
    bytes_after: int
    samples: int
    seed: int
    inputs: str  # how the inputs were made
    source_runtime: str
    graph_runtime: str
    bounds: dict[str, tuple[str, float]]
    bounds_from: str
    outputs: list[OutputAccuracy] = field(default_factory=list)
    tokens: dict[str, Any] | None = None  # a decoder's greedy tokens, see decoding_accuracy
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        return self.bytes_after / self.bytes_before if self.bytes_before else None

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def verdict(self) -> str:
        """"pass" or "fail": the compressed graph's accuracy verdict, apart from the float one."""
        return "pass" if self.passed else "fail"

    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def size_line(self) -> str:
        ratio = "" if self.ratio is None else f", {self.ratio:.3f}x"
        return (f"weights: {format_size(self.bytes_before)} -> {format_size(self.bytes_after)} "
                f"({self.bytes_before} -> {self.bytes_after} bytes{ratio})")

    def lines(self) -> list[str]:
        from .text import aligned_lines

        lines = [f"accuracy of {self.weights} weights against the float source: "
                 f"{self.graph_runtime} vs {self.source_runtime}, {self.inputs}",
                 self.size_line()]
        rows = [(o.name, str(o.shape), f"{o.max_abs:.3g}", f"{o.max_rel:.3g}",
                 "-" if o.cosine is None else f"{o.cosine:.6f}",
                 "-" if o.top1 is None else f"{o.top1:.4f}",
                 "-" if o.top5 is None else f"{o.top5:.4f}") for o in self.outputs]
        lines += aligned_lines(("output", "shape", "max abs", "max rel", "cosine (worst)",
                                "top-1", "top-5"), rows)
        if any(o.class_axis is not None for o in self.outputs):
            lines.append(f"top-1/top-5: the rows of {CLASSIFIER_RULE}")
        if self.tokens is not None:
            t = self.tokens
            lines.append(f"greedy tokens: {t['agreed']} of {t['steps']} decoded alike "
                         f"(agreement {t['agreement']:.4f}); source {t['sourceTokens']}, "
                         f"graph {t['graphTokens']}")
        lines.append(f"bounds ({self.bounds_from}): "
                     + ", ".join(bound_text(m, b) for m, b in self.bounds.items()))
        lines += [f"  {c.line()}" for c in self.checks]
        lines += [f"note: {n}" for n in self.notes]
        failed = self.failures()
        lines.append("accuracy: pass" if self.passed else
                     "accuracy: fail (" + "; ".join(c.text() for c in failed) + ")" if failed else
                     "accuracy: fail (no bound applied)")
        return lines

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def to_json(self) -> dict:
        out = {"weights": self.weights,
               "weightsBytes": {"before": self.bytes_before, "after": self.bytes_after,
                                "ratio": self.ratio},
               "samples": self.samples, "seed": self.seed, "inputs": self.inputs,
               "sourceRuntime": self.source_runtime, "graphRuntime": self.graph_runtime,
               "bounds": {m: bound_text(m, b) for m, b in self.bounds.items()},
               "boundsFrom": self.bounds_from,
               "outputs": [o.to_json() for o in self.outputs],
               "checks": [c.to_json() for c in self.checks],
               "passed": self.passed, "verdict": self.verdict}
        if self.tokens is not None:
            out["tokens"] = self.tokens
        if self.notes:
            out["notes"] = self.notes
        return out


def judge(report: AccuracyReport, explicit: bool) -> AccuracyReport:
    """Apply every bound to every output it fits: cosine and the errors to each output (cosine
    to float outputs), top1/top5 to classifier-shaped ones, tokens to a decoder's tokens. A
    given bound that fits nothing is an error (a pass would say nothing); a default one that
    fits nothing is noted."""
    for metric, bound in report.bounds.items():
        if metric == "tokens":
            fits = [] if report.tokens is None else [("the decoded text",
                                                      report.tokens["agreement"])]
        else:
            fits = [(o.name, getattr(o, metric)) for o in report.outputs
                    if getattr(o, metric) is not None]
        if not fits:
            why = {"tokens": "decoded tokens (a decoder verified with --prompt and --steps)",
                   "top5": "a classifier-shaped output with more than 5 classes",
                   "top1": "a classifier-shaped output"}.get(metric, "a float output")
            if explicit:
                rule = f" ({CLASSIFIER_RULE})" if metric.startswith("top") else ""
                raise ConverterError(f"the accuracy bound {bound_text(metric, bound)} needs "
                                     f"{why}; this graph has none", where="--accuracy",
                                     fix=f"drop {metric}{rule}")
            report.notes.append(f"{bound_text(metric, bound)} not applied: no {why}")
            continue
        report.checks += [Check(metric, name, float(value), bound) for name, value in fits]
    for o in report.outputs:
        if o.class_axis is not None and o.rows > 1 and o.source_classes == 1:
            report.notes.append(f"the source ranked one class first in all {o.rows} rows of "
                                f"{o.name}: its top-1/top-5 agreement says little (give "
                                f"inputs that move it: --input/--inputs)")
    return report


def measure_accuracy(source: str | Path, graph: Graph, *, weights: str, bytes_before: int,
                     samples: int = DEFAULT_SAMPLES, seed: int = 0,
                     feeds: Mapping[str, np.ndarray] | None = None,
                     given_samples: Sequence[tuple[str, Mapping[str, np.ndarray]]] | None = None,
                     known_inputs: Mapping[str, Any] | None = None, runtime: str = "ort",
                     accuracy: str | Mapping | None = None) -> AccuracyReport:
    """The compressed `graph` against the float `source` on `samples` seeded inputs (or the
    inputs `feeds` gives: one sample when it gives every input), or on `given_samples`, one
    sample per (name, inputs) pair (inputs a pair leaves out seeded with seed + its index),
    judged by `accuracy` (text as --accuracy takes it) or the default for `weights`.
    `bytes_before`: the weights of the same conversion without compression (weights_bytes of
    it). Given inputs are checked against the graph's (name, data type, shape) first: a
    mismatch is one error naming the sample."""
    from ..runtimes.source_runs import run_source
    from .core import make_inputs
    from .source_kind import source_kind

    bounds, bounds_from = bounds_for(weights, accuracy)
    if samples < 1:
        raise ConverterError(f"{samples} samples: at least 1 is needed", where="--samples")
    if graph.state:
        raise ConverterError("the accuracy of a stateful graph is measured by decoding",
                             fix="give a decoder --prompt IDS and --steps N")
    source = Path(source)
    kind = source_kind(source)
    if given_samples is not None:
        if feeds:
            raise ConverterError("give inputs either once (feeds) or per sample, not both")
        if not given_samples:
            raise ConverterError("no samples given", fix="give at least one sample")
        labels = [str(label) for label, _ in given_samples]
        per_sample = [dict(given) for _, given in given_samples]
        samples = len(per_sample)
        left = set(graph.inputs) - set(per_sample[0])
        made = (f"{samples} sample{'s' * (samples != 1)} given"
                + (f", {', '.join(sorted(left))} seeded" if left else ""))
    else:
        feeds = dict(feeds or {})
        if feeds and set(feeds) >= set(graph.inputs):
            samples, made = 1, "the inputs given"
        else:
            made = (f"{samples} seeded input{'s' * (samples != 1)} (seeds {seed}.."
                    f"{seed + samples - 1})" + (", the others given" if feeds else ""))
        labels, per_sample = ["the inputs given"] * samples, [feeds] * samples
    limits = kind.int_limits(source)
    runs_source, runs_graph = [], []
    for i in range(samples):
        drawn, _ = make_inputs(graph, seed + i, limits, in_source_layout=True)
        drawn.update(_given(graph, per_sample[i], labels[i]))
        source_feeds = dict(drawn)
        source_feeds.update({k: np.asarray(v) for k, v in (known_inputs or {}).items()})
        runs_source.append(run_source(source, source_feeds))
        runs_graph.append(io_permutations.to_graph_inputs(graph, drawn))
    got, ran_on = _run_graph(graph, runs_graph, runtime)
    got = [io_permutations.to_source_outputs(graph, g) for g in got]
    report = AccuracyReport(weights, int(bytes_before), weights_bytes(graph), samples, seed,
                            made, kind.runtime, ran_on, bounds, bounds_from)
    from .output_bounds import computed_in_float16

    halves = [n for n, o in graph.outputs.items() if computed_in_float16(o)]
    if halves:  # --compute float16: the cost measured is that of float16 math too
        report.notes.append(f"{', '.join(halves)} computed in float16 inside the graph "
                            f"(float32 at its boundary): the figures include float16 "
                            f"compute's cost, not the weights' alone")
    for name in graph.outputs:
        if name not in runs_source[0]:
            raise ConverterError(f"no output '{name}' in the source", where=str(source))
        want = [np.asarray(r[name]) for r in runs_source]
        want = [w.view(np.uint8) if w.dtype == np.bool_ else w for w in want]
        report.outputs.append(measure_output(name, [g[name] for g in got], want))
    return judge(report, explicit=accuracy is not None)


def _given(graph: Graph, given: Mapping[str, Any], label: str) -> dict[str, np.ndarray]:
    """One sample's given inputs as the graph takes them (in the source's layout), each
    checked against the graph's input of its name: one error naming the sample and input."""
    from .. import dtypes
    from .core import as_graph_feeds

    out = as_graph_feeds(graph, given)
    for name, value in out.items():
        operand = graph.inputs.get(name)
        if operand is None:
            raise ConverterError(f"no graph input named '{name}'", where=label,
                                 fix=f"inputs are: {', '.join(graph.inputs)}")
        io_permutations.check_given(graph, name, value)
        want = dtypes.numpy_dtype(operand.data_type)
        shape = io_permutations.source_shape(graph, name) \
            if name in io_permutations.permutations(graph)["inputs"] else tuple(operand.shape)
        if value.dtype.newbyteorder("=") != want.newbyteorder("=") or value.shape != shape:
            raise ConverterError(f"input '{name}' is given as {value.dtype}{list(value.shape)};"
                                 f" the graph takes {operand.data_type}{list(shape)}",
                                 where=label, fix=f"give '{name}' as the source model takes it")
    return out


def _run_graph(graph: Graph, feeds: list[dict], runtime: str) -> tuple[list[dict], str]:
    """The graph's outputs for each feed: lowered once for ONNX Runtime, all in one page visit
    in Chromium, one request each on a device."""
    if runtime == "ort":
        from ..lowering.onnx.executor import prepare

        run = prepare(graph)
        return [run(f) for f in feeds], "webnn-onnx"
    if runtime == "chromium":
        from ..runtimes.chromium import run_chromium_many

        results = run_chromium_many([(graph, f) for f in feeds])
        for result in results:
            if isinstance(result, ConverterError):
                raise result
        return results, "chromium"
    from ..runtimes.execute import run_described

    runs = [run_described(graph, f, runtime) for f in feeds]
    return [r[0] for r in runs], runs[0][1]


def decoding_accuracy(decoded, *, weights: str, bytes_before: int, bytes_after: int,
                      accuracy: str | Mapping | None = None) -> AccuracyReport:
    """The accuracy of a compressed decoder from its decoding report (verification.decode's
    DecodeReport of the compressed graph against the float source): greedy-token agreement,
    and the logits' errors over the positions both sides were fed alike (the worst position's
    cosine)."""
    bounds, bounds_from = bounds_for(weights, accuracy)
    steps = len(decoded.source_tokens)
    split = decoded.first_divergence
    agreed = min(steps, len(decoded.graph_tokens)) if split is None else split
    positions = decoded.positions
    report = AccuracyReport(weights, int(bytes_before), int(bytes_after), len(positions),
                            0, f"the prompt {decoded.prompt} and {steps} greedy steps",
                            decoded.source_runtime, decoded.graph_runtime, bounds, bounds_from)
    report.tokens = {"steps": steps, "agreed": agreed,
                     "agreement": agreed / steps if steps else 0.0,
                     "sourceTokens": list(decoded.source_tokens),
                     "graphTokens": list(decoded.graph_tokens), "firstDivergence": split}
    if positions:
        name = positions[0].name.rsplit("[", 1)[0]
        cosines = [p.cosine for p in positions if p.cosine is not None]
        report.outputs.append(OutputAccuracy(
            name, [len(positions), *positions[0].shape], max(p.max_abs for p in positions),
            max(p.max_rel for p in positions), min(cosines) if cosines else None))
    return judge(report, explicit=accuracy is not None)
