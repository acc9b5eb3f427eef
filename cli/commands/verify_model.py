"""`webnn-convert verify SRC`: the source on its own runtime vs its WebNN graph."""
from __future__ import annotations

import click

import converter
from converter.by_suffix import load_any
from converter.errors import ConverterError

from ..inputs import read_inputs
from ..logs import debugging, quiet_runtimes
from ..progress import phases
from ..terminal import echo_json, echo_lines
from ..device_options import runtime_options
from ..options import decoder_options, given_inputs, source_options, target_option, \
    tolerance_options


def print_report(report) -> None:
    """The report's tables and lines (converter.verification_text, which str(report) prints
    too), escaped for the terminal, warnings and the verdict in colour."""
    from converter.verification_text import COLUMNS, note_lines, table_runs

    from ..tables import console as make_console, print_table
    from ..terminal import console_print

    console = make_console()
    for title, rows in table_runs(report):
        print_table(COLUMNS, rows, title=title)
    for line in note_lines(report):
        style = ("yellow" if line.startswith("warning: ") else "bold" if line == "pass" else
                 "bold red" if line == "mismatch" else "")
        console_print(console, line, style)


def finish(report, as_json: bool, finding=None, bisected: bool = False) -> None:
    """Print a parity report (as JSON or a table), and a bisection's finding when one ran;
    exit 1 when it did not pass."""
    if as_json:
        out = report.to_json()
        if bisected:
            out["bisect"] = None if finding is None else finding.to_json()
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
    if not report.passed:
        raise SystemExit(1)


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
@source_options
@decoder_options
@target_option(help="Verify SOURCE converted for that backend (its passes run first).")
@click.option("--io-layout", type=click.Choice(["nchw", "nhwc"]),
              help="With --target: the layout of 4-D graph inputs and outputs, as convert "
                   "--io-layout makes it. Each side is fed in its own layout: --input files "
                   "are in the source model's layout.")
@click.option("--input", "given", multiple=True, callback=given_inputs, metavar="NAME=FILE.npy",
              help="An input's value as a .npy file (repeatable), in SOURCE's layout; the "
                   "inputs not given are seeded values that suit their names (masks all ones, "
                   "position ids a range).")
@click.option("--inputs", "inputs_dir", type=click.Path(file_okay=False),
              help="A folder of NAME.npy files, one per input to give (--input wins).")
@tolerance_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@runtime_options
@click.option("--oracle", type=click.Choice(["auto", "always", "never"]), default="auto",
              show_default=True,
              help="When to judge against the graph evaluated in float64 and the source's own "
                   "noise: auto = for outputs outside the budget of the source's run.")
@click.option("--bisect", "do_bisect", is_flag=True,
              help="On a mismatch, find the first operation that leaves its budget against the "
                   "float64 oracle, and the source node it came from.")
@click.option("--dump", "dump_dir", type=click.Path(file_okay=False),
              help="With --bisect: write that operation as DIR/subgraph.webnn with its inputs "
                   "and expected result as .npy files.")
@click.option("--steps", type=click.IntRange(min=1), default=None,
              help="Compare N consecutive steps, each side carrying its own state (LiteRT "
                   "keeps its variables; an ONNX source is fed its own next-state outputs). "
                   "A stateful graph is compared over one step without it. A decoder "
                   "(--cache-capacity, or a graph converted with it) decodes N greedy tokens "
                   "after --prompt on both sides: the same tokens, each position's logits "
                   "within the bounds. --prompt without --cache-capacity runs the model's "
                   "concat form, converted once per length (on ort). With --runtime chromium "
                   "the graph steps through the module's createSession, its state kept on "
                   "the browser's context.")
def command(source, graph_path, dims, input_shapes, known_inputs, state_patterns, cache_capacity,
            prompt, target_name, io_layout, given, inputs_dir, seed, atol, rtol, ulp, as_json,
            runtime, oracle, do_bisect, dump_dir, steps):
    """Check that a WebNN graph computes what SOURCE computes.

    Runs SOURCE on its own runtime (ONNX Runtime, LiteRT) and the graph on --runtime on the
    same inputs (given with --input/--inputs, else seeded); reports per output the max abs and rel error, max
    ULP, cosine and the worst element. An output outside the budget is judged against the
    graph evaluated in float64 and the source runtime's own noise (see the README's verdict
    rules). A graph converted with --io-layout takes some inputs (gives some outputs)
    transposed: inputs are made, and --input files given, in SOURCE's layout and transposed
    for the graph; its outputs are transposed back before comparison. Exit 0 pass, 1
    mismatch, 2 error.
    """
    if dump_dir and not do_bisect:
        raise click.UsageError("--dump writes what --bisect finds: give --bisect too")
    if graph_path and target_name:
        raise click.UsageError("--target converts SOURCE for a backend; --graph gives the "
                               "graph already: drop one")
    if io_layout and not target_name:
        raise click.UsageError("--io-layout applies with --target")
    if runtime.startswith("device") and (
            steps is not None or prompt is not None or cache_capacity is not None
            or state_patterns or (graph_path or "").lower().endswith(".js")):
        raise click.UsageError("--runtime device runs one stateless graph: drop --steps, "
                               "--prompt, --cache-capacity, --state and a .js --graph")
    quiet_runtimes(debugging())
    feeds = read_inputs(given, inputs_dir) if given or inputs_dir else None
    say = click.get_current_context().with_resource(phases(False if as_json else None))
    say(f"verifying {source}: the source on its own runtime, the graph on {runtime}")
    module = graph_path if graph_path and graph_path.lower().endswith(".js") else None
    if module and (runtime != "chromium" or do_bisect or steps is not None):
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

            convert_for_target(graph, target_name, io_layout=io_layout)
    elif target_name:
        graph = converter.convert(source, target=target_name, io_layout=io_layout, dims=dims,
                                  input_shapes=input_shapes, known_inputs=known_inputs)
    if prompt is not None and graph is None and not module:  # the concat form, converted once per length
        from converter.state.concat_form import ConcatLoop
        from converter.state.kv_cache import parse_state_patterns

        graph = ConcatLoop(source, patterns=parse_state_patterns(state_patterns) or None,
                           dims=dims)
    if graph is not None and (prompt is not None or (steps and _decoder(graph))):
        if feeds or known_inputs or do_bisect:
            raise ConverterError("a decoder is verified from --prompt alone",
                                 fix="drop --input/--inputs, --const and --bisect")
        if not prompt:
            raise ConverterError("a decoder starts from a prompt",
                                 fix="give --prompt IDS, e.g. --prompt 1,5,9")
        from converter.state.kv_cache import parse_state_patterns
        from converter.verification_decode import verify_decoding

        report = verify_decoding(source, graph, prompt=prompt, steps=steps or 1,
                                 patterns=parse_state_patterns(state_patterns) or None,
                                 dims=dims, atol=atol, rtol=rtol, ulp=ulp,
                                 graph_path=graph_path, runtime=runtime)
        finish(report, as_json)
        return
    elif graph is None and not module and (do_bisect or (steps is None and not known_inputs)):
        graph = load_any(source, dims=dims, input_shapes=input_shapes, known_inputs=known_inputs)
    if steps is not None or (graph is not None and graph.state):
        if feeds:
            raise ConverterError("step-wise verification draws its inputs a step at a time",
                                 fix="drop --input/--inputs for --steps")
        if known_inputs or do_bisect:
            raise ConverterError("step-wise verification runs without --const or --bisect",
                                 fix="drop --const and --bisect for --steps")
        from converter.verification_steps import verify_steps

        report = verify_steps(source, graph, steps=steps or 1, seed=seed, dims=dims,
                              input_shapes=input_shapes, atol=atol, rtol=rtol, ulp=ulp,
                              graph_path=graph_path, runtime=runtime)
        finish(report, as_json)
        return
    report = converter.verify(source, module or graph, seed=seed, dims=dims, input_shapes=input_shapes,
                              known_inputs=known_inputs, atol=atol, rtol=rtol, ulp=ulp,
                              graph_path=graph_path, runtime=runtime, oracle=oracle, feeds=feeds)
    finding = None
    if do_bisect and not report.passed:
        from converter.bisect import bisect

        finding = bisect(source, graph, seed=seed, feeds=feeds, known_inputs=known_inputs,
                         dump=dump_dir)
    finish(report, as_json, finding, bisected=do_bisect and not report.passed)
