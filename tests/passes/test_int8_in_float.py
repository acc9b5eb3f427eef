"""int8_in_float: int8 concat (listed by the target) computed in float32 between exact casts."""
from __future__ import annotations

import numpy as np
import pytest

import converter
from converter.ops.builder import GraphBuilder
from converter.passes import PassContext, run_passes
from converter.targets import Target, load_target


def state_concat_graph():
    """A state-like int8 graph input concatenated with an int8 quantizeLinear result."""
    b = GraphBuilder("stream")
    state = b.input("state", "int8", [1, 4, 3])
    x = b.input("x", "float32", [1, 1, 3])
    q = b.quantizeLinear(x, b.constant(np.full([1, 1, 3], 0.5, np.float32)),
                         b.constant(np.full([1, 1, 3], 3, np.int8)))
    joined = b.concat([state, q], 1, name="join")
    return b.build({"joined": joined, "tail": b.slice(joined, [0, 1, 0], [1, 4, 3])})


def rewrite(graph, target):
    [(_, result)] = run_passes(graph, ["int8_in_float"], PassContext(target=target))
    return result


def test_int8_concat_becomes_float_concat_between_casts():
    graph = state_concat_graph()
    result = rewrite(graph, Target("t", {}, int8_in_float=["concat"]))
    assert result.changed and result.counts == {"int8_ops_in_float": 1}
    ops = [(op.op_type, op.output.data_type) for op in graph.operations]
    assert ops == [("quantizeLinear", "int8"), ("cast", "float32"), ("cast", "float32"),
                   ("concat", "float32"), ("cast", "int8"), ("slice", "int8")]
    assert graph.outputs["joined"].producer.op_type == "cast"
    assert graph.outputs["joined"].data_type == "int8"


def test_the_rewritten_graph_gives_the_same_int8_values():
    rng = np.random.default_rng(0)
    feeds = {"state": rng.integers(-128, 128, (1, 4, 3)).astype(np.int8),
             "x": rng.uniform(-70, 70, (1, 1, 3)).astype(np.float32)}
    before = converter.run(state_concat_graph(), feeds)
    graph = state_concat_graph()
    rewrite(graph, Target("t", {}, int8_in_float=["concat"]))
    after = converter.run(graph, feeds)
    # numpy: the state then round(x / 0.5) + 3 saturated to int8
    q = np.clip(np.round(feeds["x"] / 0.5) + 3, -128, 127).astype(np.int8)
    want = np.concatenate([feeds["state"], q], axis=1)
    for got in (before, after):
        assert got["joined"].dtype == np.int8
        np.testing.assert_array_equal(got["joined"], want)
        np.testing.assert_array_equal(got["tail"], want[:, 1:])


def test_nothing_changes_without_the_list():
    graph = state_concat_graph()
    assert not rewrite(graph, None).changed
    assert not rewrite(graph, Target("t", {})).changed
    assert [op.op_type for op in graph.operations] == ["quantizeLinear", "concat", "slice"]


def test_an_op_that_computes_values_is_refused_in_the_list():
    with pytest.raises(converter.ConverterError, match="'add', which does not only move"):
        rewrite(state_concat_graph(), Target("t", {}, int8_in_float=["add"]))


def test_chromium_litert_lists_int8_concat():
    assert load_target("chromium-litert").int8_in_float == ["concat"]
    assert load_target("coreml").int8_in_float == []


def test_check_says_which_int8_ops_chromium_litert_computes_in_float(tmp_path):
    import json

    from click.testing import CliRunner

    from cli.commands import check_graph

    path = tmp_path / "stream.json"
    converter.save(state_concat_graph(), path)
    r = CliRunner().invoke(check_graph.command, [str(path), "--target", "chromium-litert"])
    lines = [line for line in r.output.splitlines() if "float32 between casts" in line]
    assert lines == ["chromium-litert: int8 concat 'join': computed in float32 between casts "
                     "(exact: it only moves values; the backend refuses its int8 form)"]
    r = CliRunner().invoke(check_graph.command, [str(path), "--target", "coreml", "--json"])
    # coreml does not list int8 concat but takes float32 concat: rewritten too (lacks_int8)
    assert json.loads(r.output)["targets"]["coreml"]["int8InFloat"] == \
        [{"op": "join", "opType": "concat"}]
    r = CliRunner().invoke(check_graph.command, [str(path), "--target", "directml", "--json"])
    assert json.loads(r.output)["targets"]["directml"]["int8InFloat"] == []
    r = CliRunner().invoke(check_graph.command, [str(path), "--target", "chromium-litert",
                                                 "--json"])
    assert json.loads(r.output)["targets"]["chromium-litert"]["int8InFloat"] == \
        [{"op": "join", "opType": "concat"}]
