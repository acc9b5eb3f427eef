"""`webnn-convert convert SRC -o OUT`: a model into a WebNN graph (or back to ONNX)."""
from __future__ import annotations

from pathlib import Path

import click
from click.core import ParameterSource

import converter
from converter.conversion.by_suffix import (OUTPUT_SUFFIXES, import_reader, load_any,
                                            refuse_overwriting, write_any)
from converter.formats._files import StagedSave
from converter.errors import ConverterError

from .. import collector
from ..logs import debugging, quiet_runtimes
from ..progress import phases
from ..terminal import echo, echo_json
from ..checking import Checking
from ..inputs import model_path
from ..options import INPUT_FILES, SOURCE, STATE, VERIFYING, use
from .stepping import load_with_state


@click.command("convert")
@click.argument("source", type=click.Path(dir_okay=False))
@use("output", *SOURCE, *STATE, "target", "io_layout", "dequantize", "weights", "block_size",
     "compute")
@click.option("--verify", "then_verify", is_flag=True,
              help="Also verify the result against the source, as `verify` does, taking "
                   "verify's options below; the outputs are written only if it passes.")
@click.option("--keep-on-mismatch", is_flag=True,
              help="With --verify: write the outputs even when verification fails.")
@use(*VERIFYING, "json", "verbose")
def command(source, output, dims, input_shapes, known_inputs, follow_symlinks, state_patterns,
            cache_capacity, target_name, io_layout, dequantize, weights, block_size, compute,
            then_verify, keep_on_mismatch, as_json, verbose, **checking):
    """Convert SOURCE (.onnx, .tflite, or a .webnn/.json graph) into OUTPUT.

    .webnn and .json write the WebNN graph with OUTPUT's NAME.manifest.json and NAME.weights
    beside it (with --weights float16, int8 or int4, its float32 weights stored so; with
    --compute float16, computing in float16 where the target takes it, float32 at the
    graph's inputs and outputs); .onnx
    writes the graph's ONNX lowering (past 2 GiB with its weights in NAME.onnx.data beside
    it), .tflite its TFLite export (verified on LiteRT too with --verify), .js an ES module
    and page for the browser. With --dim
    NAME=V1,V2,... or NAME=LO..HI, the model is converted at each value and written as one
    .webnn/.json (one weights file), or one .js module taking the dims. With --verify, the
    outputs appear only if they match the source (or with --keep-on-mismatch); exits 1 when
    they do not, and 3 when no runtime can run the source (a TFLite custom op LiteRT has no
    kernel for: the outputs are written, checked against the graph's float64 evaluation
    only). --verify takes every option of `verify` (--runtime, --input, --inputs,
    --seed, the tolerances, --oracle, --bisect, --dump, --steps, --prompt, --accuracy,
    --samples) with its defaults and prints the same report (with --weights, the float
    conversion by the float policy and the written compressed graph by its accuracy against
    the float source, both needed to write); they are refused without --verify. --json
    prints that report as JSON, or without --verify the files written. Nothing OUTPUT writes (its
    manifest, weights, page, an .onnx model's data file) may be a file the command reads:
    SOURCE, its external data, a --const or --input file. Graph files named alike
    (NAME.webnn, NAME.json, NAME.js) share NAME.manifest.json and NAME.weights, so writing
    one whose weights differ from those another one uses is refused: name it apart.
    An encoder-decoder's decoder (optimum's Whisper, T5, BART, Marian) with -o NAME.js
    --steps N writes a module that generates in the browser (see --steps), every graph
    of it rewritten for --target when given (chromium-litert: a q4 model's uint4 weights).
    """
    ctx = click.get_current_context()
    source = model_path(source, follow_symlinks)
    checks = Checking.of(checking)
    if not then_verify and output.lower().endswith(".js") and source.lower().endswith(".onnx") \
            and (checks.steps is not None or not dims):
        from converter.state.kv_cache import is_seq2seq

        if is_seq2seq(source) and checks.steps is None:  # else "dims need values", 24 of them
            raise ConverterError("an encoder-decoder's decoder steps: a page that generates "
                                 "needs the number of steps", where=source,
                                 fix="give --steps N (the tokens it may generate, at most 256)")
        if is_seq2seq(source):  # a module that generates: encoder once, decoder steps
            from .convert_seq2seq import write_module

            write_module(ctx, source, output, dims, checks.steps, target_name, as_json)
            return
    if not then_verify:
        flags = {p.name: max(p.opts, key=len) for p in ctx.command.params}
        given = [flags[name] for name in checking
                 if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE]
        if keep_on_mismatch:
            given.insert(0, "--keep-on-mismatch")
        if given:
            raise click.UsageError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'}"
                                   f" with --verify")
    elif checks.usage_problem():
        raise click.UsageError(checks.usage_problem())
    if then_verify:
        from .compressed import check_usage, float_checks

        check_usage(weights, checks, cache_capacity=cache_capacity)
    reads = [source, *ctx.meta.get(INPUT_FILES, []), *checks.given.values()]
    refuse_overwriting(reads, output)
    if weights != "float32" or block_size is not None:
        from converter.passes.weight_types import check_block_size, refuse_output

        check_block_size(weights, block_size)
        refuse_output(weights, output)
    if compute != "float32":
        from converter.passes.weight_types import refuse_compute_output

        refuse_compute_output(compute, output)
    stateful = bool(state_patterns) or cache_capacity is not None
    say = ctx.with_resource(phases(False if as_json else None))
    say(f"converting {source}")
    import_reader(source)  # the last of start-up's imports (the onnx package for .onnx) ...
    collector.resume()  # ... so the collector, paused while they ran, skips them from now on
    if any(not isinstance(v, int) for v in dims.values()):
        if weights != "float32" or compute != "float32":
            given = f"--weights {weights}" if weights != "float32" else f"--compute {compute}"
            raise click.UsageError(f"{given} converts one value of each --dim; "
                                   f"convert each value apart")
        if stateful:
            raise click.UsageError("--dim with several values makes a module for many shapes; "
                                   "a decoder's cache (--state, --cache-capacity) takes one")
        from .convert_variants import convert_several

        convert_several(source, output, dims, input_shapes, known_inputs, target_name,
                        io_layout, dequantize, then_verify, keep_on_mismatch, checks, as_json,
                        verbose)
        return
    if stateful:
        graph = load_with_state(source, dims=dims, input_shapes=input_shapes,
                                known_inputs=known_inputs, state_patterns=state_patterns,
                                capacity=cache_capacity)
    else:
        graph = load_any(source, dims=dims, input_shapes=input_shapes,
                         known_inputs=known_inputs, variants=True)
    if not isinstance(graph, converter.Graph):  # a graph file holding variants, kept whole
        from .convert_variants import write_variants

        if then_verify:
            raise click.UsageError("--verify needs the source model; this graph file holds "
                                   "variants converted earlier")
        if weights != "float32" or compute != "float32":
            given = f"--weights {weights}" if weights != "float32" else f"--compute {compute}"
            raise click.UsageError(f"{given} converts one graph; this graph file "
                                   f"holds variants converted earlier")
        write_variants(graph, output, target_name, io_layout, dequantize, as_json)
        return
    if io_layout and not target_name:
        raise click.UsageError("--io-layout applies with --target")
    if dequantize and not target_name:
        raise click.UsageError("--dequantize applies with --target")
    if target_name:
        say(f"rewriting for {target_name}")
        _rewrite_for(graph, target_name, io_layout, verbose, dequantize,
                     (weights, block_size, compute))
    elif weights != "float32" or compute != "float32":
        from converter.targets.pipeline import store_weights

        for name, result in store_weights(graph, weights, block_size, compute):
            if verbose:
                for note in result.notes:
                    echo(f"{name}: {note}", err=True)
    say(f"writing {output}")
    if not then_verify:
        # A graph as imported was verified at the end of its import (stateful loading, a
        # target's passes and --weights edit it since, so those are checked again as saved).
        untouched = (not target_name and not stateful and weights == "float32"
                     and compute == "float32")
        _wrote(write_any(graph, output, verify=not untouched), graph, as_json)
        return
    quiet_runtimes(debugging())
    from .verify_model import compare, finish  # here: a plain conversion needs neither

    # Verified outputs are staged and committed only when they pass: a published .js or
    # .weights that does not compute what the source does must not appear by accident.
    with StagedSave(Path(output).parent, output=output) as stage:
        staged = write_any(graph, stage.path(output))
        also = {"litert (exported .tflite)": str(staged[0])} if output.endswith(".tflite") \
            else None
        say(f"verifying against {source} on its own runtime, the graph on {checks.runtime}")
        # With --weights, the float policy judges the same conversion uncompressed, and the
        # written (compressed) graph gets its own accuracy verdict against the float source.
        floating = graph if weights == "float32" else _uncompressed(
            source, target_name, io_layout, dims, input_shapes, known_inputs, state_patterns,
            cache_capacity, dequantize)
        report, finding, bisected = compare(
            source, floating, float_checks(weights, checks), graph_path=output, dims=dims,
            input_shapes=input_shapes, known_inputs=known_inputs, state_patterns=state_patterns,
            also=also)
        accuracy = None
        if weights != "float32":
            from converter.verification.accuracy import weights_bytes

            from .compressed import measure

            before, floating = weights_bytes(floating), None
            say(f"measuring the accuracy of {weights} weights against the float source")
            accuracy = measure(source, graph, checks, weights=weights, bytes_before=before,
                               known_inputs=known_inputs, state_patterns=state_patterns,
                               dims=dims)
        good = report.verdict != "mismatch" and (accuracy is None or accuracy.passed)
        # unjudged (no runtime runs the source): written, the report saying so (exit 3)
        if good or keep_on_mismatch:
            written = stage.commit(staged)
            if not as_json:
                _wrote(written, graph, as_json)
            if not good:
                echo(f"verification failed; kept {', '.join(map(str, written))} as "
                     f"--keep-on-mismatch asks", err=True)
        else:
            echo(f"verification failed; nothing written (--keep-on-mismatch writes "
                 f"{output} anyway)", err=True)
    finish(report, finding, bisected, as_json, accuracy)


def _uncompressed(source, target_name, io_layout, dims, input_shapes, known_inputs,
                  state_patterns, cache_capacity, dequantize):
    """SOURCE converted as this command converts it, its weights left float32."""
    from .compressed import converted

    return converted(source, weights="float32", target_name=target_name, io_layout=io_layout,
                     dims=dims, input_shapes=input_shapes, known_inputs=known_inputs,
                     state_patterns=state_patterns, cache_capacity=cache_capacity,
                     dequantize=dequantize)


# The group leaves the collector paused for this command until its source's reader is imported.
command.resumes_collector = True


def _wrote(written, graph, as_json: bool) -> None:
    """Say what was written: a line, or with --json (no verification report to print) one
    JSON document naming the files."""
    if as_json:
        echo_json({"written": [str(p) for p in written],
                   "operations": len(graph.operations)}, indent=2)
    else:
        echo(f"wrote {', '.join(str(p) for p in written)} ({len(graph.operations)} "
             f"operations)")


def _rewrite_for(graph, target_name: str, io_layout: str | None, verbose: bool,
                 dequantize: bool = False, stored_as: tuple = ("float32", None, "float32")
                 ) -> None:
    """Run the target's passes; list every remaining violation and exit 1 if any remain.
    With `verbose`, each pass's statistics go to stderr (stdout carries results only)."""
    from converter.errors import UnsupportedError
    from converter.targets import load_target
    from converter.targets.pipeline import convert_for_target

    target = load_target(target_name)
    try:
        weights, block_size, compute = stored_as
        report = convert_for_target(graph, target, io_layout=io_layout, dequantize=dequantize,
                                    weights=weights, block_size=block_size, compute=compute)
    except UnsupportedError as e:
        for item in e.items:
            echo(f"{target.name}: {item}", err=True)
        echo(f"{target.name}: {len(e.items)} violation{'s' * (len(e.items) > 1)} remain "
             f"after its passes; nothing written", err=True)
        raise SystemExit(1)
    if verbose:
        for line in report.lines():
            echo(line, err=True)
