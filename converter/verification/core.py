"""Parity: the source model on its own runtime vs the WebNN graph on an executor.

    report = verify("model.onnx", seed=0)        # imports the model itself
    report = verify("model.onnx", graph=g)       # or checks a graph converted earlier
    report.passed, report.to_json()

Inputs the caller gives (`feeds`) are used as they are; the others are seeded values that suit
what the input's name and the graph say (`make_inputs`): masks all ones, position ids a range,
lengths the sequence length, integer inputs that index an embedding (Gather data) within its
rows, other integers in [0, 10), floats in [0, 1), bool inputs 0 or 1. The report states the
seed, how each input was made and the bounds used.

Both sides run with the same session options (ONNX Runtime at DISABLE_ALL, as the executor
runs the lowered graph: no fusion, each runtime holding the weights once). An output outside the budget of the source's run is judged against the
truth (`parity.judge`): the graph evaluated in float64 by the reference interpreter, the
source's own noise (its runtime run other ways, `source_runs`) and the source run in float64
where its runtime can; the report gives both errors against float64 and the deciding rule.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..emit.permuted_record import module_permutations
from ..errors import ConverterError, NoSourceRuntimeError
from ..ir import Graph, io_permutations
from ..runtimes.source_runs import (SESSION_OPTIONS, dynamic_lstm_nodes, int8_activation_nodes,
                                   release_freed_memory, run_source, run_source_f64,
                                   source_alternates)
from .notes import degenerate, overruled, quantized_lstm_note
from .output_bounds import float16_notes, output_bounds
from .parity import Bounds, OutputParity, compare, judge, with_overrides
from .source_kind import empty_inputs, source_int_limits, source_kind
from .text import BISECT_HINT, report_lines, summary

__all__ = ["VerifyReport", "verify", "make_inputs", "as_graph_feeds", "BISECT_HINT",
           "source_int_limits", "UNJUDGED"]

UNJUDGED = "unjudged: no source runtime"




@dataclass
class VerifyReport:
    source: str
    graph: str | None
    seed: int
    source_runtime: str
    graph_runtime: str
    inputs: dict[str, dict[str, Any]]
    outputs: list[OutputParity] = field(default_factory=list)
    others: dict[str, list[OutputParity]] = field(default_factory=dict)
    session_options: str = ""
    oracle: str | None = None  # how the float64 values were computed, or why they were not
    source_f64: str | None = None  # whether the source ran in float64, and how
    noise_runs: list[str] = field(default_factory=list)  # the source's other runs
    # Inputs/outputs the graph takes/gives transposed (ir/io_permutations.py): fed and compared
    # in the source's layout.
    permuted: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    # What makes a pass prove little, or a pass against the user's explicit bounds
    # (verification_notes.py).
    warnings: list[str] = field(default_factory=list)
    # Source outputs the graph lacks because they hold no values ({"name", "shape"}): the
    # import drops them, as WebNN has no empty tensors; listed, not compared.
    dropped: list[dict] = field(default_factory=list)
    # What the report judges against besides the source's run, when that run is not the
    # model's math (MatMulNBits with int8 activations).
    notes: list[str] = field(default_factory=list)
    # Why no source runtime could run the source (NoSourceRuntimeError), when none could: the
    # graph's outputs are then compared with its own float64 evaluation only.
    unjudged: str | None = None

    @property
    def passed(self) -> bool:
        """Whether the graph computes what the source does (never, when nothing could run
        the source: see `verdict`)."""
        return self.unjudged is None and self._within()

    def _within(self) -> bool:
        return bool(self.outputs) and all(o.passed for o in self.outputs) and all(
            o.passed for results in self.others.values() for o in results)

    @property
    def verdict(self) -> str:
        """"pass", "mismatch", or UNJUDGED: no source runtime could run the source, and the
        graph's outputs agree with its float64 evaluation (they say nothing of whether the
        conversion kept the source's meaning)."""
        if self.unjudged is not None and self._within():
            return UNJUDGED
        return "pass" if self.passed else "mismatch"

    def lines(self) -> list[str]:
        """The lines `webnn-convert verify` prints (piped): a table per comparison, then the
        notes and the verdict; str(report) joins them."""
        return report_lines(self)

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return summary(self)

    def to_json(self) -> dict:
        out = {
            "source": self.source, "graph": self.graph, "seed": self.seed,
            "sourceRuntime": self.source_runtime, "graphRuntime": self.graph_runtime,
            "inputs": self.inputs, "passed": self.passed, "verdict": self.verdict,
            "outputs": [o.to_json() for o in self.outputs],
            "others": {k: [o.to_json() for o in v] for k, v in self.others.items()},
            "sessionOptions": self.session_options, "oracle": self.oracle,
            "sourceFloat64": self.source_f64, "sourceNoiseRuns": self.noise_runs,
            "droppedOutputs": self.dropped,
        }
        if self.permuted:
            out["permuted"] = self.permuted
        if self.warnings:
            out["warnings"] = self.warnings
        if self.notes:
            out["notes"] = self.notes
        if self.unjudged is not None:
            out["unjudged"] = self.unjudged
        if self.verdict == "mismatch":
            out["hint"] = BISECT_HINT
        return out


def make_inputs(graph: Graph, seed: int, int_limits: Mapping[str, int] | None = None, *,
                in_source_layout: bool = False
                ) -> tuple[dict[str, np.ndarray], dict[str, dict]]:
    """Seeded inputs for every graph input, and a description of how each was made.

    With `in_source_layout`, an input the conversion transposed (`--io-layout`,
    ir/io_permutations.py) is made in the source model's shape: the same values whichever
    layout the graph presents; `io_permutations.to_graph_inputs` transposes them for the graph.

    Every input is drawn in order from one generator (floats in [0, 1); integers below
    `int_limits[name]`, the embedding's rows, else 10; uint8 0 or 1), so an input's values do
    not depend on the rules below. Then what the name says replaces the draw, because random
    values there make the model itself fail or compute nonsense: a mask (`attention_mask`,
    any name with `mask`) is all ones; position ids (`position_ids`) count 0, 1, ... along the
    last axis; a length (`*_length*`) is the sequence length L and `seqlens_k` (a length
    counted from zero) L - 1, L being the last axis of a mask input, else of an integer input.
    """
    from .. import dtypes

    from ..ir.io_permutations import source_shape

    rng = np.random.default_rng(seed)
    feeds, described = {}, {}
    for name, operand in graph.inputs.items():
        np_type = dtypes.numpy_dtype(operand.data_type)
        shape = source_shape(graph, name) if in_source_layout else operand.shape
        if np_type.kind == "f":
            arr, drawn = rng.random(shape, dtype=np.float64).astype(np_type), [0.0, 1.0]
            made = "seeded uniform in [0, 1)"
        else:
            limit = (int_limits or {}).get(name)
            hi = limit or (2 if operand.data_type == "uint8" else 10)
            arr, drawn = rng.integers(0, hi, shape).astype(np_type), [0, hi]
            made = (f"seeded within the embedding's {limit} rows" if limit else
                    f"seeded integers in [0, {hi})")
        feeds[name] = arr
        described[name] = {"dataType": operand.data_type, "shape": list(shape),
                           "range": drawn, "made": made}
    length = _sequence_length(graph, in_source_layout)
    for name, operand in graph.inputs.items():
        rule = _named_rule(name, dtypes.numpy_dtype(operand.data_type).kind, length)
        if rule is not None:
            feeds[name], described[name]["range"], described[name]["made"] = rule(feeds[name])
    return feeds, described


def _named_rule(name: str, kind: str, length: tuple[int, str] | None):
    """What an input's name says its values are, as a function of the drawn array; None when
    the name says nothing."""
    key = name.lower()
    if "mask" in key:
        return lambda a: (np.ones_like(a), [1, 1], "all ones (a mask)")
    if kind not in "iu":
        return None
    if key == "position_ids" or key.endswith(".position_ids") or key.endswith("/position_ids"):
        def positions(a):
            n = a.shape[-1] if a.ndim else 1
            counted = np.arange(n) if a.ndim else np.array(0)  # a scalar id is position 0
            return (np.broadcast_to(counted, a.shape).astype(a.dtype).copy(), [0, n - 1],
                    f"0 .. {n - 1} along the last axis (position ids)")
        return positions
    if length is not None and (key == "seqlens_k" or "_length" in key):
        n, source = length
        value = n - 1 if key == "seqlens_k" else n
        counted = " - 1 (counted from zero)" if key == "seqlens_k" else ""
        return lambda a: (np.full_like(a, value), [value, value],
                          f"the sequence length {n}{counted}, the last axis of {source}")
    return None


def _sequence_length(graph: Graph, in_source_layout: bool) -> tuple[int, str] | None:
    """The length a length input counts up to: the last axis of a mask input, else of the
    first integer input of rank >= 2 (token ids), with the input it came from."""
    from .. import dtypes
    from ..ir.io_permutations import source_shape

    def shape(name):
        return source_shape(graph, name) if in_source_layout else graph.inputs[name].shape

    candidates = [(name, o) for name, o in graph.inputs.items() if len(o.shape) >= 1]
    masks = [(n, o) for n, o in candidates if "mask" in n.lower()]
    ids = [(n, o) for n, o in candidates if len(o.shape) >= 2
           and dtypes.numpy_dtype(o.data_type).kind in "iu"]
    for name, _ in masks + ids:
        return shape(name)[-1], f"'{name}'"
    return None


def as_graph_feeds(graph: Graph, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Feeds as the graph takes them: a bool array for a uint8 input (WebNN has no bool; a
    source's bool input is uint8 0/1 in the graph) becomes uint8."""
    out = {}
    for name, value in feeds.items():
        value = np.asarray(value)
        operand = graph.inputs.get(name)
        if value.dtype == np.bool_ and operand is not None and operand.data_type == "uint8":
            value = value.astype(np.uint8)
        out[name] = value
    return out


def verify(source: str | Path, graph: Graph | str | Path | None = None, *, seed: int = 0,
           dims: Mapping[str, int] | None = None,
           input_shapes: Mapping[str, Sequence[int]] | None = None,
           feeds: Mapping[str, np.ndarray] | None = None,
           known_inputs: Mapping[str, np.ndarray] | None = None, atol: float | None = None,
           rtol: float | None = None, ulp: int | None = None, runtime: str = "ort",
           graph_path: str | None = None, also: Mapping[str, str] | None = None,
           oracle: str = "auto") -> VerifyReport:
    """Run the source on its own runtime and the WebNN graph on `runtime`; judge every output.

    An output within the budget of the source's run passes. One that is not is judged
    against the truth (`parity.judge`): the graph evaluated in float64 by the reference
    interpreter, the source's own float32 noise (its runtime run other ways) and, where its
    runtime can, the source run in float64. `oracle`: "auto" computes those only when an output
    is outside the budget, "always" for every report (the figures are then in every row),
    "never" keeps the plain comparison.

    `also` maps a label to a model file written from the graph (an exported `.tflite`), which
    its own runtime runs on the same inputs as a further opinion, compared with the source.

    `graph` may also be the path of an emitted JavaScript module (`.js`, its weights beside it),
    run with runtime="chromium": built at `dims` when it was written for several values of
    them, and judged against the source at the same dims (the float64 oracle is then the
    source converted now at those dims).
    """
    from ..runtimes.execute import run_described

    module = None
    if isinstance(graph, (str, Path)):
        module = Path(graph)
        if module.suffix != ".js":
            raise ConverterError("verify takes a Graph, or the path of an emitted .js module",
                                 where=str(module), fix="load a .webnn/.json graph first")
        if runtime != "chromium":
            raise ConverterError("a JavaScript module runs in the browser", where=str(module),
                                 fix="give runtime='chromium' (CLI: --runtime chromium)")
        graph, graph_path = None, graph_path or str(module)

    if oracle not in ("auto", "always", "never"):
        raise ConverterError(f"unknown oracle mode '{oracle}'", fix="use auto, always or never")
    source = Path(source)
    src = source_kind(source)
    if graph is None:
        from ..conversion.by_suffix import load_any

        graph = load_any(source, dims=dims, input_shapes=input_shapes, known_inputs=known_inputs)
        if module is not None:  # the module's boundary, as convert --io-layout wrote it
            io_permutations.present(graph, module_permutations(module),
                                    str(module))
    limits = src.int_limits(source)
    # Inputs are made and given in the source model's layout; the graph is fed them
    # transposed where a conversion transposed its boundary (--io-layout), and its outputs
    # are transposed back before they are compared.
    drawn, described = make_inputs(graph, seed, limits, in_source_layout=True)
    if feeds:
        for name, value in feeds.items():
            if name not in graph.inputs:
                raise ConverterError(f"no graph input named '{name}'",
                                     fix=f"inputs are: {', '.join(graph.inputs)}")
            io_permutations.check_given(graph, name, value)
            drawn[name] = as_graph_feeds(graph, {name: value})[name]
            described[name] = {"dataType": graph.inputs[name].data_type,
                               "shape": list(np.shape(value)), "range": "given",
                               "made": "given"}
    for name, perm in io_permutations.permutations(graph)["inputs"].items():
        described[name]["graphTakes"] = f"transposed by {perm}"
    internal_state = set()
    for var in graph.state:  # one step from the initial state, on both sides
        from ..ir.state import initial_value

        drawn[var.input] = io_permutations.to_source_inputs(
            graph, {var.input: initial_value(graph, var)})[var.input]
        described[var.input] = {"dataType": graph.inputs[var.input].data_type,
                                "shape": list(graph.inputs[var.input].shape),
                                "range": "initial state", "made": "the initial state"}
        if source.suffix.lower() == ".tflite":  # LiteRT keeps its variables inside
            internal_state.add(var.input)
    source_feeds = {k: v for k, v in drawn.items() if k not in internal_state}
    for name, value in (known_inputs or {}).items():  # fixed in the graph, fed to the source
        source_feeds[name] = np.asarray(value)
        described[name] = {"shape": list(np.shape(value)), "range": "fixed at conversion",
                           "made": "fixed at conversion (--const)"}
    if src.runtime == "onnxruntime" and dims and 0 in dims.values():
        source_feeds.update(empty_inputs(source, dims, source_feeds))  # constants in the graph
    from ..formats.weights import release_constant_pages

    release_constant_pages(graph)  # the source's runtime reads its own copy of the weights
    no_source = None
    try:
        want = run_source(source, source_feeds)
    except NoSourceRuntimeError as e:  # judged against the graph's float64 value alone
        want, no_source = None, e
    except ConverterError:
        why = io_permutations.unrecorded(graph, src.input_shapes(source))
        if why is None:
            raise
        raise ConverterError(why, where=str(source), fix="convert the graph again (its file "
                             "then records the layout), or verify SOURCE --target T "
                             "--io-layout L") from None
    release_freed_memory()  # the source's session is gone: the executor's peak starts low
    graph_feeds = io_permutations.to_graph_inputs(graph, drawn)
    ran_on = "webnn-onnx" if runtime == "ort" else runtime
    if module is None:
        got, ran_on = run_described(graph, graph_feeds, runtime=runtime)
    else:
        from ..runtimes.chromium import run_module

        got = run_module(module, graph_feeds, graph, dims)
    got = io_permutations.to_source_outputs(graph, got)
    release_freed_memory()  # the executor's session is gone: the oracle's runs start low
    report = VerifyReport(str(source), graph_path, seed, src.runtime,
                          ran_on, described,
                          session_options=SESSION_OPTIONS[source.suffix.lower()],
                          permuted=io_permutations.described(graph))
    if no_source is not None:
        return _unjudged(report, no_source, graph, graph_feeds, got, atol, rtol, ulp)
    report.dropped = [{"name": n, "shape": [int(d) for d in np.shape(v)]}
                      for n, v in want.items() if n not in graph.outputs and np.size(v) == 0]
    want = {n: v for n, v in want.items() if n in graph.outputs or np.size(v)}
    int8_nodes = int8_activation_nodes(source)
    if int8_nodes:
        report.notes.append(
            f"ONNX Runtime quantizes the activations of {int8_nodes} MatMulNBits node"
            f"{'s' * (int8_nodes != 1)} to int8 at run time (accuracy_level 4); the graph "
            "computes them in float, the model's math: an output outside the budget is judged "
            "against the float64 oracle, ORT at accuracy_level 0 measuring what that "
            "quantization moves")
    lstm_nodes = dynamic_lstm_nodes(source)
    if lstm_nodes:
        report.notes.append(quantized_lstm_note(lstm_nodes))
    bounds = {name: _bounds(graph, name, atol, rtol, ulp) for name in want}
    if atol is None and rtol is None and ulp is None:
        report.notes += float16_notes(graph, want)
    report.outputs = _compare_all(graph, want, got, str(source), bounds)
    if oracle == "always" or (oracle == "auto" and not all(o.passed for o in report.outputs)):
        truth, report.oracle = _float64_oracle(graph, graph_feeds)
        truth = None if truth is None else io_permutations.to_source_outputs(graph, truth)
        double, report.source_f64 = run_source_f64(source, source_feeds)
        floats = {n for n, o in graph.inputs.items() if o.data_type in ("float32", "float16")}
        alternates = source_alternates(source, source_feeds, floats)
        report.noise_runs = list(alternates)
        report.outputs = [
            judge(name, got[name], _as_webnn(want[name]),
                  None if truth is None else truth.get(name), bounds[name],
                  graph.outputs[name].data_type,
                  source_f64=None if double is None else double.get(name),
                  alternates={k: _as_webnn(v[name]) for k, v in alternates.items() if name in v})
            for name in want]
    explicit = {"atol": atol, "rtol": rtol, "ulp": ulp}
    report.warnings = [w for w in (overruled(o, explicit) for o in report.outputs) if w]
    report.warnings += [w for w in (degenerate(n, want[n], bounds[n]) for n in want) if w]
    for label, path in (also or {}).items():  # further opinions: e.g. an exported .tflite
        other = io_permutations.to_source_outputs(  # an export keeps the graph's layout
            graph, source_kind(Path(path)).run(Path(path), graph_feeds))
        report.others[label] = _compare_all(graph, want, other, str(path), bounds)
    return report


def _unjudged(report: VerifyReport, no_source: ConverterError, graph: Graph,
              graph_feeds: Mapping[str, np.ndarray], got: Mapping[str, np.ndarray],
              atol, rtol, ulp) -> VerifyReport:
    """The report when no runtime can run the source: each output of the graph against the
    graph evaluated in float64 (which checks the executor, not the conversion)."""
    truth, report.oracle = _float64_oracle(graph, graph_feeds)
    if truth is None:  # nothing at all to judge against
        raise ConverterError(f"{no_source.what}, and {report.oracle}", where=no_source.where,
                             fix=no_source.fix)
    truth = io_permutations.to_source_outputs(graph, truth)
    report.unjudged = no_source.what
    if atol is None and rtol is None and ulp is None:
        report.notes += float16_notes(graph, graph.outputs)
    report.source_f64 = "no source run"
    report.session_options = "no source runtime: the graph against its own float64 value"
    for name in graph.outputs:
        operand = graph.outputs[name]
        expected = np.asarray(truth[name]).astype(np.asarray(got[name]).dtype)
        result = compare(name, got[name], expected, _bounds(graph, name, atol, rtol, ulp),
                         operand.data_type)
        result.extra["decidedBy"] = "webnn vs f64 (no source runtime)"
        report.outputs.append(result)
    return report


def _float64_oracle(graph: Graph, feeds: Mapping[str, np.ndarray]
                    ) -> tuple[dict[str, np.ndarray] | None, str]:
    """The graph's outputs computed in float64 by the reference interpreter, and a note."""
    try:
        from .reference import evaluate
    except ImportError as e:  # pragma: no cover - the interpreter ships with the converter
        return None, f"no float64 oracle: {e}"
    try:
        return evaluate(graph, feeds, dtype=np.float64), \
            "the graph in float64 (reference interpreter)"
    except ConverterError as e:
        return None, f"no float64 oracle: {e.line()}"
    except NotImplementedError as e:  # an op the interpreter has no kernel for
        return None, f"no float64 oracle: {e}"
    except MemoryError:  # float64 doubles every tensor: a big model may not fit twice
        return None, "no float64 oracle: out of memory evaluating the graph in float64"


def _as_webnn(value: np.ndarray) -> np.ndarray:
    value = np.asarray(value)
    return value.view(np.uint8) if value.dtype == np.bool_ else value


def _bounds(graph: Graph, name: str, atol, rtol, ulp) -> Bounds:
    """The bounds of one output under the policy for its data type and the user's overrides."""
    operand = graph.outputs.get(name)
    if operand is None:
        raise ConverterError(f"no output '{name}' in the graph where the source has one",
                             where=f"graph '{graph.name}'")
    return with_overrides(output_bounds(graph, name), atol, rtol, ulp)


def _compare_all(graph: Graph, want: Mapping[str, np.ndarray], got: Mapping[str, np.ndarray],
                 where: str, bounds: Mapping[str, Bounds]) -> list[OutputParity]:
    """Every output of `want` compared with `got` under its bounds."""
    results = []
    for name, expected in want.items():
        if name not in got:
            raise ConverterError(f"no output '{name}' where the source has one", where=where)
        results.append(compare(name, got[name], _as_webnn(expected), bounds[name],
                               graph.outputs[name].data_type))
    return results
