"""`webnn-convert run GRAPH --input NAME=FILE.npy ... --output-dir DIR`: a graph or model run,
its outputs written as .npy files, the inputs it made up named."""
from __future__ import annotations

from pathlib import Path

import click
import numpy as np

import converter
from converter.errors import ConverterError

from ..inputs import model_path, read_inputs
from ..logs import debugging, quiet_runtimes
from ..options import SOURCE, STATE, STEPS, use
from ..terminal import echo, echo_json
from .stepping import decode, is_decoder, load_with_state


@click.command("run")
@click.argument("graph_file", metavar="GRAPH_OR_MODEL", type=click.Path(dir_okay=False))
@use(*SOURCE, *STATE, "target", "input", "inputs")
@click.option("--output-dir", required=True, type=click.Path(file_okay=False),
              help="Where to write one NAME.npy per output (characters other than letters, "
                   "digits, '.', '_', '-' become '_'; names that then clash get _2, _3 ...; "
                   "each output's file is printed).")
@use("seed", "runtime", "server", *STEPS, "json")
def command(graph_file, dims, input_shapes, known_inputs, follow_symlinks, state_patterns,
            cache_capacity, target_name, given, inputs_dir, output_dir, seed, runtime, steps,
            prompt, as_json):
    """Execute a WebNN graph (.webnn, .json) or a model (.onnx, .tflite, converted first) on
    ONNX Runtime, in Chromium, or on a device connected to `webnn-convert serve`; write each
    output as a .npy file.

    Inputs come from --input and --inputs; every other input is given seeded random values
    (--seed; masks all ones, position ids a range), and each one is named on stderr with
    how it was made and the seed, so that outputs of made-up inputs are never mistaken for
    real ones. With --json, stdout is one JSON document: each output's file, data type and
    shape, and the seeded inputs.
    """
    from converter.verification.core import make_inputs

    graph_file = model_path(graph_file, follow_symlinks)
    quiet_runtimes(debugging())
    files = read_inputs(given, inputs_dir) if given or inputs_dir else {}
    if prompt is not None and cache_capacity is None and graph_file.lower().endswith(".onnx"):
        from converter.state.concat_form import ConcatLoop
        from converter.state.kv_cache import is_seq2seq, parse_state_patterns

        if is_seq2seq(graph_file):
            _run_seq2seq(graph_file, dims, input_shapes, known_inputs, state_patterns,
                         target_name, files, prompt, steps, seed, runtime, output_dir, as_json)
            return

        if target_name or input_shapes or known_inputs or files or runtime != "ort":
            raise ConverterError("the concat form runs the model itself on ort",
                                 fix="give --prompt and --steps only, or --cache-capacity N")
        loop = ConcatLoop(graph_file, patterns=parse_state_patterns(state_patterns) or None,
                          dims=dims)
        _write(decode(loop, prompt, steps), output_dir, {}, as_json)
        return
    graph = load_with_state(graph_file, dims=dims, input_shapes=input_shapes,
                            known_inputs=known_inputs, state_patterns=state_patterns,
                            capacity=cache_capacity)
    if target_name:
        from converter.targets.pipeline import convert_for_target

        convert_for_target(graph, target_name)
    for name in files:
        if name not in graph.inputs:
            raise ConverterError(f"the graph has no input '{name}'",
                                 where=inputs_dir if name not in given else given[name],
                                 fix=f"inputs are: {', '.join(graph.inputs)}")
    seeded = {}
    if runtime.startswith("device") and (is_decoder(graph) or prompt is not None
                                         or steps is not None or graph.state):
        raise ConverterError("--runtime device runs one stateless graph",
                             fix="drop --steps and --prompt, or run it on chromium or ort")
    if is_decoder(graph) or prompt is not None:
        if files:
            raise ConverterError("a decoder's run feeds its own tokens",
                                 fix="give --prompt and --steps, without --input/--inputs")
        outputs = decode(graph, prompt, steps, runtime)
    elif steps is not None or graph.state:
        from .stepping import run_steps

        outputs, seeded = run_steps(graph, files, steps, seed, runtime)
        _say_seeded(seeded, seed, stepped=steps is not None)
    else:
        feeds, described = make_inputs(graph, seed)
        seeded = {name: described[name] for name in graph.inputs if name not in files}
        feeds.update(files)
        _say_seeded(seeded, seed, stepped=False)
        outputs = converter.run(graph, feeds, runtime=runtime)
    _write(outputs, output_dir, seeded, as_json, seed, stepped=steps is not None)


def _run_seq2seq(graph_file, dims, input_shapes, known_inputs, state_patterns, target_name,
                 files, prompt, steps, seed, runtime, output_dir, as_json) -> None:
    """`run DECODER --prompt IDS --steps N` on an encoder-decoder's decoder (its encoder
    beside it): the encoder once, N greedy tokens of the decoder's concat form."""
    from converter.state.seq2seq import Seq2SeqLoop

    from .stepping import seq2seq_request

    if target_name or input_shapes or known_inputs or state_patterns or \
            runtime.startswith("device"):
        raise ConverterError("an encoder-decoder steps its concat form itself, on ort or "
                             "chromium", fix="give --prompt, --steps, --dim and --input alone")
    loop = Seq2SeqLoop(graph_file, dims=dims, runtime=runtime)
    given, start, seeded = seq2seq_request(loop, prompt, files, seed)
    _say_seeded(seeded, seed, stepped=False)
    loop.encode(given)
    _write(decode(loop, start, steps), output_dir, seeded, as_json, seed)


def _say_seeded(seeded: dict, seed: int, stepped: bool) -> None:
    """One line on stderr per input given seeded values: a run on made-up inputs is said."""
    for name, made in seeded.items():
        echo(f"run: input '{name}' not given: {made['dataType']}{made['shape']} "
             f"{made['made']}, seed {seed}{' + step' if stepped else ''} "
             f"(--input {name}=FILE.npy or --inputs DIR gives it)", err=True)


def _write(outputs, output_dir, seeded: dict, as_json: bool, seed: int = 0,
           stepped: bool = False) -> None:
    """Save each output as its own .npy file (output_files names them) and say which holds
    which, as lines or (`as_json`) one JSON document with the seeded inputs. The files appear
    together or not at all, and none may replace a file the command reads (an --input file in
    the same folder)."""
    from converter.files.guard import check_writes
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
    if as_json:
        echo_json({"outputs": {name: {"file": str(files[name]), "dataType": str(value.dtype),
                                      "shape": list(value.shape)}
                               for name, value in outputs.items()},
                   "seededInputs": {name: {**made, "seed": seed, "seedPerStep": stepped}
                                    for name, made in seeded.items()}}, indent=2)
        return
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
