"""Files by their suffix: read a source (ONNX or TFLite model, or WebNN graph file), write an
output chosen by its suffix. Writes are atomic: on any failure nothing is left behind.
(`converter.convert`, the API function, is this plus a target's rewrites.)
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..errors import ConverterError
from ..ir import Graph

__all__ = ["load_any", "write_any", "import_reader", "OUTPUT_SUFFIXES", "refuse_overwriting"]

OUTPUT_SUFFIXES = (".webnn", ".json", ".onnx", ".tflite", ".js")
# The module load_any reads each kind of source with (imported on first use).
_READERS = {".onnx": "converter.importers.onnx", ".tflite": "converter.importers.tflite",
            ".webnn": "converter.dynamic.variants_file", ".json": "converter.dynamic.variants_file"}


def import_reader(path: str | Path) -> None:
    """Import the module load_any would read `path` with (by its suffix) without reading it,
    so that a caller can have its start-up done first; nothing for a suffix load_any refuses."""
    import importlib

    module = _READERS.get(Path(path).suffix.lower())
    if module is not None:
        importlib.import_module(module)


def load_any(path: str | Path, *, dims: Mapping[str, int] | None = None,
             input_shapes: Mapping[str, Sequence[int]] | None = None,
             known_inputs: Mapping | None = None, verify: bool = True,
             variants: bool = False) -> Graph:
    """A WebNN graph from a `.onnx` model (imported) or a `.webnn`/`.json` graph file. A graph
    file holding variants at several dims gives the one at `dims`, or with `variants` and no
    `dims` all of them (converter.dynamic.Variants)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        from ..importers.onnx import import_onnx

        return import_onnx(path, dims=dims, input_shapes=input_shapes, known_inputs=known_inputs)
    if suffix == ".tflite":
        from ..importers.tflite import import_tflite

        if dims:  # only `batch`, the axis a dynamic-batch export marks -1
            from ..dynamic.tflite_dims import tflite_input_shapes

            input_shapes = tflite_input_shapes(path, dims, input_shapes)

        return import_tflite(path, input_shapes=input_shapes, known_inputs=known_inputs)
    if suffix in (".webnn", ".json"):
        if input_shapes or known_inputs:
            raise ConverterError("--input-shape and --const apply to source models, not "
                                 "to WebNN graphs, whose shapes are static", where=str(path))
        from ..dynamic.variants_file import load_graph_at, load_graph_file

        if variants and not dims:
            return load_graph_file(path, verify=verify)
        return load_graph_at(path, verify=verify, dims=dims)
    raise ConverterError(f"cannot read {suffix or 'a file without a suffix'}", where=str(path),
                         fix="give an .onnx or .tflite model, or a .webnn/.json WebNN graph")


def write_any(graph: Graph, path: str | Path, *, verify: bool = True) -> list[Path]:
    """Write `graph` (or Variants, to .webnn/.json/.js) in the format the suffix names;
    return the files written. `verify=False` spares a .webnn/.json save re-checking a graph
    the caller has just verified (an import's result, untouched since).

    Nothing is written when any of the files it would write (the output, its manifest,
    weights and page) is a file this command reads (converter.files.guard)."""
    from ..files.guard import check_writes

    path = Path(path)
    suffix = path.suffix.lower()
    check_writes(_with_siblings(path))
    if suffix in (".webnn", ".json"):
        from ..dynamic.variants_file import save_graph_file

        return save_graph_file(graph, path, verify=verify)
    if not isinstance(graph, Graph):  # Variants: one file for all of them only in these forms
        if suffix == ".js":
            from ..dynamic.module_js import write_variants_js

            return write_variants_js(graph, path, convert=graph.convert)[0]
        raise ConverterError(f"a {suffix} file holds one graph; this conversion made one per "
                             f"value of {', '.join(graph.dims)}", where=str(path),
                             fix="write .webnn, .json or .js, or give each dim one value")
    if suffix == ".tflite":
        from ..exporters.tflite import save_tflite

        return save_tflite(graph, path)
    if suffix == ".onnx":
        from ..formats._files import AtomicSave
        from ..lowering.onnx.stream import write_onnx

        with AtomicSave() as save:
            with save.open(path) as f:
                write_onnx(graph, f)  # weights streamed from the graph's arrays, never copied
            return save.commit()
    if suffix == ".js":
        from ..emit.javascript import write_js

        return write_js(graph, path)
    raise ConverterError(f"cannot write {suffix or 'a file without a suffix'}", where=str(path),
                         fix=f"use one of {', '.join(OUTPUT_SUFFIXES)}")


def _with_siblings(path: Path) -> list[Path]:
    """A file and those that go with it: a graph's manifest and weights, a .js module's page."""
    suffix = path.suffix.lower()
    if suffix in (".webnn", ".json", ".js"):
        from ..formats import sibling_paths

        files = [path, *sibling_paths(path)]
        return files + [path.with_suffix(".html")] if suffix == ".js" else files
    return [path]


def refuse_overwriting(inputs: Iterable[str | Path], output: str | Path) -> None:
    """Raise when writing `output` (with its manifest, weights, page) would replace one of the
    `inputs` (a source model, its graph files, a .npy value): they are recorded as read and
    the outputs checked against them (converter.files.guard), before anything is read. Files
    found while reading (external data) are checked when the outputs are saved."""
    from ..files.guard import check_writes, note_read, tracking

    with tracking():
        for source in inputs:
            source = Path(source)
            read = _with_siblings(source) if source.suffix.lower() in (".webnn", ".json") \
                else [source]
            for path in read:
                note_read(path, "named on the command line" if path == source
                          else f"part of {source.name}")
        check_writes(_with_siblings(Path(output)))
