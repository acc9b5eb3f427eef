"""`webnn-convert validate FILE`: every problem of a graph file, all at once."""
from __future__ import annotations

import click

import converter
from converter.dynamic.variants import one_graph
from converter.errors import ConverterError, GraphInvalidError

from ..options import source_options
from ..terminal import echo


@click.command("validate")
@click.argument("file", type=click.Path(dir_okay=False))
@source_options
def command(file: str, dims, input_shapes, known_inputs) -> None:
    """Check a graph file: its schema, its references, and every graph and op invariant.

    FILE is a WebNN graph (.webnn or .json) or a model (.onnx, .tflite), checked as the WebNN
    graph it converts into (a model's dynamic dimensions take --dim or --input-shape). Exits 0
    when the graph is valid, 1 when it is not, listing every problem found.
    """
    try:
        graph = one_graph(converter.load(file, dims=dims, input_shapes=input_shapes,
                                         known_inputs=known_inputs, verify=False), file)
        problems = graph.problems()
    except GraphInvalidError as e:  # several problems found while reading the file
        problems = e.problems
    except ConverterError as e:  # the file itself cannot be read into a graph
        problems = [e.line()]
    if problems:
        for p in problems:  # a problem that names the file already is printed as it is
            echo(p if p.startswith(f"{file}:") else f"{file}: {p}", err=True)
        echo(f"{file}: invalid ({len(problems)} problem{'s' * (len(problems) > 1)})",
             err=True)
        raise SystemExit(1)
    echo(f"{file}: valid ({len(graph.operations)} operations)")
