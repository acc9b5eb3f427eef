"""`webnn-convert inspect FILE`: what a graph holds."""
from __future__ import annotations

from pathlib import Path

import click

import converter
from converter.dynamic.open_dims import open_summary_if_onnx
from converter.dynamic.tflite_dims import BATCH, dynamic_batch_shapes
from converter.dynamic.variants import Variants, point_text
from converter.errors import OpenDimsError
from converter.ir.summary import summarize

from ..inputs import model_path
from ..options import SOURCE, use
from ..terminal import echo, echo_json


@click.command("inspect")
@click.argument("file", type=click.Path(dir_okay=False))
@use("json", *SOURCE, "target")
def command(file: str, as_json: bool, dims, input_shapes, known_inputs, follow_symlinks,
            target_name) -> None:
    """Show a graph's inputs, outputs, op histogram, constants and transpose count.

    FILE is a WebNN graph (.webnn or .json, with its manifest and weights beside it) or a
    model (.onnx, .tflite), shown as the WebNN graph it converts into; a model's dynamic
    dimensions take values from --dim or --input-shape. Without them, an ONNX model's inputs
    and outputs are shown with the dims' names and its ONNX op histogram (the WebNN ops need
    the values), a TFLite model with a dynamic batch at its stored batch, its signature beside;
    a file converted at several values of a dim shows each variant. With --target, the graph
    is shown as `convert --target T` writes it: after the target's passes (its dims need
    values then).
    """
    file = model_path(file, follow_symlinks)
    try:
        loaded = converter.load(file, dims=dims, input_shapes=input_shapes,
                                known_inputs=known_inputs)
    except OpenDimsError as e:
        open_info = open_summary_if_onnx(file, dims, input_shapes)
        if open_info is None or target_name:  # a target's passes need the dims' values
            raise e from None
        _show_open(open_info, as_json)
        return
    if target_name:
        _rewrite_for(loaded, target_name)
    if isinstance(loaded, Variants):
        _show_variants(loaded, as_json)
        return
    info = summarize(loaded)
    if target_name:
        info["target"] = target_name
    if Path(file).suffix.lower() == ".tflite" and BATCH not in dims and not input_shapes:
        symbolic = dynamic_batch_shapes(file)
        if symbolic:  # shown at the stored batch; the signature says it is open
            info["openDims"] = [BATCH]
            info["symbolicShapes"] = symbolic
    if as_json:
        echo_json(info, indent=2)
        return
    _show_graph(info)


def _rewrite_for(loaded, target_name: str) -> None:
    """Run the target's passes on the graph (each variant's), as `convert --target` does;
    violations left after them are an error (`check --target T` lists and explains them)."""
    from converter.targets import load_target
    from converter.targets.pipeline import convert_for_target

    target = load_target(target_name)
    for _, graph in (loaded.entries if isinstance(loaded, Variants) else [({}, loaded)]):
        convert_for_target(graph, target)


def _shape_text(shape) -> str:
    return "[unknown rank]" if shape is None else "[" + ", ".join(map(str, shape)) + "]"


def _needs(info: dict) -> str:
    parts = [f"--dim {d}=N" for d in info["openDims"]]
    parts += [f"--input-shape {name}=d0,d1,..." for name in info["inputsWithUnnamedDims"]]
    return " ".join(parts)


def _show_open(info: dict, as_json: bool) -> None:
    info = {**info, "needs": _needs(info)}
    if as_json:
        echo_json(info, indent=2)
        return
    from ..tables import print_table

    dims = ", ".join(info["openDims"]) or "none named"
    echo(f"graph {info['name']}: open dims {dims}; {info['nodes']} ONNX nodes. Its WebNN "
         f"ops, constants and transposes need values: {info['needs']}")
    print_table(("", "name", "data type", "shape"),
                [(kind[:-1], name, d["dataType"], _shape_text(d["shape"]))
                 for kind in ("inputs", "outputs") for name, d in info[kind].items()])
    print_table(("ONNX op", "count"),
                [(name, str(count)) for name, count in info["sourceOpHistogram"].items()])


def _show_variants(variants: Variants, as_json: bool) -> None:
    entries = [{"dims": dict(point), **summarize(graph)} for point, graph in variants.entries]
    if as_json:
        echo_json({"variesIn": list(variants.dims), "fixed": dict(variants.fixed),
                   "ranges": {k: list(v) for k, v in variants.ranges.items()},
                   "variants": entries}, indent=2)
        return
    ranges = "".join(f"; {name} accepted in {lo}..{hi}"
                     for name, (lo, hi) in variants.ranges.items())
    fixed = f"; fixed: {point_text(variants.fixed)}" if variants.fixed else ""
    echo(f"{len(entries)} variants, varying in {', '.join(variants.dims)}{ranges}{fixed}")
    for entry in entries:
        echo("")
        echo(f"variant {point_text(entry['dims'])}:")
        _show_graph(entry)


def _show_graph(info: dict) -> None:
    from ..tables import print_table

    echo(f"graph {info['name']}: {info['operations']} operations, "
         f"{info['constants']} constants ({_bytes(info['constantBytes'])}), "
         f"{info['transposes']} transposes"
         + (f", after the passes of target {info['target']}" if "target" in info else ""))
    permuted = info.get("permuted", {})
    symbolic = info.get("symbolicShapes", {})
    if symbolic:
        echo(f"open dims: {', '.join(info['openDims'])} (shown at the model's stored size; "
             f"--dim {info['openDims'][0]}=N for another)")
    print_table(("", "name", "data type", "shape"),
                [(kind[:-1], name, d["dataType"], str(d["shape"]) + (
                    f" (the source's transposed by {permuted[kind][name]})"
                    if name in permuted.get(kind, {}) else "") + (
                    f" (in the model: {_shape_text(symbolic[kind][name])})"
                    if name in symbolic.get(kind, {}) else ""))
                 for kind in ("inputs", "outputs") for name, d in info[kind].items()])
    print_table(("op", "count"), [(name, str(count)) for name, count in info["opHistogram"].items()])


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
