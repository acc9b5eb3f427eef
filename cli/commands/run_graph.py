"""`webnn-convert run GRAPH --input NAME=FILE.npy ... --output-dir DIR`."""
from __future__ import annotations

from pathlib import Path

import click
import numpy as np

import converter
from converter.errors import ConverterError

from ..inputs import load_npy
from ..logs import debugging, quiet_runtimes
from .stepping import decode, is_decoder, load_with_state
from ..options import decoder_options, given_inputs, source_options, target_option


@click.command("run")
@click.argument("graph_file", metavar="GRAPH_OR_MODEL", type=click.Path(dir_okay=False))
@source_options
@decoder_options
@target_option(help="Run the graph rewritten for that backend (its passes run first).")
@click.option("--input", "inputs", multiple=True, callback=given_inputs, metavar="NAME=FILE.npy",
              help="An input's value as a .npy file (repeatable); missing inputs are seeded "
                   "random values.")
@click.option("--output-dir", required=True, type=click.Path(file_okay=False),
              help="Where to write one NAME.npy per output.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the inputs not given.")
@click.option("--runtime", type=click.Choice(["ort", "chromium"]), default="ort",
              show_default=True,
              help="Where the WebNN graph runs: ONNX Runtime (through the ONNX lowering) or a "
                   "real headless Chromium's WebNN (`webnn-convert browser-install` first).")
@click.option("--steps", type=click.IntRange(min=1), default=None,
              help="Run N consecutive steps carrying the graph's declared state (initial "
                   "values first); each output is written stacked, [N, ...]. An input file "
                   "of shape [N, ...] gives one value a step. A stateful graph runs one step "
                   "without it. A decoder (--cache-capacity, or a graph converted with it) "
                   "decodes N greedy tokens after --prompt: tokens.npy and logits.npy, one "
                   "row a position fed. --prompt on an .onnx decoder without "
                   "--cache-capacity runs its concat form, converted once per length (on "
                   "ort). On --runtime chromium the state stays on the browser's context "
                   "between steps (the module's createSession).")
def command(graph_file, dims, input_shapes, known_inputs, state_patterns, cache_capacity, prompt,
            target_name, inputs, output_dir, seed, runtime, steps):
    """Execute a WebNN graph (.webnn, .json) or a model (.onnx, .tflite, converted first) on
    ONNX Runtime or in Chromium."""
    from converter.verification import make_inputs

    quiet_runtimes(debugging())
    if prompt is not None and cache_capacity is None and graph_file.lower().endswith(".onnx"):
        from converter.state.concat_form import ConcatLoop
        from converter.state.kv_cache import parse_state_patterns

        if target_name or input_shapes or known_inputs or inputs or runtime != "ort":
            raise ConverterError("the concat form runs the model itself on ort",
                                 fix="give --prompt and --steps only, or --cache-capacity N")
        loop = ConcatLoop(graph_file, patterns=parse_state_patterns(state_patterns) or None,
                          dims=dims)
        _write(decode(loop, prompt, steps), output_dir)
        return
    graph = load_with_state(graph_file, dims=dims, input_shapes=input_shapes,
                            known_inputs=known_inputs, state_patterns=state_patterns,
                            capacity=cache_capacity)
    if target_name:
        from converter.targets.pipeline import convert_for_target

        convert_for_target(graph, target_name)
    given = {}
    for name, path in inputs.items():
        if name not in graph.inputs:
            raise ConverterError(f"the graph has no input '{name}'",
                                 fix=f"inputs are: {', '.join(graph.inputs)}")
        given[name] = load_npy(path, f"input '{name}'")
    if is_decoder(graph) or prompt is not None:
        if given:
            raise ConverterError("a decoder's run feeds its own tokens",
                                 fix="give --prompt and --steps, without --input")
        outputs = decode(graph, prompt, steps, runtime)
    elif steps is not None or graph.state:
        from .stepping import run_steps

        outputs = run_steps(graph, given, steps, seed, runtime)
    else:
        feeds, _ = make_inputs(graph, seed)
        feeds.update(given)
        outputs = converter.run(graph, feeds, runtime=runtime)
    _write(outputs, output_dir)


def _write(outputs, output_dir) -> None:
    folder = Path(output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    for name, value in outputs.items():
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
        np.save(folder / f"{safe}.npy", value)
        click.echo(f"{name}: {value.dtype}{list(value.shape)} -> {folder / (safe + '.npy')}")
