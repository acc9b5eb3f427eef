"""formats.webnn_json: which byte-list element the refusal names (the first bad one, whatever
the valid bytes around it), and the text `render_object` writes (characters as themselves, no
NaN literal)."""
from __future__ import annotations

import json

import pytest

from converter.errors import FormatError
from converter.formats import webnn_json


def _doc(byte_list) -> str:
    return json.dumps({
        "format": "webnn-graph-json", "version": 2, "name": "g",
        "inputs": {"x": {"dataType": "uint8", "shape": [2]}},
        "consts": {"c": {"dataType": "uint8", "shape": [len(byte_list)],
                         "init": {"kind": "inlineBytes", "bytes": byte_list}}},
        "nodes": [{"id": "y", "op": "add", "inputs": ["x", "c"], "options": {}}],
        "outputs": {"y": "y"}})


@pytest.mark.parametrize("byte_list, message", [
    ([0, 255, True], "true is not an integer"),
    ([255, 0, 256], "256 is not a byte"),
    ([255, -1, 0], "-1 is not a byte"),
    ([0, 1.5], "1.5 is not an integer")])
def test_the_first_bad_byte_is_named(byte_list, message):
    with pytest.raises(FormatError) as e:
        webnn_json.parse(_doc(byte_list), "g.json")
    assert e.value.line() == (f'g.json: $.consts["c"].init.bytes: {message}; bytes are '
                              f'integers 0..255')


def test_the_edge_bytes_are_read():
    doc = webnn_json.parse(_doc([0, 255]), "g.json")
    assert doc.consts[0].data == b"\x00\xff"


def test_rendered_text_keeps_characters_and_refuses_nan():
    text = webnn_json.render_object({"name": "é ✓", "consts": {"π": [1, 2]}})
    assert text == '{\n  "name": "é ✓",\n  "consts": {\n    "π": [1, 2]\n  }\n}\n'
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        webnn_json.render_object({"value": float("nan")})


def test_a_variants_member_is_kept_as_written():
    record = {"dims": ["sequence"], "ranges": {"sequence": [8, 32]}, "fixed": {"batch": 1},
              "entries": [{"at": {"sequence": 8}}, {"at": {"sequence": 32}, "graph": {}}]}
    obj = json.loads(_doc([1, 2]))
    obj["variants"] = record
    doc = webnn_json.parse(json.dumps(obj), "g.json")
    assert doc.variants == record
    assert webnn_json.parse(_doc([1, 2]), "g.json").variants is None


def test_byte_lists_are_checked_before_the_nesting_depth():
    # One pass over the parsed value finds the first problem; the byte lists come first, so a
    # file both too deep and with a bad byte names the byte (the same line as without depth).
    obj = json.loads(_doc([1, 300]))
    deep: list = []
    for _ in range(70):
        deep = [deep]
    obj["nodes"][0]["options"] = {"deep": deep}
    with pytest.raises(FormatError) as e:
        webnn_json.parse(json.dumps(obj), "g.json")
    assert e.value.line() == 'g.json: $.consts["c"].init.bytes: 300 is not a byte; bytes are ' \
                             'integers 0..255'
    obj["consts"]["c"]["init"]["bytes"] = [1, 3]
    with pytest.raises(FormatError, match="nested more than 64 deep"):
        webnn_json.parse(json.dumps(obj), "g.json")
