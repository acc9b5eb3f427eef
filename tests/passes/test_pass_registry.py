"""The pass registry and runner: names are unique, an unknown name is refused with the list of
passes, and a pass that leaves the graph invalid is reported as a bug in that pass."""
from __future__ import annotations

import pytest

from converter.ops.builder import GraphBuilder
from converter.errors import ConverterError, GraphInvalidError
from converter.passes import (PassContext, PassResult, _PASSES, all_passes, get_pass,
                              graph_pass, run_passes)


def test_a_pass_name_is_registered_once():
    all_passes()  # the pass modules register on first use
    with pytest.raises(ValueError, match="pass cleanup registered twice"):
        graph_pass("cleanup")(lambda graph, ctx: PassResult(False))


def test_an_unknown_pass_is_refused_with_the_known_ones():
    with pytest.raises(ConverterError) as info:
        get_pass("no_such_pass")
    assert "unknown pass 'no_such_pass'" in info.value.line()
    assert "cleanup" in info.value.fix and "layout" in info.value.fix


def test_every_pass_of_the_pipeline_is_registered():
    names = set(all_passes())
    assert {"fold_constants", "cleanup", "decompose", "constant_operands", "rank", "data_types",
            "layout"} <= names


def test_a_pass_that_breaks_the_graph_is_named():
    @graph_pass("test_breaks_graph")
    def breaks(graph, ctx):
        graph.outputs.clear()  # a graph without outputs is invalid
        return PassResult(True)

    try:
        b = GraphBuilder("g")
        x = b.input("x", "float32", [2])
        g = b.build({"y": b.relu(x)})
        with pytest.raises(GraphInvalidError) as info:
            run_passes(g, ["test_breaks_graph"], PassContext())
        assert "the 'test_breaks_graph' pass left the graph invalid" in str(info.value)
    finally:
        del _PASSES["test_breaks_graph"]
