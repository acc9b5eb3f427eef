"""`webnn-convert inspect FILE`: what a graph holds."""
from __future__ import annotations

import json

import click

import converter
from converter.dynamic.variants import one_graph
from converter.summary import summarize

from ..options import source_options


@click.command("inspect")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@source_options
def command(file: str, as_json: bool, dims, input_shapes, known_inputs) -> None:
    """Show a graph's inputs, outputs, op histogram, constants and transpose count.

    FILE is a WebNN graph (.webnn or .json, with its manifest and weights beside it) or a
    model (.onnx, .tflite), shown as the WebNN graph it converts into; a model's dynamic
    dimensions take values from --dim or --input-shape.
    """
    info = summarize(one_graph(converter.load(file, dims=dims, input_shapes=input_shapes,
                                              known_inputs=known_inputs), file))
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    from ..tables import print_table

    click.echo(f"graph {info['name']}: {info['operations']} operations, "
               f"{info['constants']} constants ({_bytes(info['constantBytes'])}), "
               f"{info['transposes']} transposes")
    permuted = info.get("permuted", {})
    print_table(("", "name", "data type", "shape"),
                [(kind[:-1], name, d["dataType"], str(d["shape"]) + (
                    f" (the source's transposed by {permuted[kind][name]})"
                    if name in permuted.get(kind, {}) else ""))
                 for kind in ("inputs", "outputs") for name, d in info[kind].items()])
    print_table(("op", "count"), [(name, str(count)) for name, count in info["opHistogram"].items()])


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
