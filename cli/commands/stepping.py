"""Step-wise runs and reports for stateful graphs (`run --steps`, `verify --steps`)."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from converter.errors import ConverterError


def run_steps(graph, given: Mapping[str, np.ndarray], steps: int | None,
              seed: int) -> dict[str, np.ndarray]:
    """Run `steps` steps in a Session (one when None: outputs then not stacked). A given input
    of shape [steps, *input shape] feeds one row a step; one of the input's shape feeds every
    step; the others are seeded random values, seed + step."""
    from converter.session import Session
    from converter.verification import make_inputs

    session = Session(graph)
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


def load_with_state(source, *, dims, input_shapes, known_inputs, state_patterns, capacity):
    """A source read as usual, or, with --cache-capacity / --state, a decoder whose KV-cache
    pairs are declared as state (the concat form refused with what to do)."""
    from converter.by_suffix import load_any
    from converter.state.kv_cache import declare_kv_state, match_pairs, parse_state_patterns

    patterns = parse_state_patterns(state_patterns) if state_patterns else None
    if capacity is not None:
        if input_shapes or known_inputs:
            raise ConverterError("--cache-capacity sets the decoder's shapes itself",
                                 fix="drop --input-shape and --const")
        from converter.generation import load_decoder

        return load_decoder(source, capacity=capacity, patterns=patterns, dims=dims)
    graph = load_any(source, dims=dims, input_shapes=input_shapes, known_inputs=known_inputs)
    if patterns:
        declare_kv_state(graph, match_pairs(list(graph.inputs), list(graph.outputs), patterns))
    return graph


def is_decoder(graph) -> bool:
    """A graph the greedy loop drives: declared state and token ids to feed."""
    return bool(graph.state) and "input_ids" in graph.inputs


def decode(graph, prompt, steps) -> dict[str, np.ndarray]:
    """`run --steps N --prompt IDS` on a decoder: N greedy tokens; the tokens and the logits
    row of every position fed."""
    from converter.generation import generate

    if not prompt:
        raise ConverterError("a decoder starts from a prompt", fix="give --prompt IDS, e.g. "
                             "--prompt 1,5,9")
    result = generate(graph, prompt, steps or 1)
    return {"tokens": np.array(result.tokens, np.int64), "logits": np.stack(result.logits)}


def print_decode_report(report) -> None:
    from ..tables import console as make_console, print_table

    console = make_console()
    worst = report.worst if report.positions else None
    failing = next((k for k, p in enumerate(report.positions) if not p.passed), None)
    print_table(("positions", "max abs", "max rel", "cosine", "first failing", "result"),
                [(str(len(report.positions)), f"{worst.max_abs:.3g}" if worst else "-",
                  f"{worst.max_rel:.3g}" if worst else "-",
                  "-" if worst is None or worst.cosine is None else f"{worst.cosine:.6f}",
                  "-" if failing is None else str(failing),
                  "pass" if failing is None and worst else "FAIL")],
                title=f"logits, {report.graph_runtime} vs {report.source_runtime}")
    console.print(f"prompt {report.prompt}")
    console.print(f"source tokens {report.source_tokens}")
    split = report.first_divergence
    console.print("graph tokens: the same" if split is None else
                  f"graph tokens {report.graph_tokens} (first differs at new token {split})")
    console.print("[bold]pass[/bold]" if report.passed else "[bold red]mismatch[/bold red]")
