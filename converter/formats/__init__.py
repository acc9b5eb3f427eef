"""WebNN graph files: load and save a Graph as `.webnn` text or `webnn-graph-json`.

A graph NAME is saved as `NAME.webnn` (or `NAME.json`) plus, when it has weights,
`NAME.manifest.json` and `NAME.weights` beside it (formats.md describes all four).

    graph = load_graph("tiny.webnn")      # weights are zero-copy views into tiny.weights
    save_graph(graph, "out/tiny.json")    # -> [out/tiny.json, out/tiny.manifest.json, ...]
"""
from __future__ import annotations

from pathlib import Path

from ..errors import FormatError
from ..ir import Graph
from . import webnn_json, webnn_text
from ._files import AtomicSave, read_text
from ._text_lexer import MAX_TEXT_CHARS
from .doc_from_graph import doc_from_graph
from .weights import WeightsFile, manifest_text, write_weights

__all__ = ["load_graph", "read_graph_doc", "save_graph", "sibling_paths", "graph_form",
           "write_graph_files", "FORMATS"]

# suffix -> the module that parses and renders that form
FORMATS = {".webnn": webnn_text, ".json": webnn_json}
_MANIFEST_SUFFIX = ".manifest.json"


def graph_form(path: Path):
    """The module that reads and writes `path`'s form (by its suffix)."""
    if path.name.endswith(_MANIFEST_SUFFIX):
        raise FormatError("a graph file cannot end in .manifest.json (that name belongs to its "
                          "weights manifest)", where=str(path),
                          fix="name it NAME.webnn or NAME.json")
    module = FORMATS.get(path.suffix.lower())
    if module is None:
        raise FormatError(f"unknown graph file type '{path.suffix}'", where=str(path),
                          fix="use a .webnn (text) or .json file")
    return module


def sibling_paths(path: str | Path) -> tuple[Path, Path]:
    """The manifest and weights file that belong to a graph file: NAME.manifest.json and
    NAME.weights in the same folder."""
    path = Path(path)
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    return path.with_name(stem + _MANIFEST_SUFFIX), path.with_name(stem + ".weights")


def load_graph(path: str | Path, *, verify: bool = True) -> Graph:
    """Read a graph file, and its weights when it references any.

    A file that also records the model at other values of its dims (converter/dynamic/
    variants_file.py) is read here as the plain graph it is: its own graph, the first variant.
    `converter.load` (converter/conversion/by_suffix.py) reads the variants too.

    Args:
        path: a `.webnn` or `.json` file.
        verify: run `graph.verify()`; with False the graph is returned as read, so that
            `graph.problems()` can list every problem at once.

    Raises:
        FormatError / WeightsError: the file, its manifest or its weights are inconsistent.
        OpValidationError: a node breaks one of its op's rules (located at its line).
        GraphInvalidError: several problems, or a graph invariant is broken.
    """
    from .graph_from_doc import graph_from_doc  # here: saving a graph does not need it

    path, module, text, doc = read_graph_doc(path)
    weights = WeightsFile(*sibling_paths(path)) if doc.needs_weights() else None
    return graph_from_doc(doc, weights, verify=verify)


def read_graph_doc(path: str | Path):
    """(path, the form's module, the file's text, its parsed GraphDoc), for readers that look
    at more of the file than its graph."""
    path = Path(path)
    module = graph_form(path)
    text = read_text(path, "graph file", max_bytes=MAX_TEXT_CHARS)  # a char is a byte or more
    return path, module, text, module.parse(text, str(path))


def save_graph(graph: Graph, path: str | Path, *, verify: bool = True) -> list[Path]:
    """Write a graph by the path's suffix; return the paths written.

    Writes `path`, plus `NAME.manifest.json` and `NAME.weights` when the graph has weight
    constants. The save is atomic: each file is written under a temporary name in the target
    folder and renamed only when all are complete; on any failure nothing is left behind and
    existing files are untouched. With `verify` (the default) an invalid graph is refused
    before anything is written, as a file our own reader rejects helps nobody.
    """
    path = Path(path)
    module = graph_form(path)
    if verify:
        graph.verify()
    doc = doc_from_graph(graph)
    text = module.render(doc)
    tensors = [(c.key, c.source) for c in doc.weight_decls()]
    return write_graph_files(path, text, tensors)


def write_graph_files(path: Path, text: str, tensors: list) -> list[Path]:
    """Write a graph file's text and, when it has weights, its manifest and weights file
    ((key, ConstantData) pairs, streamed) beside it, atomically; return the paths written.

    The manifest and weights are named after the graph file (NAME.manifest.json and
    NAME.weights, where every `.webnn` reader looks for them). When another graph file of the
    same NAME (NAME.webnn, NAME.json, NAME.js) already uses them and they would change, nothing
    is written (files.guard.refuse_shared_sidecars); writing the same path again is fine."""
    manifest_path, weights_path = sibling_paths(path)
    with AtomicSave() as files:
        if tensors:
            with files.open(weights_path) as stream:
                manifest = write_weights(stream, tensors, where=str(weights_path))
            files.write_text(manifest_path, manifest_text(manifest))
        files.write_text(path, text)
        files.commit()
    return [path, manifest_path, weights_path] if tensors else [path]
