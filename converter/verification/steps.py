"""Step-wise parity for stateful graphs: the source and the WebNN graph run N consecutive steps,
each carrying its own state, and every step's outputs are compared.

    report = verify_steps("wake.tflite", steps=20, seed=0)
    report.passed, report.to_json()

The source keeps its state the way it does in an app: a TFLite model runs on one LiteRT
Interpreter kept across the steps (it keeps its own resource variables); an ONNX model with
declared state is fed its own next-state outputs back (the graph's initial values at the
start). The graph runs in a `Session`. Step k's inputs are drawn as `verify` draws them, with
seed + k. Quantized outputs (an int8/uint8 output that a quantizeLinear makes) pass within one
quantization step, and the report counts the elements that differ at all.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import ConverterError
from ..ir import Graph
from ..ir.state import initial_value
from .parity import OutputParity, compare, with_overrides
from .core import output_bounds

__all__ = ["StepsReport", "verify_steps"]


@dataclass
class StepsReport:
    source: str
    graph: str | None
    seed: int
    source_runtime: str
    graph_runtime: str
    inputs: dict[str, dict[str, Any]]
    state: list[str]
    steps: list[list[OutputParity]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.steps) and all(o.passed for step in self.steps for o in step) and all(
            step for step in self.steps)

    @property
    def outputs(self) -> list[OutputParity]:
        """One result per output, the worst step's: its first failing step, else the step
        with the largest error (what a one-line summary of the run shows)."""
        worst: dict[str, OutputParity] = {}
        for step in self.steps:
            for o in step:
                held = worst.get(o.name)
                if held is None or (held.passed and (not o.passed or o.max_abs > held.max_abs)):
                    worst[o.name] = o
        return list(worst.values())

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per output, over every step: worst error, elements outside the bounds, elements
        that differ at all, and the first failing step."""
        out: dict[str, dict[str, Any]] = {}
        for k, step in enumerate(self.steps):
            for o in step:
                s = out.setdefault(o.name, {"maxAbs": 0.0, "mismatched": 0, "differing": 0,
                                            "elements": 0, "firstFailingStep": None})
                s["maxAbs"] = max(s["maxAbs"], o.max_abs)
                s["mismatched"] += o.mismatched
                s["differing"] += int(o.extra.get("differing", 0))
                s["elements"] += int(np.prod(o.shape, dtype=np.int64))
                if not o.passed and s["firstFailingStep"] is None:
                    s["firstFailingStep"] = k
        return out

    def to_json(self) -> dict:
        return {
            "source": self.source, "graph": self.graph, "seed": self.seed,
            "sourceRuntime": self.source_runtime, "graphRuntime": self.graph_runtime,
            "inputs": self.inputs, "state": self.state, "stepCount": len(self.steps),
            "passed": self.passed, "summary": self.summary(),
            "steps": [[{**o.to_json(), "differing": o.extra.get("differing", 0)} for o in step]
                      for step in self.steps],
        }


def verify_steps(source: str | Path, graph: Graph | None = None, *, steps: int = 20,
                 seed: int = 0, dims: Mapping[str, int] | None = None,
                 input_shapes: Mapping[str, Sequence[int]] | None = None,
                 feeds: Sequence[Mapping[str, np.ndarray]] | None = None,
                 atol: float | None = None, rtol: float | None = None, ulp: int | None = None,
                 graph_path: str | None = None, tensors: Sequence[str] = (),
                 runtime: str = "ort") -> StepsReport:
    """Run `steps` consecutive steps of the source and of its graph; compare every step.

    `feeds`, when given, is one mapping per step (its length sets the step count).
    `tensors` (TFLite sources) names intermediate tensors compared as well: each must be a
    graph operand of that name (the importer names results after their tensors), and becomes
    a graph output of that name; a next-state output's operand is the value the model assigns
    its variable, so naming it compares the state LiteRT keeps, step by step.
    """
    from ..runtimes.session import Session

    source = Path(source)
    if graph is None:
        from ..conversion.by_suffix import load_any

        graph = load_any(source, dims=dims, input_shapes=input_shapes)
    if feeds is not None:
        steps = len(feeds)
    if steps < 1:
        raise ConverterError(f"--steps must be at least 1, not {steps}")
    if runtime not in ("ort", "chromium"):
        raise ConverterError(f"step-wise verification runs the graph on 'ort' or 'chromium', "
                             f"not '{runtime}'")
    for name in tensors:
        if name not in graph.outputs:
            graph.set_output(name, graph.operand(name))
    source_step, source_runtime = _source_stepper(source, graph, tensors)
    session = Session(graph, runtime=runtime)
    try:
        return _compare_steps(session, source_step, StepsReport(
            str(source), graph_path, seed, source_runtime,
            "webnn-onnx" if runtime == "ort" else runtime, {},
            [f"{v.input} <- {v.output}" for v in graph.state]), steps, feeds, atol, rtol, ulp)
    finally:
        session.close()


def _compare_steps(session, source_step, report: StepsReport, steps: int, feeds, atol, rtol,
                   ulp) -> StepsReport:
    from ..ir.io_permutations import check_given, to_graph_inputs, to_source_outputs
    from .core import make_inputs

    graph, seed, source = session.graph, report.seed, report.source
    compared = [name for name in session.output_names]
    for k in range(steps):  # inputs in the source's layout, transposed where the graph asks
        if feeds is not None:
            step_feeds = {n: np.asarray(v) for n, v in feeds[k].items()}
            for name, value in step_feeds.items():
                check_given(graph, name, value)
            described = {n: {"shape": list(np.shape(v)), "range": "given"}
                         for n, v in step_feeds.items()}
        else:
            drawn, described = make_inputs(graph, seed + k, in_source_layout=True)
            step_feeds = {n: drawn[n] for n in session.feed_names}
        if k == 0:
            report.inputs = {n: {**described[n], "seed": f"{seed} + step"} for n in step_feeds}
        want = source_step(step_feeds)
        got = to_source_outputs(graph, session.step(to_graph_inputs(graph, step_feeds)))
        results = []
        for name in compared:
            if name not in want:
                raise ConverterError(f"no output '{name}' where the source has one",
                                     where=str(source))
            results.append(_compare(graph, name, got[name], want[name], atol, rtol, ulp))
        report.steps.append(results)
    return report


def _compare(graph: Graph, name: str, got: np.ndarray, want: np.ndarray, atol, rtol,
             ulp) -> OutputParity:
    bounds = with_overrides(output_bounds(graph, name), atol, rtol, ulp)
    want = np.asarray(want)
    if want.dtype == np.bool_:
        want = want.view(np.uint8)
    result = compare(name, got, want, bounds, graph.outputs[name].data_type)
    got = np.asarray(got)
    if got.shape == want.shape:
        result.extra["differing"] = int(np.count_nonzero(got != want))
    else:
        result.extra["differing"] = int(want.size)
    return result


def _source_stepper(source: Path, graph: Graph, tensors: Sequence[str]
                    ) -> tuple[Callable[[Mapping[str, np.ndarray]], dict], str]:
    """A function running one step of the source with its own state, and its runtime's name."""
    suffix = source.suffix.lower()
    if suffix == ".tflite":
        from ..runtimes.litert import LiteRTSession

        return LiteRTSession(source, tensors=tensors).run, "litert"
    if tensors:
        raise ConverterError("intermediate tensors are compared for TFLite sources only",
                             where=str(source))
    if suffix == ".onnx":
        # the executor's optimisation level, as verify runs it
        from ..runtimes.source_runs import run_onnx

        from ..ir.io_permutations import to_source_inputs

        state = to_source_inputs(graph, {var.input: initial_value(graph, var)
                                         for var in graph.state})

        def step(feeds: Mapping[str, np.ndarray]) -> dict:
            out = run_onnx(source, {**feeds, **state})
            for var in graph.state:
                if var.output not in out:
                    raise ConverterError(f"the source has no output '{var.output}' to carry "
                                         f"state '{var.input}'", where=str(source))
                state[var.input] = out[var.output]
            return out

        return step, "onnxruntime"
    raise ConverterError(f"cannot verify a {suffix or 'suffix-less'} source step by step",
                         where=str(source), fix="give a .tflite or .onnx source")
