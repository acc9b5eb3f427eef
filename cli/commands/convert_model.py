"""`webnn-convert convert SRC -o OUT`: a model into a WebNN graph (or back to ONNX)."""
from __future__ import annotations

from pathlib import Path

import click

import converter
from converter.by_suffix import OUTPUT_SUFFIXES, import_reader, load_any, refuse_overwriting, \
    write_any
from converter.formats._files import StagedSave

from .. import collector
from ..device_options import runtime_options
from ..logs import debugging, quiet_runtimes
from ..progress import phases
from ..terminal import echo
from ..options import INPUT_FILES, decoder_options, source_options, target_option, \
    tolerance_options, verbose_option
from .stepping import load_with_state


@click.command("convert")
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help=f"The file to write; its suffix picks the format ({', '.join(OUTPUT_SUFFIXES)}).")
@source_options
@decoder_options
@target_option(help="Rewrite the graph for that backend: the result passes `check --target "
                    "T`, or the command fails listing what remains.")
@click.option("--io-layout", type=click.Choice(["nchw", "nhwc"]),
              help="With --target: the layout of 4-D graph inputs and outputs (default: the "
                   "source's). The graph file records which it transposed, so --verify and a "
                   "later `verify --graph` feed each side in its own layout.")
@click.option("--dequantize", is_flag=True,
              help="With --target: store quantized weights as float (each dequantizeLinear's "
                   "result type) even where the target takes their type; by default they stay "
                   "quantized there, or are re-encoded exactly (uint4 -> int4 ...).")
@click.option("--verify", "then_verify", is_flag=True,
              help="Also verify the result against the source on its own runtime; the "
                   "outputs are written only if it passes.")
@click.option("--keep-on-mismatch", is_flag=True,
              help="With --verify: write the outputs even when verification fails.")
@tolerance_options
@click.option("--json", "as_json", is_flag=True, help="With --verify: print the report as JSON.")
@runtime_options
@verbose_option
def command(source, output, dims, input_shapes, known_inputs, state_patterns, cache_capacity,
            prompt, target_name, io_layout, dequantize, then_verify, keep_on_mismatch, seed,
            atol, rtol, ulp, as_json, runtime, verbose):
    """Convert SOURCE (.onnx, .tflite, or a .webnn/.json graph) into OUTPUT.

    .webnn and .json write the WebNN graph with OUTPUT's NAME.manifest.json and NAME.weights
    beside it; .onnx writes the graph's ONNX lowering, .tflite its TFLite export (verified on
    LiteRT too with --verify), .js an ES module and page for the browser. With --dim
    NAME=V1,V2,... or NAME=LO..HI, the model is converted at each value and written as one
    .webnn/.json (one weights file), or one .js module taking the dims. With --verify, the
    outputs appear only if they match the source (or with --keep-on-mismatch); exits 1 when
    they do not. Nothing OUTPUT writes (its manifest, weights, page) may be a file the
    command reads: SOURCE, its external data, a --const file. Graph files named alike
    (NAME.webnn, NAME.json, NAME.js) share NAME.manifest.json and NAME.weights, so writing
    one whose weights differ from those another one uses is refused: name it apart.
    """
    refuse_overwriting([source, *click.get_current_context().meta.get(INPUT_FILES, [])], output)
    if prompt is not None:
        raise click.UsageError("--prompt applies to run and verify with --steps")
    if keep_on_mismatch and not then_verify:
        raise click.UsageError("--keep-on-mismatch applies with --verify")
    if runtime != "ort" and not then_verify:
        raise click.UsageError("--runtime applies with --verify (where the graph runs to be "
                               "verified)")
    stateful = bool(state_patterns) or cache_capacity is not None
    say = click.get_current_context().with_resource(phases(False if as_json else None))
    say(f"converting {source}")
    import_reader(source)  # the last of start-up's imports (the onnx package for .onnx) ...
    collector.resume()  # ... so the collector, paused while they ran, skips them from now on
    if any(not isinstance(v, int) for v in dims.values()):
        if stateful:
            raise click.UsageError("--dim with several values makes a module for many shapes; "
                                   "a decoder's cache (--state, --cache-capacity) takes one")
        if runtime != "ort":
            raise click.UsageError("--dim with several values verifies each on ort: drop "
                                   "--runtime")
        from .convert_variants import convert_several

        convert_several(source, output, dims, input_shapes, known_inputs, target_name,
                        io_layout, dequantize, then_verify, keep_on_mismatch,
                        dict(seed=seed, atol=atol, rtol=rtol, ulp=ulp), as_json, verbose)
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
        write_variants(graph, output, target_name, io_layout, dequantize, as_json)
        return
    if io_layout and not target_name:
        raise click.UsageError("--io-layout applies with --target")
    if dequantize and not target_name:
        raise click.UsageError("--dequantize applies with --target")
    if target_name:
        say(f"rewriting for {target_name}")
        _rewrite_for(graph, target_name, io_layout, verbose, dequantize)
    say(f"writing {output}")
    if not then_verify:
        # A graph as imported was verified at the end of its import (stateful loading and a
        # target's passes edit it since, so those are checked again as it is saved).
        untouched = not target_name and not stateful
        _wrote(write_any(graph, output, verify=not untouched), graph, as_json)
        return
    quiet_runtimes(debugging())
    # Verified outputs are staged and committed only when they pass: a published .js or
    # .weights that does not compute what the source does must not appear by accident.
    with StagedSave(Path(output).parent, output=output) as stage:
        staged = write_any(graph, stage.path(output))
        also = {"litert (exported .tflite)": str(staged[0])} if output.endswith(".tflite") \
            else None
        say(f"verifying against {source} on its own runtime")
        report = converter.verify(source, graph, seed=seed, atol=atol, rtol=rtol, ulp=ulp,
                                  known_inputs=known_inputs, graph_path=output, also=also,
                                  runtime=runtime)
        if report.passed or keep_on_mismatch:
            written = stage.commit(staged)
            _wrote(written, graph, as_json)
            if not report.passed:
                echo(f"verification failed; kept {', '.join(map(str, written))} as "
                     f"--keep-on-mismatch asks", err=True)
        else:
            echo(f"verification failed; nothing written (--keep-on-mismatch writes "
                 f"{output} anyway)", err=True)
    from .verify_model import finish  # here: a plain conversion needs no verification code

    finish(report, as_json)


# The group leaves the collector paused for this command until its source's reader is imported.
command.resumes_collector = True


def _wrote(written, graph, as_json: bool) -> None:
    if not as_json:
        echo(f"wrote {', '.join(str(p) for p in written)} ({len(graph.operations)} "
             f"operations)")


def _rewrite_for(graph, target_name: str, io_layout: str | None, verbose: bool,
                 dequantize: bool = False) -> None:
    """Run the target's passes; list every remaining violation and exit 1 if any remain.
    With `verbose`, each pass's statistics go to stderr (stdout carries results only)."""
    from converter.errors import UnsupportedError
    from converter.targets import load_target
    from converter.targets.pipeline import convert_for_target

    target = load_target(target_name)
    try:
        report = convert_for_target(graph, target, io_layout=io_layout,
                                    dequantize=dequantize)
    except UnsupportedError as e:
        for item in e.items:
            echo(f"{target.name}: {item}", err=True)
        echo(f"{target.name}: {len(e.items)} violation{'s' * (len(e.items) > 1)} remain "
             f"after its passes; nothing written", err=True)
        raise SystemExit(1)
    if verbose:
        for line in report.lines():
            echo(line, err=True)
