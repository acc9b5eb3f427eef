"""Step-wise runs and reports for stateful graphs (`run --steps`, `verify --steps`)."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from converter.errors import ConverterError


def run_steps(graph, given: Mapping[str, np.ndarray], steps: int | None,
              seed: int, runtime: str = "ort") -> tuple[dict[str, np.ndarray], dict[str, dict]]:
    """Run `steps` steps in a Session on `runtime` (one when None: outputs then not stacked;
    on 'chromium' the state stays in the browser between steps). A given input
    of shape [steps, *input shape] feeds one row a step; one of the input's shape feeds every
    step; the others are seeded random values, seed + step. Returns the outputs and, for
    each seeded input, how its values are made (verification.make_inputs)."""
    from converter.runtimes.session import Session

    session = Session(graph, runtime=runtime)
    try:
        return _stepped(session, graph, given, steps, seed)
    finally:
        session.close()


def _stepped(session, graph, given, steps, seed):
    from converter.verification.core import make_inputs

    count = steps or 1
    for name in given:
        if name not in session.feed_names:
            raise ConverterError(f"'{name}' is state; the run feeds it its initial value",
                                 fix=f"give only {', '.join(session.feed_names) or 'nothing'}")
    results: dict[str, list[np.ndarray]] = {}
    seeded = {}
    for k in range(count):
        drawn, described = make_inputs(graph, seed + k)
        seeded = {name: described[name] for name in session.feed_names if name not in given}
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
        return {name: values[0] for name, values in results.items()}, seeded
    return {name: np.stack(values) for name, values in results.items()}, seeded


def print_steps_report(report) -> None:
    from ..tables import console as make_console, print_table
    from ..terminal import console_print

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
    console_print(console, f"seed {report.seed} + step; state: "
                           f"{', '.join(report.state) or 'none'}")
    console_print(console, *(("pass", "bold") if report.passed else ("mismatch", "bold red")))


def load_with_state(source, *, dims, input_shapes, known_inputs, state_patterns, capacity):
    """A source read as usual, or, with --cache-capacity / --state, a decoder whose KV-cache
    pairs are declared as state (the concat form refused with what to do)."""
    from converter.conversion.by_suffix import load_any
    from converter.state.kv_cache import declare_kv_state, match_pairs, parse_state_patterns

    patterns = parse_state_patterns(state_patterns) if state_patterns else None
    if capacity is not None:
        if input_shapes or known_inputs:
            raise ConverterError("--cache-capacity sets the decoder's shapes itself",
                                 fix="drop --input-shape and --const")
        from converter.state.generation import load_decoder

        return load_decoder(source, capacity=capacity, patterns=patterns, dims=dims)
    graph = load_any(source, dims=dims, input_shapes=input_shapes, known_inputs=known_inputs)
    if patterns:
        declare_kv_state(graph, match_pairs(list(graph.inputs), list(graph.outputs), patterns))
    return graph


def is_decoder(graph) -> bool:
    """A graph the greedy loop drives: declared state and token ids to feed."""
    return bool(graph.state) and "input_ids" in graph.inputs


def decode(graph, prompt, steps, runtime: str = "ort") -> dict[str, np.ndarray]:
    """`run --steps N --prompt IDS` on a decoder (a fixed-capacity Graph, or a loop such as
    a ConcatLoop): N greedy tokens; the tokens and the logits row of every position fed. A
    Graph runs on `runtime` (on 'chromium' the caches stay on the browser's context)."""
    from converter.state.generation import generate
    from converter.ir import Graph
    from converter.runtimes.session import Session

    if not prompt:
        raise ConverterError("a decoder starts from a prompt", fix="give --prompt IDS, e.g. "
                             "--prompt 1,5,9")
    if not isinstance(graph, Graph):
        result = generate(graph, prompt, steps or 1)
    else:
        with Session(graph, runtime=runtime) as session:
            result = generate(session, prompt, steps or 1)
    return {"tokens": np.array(result.tokens, np.int64), "logits": np.stack(result.logits)}


def print_decode_report(report) -> None:
    from ..tables import console as make_console, print_table
    from ..terminal import console_print

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
    console_print(console, f"prompt {report.prompt}")
    console_print(console, f"source tokens {report.source_tokens}")
    split = report.first_divergence
    console_print(console, "graph tokens: the same" if split is None else
                           f"graph tokens {report.graph_tokens} (first differs at new token "
                           f"{split})")
    for note in getattr(report, "notes", ()):
        console_print(console, f"note: {note}")
    console_print(console, *(("pass", "bold") if report.passed else ("mismatch", "bold red")))


def seq2seq_request(loop, prompt, given: Mapping[str, np.ndarray], seed: int
                    ) -> tuple[dict, list[int], dict[str, dict]]:
    """What `--prompt` means on an encoder-decoder (state/seq2seq.py): the encoder's input_ids
    when it reads text (T5, BART, Marian; the decoder then starts from config.json's
    decoder_start_token_id), else the decoder's first tokens (Whisper; the encoder's
    input_features from --input, else seeded like `run`'s inputs). Returns the encoder's
    inputs, the decoder's prompt, and how each seeded input was made."""
    from converter.conversion.by_suffix import load_any
    from converter.state.kv_cache import _dim_names, read_signature
    from converter.verification.core import make_inputs

    spec = loop.seq2seq
    if not prompt:
        raise ConverterError("a decoder starts from a prompt", fix="give --prompt IDS, e.g. "
                             "--prompt 1,5,9")
    for name in given:
        if name not in spec.encoder_inputs or (spec.text and name == "input_ids"):
            raise ConverterError(f"--input '{name}' is not an input of the encoder "
                                 f"{spec.encoder.name} that --prompt leaves open",
                                 fix="--prompt gives the " + ("encoder's input_ids" if spec.text
                                                              else "decoder's first tokens"))
    if spec.text:
        return {**given, "input_ids": list(prompt)}, loop.start_tokens, {}
    shapes = {}
    for value in read_signature(spec.encoder).graph.input:
        if value.name in given:
            continue
        dims = _dim_names(value)
        if not dims or not all(isinstance(d, int) for d in dims[1:]):
            raise ConverterError(f"the encoder's input '{value.name}' is {dims}: its shape is "
                                 f"open", where=str(spec.encoder),
                                 fix=f"give it with --input {value.name}=FILE.npy")
        shapes[value.name] = [1, *dims[1:]]
    seeded = {}
    if shapes:
        graph = load_any(spec.encoder, input_shapes=shapes)
        drawn, described = make_inputs(graph, seed)
        seeded = {name: described[name] for name in shapes}
        given = {**given, **{name: drawn[name] for name in shapes}}
    return dict(given), list(prompt), seeded
