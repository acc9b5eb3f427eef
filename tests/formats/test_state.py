"""Graph state in the files: `#@state` directives in the text form, the `state` member in JSON,
constant initial values in the weights file. Save and load keep the declaration; a reader that
skips it still has a valid pure graph."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from converter import schemas
from converter.errors import ConverterError, FormatError, GraphInvalidError, ParseError
from converter.formats import load_graph, save_graph
from converter.formats.weights import read_manifest
from converter.ir import ConstantData, Graph
from converter.runtimes.session import Session


def _counter() -> Graph:
    """y = x + total; the total and a step count are state (a constant and zeros to start)."""
    g = Graph("counter")
    x = g.add_input("x", "float32", (1, 4))
    total = g.add_input("total", "float32", (1, 4))
    count = g.add_input("step count", "int32", (1,))
    y = g.add_operation("add", [x, total], name="y").outputs[0]
    one = g.add_constant("one", np.array([1], np.int32))
    nxt = g.add_operation("add", [count, one], name="count_next").outputs[0]
    g.set_output("y", y)
    g.set_output("total/next", y)
    g.set_output("step count/next", nxt)
    g.declare_state("total", "total/next", np.array([[0.5, -1.0, 2.0, 4.0]], np.float32))
    g.declare_state("step count", "step count/next")
    return g.verify()


def _declared(graph: Graph):
    return [(v.input, v.output, v.initial_kind,
             None if v.initial is None else v.initial.numpy().tolist()) for v in graph.state]


@pytest.mark.parametrize("suffix", [".webnn", ".json"])
def test_save_and_load_keep_the_state(tmp_path, suffix):
    graph = _counter()
    paths = save_graph(graph, tmp_path / f"counter{suffix}")
    loaded = load_graph(paths[0])
    assert _declared(loaded) == [
        ("total", "total/next", "constant", [[0.5, -1.0, 2.0, 4.0]]),
        ("step count", "step count/next", "zeros", None)]
    # the constant initial value is in the weights file like any constant, by key
    manifest = read_manifest(paths[1])
    assert manifest["total/initial"].shape == (1, 4)
    assert set(manifest) == {"one", "total/initial"}
    # and a second save writes the same files
    again = save_graph(loaded, tmp_path / f"again{suffix}")
    assert again[0].read_text().replace("again", "counter") == paths[0].read_text()
    assert again[2].read_bytes() == paths[2].read_bytes()


def test_the_text_form_writes_one_directive_a_pair(tmp_path):
    text = save_graph(_counter(), tmp_path / "c.webnn")[0].read_text()
    lines = text.splitlines()
    assert lines[1:3] == ['  #@state "total" "total/next" @weights("total/initial")',
                          '  #@state "step count" "step count/next" zeros']


def test_scalar_and_inline_initial_values_round_trip(tmp_path):
    graph = _counter()
    graph.state[0].initial = ConstantData("float32", (1, 4), fill=2.5)
    graph.state[1].initial = ConstantData("int32", (1,), array=np.array([7], np.int32),
                                          origin="bytes")
    for suffix in (".webnn", ".json"):
        paths = save_graph(graph, tmp_path / f"s{suffix}")
        loaded = load_graph(paths[0])
        assert loaded.state[0].initial.fill == 2.5
        np.testing.assert_array_equal(loaded.state[1].initial.numpy(), [7])
        assert len(paths) == 3  # "one" only: the initial values are inline
        assert "total/initial" not in read_manifest(paths[1])


def test_a_reader_without_the_feature_sees_a_valid_pure_graph(tmp_path):
    json_path, manifest, _ = save_graph(_counter(), tmp_path / "c.json")
    doc = json.loads(json_path.read_text())
    pure = {k: v for k, v in doc.items() if k != "state"}
    # The schema without the member still accepts the rest (webnn-graph's reader ignores
    # members it does not know), and the rest is a whole graph.
    old_schema = copy.deepcopy(schemas.load_schema("webnn-graph-json"))
    del old_schema["properties"]["state"]
    from jsonschema import Draft202012Validator

    assert not list(Draft202012Validator(old_schema).iter_errors(pure))
    json_path.write_text(json.dumps(pure))
    graph = load_graph(json_path)
    assert graph.state == [] and list(graph.inputs) == ["x", "total", "step count"]
    assert list(graph.outputs) == ["y", "total/next", "step count/next"]
    # In the text form the directives are comments to such a reader.
    text = save_graph(_counter(), tmp_path / "t.webnn")[0].read_text()
    plain = text.replace("#@state", "# state")
    (tmp_path / "t.webnn").write_text(plain)
    graph = load_graph(tmp_path / "t.webnn")
    assert graph.state == [] and len(graph.inputs) == 3 and len(graph.outputs) == 3


def test_a_loaded_stateful_graph_steps(tmp_path):
    loaded = load_graph(save_graph(_counter(), tmp_path / "c.webnn")[0])
    session = Session(loaded)
    x = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
    ys = [session.step({"x": x})["y"] for _ in range(3)]
    np.testing.assert_array_equal(ys[2], np.array([[0.5, -1.0, 2.0, 4.0]]) + 3 * x)
    np.testing.assert_array_equal(session.state["step count"], [3])


def test_state_naming_an_unknown_input_is_a_located_error(tmp_path):
    path = save_graph(_counter(), tmp_path / "c.json")[0]
    doc = json.loads(path.read_text())
    doc["state"][1]["input"] = "nope"
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=r"\$\.state\[1\]: state input 'nope' is not an "
                                          r"input of the graph"):
        load_graph(path)


def test_a_state_whose_shapes_disagree_is_invalid(tmp_path):
    graph = _counter()
    graph.set_output("total/next", graph.operand("count_next"))
    problems = graph.problems()
    assert problems == ["state 'total' -> 'total/next': the input is f32[1, 4], the output "
                        "i32[1]; a state keeps its data type and shape"]
    with pytest.raises(GraphInvalidError):
        save_graph(graph, tmp_path / "bad.webnn")
    assert not (tmp_path / "bad.webnn").exists()


def test_a_malformed_directive_names_its_line(tmp_path):
    text = save_graph(_counter(), tmp_path / "c.webnn")[0].read_text()
    (tmp_path / "c.webnn").write_text(text.replace(" zeros", " ones"))
    with pytest.raises(ParseError) as info:
        load_graph(tmp_path / "c.webnn")
    assert "c.webnn:3:3" in info.value.line() and "unknown #@state initial value" in \
        info.value.line()


def test_an_initial_value_missing_from_the_weights_is_reported(tmp_path):
    paths = save_graph(_counter(), tmp_path / "c.webnn")
    paths[0].write_text(paths[0].read_text().replace('@weights("total/initial")',
                                                     '@weights("elsewhere")'))
    with pytest.raises(ConverterError, match="elsewhere"):
        load_graph(paths[0])


def test_the_schema_rejects_a_bad_state_pair():
    doc = {"format": "webnn-graph-json", "version": 2, "inputs": {}, "nodes": [],
           "outputs": {}, "state": [{"input": "a", "output": "b", "init": {"kind": "ones"}}]}
    with pytest.raises(FormatError):
        schemas.validate(doc, "webnn-graph-json", "g.json")
    doc["state"][0]["init"] = {"kind": "zeros"}
    schemas.validate(doc, "webnn-graph-json", "g.json")
