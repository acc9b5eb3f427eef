"""Step-wise runs and reports for stateful graphs (`run --steps`, `verify --steps`)."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from converter.errors import ConverterError


def run_steps(graph, given: Mapping[str, np.ndarray], steps: int | None,
              seed: int, runtime: str = "ort") -> dict[str, np.ndarray]:
    """Run `steps` steps in a Session on `runtime` (one when None: outputs then not stacked;
    on 'chromium' the state stays in the browser between steps). A given input
    of shape [steps, *input shape] feeds one row a step; one of the input's shape feeds every
    step; the others are seeded random values, seed + step."""
    from converter.session import Session

    session = Session(graph, runtime=runtime)
    try:
        return _stepped(session, graph, given, steps, seed)
    finally:
        session.close()


def _stepped(session, graph, given, steps, seed) -> dict[str, np.ndarray]:
    from converter.verification import make_inputs

    count = steps or 1
    for name in given:
        if name not in session.feed_names:
            raise ConverterError(f"'{name}' is state; the run feeds it its initial value",
                                 fix=f"give only {', '.join(session.feed_names) or 'nothing'}")
    results: dict[str, list[np.ndarray]] = {}
    for k in range(count):
        drawn, _ = make_inputs(graph, seed + k)
        feeds = {name: drawn[name] for name in session.feed_names}
        for name, value in given.items():
            shape = graph.inputs[name].shape
            if steps is not None and value.shape == (count, *shape):
                feeds[name] = value[k]
            else:
                feeds[name] = value
        for name, value in session.step(feeds).items():
            results.setdefault(name, []).append(value)
    if steps is None:
        return {name: values[0] for name, values in results.items()}
    return {name: np.stack(values) for name, values in results.items()}


def print_steps_report(report) -> None:
    from ..tables import console as make_console, print_table

    console = make_console()
    title = f"{report.graph_runtime} vs {report.source_runtime}, {len(report.steps)} steps"
    rows = []
    for name, s in report.summary().items():
        failing = s["firstFailingStep"]
        rows.append((name, str(s["elements"]), f"{s['maxAbs']:.3g}", str(s["mismatched"]),
                     str(s["differing"]), "-" if failing is None else str(failing),
                     "pass" if failing is None else "FAIL"))
    print_table(("output", "elements", "max abs", "outside bounds", "differing",
                 "first failing step", "result"), rows, title=title)
    console.print(f"seed {report.seed} + step; state: {', '.join(report.state) or 'none'}")
    console.print("[bold]pass[/bold]" if report.passed else "[bold red]mismatch[/bold red]")
