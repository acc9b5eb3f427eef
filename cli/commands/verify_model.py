"""`webnn-convert verify SRC`: the source on its own runtime vs its WebNN graph."""
from __future__ import annotations

import json

import click

import converter
from converter.convert import load_any
from converter.errors import ConverterError

from ..options import shape_options, tolerance_options


def print_report(report) -> None:
    from rich.console import Console  # only when printing: rich is slow to import
    from rich.table import Table

    console = Console(highlight=False, width=160)
    runs = [(f"{report.graph_runtime} vs {report.source_runtime}", report.outputs)]
    runs += [(f"{label} vs {report.source_runtime}", results)
             for label, results in report.others.items()]
    for title, results in runs:
        table = Table("output", "shape", "max abs", "max rel", "max ULP", "cosine", "worst at",
                      "result", box=None, title=title, title_justify="left")
        for o in results:
            table.add_row(o.name, str(o.shape), f"{o.max_abs:.3g}", f"{o.max_rel:.3g}",
                          "-" if o.max_ulp is None else str(o.max_ulp),
                          "-" if o.cosine is None else f"{o.cosine:.6f}",
                          "-" if o.worst_index is None else str(o.worst_index),
                          "pass" if o.passed else f"FAIL: {o.reason}")
        console.print(table)
    bounds = {o.name: {k: v for k, v in vars(o.bounds).items() if v not in (None, False)}
              for o in report.outputs}
    console.print(f"seed {report.seed}; bounds {bounds}")
    console.print("[bold]pass[/bold]" if report.passed else "[bold red]mismatch[/bold red]")


def finish(report, as_json: bool) -> None:
    """Print a parity report (as JSON or a table); exit 1 when it did not pass."""
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    elif hasattr(report, "steps"):
        from .stepping import print_steps_report

        print_steps_report(report)
    else:
        print_report(report)
    if not report.passed:
        raise SystemExit(1)


@click.command("verify")
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("--graph", "graph_path", type=click.Path(dir_okay=False),
              help="A WebNN graph converted earlier (.webnn/.json); default: convert SOURCE now.")
@shape_options
@tolerance_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--runtime", type=click.Choice(["ort", "chromium"]), default="ort",
              show_default=True,
              help="Where the WebNN graph runs: ONNX Runtime (through the ONNX lowering) or a "
                   "real headless Chromium's WebNN (`webnn-convert browser-install` first).")
@click.option("--steps", type=click.IntRange(min=1), default=None,
              help="Compare N consecutive steps, each side carrying its own state (LiteRT "
                   "keeps its variables; an ONNX source is fed its own next-state outputs). "
                   "A stateful graph is compared over one step without it.")
def command(source, graph_path, dims, input_shapes, known_inputs, seed, atol, rtol, ulp, as_json,
            runtime, steps):
    """Check that a WebNN graph computes what SOURCE computes.

    Runs SOURCE on its own runtime (ONNX Runtime, LiteRT) and the graph on --runtime on the
    same seeded inputs; reports per output the max abs and rel error, max
    ULP, cosine and the worst element. Exit 0 pass, 1 mismatch, 2 error.
    """
    graph = load_any(graph_path) if graph_path else None
    if steps is None and graph is None and not known_inputs:
        graph = load_any(source, dims=dims, input_shapes=input_shapes)
    if steps is not None or (graph is not None and graph.state):
        if known_inputs or runtime != "ort":
            raise ConverterError("step-wise verification runs on ort, without --const",
                                 fix="drop --const and --runtime for --steps")
        from converter.verification_steps import verify_steps

        report = verify_steps(source, graph, steps=steps or 1, seed=seed, dims=dims,
                              input_shapes=input_shapes, atol=atol, rtol=rtol, ulp=ulp,
                              graph_path=graph_path)
        finish(report, as_json)
        return
    report = converter.verify(source, graph, seed=seed, dims=dims, input_shapes=input_shapes,
                              known_inputs=known_inputs, atol=atol, rtol=rtol, ulp=ulp,
                              graph_path=graph_path, runtime=runtime)
    finish(report, as_json)
