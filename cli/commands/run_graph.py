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
from ..device_options import runtime_options
from ..options import decoder_options, given_inputs, source_options, target_option
from ..terminal import echo


@click.command("run")
@click.argument("graph_file", metavar="GRAPH_OR_MODEL", type=click.Path(dir_okay=False))
@source_options
@decoder_options
@target_option(help="Run the graph rewritten for that backend (its passes run first).")
@click.option("--input", "inputs", multiple=True, callback=given_inputs, metavar="NAME=FILE.npy",
              help="An input's value as a .npy file (repeatable); missing inputs are seeded "
                   "random values.")
@click.option("--output-dir", required=True, type=click.Path(file_okay=False),
              help="Where to write one NAME.npy per output (characters other than letters, "
                   "digits, '.', '_', '-' become '_'; names that then clash get _2, _3 ...; "
                   "each output's file is printed).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the inputs not given.")
@runtime_options
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
    ONNX Runtime, in Chromium, or on a device connected to `webnn-convert serve`."""
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
    if runtime.startswith("device") and (is_decoder(graph) or prompt is not None
                                         or steps is not None or graph.state):
        raise ConverterError("--runtime device runs one stateless graph",
                             fix="drop --steps and --prompt, or run it on chromium or ort")
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
    """Save each output as its own .npy file (output_files names them) and say which holds
    which. The files appear together or not at all, and none may replace a file the command
    reads (an --input file in the same folder)."""
    from converter.file_guard import check_writes
    from converter.formats._files import AtomicSave

    folder = Path(output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    files = output_files(list(outputs), folder)
    check_writes(files.values())
    with AtomicSave() as save:
        for name, value in outputs.items():
            with save.open(files[name]) as f:
                np.save(f, value, allow_pickle=False)
        save.commit()
    for name, value in outputs.items():
        echo(f"{name}: {value.dtype}{list(value.shape)} -> {files[name]}")


def output_files(names: list[str], folder: Path) -> dict[str, Path]:
    """A file in `folder` for each output name, each different (also by case, for disks that
    ignore it): the name with every character but letters, digits, '.', '_' and '-' made '_'
    (and a leading '.' too: no hidden files); a name that then equals an earlier one's gets
    _2, _3 ... in output order, so `y/1` and `y:1` become y_1.npy and y_1_2.npy, the same
    every run."""
    files: dict[str, Path] = {}
    taken: set[str] = set()
    for name in names:
        safe = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in name)
        if not safe or safe.startswith("."):
            safe = "_" + safe[1:] if safe else "output"
        stem, n = safe, 1
        while stem.lower() in taken:
            n += 1
            stem = f"{safe}_{n}"
        taken.add(stem.lower())
        files[name] = folder / f"{stem}.npy"
    return files
