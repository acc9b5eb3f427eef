"""Variants (converter.dynamic.variants) in one graph file, written so that readers without the
feature see the first variant as a plain graph.

JSON form: the file is the first variant's graph plus a top-level `variants` member whose other
entries carry their graphs as webnn-graph-json objects:

    "variants": {"dims": ["sequence"], "ranges": {"sequence": [8, 32]}, "fixed": {"batch": 1},
                 "entries": [{"at": {"sequence": 8}},
                             {"at": {"sequence": 20}, "graph": {"format": ..., "nodes": ...}},
                             {"at": {"sequence": 32}, "graph": {...}}]}

Text form: the first variant's graph, then comments (which other readers skip):

    #@variants {"dims": ["sequence"], "ranges": {"sequence": [8, 32]}, "at": {"sequence": 8}}
    #@variant {"sequence": 20}
    #| webnn_graph "bert" v1 {
    #|   ...
    #| }

Every variant's weights go to the one NAME.weights: a constant whose data type, shape and bytes
equal one already written is a reference to that tensor, so the file is one model's weights plus
only the constants that truly differ. A constant that is the leading corner of the same
constant in a larger variant (the position rows sliced to the sequence length) is written as
that constant and a `slice` node, so its bytes are not written again; the record's `corners`
names them, and this reader turns each such slice back into a constant (the graph read is the
graph written: an operand that must be constant, such as Chromium's gatherElements indices,
stays one).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FormatError
from ..formats import graph_form, read_graph_doc, save_graph, sibling_paths, webnn_json, \
    webnn_text, write_graph_files
from ..formats._files import parse_json
from ..formats.doc_from_graph import doc_from_graph
from ..formats.document import ConstDecl, GraphDoc, NodeDecl, unique_name
from ..formats.weights import WeightsFile
from ..ir import Graph
from ..schemas import validate

__all__ = ["save_variants", "variants_record", "variants_from_record", "MAX_ENTRIES"]

MAX_ENTRIES = 64  # a file listing more variants than this is refused before any is built
_RECORD = "#@variants"
_ENTRY = "#@variant"
_LINE = "#|"


# -- writing ------------------------------------------------------------------------------------
def load_graph_file(path: str | Path, *, verify: bool = True):
    """A graph file's content: its Graph, or the Variants when it records the model at several
    values of its dims."""
    from ..formats.graph_from_doc import graph_from_doc  # reading only: saves do not load it

    path, module, text, doc = read_graph_doc(path)
    record = variants_record(doc, text, module, str(path))
    if record is not None:
        return variants_from_record(doc, record, str(path),
                                    lambda: WeightsFile(*sibling_paths(path)), verify=verify)
    weights = WeightsFile(*sibling_paths(path)) if doc.needs_weights() else None
    return graph_from_doc(doc, weights, verify=verify)


def load_graph_at(path: str | Path, *, verify: bool = True, dims=None) -> Graph:
    """One graph from a graph file: for a file holding variants, the one at `dims` (a
    ConverterError lists them when none is given); a plain graph takes no `dims`."""
    graph = load_graph_file(path, verify=verify)
    if not isinstance(graph, Graph):  # variants: which one is for the caller to say
        return graph.at(dims, where=str(path))
    if dims:
        raise FormatError("--dim applies to source models and to files holding variants at "
                          "several dims; this graph's shapes are static", where=str(path))
    return graph


def save_graph_file(graph, path: str | Path, *, verify: bool = True) -> list[Path]:
    """`formats.save_graph` for a Graph; for Variants, every variant in one file (below)."""
    if isinstance(graph, Graph):
        return save_graph(graph, path, verify=verify)
    path = Path(path)
    return save_variants(graph, path, graph_form(path), sibling_paths, verify=verify)


def save_variants(variants, path: Path, module, sibling_paths, *, verify: bool = True
                  ) -> list[Path]:
    """Write `variants` to `path` in `module`'s form (webnn_json or webnn_text), with one
    shared, deduplicated weights file; atomic as save_graph is. Returns the paths written."""
    docs = []
    for _, graph in variants.entries:
        if verify:
            graph.verify()
        docs.append(doc_from_graph(graph))
    corners = _share_corners(docs)
    tensors = _share_weights(docs)
    record: dict[str, Any] = {"dims": list(variants.dims)}
    if corners:
        record["corners"] = corners
    if variants.ranges:
        record["ranges"] = {n: list(r) for n, r in variants.ranges.items()}
    if variants.fixed:
        record["fixed"] = dict(variants.fixed)
    points = [dict(p) for p, _ in variants.entries]
    if module is webnn_json:
        obj = webnn_json.to_object(docs[0])
        record["entries"] = [{"at": points[0]}] + [
            {"at": p, "graph": webnn_json.to_object(d)} for p, d in zip(points[1:], docs[1:])]
        obj["variants"] = record
        text = webnn_json.render_object(obj)
    else:
        text = webnn_text.render(docs[0]) + _text_record({**record, "at": points[0]},
                                                         points[1:], docs[1:])
    return write_graph_files(path, text, tensors)


def _share_weights(docs: list[GraphDoc]) -> list:
    """One (key, ConstantData) per distinct constant over all docs; every doc's weights
    declarations are pointed at those keys."""
    import hashlib  # here: only variants (several graphs sharing weights) hash them

    by_content: dict[tuple, str] = {}
    taken: set[str] = set()
    tensors = []
    for doc in docs:
        for decl in doc.weight_decls():
            data = decl.source
            digest = hashlib.sha256(memoryview(data.raw_bytes()).cast("B")).hexdigest()
            content = (data.data_type, tuple(data.shape), digest)
            key = by_content.get(content)
            if key is None:
                key = by_content[content] = unique_name(decl.key, taken)
                tensors.append((key, data))
            decl.key = key
    return tensors


def _share_corners(docs: list[GraphDoc]) -> list[str]:
    """A constant whose value in every variant is the leading corner of its value in the
    largest (position rows sliced to the sequence length, a mask cut to size) becomes, in every
    variant, that largest value and a `slice` node: exact, and its bytes are written once.
    Returns the names of those constants (the record's `corners`: a reader turns each slice
    back into a constant, see _restore_corners)."""
    shared = []
    by_name: dict[str, list] = {}
    for doc in docs:
        for decl in doc.consts:
            if decl.kind == "weights" and not decl.source.packed:
                by_name.setdefault(decl.name, []).append((doc, decl))
    for name, found in by_name.items():
        _, big = max(found, key=lambda item: item[1].source.nbytes)
        if not all(_is_corner(d.source, big.source) for _, d in found) or all(
                tuple(d.shape) == tuple(big.shape) for _, d in found):
            continue
        # The largest variant takes the same form (its slice keeps every row), so that all
        # variants stay one structure (converter.dynamic.symbolic reads them as one graph).
        for doc, decl in found:
            taken = {d.name for d in doc.inputs} | {c.name for c in doc.consts}
            taken.update(o for n in doc.nodes for o in n.outputs)
            full = unique_name(f"{name}/all rows", taken)
            doc.consts.append(ConstDecl(full, big.data_type, big.shape, "weights",
                                        key=big.key, source=big.source))
            doc.consts.remove(decl)
            doc.nodes.insert(0, NodeDecl("slice", [full], {"starts": [0] * len(decl.shape),
                                                          "sizes": list(decl.shape)},
                                         [name], name))
        shared.append(name)
    return shared


def _is_corner(small, big) -> bool:
    """Whether `small` is `big`'s leading corner (`big` itself included)."""
    if small.data_type != big.data_type or len(small.shape) != len(big.shape):
        return False
    if any(s > b for s, b in zip(small.shape, big.shape)):
        return False
    corner = big.numpy()[tuple(slice(0, s) for s in small.shape)]
    return np.array_equal(corner, small.numpy(), equal_nan=True)


def _text_record(record: dict, points: list[dict], docs: list[GraphDoc]) -> str:
    lines = [f"{_RECORD} {_compact(record)}"]
    for point, doc in zip(points, docs):
        lines.append(f"{_ENTRY} {_compact(point)}")
        lines += [f"{_LINE} {line}".rstrip() for line in webnn_text.render(doc).splitlines()]
    return "\n".join(lines) + "\n"


def _compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


# -- reading ------------------------------------------------------------------------------------
def variants_record(doc: GraphDoc, text: str, module, path: str) -> dict | None:
    """The file's variants record in the JSON member's shape (a text entry's graph is its
    text, under "text"), checked against the schema; None for a plain graph file."""
    if module is webnn_json:
        return doc.variants
    record, entries = None, []
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith(_RECORD + " ") or line == _RECORD:
            if record is not None:
                raise FormatError(f"line {number}: a second {_RECORD} line", where=path)
            record = parse_json(line[len(_RECORD):], f"{path}:{number}", "variants record")
        elif line.startswith(_ENTRY + " ") or line == _ENTRY:
            if record is None:
                raise FormatError(f"line {number}: {_ENTRY} before the {_RECORD} line",
                                  where=path)
            at = parse_json(line[len(_ENTRY):], f"{path}:{number}", "variant")
            entries.append({"at": at, "text": [], "line": number})
        elif line.startswith(_LINE):
            if not entries:
                raise FormatError(f"line {number}: a {_LINE} line outside a variant",
                                  where=path, fix=f"it follows a {_ENTRY} line")
            entries[-1]["text"].append(line[len(_LINE) + 1:])
    if record is None:
        if entries:
            raise FormatError(f"{_ENTRY} lines without a {_RECORD} line", where=path)
        return None
    if not isinstance(record, dict) or "entries" in record:
        raise FormatError(f"the {_RECORD} line is not the record this reader writes",
                          where=path, fix='{"dims": [...], "at": {...}, "ranges": {...}}')
    first = record.pop("at", None)
    record["entries"] = [{"at": first}] + [{"at": e["at"], "graph": {}} for e in entries]
    # The same rules as the JSON member: checked by the schema, on a stand-in empty graph.
    validate({"format": "webnn-graph-json", "version": 2, "inputs": {}, "nodes": [],
              "outputs": {}, "variants": record}, "webnn-graph-json", path)
    for slot, e in zip(record["entries"][1:], entries):
        del slot["graph"]
        slot["text"], slot["line"] = "\n".join(e["text"]) + "\n", e["line"]
    return record


def variants_from_record(doc: GraphDoc, record: dict, path: str, open_weights,
                         verify: bool = True):
    """The Variants a file holds: its own graph first, then each entry's. `open_weights()`
    gives the WeightsFile, opened once when any of the graphs references weights."""
    from .variants import Variants, point_text

    where = f"{path} variants"
    entries = record["entries"]
    if len(entries) > MAX_ENTRIES:
        raise FormatError(f"{len(entries)} variants, more than the {MAX_ENTRIES} a file may "
                          f"hold", where=where)
    dims = tuple(record["dims"])
    ranges = {n: (lo, hi) for n, (lo, hi) in record.get("ranges", {}).items()}
    fixed = dict(record.get("fixed", {}))
    seen = set()
    for i, entry in enumerate(entries):
        at = entry["at"]
        if set(at) != set(dims):
            raise FormatError(f"entry {i} gives {sorted(at)}, not the dims {list(dims)}",
                              where=where)
        key = tuple(at[n] for n in dims)
        if key in seen:
            raise FormatError(f"two entries at {point_text(at)}", where=where)
        seen.add(key)
        for name, (lo, hi) in ranges.items():
            if name not in dims or not lo <= at[name] <= hi:
                raise FormatError(f"entry {i} at {point_text(at)} is outside the range "
                                  f"{name}={lo}..{hi}, or {name} is not one of the dims",
                                  where=where)
    if set(fixed) & set(dims):
        raise FormatError(f"{sorted(set(fixed) & set(dims))} both fixed and varying",
                          where=where)
    if "graph" in entries[0] or "text" in entries[0]:
        raise FormatError("the first entry carries a graph; it is the file's own graph",
                          where=where, fix="give the first entry its dims only")
    docs = [doc]
    for i, entry in enumerate(entries[1:], 1):
        at = f"{path} variant {point_text(entry['at'])}"
        if "text" in entry:
            sub = webnn_text.parse(entry["text"], at)
            if sub.state and not doc.state:
                raise FormatError("a variant declares state its file's graph does not",
                                  where=at)
        else:
            if "graph" not in entry:
                raise FormatError(f"entry {i} has no graph", where=where,
                                  fix="only the first entry is the file's own graph")
            if "variants" in entry["graph"]:
                raise FormatError("a variant's graph holds variants of its own", where=at)
            sub = webnn_json.from_object(entry["graph"], at)
        docs.append(sub)
    weights = open_weights() if any(d.needs_weights() for d in docs) else None
    from ..formats.graph_from_doc import graph_from_doc

    graphs = [graph_from_doc(d, weights, verify=verify) for d in docs]
    for graph in graphs:
        _restore_corners(graph, record.get("corners", []), where)
    return Variants(dims, [(dict(e["at"]), g) for e, g in zip(entries, graphs)], ranges, fixed)


def _restore_corners(graph: Graph, corners: list[str], where: str) -> None:
    """Each constant the writer stored as a corner (`_share_corners`) a constant again: the
    slice of the shared whole becomes a view of the whole's leading corner, so the graph read
    is the graph written (a slice would make it computed, and some operands must be constants:
    Chromium's gatherElements indices). The whole goes when nothing else reads it."""
    from ..passes.cleanup import replace_results

    producers = graph.producers()
    for name in corners:
        op = producers.get(name)
        whole = op.inputs[0] if op is not None and op.op_type == "slice" else None
        if whole is None or whole.constant is None or any(op.attrs.get("starts", [])) or \
                any(s != 1 for s in op.attrs.get("strides") or []):
            raise FormatError(f"'{name}' is listed as a corner but is not the leading-corner "
                              f"slice of a constant", where=where)
        if any(v is op.output for v in graph.outputs.values()):
            continue  # an output must stay an op's result: the slice is kept
        sizes = op.attrs["sizes"]
        value = np.ascontiguousarray(whole.constant.numpy()[tuple(slice(0, n) for n in sizes)])
        corner = graph.add_constant(graph.fresh_name(f"{name}/corner"), value,
                                    whole.data_type)
        replace_results(graph, op, [corner], take_names=True)
        if not whole.uses() and not whole.is_graph_output():
            graph.remove_operand(whole)
