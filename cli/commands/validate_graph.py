"""`webnn-convert validate FILE`: every problem of a graph file, all at once."""
from __future__ import annotations

import click

import converter
from converter.dynamic.open_dims import open_summary_if_onnx
from converter.dynamic.variants import Variants, point_text
from converter.errors import ConverterError, GraphInvalidError, OpenDimsError

from ..inputs import model_path
from ..options import SOURCE, use
from ..terminal import echo, echo_json


@click.command("validate")
@click.argument("file", type=click.Path(dir_okay=False))
@use(*SOURCE, "json")
def command(file: str, dims, input_shapes, known_inputs, follow_symlinks, as_json) -> None:
    """Check a graph file: its schema, its references, and every graph and op invariant.

    FILE is a WebNN graph (.webnn or .json) or a model (.onnx, .tflite), checked as the WebNN
    graph it converts into (a model's dynamic dimensions take --dim or --input-shape). An
    ONNX model whose dims are left open is checked as far as it can be without their values
    (the file and ONNX's own rules), and said to be valid with open dims; a file converted at
    several values of a dim has each variant checked. Exits 0 when the graph is valid, 1 when
    it is not, listing every problem found. With --json, stdout is one JSON document: the
    file, `valid`, the `problems` and the operations (or the open dims) instead of lines.
    """
    file = model_path(file, follow_symlinks)
    summary, operations, loaded = None, 0, None
    try:
        loaded = converter.load(file, dims=dims, input_shapes=input_shapes,
                                known_inputs=known_inputs, verify=False)
        graphs = loaded.entries if isinstance(loaded, Variants) else [({}, loaded)]
        problems = [p if not point else f"variant {point_text(point)}: {p}"
                    for point, graph in graphs for p in graph.problems()]
        operations = sum(len(graph.operations) for _, graph in graphs)
    except GraphInvalidError as e:  # several problems found while reading the file
        problems = e.problems
    except OpenDimsError as e:  # a model that is fine, but left open: checked without values
        summary = open_summary_if_onnx(file, dims, input_shapes)
        problems = [] if summary is not None else [e.line()]
    except ConverterError as e:  # the file itself cannot be read into a graph
        problems = [e.line()]
    if as_json:
        _print_json(file, problems, operations, summary, loaded)
        if problems:
            raise SystemExit(1)
        return
    if problems:
        for p in problems:  # a problem that names the file already is printed as it is
            echo(p if p.startswith(f"{file}:") else f"{file}: {p}", err=True)
        echo(f"{file}: invalid ({len(problems)} problem{'s' * (len(problems) > 1)})",
             err=True)
        raise SystemExit(1)
    if summary is not None:
        open_dims = ", ".join(summary["openDims"] + [f"unnamed in {name}" for name in
                                                     summary["inputsWithUnnamedDims"]])
        echo(f"{file}: valid with open dims ({open_dims}; {summary['nodes']} ONNX nodes); "
             f"the WebNN graph's checks need their values (--dim NAME=VALUE)")
    elif isinstance(loaded, Variants):
        echo(f"{file}: valid ({len(loaded.entries)} variants: {loaded.accepted_text()}; "
             f"{operations} operations in all)")
    else:
        echo(f"{file}: valid ({operations} operations)")


def _print_json(file: str, problems: list[str], operations: int, summary, loaded) -> None:
    doc = {"file": file, "valid": not problems, "problems": problems}
    if not problems:
        doc["operations"] = operations
    if summary is not None:
        doc["openDims"] = summary["openDims"]
        doc["inputsWithUnnamedDims"] = summary["inputsWithUnnamedDims"]
        doc["sourceNodes"] = summary["nodes"]
    elif isinstance(loaded, Variants):
        doc["variants"] = [dict(point) for point, _ in loaded.entries]
    echo_json(doc, indent=2)
