"""The JSON form's reader and writer in detail: each declaration's kind, value and the JSON
path it is reported at; byte lists checked element by element; the name of a nameless
(version 1) graph; the exact text written, one member a line."""
from __future__ import annotations

import json

import pytest

from converter.errors import FormatError
from converter.formats.webnn_json import parse, render

DOC = {
    "format": "webnn-graph-json", "version": 2, "name": "t", "quantized": True,
    "inputs": {"x:0": {"dataType": "float32", "shape": [2]}},
    "consts": {"w": {"dataType": "float32", "shape": [2], "init": {"kind": "weights", "ref": "k"}},
               "s": {"dataType": "float32", "shape": [], "init": {"kind": "scalar", "value": 1.5}},
               "b": {"dataType": "uint8", "shape": [3],
                     "init": {"kind": "inlineBytes", "bytes": [0, 7, 255]}}},
    "nodes": [{"id": "y", "op": "add", "inputs": ["x:0", "w"], "options": {"label": "l"}},
              {"id": "sp", "op": "split", "inputs": ["y"], "options": {"splits": 2},
               "outputs": ["p", "q"]}],
    "outputs": {"out": "p", "o2": "q"},
}


def test_every_declaration_with_its_json_path():
    doc = parse(json.dumps(DOC), "g.json")
    assert (doc.name, doc.version, doc.quantized) == ("t", 2, True)
    (x,) = doc.inputs
    assert (x.name, x.data_type, x.shape, x.where) == ("x:0", "float32", (2,),
                                                       'g.json $.inputs["x:0"]')
    w, s, b = doc.consts
    assert (w.kind, w.key, w.where) == ("weights", "k", 'g.json $.consts["w"]')
    assert (s.kind, s.value, s.shape) == ("scalar", 1.5, ())
    assert (b.kind, b.data) == ("bytes", bytes([0, 7, 255]))
    add, split = doc.nodes
    assert (add.op, add.inputs, add.options, add.outputs, add.id) == (
        "add", ["x:0", "w"], {"label": "l"}, ["y"], "y")
    assert add.where == "g.json $.nodes[0]"
    assert add.input_where == ["g.json $.nodes[0].inputs[0]", "g.json $.nodes[0].inputs[1]"]
    assert add.output_where == ["g.json $.nodes[0].id"]
    assert add.option_where == {"label": "g.json $.nodes[0].options.label"}
    assert split.outputs == ["p", "q"]
    assert split.output_where == ["g.json $.nodes[1].outputs[0]", "g.json $.nodes[1].outputs[1]"]
    assert [(o.key, o.operand, o.where) for o in doc.outputs] == [
        ("out", "p", 'g.json $.outputs["out"]'), ("o2", "q", 'g.json $.outputs["o2"]')]
    assert doc.state == []


def test_a_nameless_version_1_graph_is_named_after_its_file():
    v1 = {k: v for k, v in DOC.items() if k not in ("name", "quantized")}
    v1["version"] = 1
    doc = parse(json.dumps(v1), "models/tiny.json")
    assert (doc.name, doc.version, doc.quantized) == ("tiny", 1, False)
    assert parse(json.dumps(v1)).name == "graph"


@pytest.mark.parametrize("value, message", [
    (True, "$.consts[\"b\"].init.bytes: true is not an integer"),
    (1.0, "$.consts[\"b\"].init.bytes: 1.0 is not an integer"),
    ("1", "$.consts[\"b\"].init.bytes: \"1\" is not an integer"),
    (256, "$.consts[\"b\"].init.bytes: 256 is not a byte"),
    (-1, "$.consts[\"b\"].init.bytes: -1 is not a byte"),
])
def test_byte_lists_hold_bytes(value, message):
    bad = json.loads(json.dumps(DOC))
    bad["consts"]["b"]["init"]["bytes"] = [1, value, 2]
    with pytest.raises(FormatError) as e:
        parse(json.dumps(bad), "g.json")
    assert str(e.value.line()) == f"g.json: {message}; bytes are integers 0..255"


def test_render_writes_one_member_a_line_and_reads_back():
    text = render(parse(json.dumps(DOC), "g.json"))
    assert text.splitlines() == [
        "{",
        '  "format": "webnn-graph-json",',
        '  "version": 2,',
        '  "name": "t",',
        '  "quantized": true,',
        '  "inputs": {',
        '    "x:0": {"dataType": "float32", "shape": [2]}',
        "  },",
        '  "consts": {',
        '    "w": {"dataType": "float32", "shape": [2], "init": {"kind": "weights", "ref": "k"}},',
        '    "s": {"dataType": "float32", "shape": [], "init": {"kind": "scalar", "value": 1.5}},',
        '    "b": {"dataType": "uint8", "shape": [3], "init": {"kind": "inlineBytes", '
        '"bytes": [0, 7, 255]}}',
        "  },",
        '  "nodes": [',
        '    {"id": "y", "op": "add", "inputs": ["x:0", "w"], "options": {"label": "l"}},',
        '    {"id": "sp", "op": "split", "inputs": ["y"], "options": {"splits": 2}, '
        '"outputs": ["p", "q"]}',
        "  ],",
        '  "outputs": {',
        '    "out": "p",',
        '    "o2": "q"',
        "  }",
        "}"]
    assert json.loads(text) == DOC


def test_render_of_an_empty_member_and_an_unquantized_graph():
    doc = parse(json.dumps({**DOC, "quantized": False, "consts": {},
                            "nodes": [{"id": "y", "op": "relu", "inputs": ["x:0"]}],
                            "outputs": {"y": "y"}}), "g.json")
    text = render(doc)
    assert '"quantized"' not in text and '  "consts": {},' in text.splitlines()
    assert '    {"id": "y", "op": "relu", "inputs": ["x:0"], "options": {}}' in text.splitlines()
