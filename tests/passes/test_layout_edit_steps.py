"""Smaller steps of the layout pass: how a rule's argument changes are merged, and when an
instanceNormalization is rewritten as a layerNormalization with a per-channel scale and bias
(by hand: the spec's instanceNormalization normalises over the spatial axes per channel)."""
from __future__ import annotations

import numpy as np
import pytest

import converter
from converter.ops.builder import GraphBuilder
from converter.passes import PassContext, run_passes
from converter.passes.layout_edit import LayoutEditor, merged_attrs
from converter.targets import Target

from .layout_helpers import (NCHW_TO_NHWC, channel_shuffle, check_numbers, conv, feeds_for,
                             same_values, seeded, types)


def test_a_rules_changes_replace_add_and_drop_arguments():
    attrs = {"axes": [1], "epsilon": 1e-5, "layout": "nchw"}
    assert merged_attrs(attrs, {"axes": [3], "keep": True, "layout": None}) == \
        {"axes": [3], "epsilon": 1e-5, "keep": True}
    assert merged_attrs(attrs, {"missing": None}) == attrs
    assert attrs == {"axes": [1], "epsilon": 1e-5, "layout": "nchw"}  # not changed in place


TARGET = {"layerNormalization": {}, "mul": {}, "add": {}}


def _instance(case):
    def build():
        b = GraphBuilder(case.replace(" ", "_"))
        nhwc = case.startswith("nhwc")
        shape = [2, 60, 1, 3] if nhwc else [2, 3, 60, 1]
        if case.endswith("no unit axis"):
            shape = [2, 3, 6, 10]
        x = b.reshape(b.input("x", "float32", [2, 180]), shape)
        normed = b.instanceNormalization(x, scale=b.constant(seeded((3,), 1)),
                                         bias=b.constant(seeded((3,), 2)), epsilon=1e-3,
                                         layout="nhwc" if nhwc else "nchw")
        return b.build({"y": normed})
    return build


@pytest.mark.parametrize("case,target,rewritten", [
    ("nchw", "nhwc", True),
    ("nhwc", "nchw", True),
    ("nhwc", "nhwc", False),  # already in the target's layout
    ("nchw no unit axis", "nhwc", False),  # no spatial axis of 1: not the rank-3 form
])
def test_an_instance_normalization_of_the_rank_3_form_becomes_a_layer_normalization(
        case, target, rewritten):
    before = _instance(case)()
    feeds = feeds_for(before)
    want = converter.run(before, feeds)
    after = _instance(case)()
    t = Target(name="t", limits={"preferredInputLayout": target, **TARGET})
    [(_, result)] = run_passes(after, ["layout"], PassContext(target=t))
    same_values(converter.run(after, feeds), want)
    assert ("instance_norms_as_layer_norms" in result.counts) == rewritten
    if not rewritten:
        assert "layerNormalization" not in types(after)
        return
    nhwc = case.startswith("nhwc")
    layer = next(op for op in after.operations if op.op_type == "layerNormalization")
    assert layer.attr("axes") == ([1, 2] if nhwc else [2, 3])
    assert layer.attr("epsilon") == pytest.approx(1e-3)
    per_channel = [1, 1, 1, 3] if nhwc else [1, 3, 1, 1]
    shapes = [op.attr("newShape") for op in after.operations
              if op.op_type == "reshape" and op.inputs[0].is_constant]
    assert shapes == [per_channel, per_channel]  # the scale and the bias
    assert types(after) == ["reshape", "layerNormalization", "reshape", "mul", "reshape", "add"]


def test_a_presented_inputs_transpose_is_the_graphs_first_op():
    def build():
        b = GraphBuilder("first")
        m = b.input("m", "float32", [1, 1, 4, 4])  # its relu is the graph's first op
        x = b.input("x", "float32", [1, 3, 6, 5])
        r = b.relu(m)
        return b.build({"r": r, "y": b.matmul(conv(b, x, 3, 4, "nchw"),
                                              b.constant(seeded((5, 2), 1)))})

    after, result = check_numbers(build, "nchw", io="nhwc", inputs={"x": NCHW_TO_NHWC})
    assert result.counts["inputs_presented"] == 1
    assert types(after) == ["transpose", "relu", "conv2d", "matmul"]
    assert after.operations[0].inputs[0] is after.inputs["x"]


# -- every step of two rewrites, counted -------------------------------------------------------
def _head_with_bias():
    b = GraphBuilder("head")
    x = b.input("x", "float32", [1, 3, 4, 5])
    flat = b.reshape(conv(b, x, 3, 4, "nchw"), [1, 80])
    return b.build({"y": b.gemm(flat, b.constant(seeded((2, 80), 2)),
                                c=b.constant(seeded((2,), 3)), bTranspose=True)})


@pytest.mark.parametrize("build,ops,steps", [
    # the conv's transposes move into the shuffle's; the shuffle's own transpose splits into
    # one inside the groups, which stays, and one of whole groups, which cancels below
    (channel_shuffle,
     ["transpose", "conv2d", "reshape", "transpose", "reshape", "conv2d", "transpose"],
     {"constants_transposed": 2, "filters_relaid": 2, "layout_ops_converted": 2,
      "pushed_down": 2, "transpose_pairs_cancelled": 1, "transposes_merged": 1,
      "transposes_split": 1}),
    # the gemm's weights (columns, with bTranspose) are permuted; its bias stays
    (_head_with_bias, ["transpose", "conv2d", "reshape", "gemm"],
     {"constants_transposed": 1, "dense_weights_permuted": 1, "filters_relaid": 1,
      "layout_ops_converted": 1}),
])
def test_each_step_of_a_rewrite_is_done_once_and_leaves_nothing_dead(build, ops, steps):
    after, result = check_numbers(build, "nhwc")
    assert types(after) == ops
    tallies = ("transposes_before", "transposes_after")
    assert {k: v for k, v in result.counts.items() if not k.startswith(tallies)} == steps


def test_a_two_channel_depthwise_conv_gets_the_depthwise_filter_layout():
    def build():
        b = GraphBuilder("depthwise_2")
        x = b.input("x", "float32", [1, 2, 7, 5])
        y = b.conv2d(x, b.constant(seeded((2, 1, 3, 3), 1)), groups=2, padding=[1, 1, 1, 1])
        return b.build({"y": b.relu(y)})

    after, _ = check_numbers(build, "nhwc")
    op = next(op for op in after.operations if op.op_type == "conv2d")
    assert (op.attr("filterLayout"), op.inputs[1].shape) == ("ihwo", (1, 3, 3, 2))


def test_an_operand_whose_moved_axes_are_all_2_long_is_not_taken_as_unmoved():
    def build():
        b = GraphBuilder("twos")
        x = b.input("x", "float32", [1, 2, 2, 3])
        z = b.input("z", "float32", [1, 2, 2, 1])  # not symmetric: swapping its axes matters
        return b.build({"y": b.matmul(b.add(b.transpose(x, permutation=[0, 2, 1, 3]), z),
                                      b.constant(seeded((3, 2), 1)))})

    after, result = check_numbers(build, "nhwc")
    # z is neither a transpose, a constant nor unmoved by the permutation: nothing moves
    assert types(after) == ["transpose", "add", "matmul"]
    assert after.operations[1].inputs[1] is after.inputs["z"]


def test_a_pair_that_must_stay_for_an_output_still_moves_below_its_other_readers():
    """transpose(transpose(x)) by inverse permutations is x, but the graph output 'y' must stay
    an op's result, so the pair stays. The second transpose still goes on down through the relu,
    where it cancels the one after it: 'z' is relu of the first transpose, and two are left."""
    def build():
        b = GraphBuilder("pinned_pair")
        x = b.input("x", "float32", [1, 3, 4, 5])
        first = b.transpose(x, permutation=NCHW_TO_NHWC)
        back = b.transpose(first, permutation=[0, 3, 1, 2])
        return b.build({"y": back, "z": b.transpose(b.relu(back), permutation=NCHW_TO_NHWC)})

    after, result = check_numbers(build, "nhwc")
    assert types(after) == ["transpose", "transpose", "relu"]
    first, back, relu = after.operations
    assert first.inputs[0] is after.inputs["x"] and back.inputs[0] is first.output
    assert after.outputs["y"] is back.output and after.outputs["z"] is relu.output
    assert relu.inputs[0] is first.output
    assert result.counts["transposes_after"] == 2 and result.counts["pushed_down"] == 1


# -- the editor's primitive edits, one by one ------------------------------------------------
def _editor_graph():
    b = GraphBuilder("edits")
    x = b.input("x", "float32", [2, 3])
    w = b.constant(seeded((2, 3), 1), name="w")
    relu = b.relu(x)
    return b.build({"y": b.sigmoid(relu), "z": b.matmul(x, b.transpose(w))}), w


def test_an_input_that_stands_for_a_result_keeps_its_name():
    """swap() hands an old result's name to the intermediate that replaces it; a graph input
    (or a constant) put in its place keeps its own name and its place in the interface."""
    graph, _ = _editor_graph()
    relu = next(op for op in graph.operations if op.op_type == "relu")
    old_name = relu.output.name
    editor = LayoutEditor(graph, "nhwc")
    editor.swap(relu, [graph.inputs["x"]])
    assert list(graph.inputs) == ["x"] and graph.inputs["x"].name == "x"
    assert not graph.has_operand(old_name) and types(graph) == ["sigmoid", "transpose", "matmul"]
    x = seeded((2, 3), 3)
    got = converter.run(graph, {"x": x})["y"]
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-x)), rtol=1e-6)


def test_remove_if_dead_says_whether_it_removed_the_op():
    graph, _ = _editor_graph()
    editor = LayoutEditor(graph, "nhwc")
    relu, sigmoid = (op for op in graph.operations if op.op_type in ("relu", "sigmoid"))
    assert editor.remove_if_dead(relu) is False  # the sigmoid reads it
    graph.set_output("y", relu.output)
    assert editor.remove_if_dead(sigmoid) is True and sigmoid.graph is None
    assert editor.remove_if_dead(sigmoid) is False  # already gone: nothing removed now
    assert types(graph) == ["relu", "transpose", "matmul"]


def test_a_constant_re_laid_out_and_left_unread_is_dropped():
    """A constant folded into a transposed copy, whose reader then reads the copy (edited
    through the IR, not through the editor's remove), is dropped at the end as an orphan."""
    graph, w = _editor_graph()
    t = next(op for op in graph.operations if op.op_type == "transpose")
    editor = LayoutEditor(graph, "nhwc")
    copy = editor.folded(w, [1, 0])
    graph.replace_operand(t.output, copy)
    graph.remove_operation(t)
    editor.drop_orphans()
    assert sorted(graph.constants) == [copy.name] and copy.shape == (3, 2)
    x = seeded((2, 3), 3)
    got = converter.run(graph, {"x": x})["z"]
    np.testing.assert_allclose(got, x @ seeded((2, 3), 1).T, rtol=1e-5)
