"""The JSON form, `webnn-graph-json`: read versions 1 and 2, write version 2.

    {"format": "webnn-graph-json", "version": 2, "name": "tiny",
     "inputs": {"x": {"dataType": "float32", "shape": [1, 3]}},
     "consts": {"w": {"dataType": "float32", "shape": [3],
                      "init": {"kind": "weights", "ref": "w"}}},
     "nodes": [{"id": "y", "op": "mul", "inputs": ["x", "w"], "options": {}}],
     "outputs": {"y": "y"}}

Names are free strings here, so source names survive unchanged. A node with one result is
named by `id`; one with several lists them in `outputs`. Version 1 files have no `name`; the
graph is then named after the file.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import FormatError
from ..ir import Graph
from ..schemas import validate
from ._files import check_nesting, parse_json
from .document import ConstDecl, GraphDoc, InputDecl, NodeDecl, OutputDecl
from . import permuted_doc
from .state_doc import state_from_json, state_to_json

__all__ = ["parse", "from_object", "loads", "dumps", "render", "render_object", "to_object",
           "JSON_VERSION"]

JSON_VERSION = 2
_INIT_KINDS = {"weights": "weights", "scalar": "scalar", "inlineBytes": "bytes"}


def parse(text: str, path: str = "<string>") -> GraphDoc:
    """The GraphDoc of a webnn-graph-json text, checked against its schema."""
    return from_object(parse_json(text, path, "graph file", nesting=False), path)


def from_object(obj: Any, path: str = "<string>") -> GraphDoc:
    """The GraphDoc of a parsed webnn-graph-json value (`parse` without the text); a
    `variants` member is kept raw in `doc.variants` (see converter/dynamic/variants_file.py)."""
    # Byte lists are checked here, with numpy, and the schema sees each as an empty list: the
    # schema checks a list element by element, seconds per megabyte of constants.
    byte_lists = _take_byte_lists(obj, path)
    check_nesting(obj, path, "graph file")
    validate(obj, "webnn-graph-json", path)
    name = obj.get("name")
    if name is None:
        name = Path(path).stem if path != "<string>" else "graph"
    doc = GraphDoc(name=name, path=path, version=obj["version"],
                   quantized=bool(obj.get("quantized", False)))
    for key, desc in obj["inputs"].items():
        doc.inputs.append(InputDecl(key, desc["dataType"], tuple(desc["shape"]),
                                    _at(path, "inputs", key)))
    for key, c in obj.get("consts", {}).items():
        init = c["init"]
        decl = ConstDecl(key, c["dataType"], tuple(c["shape"]), _INIT_KINDS[init["kind"]],
                         where=_at(path, "consts", key))
        if decl.kind == "weights":
            decl.key = init["ref"]
        elif decl.kind == "scalar":
            decl.value = init["value"]
        else:
            decl.data = byte_lists[key]
        doc.consts.append(decl)
    for i, n in enumerate(obj["nodes"]):
        where = f"{path} $.nodes[{i}]"
        outputs = n.get("outputs") or [n["id"]]
        doc.nodes.append(NodeDecl(
            n["op"], list(n["inputs"]), dict(n.get("options", {})), list(outputs), n["id"],
            where=where,
            input_where=[f"{where}.inputs[{j}]" for j in range(len(n["inputs"]))],
            output_where=[f"{where}.outputs[{j}]" if "outputs" in n else f"{where}.id"
                          for j in range(len(outputs))],
            option_where={k: f"{where}.options.{k}" for k in n.get("options", {})}))
    for key, operand in obj["outputs"].items():
        doc.outputs.append(OutputDecl(key, operand, _at(path, "outputs", key)))
    doc.state = state_from_json(obj.get("state", []), path)
    doc.permuted = permuted_doc.from_json(obj.get("permuted"))
    doc.variants = obj.get("variants")
    return doc


def _take_byte_lists(obj: Any, path: str) -> dict[str, bytes]:
    """Each `inlineBytes` constant's bytes by constant name, checked to be integers 0..255; the
    lists in `obj` are emptied (anything not where a byte list belongs is left to the schema)."""
    consts = obj.get("consts") if isinstance(obj, dict) else None
    if not isinstance(consts, dict):
        return {}
    found = {}
    for key, const in consts.items():
        init = const.get("init") if isinstance(const, dict) else None
        if not (isinstance(init, dict) and init.get("kind") == "inlineBytes"
                and isinstance(init.get("bytes"), list)):
            continue
        values = init["bytes"]
        # bytes() checks "integer in 0..255" in C; only JSON's true/false pass it wrongly (bool
        # is an int), which the set of element types catches: both cost nanoseconds a byte.
        try:
            data = bytes(values)
            good = set(map(type, values)) <= {int}
        except (TypeError, ValueError):
            good = False
        if not good:
            _byte_list_error(key, values, path)
        found[key] = data
        init["bytes"] = []
    return found


def _byte_list_error(key: str, values: list, path: str) -> None:
    at = f"$.consts[{json.dumps(key)}].init.bytes"
    for v in values:
        if type(v) is not int:
            raise FormatError(f"{at}: {json.dumps(v)} is not an integer", where=path,
                              fix="bytes are integers 0..255")
        if not 0 <= v <= 255:
            raise FormatError(f"{at}: {v} is not a byte", where=path,
                              fix="bytes are integers 0..255")


def _at(path: str, member: str, key: str) -> str:
    return f"{path} $.{member}[{json.dumps(key, ensure_ascii=False)}]"


def loads(text: str, path: str = "<string>", *, weights=None, verify: bool = True) -> Graph:
    """A Graph from webnn-graph-json text; `weights` (a WeightsFile) resolves weights refs."""
    from .graph_from_doc import graph_from_doc

    return graph_from_doc(parse(text, path), weights, verify=verify)


def dumps(graph: Graph) -> str:
    """The version-2 JSON of a graph (weights referenced by key, not included)."""
    from .doc_from_graph import doc_from_graph

    return render(doc_from_graph(graph))


def to_object(doc: GraphDoc) -> dict[str, Any]:
    """The version-2 JSON object of a GraphDoc."""
    obj: dict[str, Any] = {"format": "webnn-graph-json", "version": JSON_VERSION,
                           "name": doc.name}
    if doc.quantized:
        obj["quantized"] = True
    obj["inputs"] = {i.name: {"dataType": i.data_type, "shape": list(i.shape)} for i in doc.inputs}
    consts: dict[str, Any] = {}
    for c in doc.consts:
        if c.kind == "weights":
            init: dict[str, Any] = {"kind": "weights", "ref": c.key}
        elif c.kind == "scalar":
            init = {"kind": "scalar", "value": c.value}
        else:
            init = {"kind": "inlineBytes", "bytes": list(c.data)}
        consts[c.name] = {"dataType": c.data_type, "shape": list(c.shape), "init": init}
    obj["consts"] = consts
    nodes = []
    for n in doc.nodes:
        inputs = [v for item in n.inputs for v in (item if isinstance(item, list) else [item])]
        node: dict[str, Any] = {"id": n.id, "op": n.op, "inputs": inputs, "options": n.options}
        if len(n.outputs) != 1 or n.outputs[0] != n.id:
            node["outputs"] = list(n.outputs)
        nodes.append(node)
    obj["nodes"] = nodes
    obj["outputs"] = {o.key: o.operand for o in doc.outputs}
    if doc.state:  # only stateful graphs carry the member (see state_doc.py)
        obj["state"] = state_to_json(doc.state)
    if permuted_doc.to_json(doc.permuted):  # only graphs converted with --io-layout
        obj["permuted"] = permuted_doc.to_json(doc.permuted)
    return obj


def render(doc: GraphDoc) -> str:
    """The JSON text: one input, constant, node or output a line, for readable diffs."""
    return render_object(to_object(doc))


def render_object(obj: dict[str, Any]) -> str:
    """A graph's JSON object as `render` lays it out."""
    compact = lambda v: json.dumps(v, ensure_ascii=False, separators=(", ", ": "),  # noqa: E731
                                   allow_nan=False)
    lines = ["{"]
    members = list(obj.items())
    for i, (key, value) in enumerate(members):
        comma = "," if i < len(members) - 1 else ""
        if isinstance(value, dict) and value:
            items = [f"    {compact(k)}: {compact(v)}" for k, v in value.items()]
            lines.append(f"  {compact(key)}: {{\n" + ",\n".join(items) + f"\n  }}{comma}")
        elif isinstance(value, list) and value:
            items = [f"    {compact(v)}" for v in value]
            lines.append(f"  {compact(key)}: [\n" + ",\n".join(items) + f"\n  ]{comma}")
        else:
            lines.append(f"  {compact(key)}: {compact(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"
