"""`webnn-convert verify SRC`: the source on its own runtime vs its WebNN graph."""
from __future__ import annotations

import click

import converter
from converter.conversion.by_suffix import load_any
from converter.errors import ConverterError

from ..checking import Checking
from ..inputs import model_path
from ..logs import debugging, quiet_runtimes
from ..options import SOURCE, STATE, VERIFYING, use
from ..progress import phases
from ..terminal import echo_json, echo_lines


def print_report(report) -> None:
    """The report's tables and lines (converter.verification.text, which str(report) prints
    too), escaped for the terminal, warnings and the verdict in colour."""
    from converter.verification.text import COLUMNS, note_lines, table_runs
    from converter.verification.core import UNJUDGED

    from ..tables import console as make_console, print_table
    from ..terminal import console_print

    console = make_console()
    for title, rows in table_runs(report):
        print_table(COLUMNS, rows, title=title)
    for line in note_lines(report):
        style = ("yellow" if line.startswith("warning: ") else "bold" if line == "pass" else
                 "bold red" if line == "mismatch" else
                 "bold yellow" if line == UNJUDGED else "")
        console_print(console, line, style)


def finish(report, finding=None, bisected: bool = False, as_json: bool = False,
           accuracy=None) -> None:
    """Print a parity report (as JSON or a table), and a bisection's finding when one ran,
    then a compressed graph's accuracy report when one was measured (--weights); exit 1 on a
    mismatch or an accuracy that misses its bounds, UNJUDGED_EXIT when no source runtime
    could judge the graph."""
    if as_json:
        out = report.to_json()
        if bisected:
            out["bisect"] = None if finding is None else finding.to_json()
        if accuracy is not None:
            out["accuracy"] = accuracy.to_json()
        echo_json(out, indent=2, default=_number)
    elif hasattr(report, "source_tokens"):
        from .stepping import print_decode_report

        print_decode_report(report)
    elif hasattr(report, "steps"):
        from .stepping import print_steps_report

        print_steps_report(report)
    else:
        print_report(report)
        if bisected:
            echo_lines(finding.describe_lines() if finding is not None else
                       ["bisect: every operation keeps within its budget against the float64 "
                        "oracle (conversion and executor)"])
    if accuracy is not None and not as_json:
        print_accuracy(accuracy)
    if accuracy is not None and not accuracy.passed:
        raise SystemExit(1)
    if getattr(report, "unjudged", None) and getattr(report, "verdict", "") != "mismatch":
        raise SystemExit(UNJUDGED_EXIT)
    if not report.passed:
        raise SystemExit(1)


def print_accuracy(accuracy) -> None:
    """A compressed graph's accuracy report, escaped for the terminal, its verdict in colour."""
    from ..tables import console as make_console
    from ..terminal import console_print

    console = make_console()
    for line in accuracy.lines():
        style = ("bold" if line == "accuracy: pass" else
                 "bold red" if line.startswith("accuracy: fail") else "")
        console_print(console, line, style)


# `verify` and `convert --verify` when no runtime could run the source (a TFLite custom op
# LiteRT has no kernel for) and the graph agrees with its own float64 evaluation: neither a
# pass (nothing compared the conversion with the source) nor a mismatch.
UNJUDGED_EXIT = 3


def _decoder(graph) -> bool:
    from .stepping import is_decoder

    return hasattr(graph, "prefill") or is_decoder(graph)


def _number(value):
    """numpy scalars in a report (from a graph's options) as plain JSON numbers."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


@click.command("verify")
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("--graph", "graph_path", type=click.Path(dir_okay=False),
              help="A WebNN graph converted earlier (.webnn/.json), or an emitted .js module "
                   "(with --runtime chromium; --dim picks the dims it is built at); default: "
                   "convert SOURCE now.")
@use(*SOURCE, *STATE, "target", "io_layout", "weights", "block_size", "compute", *VERIFYING,
     "json")
def command(source, graph_path, dims, input_shapes, known_inputs, follow_symlinks,
            state_patterns, cache_capacity, target_name, io_layout, weights, block_size,
            compute, as_json, **checking):
    """Check that a WebNN graph computes what SOURCE computes.

    Runs SOURCE on its own runtime (ONNX Runtime, LiteRT) and the graph on --runtime on the same
    inputs (given with --input/--inputs, else seeded); reports per output the max abs and rel
    error, max ULP, cosine and the worst element. An output outside the budget is judged against
    the graph evaluated in float64 and the source runtime's own noise (see the verdict rules in
    docs/reference/parity.md). A graph converted with --io-layout takes some inputs (gives some
    outputs) transposed: inputs are made, and --input files given, in SOURCE's layout and
    transposed for the graph; its outputs are transposed back before comparison. --steps
    compares N consecutive steps; with a decoder and --prompt, N greedy tokens (an
    encoder-decoder's decoder, encoder_model.onnx beside it: the encoder runs once, see
    --prompt). With --weights float16|int8|int4, SOURCE is also converted with its weights
    so compressed, and that graph is measured against the float source (weights size before
    and after; max abs and rel error, worst cosine, top-1/top-5 agreement over --samples
    inputs, or over each sample subfolder of --inputs DIR, the float graph then verified on
    the first; a decoder's greedy-token agreement over --steps): its own accuracy verdict, by
    --accuracy or the scheme's default; the float graph keeps the float policy's verdict.
    --compute float16 converts SOURCE computing in float16 where the target takes it (with
    --weights, the compressed graph; else the graph verified, its float16-computed outputs
    judged by the float16 bounds). Exit 0 pass, 1 mismatch or accuracy outside its bounds,
    2 error.
    """
    checks = Checking.of(checking)
    source = model_path(source, follow_symlinks)
    graph_path = model_path(graph_path, follow_symlinks)
    if checks.usage_problem():
        raise click.UsageError(checks.usage_problem())
    from .compressed import check_usage, float_checks

    if (weights, compute) != ("float32", "float32") and checks.prompt is not None \
            and source.lower().endswith(".onnx"):
        from converter.state.kv_cache import is_seq2seq

        if is_seq2seq(source):  # before check_usage, whose fix (--cache-capacity) cannot apply
            raise ConverterError("an encoder-decoder is stepped as exported: its compressed "
                                 "weights or float16 compute are not measured yet",
                                 where=source, fix="verify it without --weights and --compute")
    check_usage(weights, checks, cache_capacity=cache_capacity, graph_path=graph_path)
    if weights != "float32" or block_size is not None:
        from converter.passes.weight_types import check_block_size

        check_block_size(weights, block_size)
    if graph_path and compute != "float32":
        raise click.UsageError("--compute converts SOURCE now; --graph gives the graph "
                               "already: drop one")
    if graph_path and target_name:
        raise click.UsageError("--target converts SOURCE for a backend; --graph gives the "
                               "graph already: drop one")
    if io_layout and not target_name:
        raise click.UsageError("--io-layout applies with --target")
    if checks.runtime.startswith("device") and (state_patterns or cache_capacity is not None):
        raise click.UsageError("--runtime device runs one stateless graph: drop --state and "
                               "--cache-capacity")
    # without --weights the graph verified computes in --compute; with them, the compressed one
    verified = compute if weights == "float32" else "float32"
    quiet_runtimes(debugging())
    say = click.get_current_context().with_resource(phases(False if as_json else None))
    say(f"verifying {source}: the source on its own runtime, the graph on {checks.runtime}")
    if checks.prompt is not None and cache_capacity is None and source.lower().endswith(".onnx"):
        from converter.state.kv_cache import is_seq2seq

        if is_seq2seq(source):
            finish(_verify_seq2seq(source, checks, dims, graph_path, input_shapes, known_inputs,
                                   state_patterns, target_name), None, False, as_json)
            return
    module = graph_path if graph_path and graph_path.lower().endswith(".js") else None
    if module and (checks.runtime != "chromium" or checks.do_bisect
                   or checks.steps is not None):
        raise click.UsageError("a .js module runs in the browser: give --runtime chromium, "
                               "without --bisect or --steps")
    graph = load_any(graph_path, variants=True) if graph_path and not module else None
    if graph is not None and not isinstance(graph, converter.Graph):  # variants: at --dim
        graph = graph.at(dims, where=graph_path)
    if cache_capacity is not None or state_patterns:
        if graph_path:
            raise click.UsageError("--cache-capacity and --state convert SOURCE; --graph gives "
                                   "the graph already: drop one")
        from .stepping import load_with_state

        graph = load_with_state(source, dims=dims, input_shapes=input_shapes,
                                known_inputs=known_inputs, state_patterns=state_patterns,
                                capacity=cache_capacity)
        if target_name:
            from converter.targets.pipeline import convert_for_target

            convert_for_target(graph, target_name, io_layout=io_layout, compute=verified)
        elif verified != "float32":
            from converter.targets.pipeline import store_weights

            store_weights(graph, "float32", compute=verified)
    elif target_name or verified != "float32":
        graph = converter.convert(source, target=target_name, io_layout=io_layout, dims=dims,
                                  input_shapes=input_shapes, known_inputs=known_inputs,
                                  compute=verified)
    if checks.prompt is not None and graph is None and not module:
        # the concat form, converted once per length
        from converter.state.concat_form import ConcatLoop
        from converter.state.kv_cache import parse_state_patterns

        graph = ConcatLoop(source, patterns=parse_state_patterns(state_patterns) or None,
                           dims=dims)
    if weights != "float32" and graph is None:  # the float graph's size is the "before"
        graph = load_any(source, dims=dims, input_shapes=input_shapes,
                         known_inputs=known_inputs)
    report, finding, bisected = compare(
        source, graph if graph is not None else module, float_checks(weights, checks),
        graph_path=graph_path, dims=dims, input_shapes=input_shapes, known_inputs=known_inputs,
        state_patterns=state_patterns)
    accuracy = None
    if weights != "float32":
        from converter.verification.accuracy import weights_bytes

        from .compressed import converted, measure

        before, graph = weights_bytes(graph), None  # the float graph is done with
        say(f"measuring the accuracy of {weights} weights against the float source")
        compressed = converted(source, weights=weights, target_name=target_name,
                               io_layout=io_layout, dims=dims, input_shapes=input_shapes,
                               known_inputs=known_inputs, state_patterns=state_patterns,
                               cache_capacity=cache_capacity, block_size=block_size,
                               compute=compute)
        accuracy = measure(source, compressed, checks, weights=weights, bytes_before=before,
                           known_inputs=known_inputs, state_patterns=state_patterns, dims=dims)
    finish(report, finding, bisected, as_json, accuracy)


def _verify_seq2seq(source, checks: Checking, dims, graph_path, input_shapes, known_inputs,
                    state_patterns, target_name):
    """`verify DECODER --prompt IDS --steps N` on an encoder-decoder's decoder (its encoder
    beside it): the encoder once, N greedy tokens of the decoder's concat form on --runtime,
    against the source files on ONNX Runtime."""
    import numpy as np

    from converter.state.seq2seq import Seq2SeqLoop
    from converter.verification.seq2seq import verify_seq2seq

    from .stepping import seq2seq_request

    if graph_path or input_shapes or known_inputs or state_patterns or \
            checks.do_bisect or checks.runtime.startswith("device"):
        raise ConverterError("an encoder-decoder is verified by stepping its concat form, "
                             "converted now, on ort or chromium",
                             fix="give --prompt, --steps, --dim, --input, --target and the "
                                 "tolerances alone")
    loop = Seq2SeqLoop(source, dims=dims, runtime=checks.runtime, target=target_name)
    given, start, seeded = seq2seq_request(loop, checks.prompt, checks.feeds() or {},
                                           checks.seed)
    described = ", ".join(f"{name} {list(np.shape(value))} " + (
        f"{seeded[name]['made']}, seed {checks.seed}" if name in seeded else "given")
        for name, value in given.items()) if seeded or not loop.seq2seq.text else None
    return verify_seq2seq(loop, given, prompt=start, steps=checks.steps or 1, atol=checks.atol,
                          rtol=checks.rtol, ulp=checks.ulp, described=described)


def compare(source, graph, checks: Checking, *, graph_path=None, dims=None, input_shapes=None,
            known_inputs=None, state_patterns=(), also=None):
    """Verify `graph` (a Graph, a decoder loop, the path of a .js module, or None: SOURCE
    converted now) against SOURCE as `checks` say: a decoder from --prompt, a stateful graph
    or --steps step by step, else one run, bisected on a mismatch with --bisect. Returns
    (report, bisect finding or None, whether a bisection ran), for `finish`."""
    dims, input_shapes, known_inputs = dims or {}, input_shapes or {}, known_inputs or {}
    feeds = checks.feeds()
    module = graph if isinstance(graph, str) else None
    graph = None if module else graph
    if graph is not None and (checks.prompt is not None or (checks.steps and _decoder(graph))):
        if feeds or known_inputs or checks.do_bisect:
            raise ConverterError("a decoder is verified from --prompt alone",
                                 fix="drop --input/--inputs, --const and --bisect")
        if not checks.prompt:
            raise ConverterError("a decoder starts from a prompt",
                                 fix="give --prompt IDS, e.g. --prompt 1,5,9")
        from converter.state.kv_cache import parse_state_patterns
        from converter.verification.decode import verify_decoding

        report = verify_decoding(source, graph, prompt=checks.prompt, steps=checks.steps or 1,
                                 patterns=parse_state_patterns(state_patterns) or None,
                                 dims=dims, atol=checks.atol, rtol=checks.rtol, ulp=checks.ulp,
                                 graph_path=graph_path, runtime=checks.runtime)
        return report, None, False
    if graph is None and not module and (checks.do_bisect or (checks.steps is None
                                                              and not known_inputs)):
        graph = load_any(source, dims=dims, input_shapes=input_shapes,
                         known_inputs=known_inputs)
    if checks.steps is not None or (graph is not None and graph.state):
        if feeds:
            raise ConverterError("step-wise verification draws its inputs a step at a time",
                                 fix="drop --input/--inputs for --steps")
        if known_inputs or checks.do_bisect:
            raise ConverterError("step-wise verification runs without --const or --bisect",
                                 fix="drop --const and --bisect for --steps")
        from converter.verification.steps import verify_steps

        report = verify_steps(source, graph, steps=checks.steps or 1, seed=checks.seed,
                              dims=dims, input_shapes=input_shapes, atol=checks.atol,
                              rtol=checks.rtol, ulp=checks.ulp, graph_path=graph_path,
                              runtime=checks.runtime)
        return report, None, False
    report = converter.verify(source, module or graph, seed=checks.seed, dims=dims,
                              input_shapes=input_shapes, known_inputs=known_inputs,
                              atol=checks.atol, rtol=checks.rtol, ulp=checks.ulp,
                              graph_path=graph_path, runtime=checks.runtime,
                              oracle=checks.oracle, feeds=feeds, also=also)
    finding = None
    bisected = checks.do_bisect and report.verdict == "mismatch"
    if bisected:
        from converter.verification.bisect import bisect

        finding = bisect(source, graph, seed=checks.seed, feeds=feeds,
                         known_inputs=known_inputs, dump=checks.dump_dir)
    return report, finding, bisected
