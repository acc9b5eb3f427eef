"""The boundary permutations of `--io-layout` in graph files: `#@permuted` comments in the text
form, the `permuted` member in JSON. Save and load keep them; a reader that skips them still has
a valid graph; a record that does not fit the graph is one clear error."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter.errors import ConverterError
from converter.formats import load_graph, save_graph
from converter.ir.io_permutations import permutations

TINY_CNN = Path(__file__).parents[2] / "models" / "tiny_cnn.onnx"
RECORD = {"inputs": {"image": [0, 2, 3, 1]}, "outputs": {}}


@pytest.fixture(scope="module")
def presented():
    return converter.convert(TINY_CNN, target="coreml", io_layout="nhwc")


@pytest.mark.parametrize("suffix", [".webnn", ".json"])
def test_save_and_load_keep_the_record(tmp_path, presented, suffix):
    assert permutations(presented) == RECORD
    paths = save_graph(presented, tmp_path / f"cnn{suffix}")
    loaded = load_graph(paths[0])
    assert permutations(loaded) == RECORD
    again = save_graph(loaded, tmp_path / f"again{suffix}")
    assert again[0].read_text().replace("again", "cnn") == paths[0].read_text()


def test_a_graph_without_io_layout_records_nothing(tmp_path):
    graph = converter.convert(TINY_CNN, target="coreml")
    assert permutations(graph) == {"inputs": {}, "outputs": {}}
    text = save_graph(graph, tmp_path / "plain.webnn")[0].read_text()
    assert "#@permuted" not in text
    assert "permuted" not in save_graph(graph, tmp_path / "plain.json")[0].read_text()


def test_converting_a_presented_graph_back_leaves_no_record(tmp_path, presented):
    path = save_graph(presented, tmp_path / "nhwc.webnn")[0]
    back = converter.convert(path, target="coreml", io_layout="nchw")
    assert back.inputs["image"].shape == (1, 3, 32, 32)
    assert permutations(back) == {"inputs": {}, "outputs": {}}


def test_readers_without_the_feature_see_a_plain_graph(tmp_path, presented):
    path = save_graph(presented, tmp_path / "cnn.webnn")[0]
    path.write_text(path.read_text().replace("#@permuted", "# permuted"))
    assert permutations(load_graph(path)) == {"inputs": {}, "outputs": {}}


BAD_TEXT = {
    "unquoted name": ('#@permuted input image [0, 2, 3, 1]', "malformed #@permuted"),
    "unknown side": ('#@permuted inputs "image" [0, 2, 3, 1]', "malformed #@permuted"),
    "negative axis": ('#@permuted input "image" [0, -2, 3, 1]', "malformed #@permuted"),
    "empty list": ('#@permuted input "image" []', "not a list of at most 16 axes"),
    "too long": ('#@permuted input "image" [' + ", ".join(["0"] * 17) + "]",
                 "not a list of at most 16 axes"),
    "not a permutation": ('#@permuted input "image" [0, 0, 3, 1]',
                          "is not a permutation of its 4 axes"),
    "wrong rank": ('#@permuted input "image" [1, 0]', "is not a permutation of its 4 axes"),
    "unknown input": ('#@permuted input "nope" [0, 2, 3, 1]',
                      "permuted input 'nope' is not an input of the graph"),
    "an input named as output": ('#@permuted output "image" [0, 2, 3, 1]',
                                 "permuted output 'image' is not an output"),
    "given twice": ('#@permuted input "image" [0, 2, 3, 1]\n  #@permuted input "image" '
                    '[0, 3, 2, 1]', "is given twice"),
}


@pytest.mark.parametrize("case", sorted(BAD_TEXT))
def test_a_bad_text_record_is_one_clear_error(tmp_path, presented, case):
    directive, message = BAD_TEXT[case]
    path = save_graph(presented, tmp_path / "cnn.webnn")[0]
    text = path.read_text()
    path.write_text(text.replace('#@permuted input "image" [0, 2, 3, 1]', directive))
    with pytest.raises(ConverterError) as info:
        load_graph(path)
    assert message in info.value.line() and "cnn.webnn" in info.value.line()
    r = CliRunner().invoke(main, ["inspect", str(path)])
    assert r.exit_code == 2 and message in r.output and len(r.output.strip().splitlines()) == 1


BAD_JSON = {
    "not a table": ([0, 2, 3, 1], "permuted"),
    "unknown side": ({"sides": {"image": [0, 2, 3, 1]}}, "permuted"),
    "a string axis": ({"inputs": {"image": [0, "2", 3, 1]}}, "permuted"),
    "a bool axis": ({"inputs": {"image": [0, True, 3, 1]}}, "permuted"),
    "an axis past 15": ({"inputs": {"image": [0, 2, 3, 99]}}, "permuted"),
    "not a permutation": ({"inputs": {"image": [0, 2, 2, 1]}}, "not a permutation"),
    "unknown input": ({"inputs": {"nope": [0, 2, 3, 1]}}, "'nope' is not an input"),
}


@pytest.mark.parametrize("case", sorted(BAD_JSON))
def test_a_bad_json_record_is_one_clear_error(tmp_path, presented, case):
    value, message = BAD_JSON[case]
    path = save_graph(presented, tmp_path / "cnn.json")[0]
    doc = json.loads(path.read_text())
    doc["permuted"] = value
    path.write_text(json.dumps(doc))
    with pytest.raises(ConverterError) as info:
        load_graph(path)
    assert message in info.value.line() and "cnn.json" in info.value.line()


def test_inspect_shows_what_the_conversion_transposed(tmp_path, presented):
    path = save_graph(presented, tmp_path / "cnn.webnn")[0]
    r = CliRunner().invoke(main, ["inspect", str(path)])
    assert "[1, 32, 32, 3] (the source's transposed by [0, 2, 3, 1])" in r.output
    r = CliRunner().invoke(main, ["inspect", str(path), "--json"])
    assert json.loads(r.output)["permuted"] == {"inputs": {"image": [0, 2, 3, 1]}}
    r = CliRunner().invoke(main, ["inspect", str(TINY_CNN), "--json"])
    assert "permuted" not in json.loads(r.output)
