"""The graph parsers bound what a file can make them do: nesting (RecursionError, an internal
error, before), strings UTF-8 cannot hold, and inline byte lists (checked with numpy, not by
the schema element by element)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from converter.errors import FormatError
from converter.formats import load_graph, save_graph, webnn_json, webnn_text

TEXT = """webnn_graph "deep" v1 {
  inputs { x: f32[2]; }
  nodes { y = relu(x, extra=OPTION); }
  outputs { y; }
}
"""


def _json(option) -> str:
    return json.dumps({"format": "webnn-graph-json", "version": 2, "name": "deep",
                       "inputs": {"x": {"dataType": "float32", "shape": [2]}},
                       "nodes": [{"id": "y", "op": "relu", "inputs": ["x"],
                                  "options": {"extra": option}}],
                       "outputs": {"y": "y"}})


@pytest.mark.parametrize("depth", [65, 2_000, 200_000])
def test_deep_nesting_is_one_clear_error(depth):
    text = TEXT.replace("OPTION", "[" * depth + "]" * depth)
    with pytest.raises(FormatError) as info:
        webnn_text.parse(text, "deep.webnn")
    assert "lists are nested more than 64 deep" in info.value.line()
    assert info.value.line().startswith("deep.webnn:3:")
    raw = _json("OPTION").replace('"OPTION"', "[" * depth + "]" * depth)
    with pytest.raises(FormatError) as info:
        webnn_json.parse(raw, "deep.json")
    assert info.value.line().startswith("deep.json: arrays and objects are nested more than 64")


def test_nesting_within_the_limit_reaches_the_op_rules():
    # 60 levels parse; the op then refuses the unknown option, as for any graph.
    text = TEXT.replace("OPTION", "[" * 60 + "]" * 60)
    assert webnn_text.parse(text, "ok.webnn").nodes[0].options["extra"] is not None
    assert webnn_json.parse(_json("OPTION").replace('"OPTION"', "[" * 60 + "]" * 60),
                            "ok.json").nodes[0].options["extra"] is not None


def test_a_lone_surrogate_in_a_name_is_refused_when_read():
    raw = _json(1).replace('"name": "deep"', '"name": "bad\\ud800name"')
    with pytest.raises(FormatError, match=r"holds a lone surrogate escape"):
        webnn_json.parse(raw, "s.json")
    # A proper pair is a character and reads as one.
    pair = _json(1).replace('"name": "deep"', '"name": "ok\\ud83d\\ude00"')
    assert webnn_json.parse(pair, "p.json").name == "ok\U0001F600"
    with pytest.raises(FormatError, match=r"holds a lone surrogate escape"):
        webnn_text.parse(TEXT.replace('"deep"', '"bad\\udc00"').replace(", extra=OPTION", ""),
                         "s.webnn")


def _bytes_graph(values) -> str:
    return json.dumps({"format": "webnn-graph-json", "version": 2, "name": "b",
                       "inputs": {"x": {"dataType": "uint8", "shape": [len(values)]}},
                       "consts": {"c": {"dataType": "uint8", "shape": [len(values)],
                                        "init": {"kind": "inlineBytes", "bytes": values}}},
                       "nodes": [{"id": "y", "op": "add", "inputs": ["x", "c"]}],
                       "outputs": {"y": "y"}})


@pytest.mark.parametrize("bad, message", [
    (256, "$.consts[\"c\"].init.bytes: 256 is not a byte"),
    (-1, "$.consts[\"c\"].init.bytes: -1 is not a byte"),
    (1.5, "$.consts[\"c\"].init.bytes: 1.5 is not an integer"),
    (True, "$.consts[\"c\"].init.bytes: true is not an integer"),
    ("7", "$.consts[\"c\"].init.bytes: \"7\" is not an integer"),
    (None, "$.consts[\"c\"].init.bytes: null is not an integer"),
])
def test_inline_bytes_are_checked(bad, message):
    with pytest.raises(FormatError) as info:
        webnn_json.parse(_bytes_graph([0, 1, bad, 3]), "b.json")
    assert info.value.line().startswith(f"b.json: {message}")


def test_inline_bytes_read_back_exactly(tmp_path):
    values = list(range(256)) * 3
    (tmp_path / "b.json").write_text(_bytes_graph(values))
    graph = load_graph(tmp_path / "b.json")
    got = graph.constants["c"].constant.numpy()
    np.testing.assert_array_equal(got, np.array(values, np.uint8))
    save_graph(graph, tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text())["consts"]["c"]["init"]["bytes"] \
        == values


def test_the_schema_never_walks_a_byte_list(monkeypatch):
    """The schema checked inline bytes one by one (seconds per MB): the lists it sees now are
    empty, and the bytes still arrive whole (bench/bench_json_load.py measures the speed)."""
    seen = []

    def spy(obj, schema_name, where):
        seen.append(obj["consts"]["c"]["init"]["bytes"])

    monkeypatch.setattr(webnn_json, "validate", spy)
    values = [7, 0, 255] * 10_000
    doc = webnn_json.parse(_bytes_graph(values), "b.json")
    assert seen == [[]]
    assert doc.consts[0].data == bytes(values)
