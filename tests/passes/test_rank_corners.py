"""rank: the corners of the rank rules and limits that the family table does not reach.

Ranks below the target's lowest (each family's padding path and how its arguments move), exact
windows (min == max), windows no rank fits, the regrouping choices of gather and gatherND, the
limits lookups (min or max alone, `outputs` and `output0` keys, data types), and the pass's
counts and names. Every rewrite is checked by numbers: numpy where the op is simple, else the
unrewritten graph run through ONNX Runtime."""
from __future__ import annotations

import numpy as np
import pytest

import converter
from converter.ops.builder import GraphBuilder
from converter.errors import ConverterError
from converter.passes import rank_rules
from converter.passes.rank_limits import rank_problems, rank_window, type_allowed
from converter.passes.rank_rules import RULES, Plan, Rule, rank_rule
from converter.targets import Target

from .test_rank import rank_pass, same_outputs, seeded, target


def _only(graph, op_type):
    [op] = [op for op in graph.operations if op.op_type == op_type]
    return op


def _rewritten(graph, t, feeds, ulp=0):
    """Run the pass, check it rewrote one op into range with the same numbers; the results."""
    before = converter.run(graph, feeds)
    result = rank_pass(graph, t)
    assert result.changed and not result.notes, result.notes
    same_outputs(before, converter.run(graph, feeds), ulp=ulp)
    return result


# -- ranks below the target's lowest: leading 1s, arguments shifted ---------------------------
UP = (4, 6)


def test_softmax_gains_leading_ones_and_its_axis_moves_with_them():
    b = GraphBuilder("soft")
    x = b.input("x", "float32", [3, 5])
    g = b.build({"y": b.softmax(x, 1)})
    _rewritten(g, target("up", {"softmax": UP}), {"x": seeded((3, 5))}, ulp=4)
    op = _only(g, "softmax")
    assert op.inputs[0].shape == (1, 1, 3, 5) and op.attr("axis") == 3


def test_batch_normalization_gains_trailing_ones_so_its_axis_stays():
    t = target("bn_up", {"batchNormalization": UP}, batchNormalization_mean=(1, 1),
               batchNormalization_variance=(1, 1))
    b = GraphBuilder("bn")
    x = b.input("x", "float32", [3, 4])
    mean, var = b.constant(seeded(4, 1)), b.constant(np.abs(seeded(4, 2)) + 0.5)
    g = b.build({"y": b.batchNormalization(x, mean, var)})
    feeds = {"x": seeded((3, 4))}
    _rewritten(g, t, feeds, ulp=4)
    op = _only(g, "batchNormalization")
    assert op.inputs[0].shape == (3, 4, 1, 1) and op.attr("axis") == 1
    want = (feeds["x"] - seeded(4, 1)) / np.sqrt(np.abs(seeded(4, 2)) + 0.5 + 1e-5)
    np.testing.assert_allclose(converter.run(g, feeds)["y"], want, rtol=1e-5, atol=1e-6)


def test_reduction_gains_leading_ones_and_its_axes_move():
    b = GraphBuilder("reduce")
    x = b.input("x", "float32", [3, 5])
    g = b.build({"y": b.reduceSum(x, axes=[1], keepDimensions=False)})
    feeds = {"x": seeded((3, 5))}
    _rewritten(g, target("up", {"reduceSum": UP}), feeds)
    op = _only(g, "reduceSum")
    assert op.inputs[0].shape == (1, 1, 3, 5) and op.attr("axes") == [3]
    np.testing.assert_allclose(converter.run(g, feeds)["y"], feeds["x"].sum(1), rtol=1e-6)


def test_transpose_gains_leading_ones_its_permutation_keeps_them_in_front():
    b = GraphBuilder("transpose")
    x = b.input("x", "float32", [3, 5])
    g = b.build({"y": b.transpose(x, permutation=[1, 0])})
    feeds = {"x": seeded((3, 5))}
    _rewritten(g, target("up", {"transpose": UP}), feeds)
    op = _only(g, "transpose")
    assert op.inputs[0].shape == (1, 1, 3, 5) and op.attr("permutation") == [0, 1, 3, 2]
    np.testing.assert_array_equal(converter.run(g, feeds)["y"], feeds["x"].T)


def test_strided_slice_gains_whole_leading_dimensions():
    b = GraphBuilder("slice")
    x = b.input("x", "float32", [4, 6])
    g = b.build({"y": b.slice(x, [1, 0], [2, 5], strides=[1, 2])})
    feeds = {"x": seeded((4, 6))}
    _rewritten(g, target("up", {"slice": UP}), feeds)
    op = _only(g, "slice")
    assert op.inputs[0].shape == (1, 1, 4, 6)
    assert (op.attr("starts"), op.attr("sizes"), op.attr("strides")) == \
        ([0, 0, 1, 0], [1, 1, 2, 5], [1, 1, 1, 2])
    np.testing.assert_array_equal(converter.run(g, feeds)["y"], feeds["x"][1:3, 0:5:2])


def test_pad_reverse_and_tile_gain_leading_ones_that_they_leave_alone():
    b = GraphBuilder("per_dim")
    x = b.input("x", "float32", [3, 4])
    g = b.build({"p": b.pad(x, [1, 0], [0, 2], value=0.5),
                 "r": b.reverse(x, axes=[1]),
                 "t": b.tile(x, [2, 1])})
    feeds = {"x": seeded((3, 4))}
    t = target("up", {"pad": UP, "reverse": UP, "tile": UP})
    before = converter.run(g, feeds)
    assert rank_pass(g, t).counts["ops_rewritten"] == 3
    same_outputs(before, converter.run(g, feeds))
    pad, rev, tile = _only(g, "pad"), _only(g, "reverse"), _only(g, "tile")
    assert pad.attr("beginningPadding") == [0, 0, 1, 0]
    assert pad.attr("endingPadding") == [0, 0, 0, 2]
    assert rev.attr("axes") == [3] and tile.attr("repetitions") == [1, 1, 2, 1]
    got = converter.run(g, feeds)
    np.testing.assert_array_equal(got["p"], np.pad(feeds["x"], [(1, 0), (0, 2)],
                                                   constant_values=0.5))
    np.testing.assert_array_equal(got["r"], feeds["x"][:, ::-1])
    np.testing.assert_array_equal(got["t"], np.tile(feeds["x"], (2, 1)))


def test_gather_elements_gains_leading_ones_and_its_axis_moves():
    b = GraphBuilder("ge")
    x = b.input("x", "float32", [3, 4])
    idx = np.array([[3, 0], [1, 1], [2, 0]], np.int32)
    g = b.build({"y": b.gatherElements(x, b.constant(idx), axis=1)})
    feeds = {"x": seeded((3, 4))}
    _rewritten(g, target("up", {"gatherElements": UP}), feeds)
    op = _only(g, "gatherElements")
    assert op.inputs[0].shape == (1, 1, 3, 4) and op.inputs[1].shape == (1, 1, 3, 2)
    assert op.attr("axis") == 3
    np.testing.assert_array_equal(converter.run(g, feeds)["y"],
                                  np.take_along_axis(feeds["x"], idx, 1))


def test_layer_normalization_without_scale_gains_leading_ones():
    b = GraphBuilder("ln")
    x = b.input("x", "float32", [3, 5])
    g = b.build({"y": b.layerNormalization(x, axes=[1])})
    feeds = {"x": seeded((3, 5))}
    _rewritten(g, target("up", {"layerNormalization": UP}), feeds, ulp=16)
    op = _only(g, "layerNormalization")
    assert op.inputs[0].shape == (1, 1, 3, 5) and op.attr("axes") == [3]


def test_dequantize_of_packed_int4_constant_is_reshaped_byte_for_byte():
    values = (np.arange(12).reshape(3, 4) % 16 - 8).astype(np.int8)
    b = GraphBuilder("int4")
    w = b.constant("int4", [3, 4], values)
    scale = b.constant(np.array([[0.5], [0.25], [2.0]], np.float32))
    zero = b.constant("int4", [3, 1], np.array([[1], [0], [-2]], np.int8))
    g = b.build({"y": b.dequantizeLinear(w, scale, zero)})
    result = _rewritten(g, target("up", {"dequantizeLinear": UP}), {})
    assert result.counts["reshapes_added"] == 1  # the result's reshape back; constants in place
    op = _only(g, "dequantizeLinear")
    assert [x.shape for x in op.inputs] == [(1, 1, 3, 4), (1, 1, 3, 1), (1, 1, 3, 1)]
    assert all(x.is_constant for x in op.inputs)
    want = (values.astype(np.float32) - [[1], [0], [-2]]) * [[0.5], [0.25], [2.0]]
    np.testing.assert_array_equal(converter.run(g, {})["y"], want)


def test_a_broadcast_operand_below_the_lowest_rank_gains_the_results_rank():
    # The result's rank fits; only b's does not. b is padded to the result's rank (3).
    b = GraphBuilder("low_b")
    x = b.input("x", "float32", [2, 3, 4])
    y = b.input("y", "float32", [4])
    g = b.build({"z": b.add(x, y)})
    feeds = {"x": seeded((2, 3, 4)), "y": seeded(4, 1)}
    result = _rewritten(g, target("min2", {"add": (2, 4)}), feeds)
    assert result.counts == {"ops_rewritten": 1, "reshapes_added": 1, "reshapes_merged": 0}
    add = _only(g, "add")
    assert add.inputs[0] is x and add.inputs[1].shape == (1, 1, 4)
    assert add.output is g.outputs["z"]  # same shape: no reshape back
    np.testing.assert_array_equal(converter.run(g, feeds)["z"], feeds["x"] + feeds["y"])


# -- windows: exact, empty, too small -------------------------------------------------------
def test_an_exact_window_merges_to_that_rank():
    b = GraphBuilder("exact")
    x = b.input("x", "float32", [2, 3, 4])
    g = b.build({"y": b.relu(x)})
    feeds = {"x": seeded((2, 3, 4))}
    _rewritten(g, target("rank1", {"relu": (1, 1)}), feeds)
    assert _only(g, "relu").inputs[0].shape == (24,)  # the last dimension merges too


def test_arg_min_keeps_dimensions_so_its_result_fits_an_exact_window():
    b = GraphBuilder("argmin")
    x = b.input("x", "float32", [2, 3, 4, 5, 2])
    g = b.build({"y": b.argMin(x, 1, keepDimensions=False)})
    feeds = {"x": seeded((2, 3, 4, 5, 2))}
    _rewritten(g, target("rank3", {"argMin": (3, 3)}), feeds)
    op = _only(g, "argMin")
    assert op.inputs[0].shape == (2, 3, 40) and op.attr("keepDimensions") is True
    assert op.output.shape == (2, 1, 40)
    np.testing.assert_array_equal(converter.run(g, feeds)["y"], feeds["x"].argmin(1))


def test_a_window_no_rank_fits_is_noted():
    t = target("split_window", {"add": (3, 4)}, add_a=(1, 2), add_b=(1, 2))
    b = GraphBuilder("disjoint")
    x = b.input("x", "float32", [2, 3, 4, 5, 6])
    g = b.build({"y": b.add(x, x)})
    text = str(g)
    result = rank_pass(g, t)
    assert not result.changed and str(g) == text
    assert result.counts == {"ops_rewritten": 0, "reshapes_added": 0, "reshapes_merged": 0}
    [note] = result.notes
    assert "rank 5 cannot become a rank in 3..2" in note


def test_matmul_batch_that_cannot_vanish_is_noted():
    b = GraphBuilder("mm")
    a = b.input("a", "float32", [2, 4, 5])
    g = b.build({"y": b.matmul(a, b.constant(seeded((5, 6), 1)))})
    [note] = rank_pass(g, target("rank2", {"matmul": (2, 2)})).notes
    assert "its 3 dimensions cannot be merged into 2" in note


@pytest.mark.parametrize("x_shape, y_shape", [
    ((2, 1, 3, 4), (1, 1, 1, 4)),  # y broadcasts over dims 0 and 2, not 3: dim 1 has size 1
    ((1, 2, 3), (3,)),             # a leading 1, then dims y broadcasts and does not
])
def test_a_size_one_dimension_does_not_let_different_broadcasts_merge(x_shape, y_shape):
    b = GraphBuilder("ones")
    x, y = b.input("x", "float32", list(x_shape)), b.input("y", "float32", list(y_shape))
    g = b.build({"z": b.add(x, y)})
    text = str(g)
    result = rank_pass(g, target("rank1", {"add": (0, 1)}))
    assert not result.changed and str(g) == text
    [note] = result.notes
    assert "neighbouring dimensions broadcast differently" in note


# -- merging: matmul batches, strides, one-sided padding ----------------------------------------
def test_matmul_merges_a_batch_the_other_operand_broadcasts_over():
    b = GraphBuilder("mm5")
    a = b.input("a", "float32", [2, 3, 4, 5, 6])
    w = b.input("w", "float32", [4, 6, 2])
    g = b.build({"y": b.matmul(a, w)})
    feeds = {"a": seeded((2, 3, 4, 5, 6)), "w": seeded((4, 6, 2), 1)}
    _rewritten(g, target("max4", {"matmul": (2, 4)}), feeds, ulp=12)
    op = _only(g, "matmul")
    assert op.inputs[0].shape == (6, 4, 5, 6) and op.inputs[1] is w
    np.testing.assert_allclose(converter.run(g, feeds)["y"], feeds["a"] @ feeds["w"],
                               rtol=1e-5, atol=1e-5)


def test_strided_slice_merges_the_whole_dimensions_around_a_strided_one():
    b = GraphBuilder("slice")
    x = b.input("x", "float32", [2, 3, 6, 5, 2])
    g = b.build({"y": b.slice(x, [0, 0, 1, 0, 0], [2, 3, 5, 5, 2], strides=[1, 1, 2, 1, 1])})
    feeds = {"x": seeded((2, 3, 6, 5, 2))}
    _rewritten(g, target("max3", {"slice": (1, 3)}), feeds)
    op = _only(g, "slice")
    assert op.inputs[0].shape == (6, 6, 10) and op.attr("strides") == [1, 2, 1]
    np.testing.assert_array_equal(converter.run(g, feeds)["y"], feeds["x"][:, :, 1:6:2])


def test_padding_at_one_end_only_keeps_that_dimension_apart():
    b = GraphBuilder("pad")
    x = b.input("x", "float32", [2, 3, 4, 5, 6])
    g = b.build({"y": b.pad(x, [0, 1, 0, 0, 0], [0, 0, 0, 0, 2])})
    feeds = {"x": seeded((2, 3, 4, 5, 6))}
    _rewritten(g, target("max4", {"pad": (0, 4)}), feeds)
    op = _only(g, "pad")
    assert op.inputs[0].shape == (2, 3, 20, 6)
    want = np.pad(feeds["x"], [(0, 0), (1, 0), (0, 0), (0, 0), (0, 2)])
    np.testing.assert_array_equal(converter.run(g, feeds)["y"], want)


def test_layer_normalization_default_axes_and_no_scale_merge():
    b = GraphBuilder("ln")
    x = b.input("x", "float32", [2, 3, 4, 5, 2])
    g = b.build({"y": b.layerNormalization(x)})  # axes: every dimension but the first
    feeds = {"x": seeded((2, 3, 4, 5, 2))}
    _rewritten(g, target("max2", {"layerNormalization": (0, 2)}), feeds, ulp=16)
    op = _only(g, "layerNormalization")
    assert op.inputs[0].shape == (2, 120) and op.attr("axes") == [1]
    flat = feeds["x"].reshape(2, -1).astype(np.float64)
    want = (flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(converter.run(g, feeds)["y"], want.reshape(2, 3, 4, 5, 2),
                               rtol=1e-5, atol=1e-5)


def test_dequantize_merges_where_scale_is_whole_or_broadcast_alike():
    rng = np.random.default_rng(3)
    xv = rng.integers(-100, 100, (2, 3, 4, 5)).astype(np.int8)
    sv = (rng.random((1, 3, 4, 1)) + 0.5).astype(np.float32)
    zv = rng.integers(-5, 5, (1, 3, 4, 1)).astype(np.int8)
    b = GraphBuilder("dq")
    x = b.input("x", "int8", [2, 3, 4, 5])
    g = b.build({"y": b.dequantizeLinear(x, b.constant(sv), b.constant(zv))})
    _rewritten(g, target("max3", {"dequantizeLinear": (0, 3)}), {"x": xv})
    op = _only(g, "dequantizeLinear")
    assert [v.shape for v in op.inputs] == [(2, 12, 5), (1, 12, 1), (1, 12, 1)]
    want = (xv.astype(np.float32) - zv) * sv
    np.testing.assert_allclose(converter.run(g, {"x": xv})["y"], want, rtol=1e-6)


# -- gather and gatherND: which parts regroup ------------------------------------------------
def test_gather_merges_a_leading_part_of_three_dimensions_to_two():
    b = GraphBuilder("gather")
    x = b.input("x", "float32", [2, 3, 4, 5, 6])
    g = b.build({"y": b.gather(x, b.constant(np.array([4, 0], np.int32)), axis=3)})
    feeds = {"x": seeded((2, 3, 4, 5, 6))}
    _rewritten(g, target("max4", {"gather": (1, 4)}), feeds)
    op = _only(g, "gather")
    assert op.inputs[0].shape == (6, 4, 5, 6) and op.attr("axis") == 2
    np.testing.assert_array_equal(converter.run(g, feeds)["y"],
                                  np.take(feeds["x"], [4, 0], axis=3))


def test_gather_with_a_scalar_index_shrinks_the_input_that_is_one_rank_above_the_result():
    b = GraphBuilder("gather0")
    x = b.input("x", "float32", [2, 3, 4, 5])
    g = b.build({"y": b.gather(x, b.constant(np.array(1, np.int32)), axis=2)})
    feeds = {"x": seeded((2, 3, 4, 5))}
    _rewritten(g, target("max3", {"gather": (1, 3)}), feeds)
    op = _only(g, "gather")
    assert op.inputs[0].shape == (6, 4, 5) and op.attr("axis") == 1
    np.testing.assert_array_equal(converter.run(g, feeds)["y"], feeds["x"][:, :, 1])


def test_gather_with_two_equally_cheap_regroupings_merges_the_leading_part():
    b = GraphBuilder("gather_tie")
    x = b.input("x", "float32", [2, 3, 4, 5, 6])
    g = b.build({"y": b.gather(x, b.constant(np.array([1, 3], np.int32)), axis=2)})
    feeds = {"x": seeded((2, 3, 4, 5, 6))}
    _rewritten(g, target("max4", {"gather": (1, 4)}), feeds)
    # before [2, 3] or after [5, 6] could merge; merging starts from the leading dimensions.
    assert _only(g, "gather").inputs[0].shape == (6, 4, 5, 6)


def test_gather_keeps_a_seven_dimensional_trailing_part_when_only_the_index_must_grow():
    shape = [2, 1, 1, 1, 1, 1, 1, 3]
    b = GraphBuilder("gather8")
    x = b.input("x", "float32", shape)
    g = b.build({"y": b.gather(x, b.constant(np.array(1, np.int32)), axis=0)})
    feeds = {"x": seeded(tuple(shape))}
    t = target("min1", {"gather": (1, 8)})
    _rewritten(g, t, feeds)
    op = _only(g, "gather")
    assert op.inputs[0].shape == tuple(shape) and op.inputs[1].shape == (1,)
    np.testing.assert_array_equal(converter.run(g, feeds)["y"], feeds["x"][1])


@pytest.mark.parametrize("x_shape, idx, window, new_x, new_idx", [
    # k = 1 (indices' last dimension), not indices' second one (3).
    ((3, 4, 2, 5, 2), np.array([[[2], [0], [1]], [[1], [1], [0]]]), (1, 3),
     (3, 80), (2, 3, 1)),
    # k = 2 = input's rank: nothing else; indices' batch [2, 3] must become rank 1.
    ((5, 4), np.array([[[4, 3], [0, 0], [2, 1]], [[1, 2], [3, 3], [0, 1]]]), (1, 2),
     (5, 4), (6, 2)),
    # the result's rank (batch 2 + rest 2) is the one too high.
    ((3, 4, 5), np.array([[[2], [0], [1]], [[1], [1], [0]]]), (0, 3),
     (3, 20), (2, 3, 1)),
])
def test_gather_nd_regroups_the_batch_and_the_rest(x_shape, idx, window, new_x, new_idx):
    b = GraphBuilder("gathernd")
    x = b.input("x", "float32", list(x_shape))
    g = b.build({"y": b.gatherND(x, b.constant(idx.astype(np.int32)))})
    feeds = {"x": seeded(x_shape)}
    _rewritten(g, target("nd", {"gatherND": window}), feeds)
    op = _only(g, "gatherND")
    assert op.inputs[0].shape == new_x and op.inputs[1].shape == new_idx
    want = feeds["x"][tuple(idx[..., i] for i in range(idx.shape[-1]))]
    np.testing.assert_array_equal(converter.run(g, feeds)["y"], want)


# -- the pass: counts, names, notes, a rule that plans nonsense ------------------------------
def test_a_rewritten_result_read_inside_the_graph_keeps_its_name():
    b = GraphBuilder("names")
    x = b.input("x", "float32", [2, 3, 4, 5, 6, 7])
    s = b.add(x, b.constant(seeded(7, 1)), name="sum")
    g = b.build({"y": b.neg(s)})
    old = s.name
    feeds = {"x": seeded((2, 3, 4, 5, 6, 7))}
    result = _rewritten(g, target("max4", {"add": (0, 4), "neg": (0, 8)}), feeds)
    assert result.counts == {"ops_rewritten": 1, "reshapes_added": 2, "reshapes_merged": 0}
    back = g.operand(old)
    assert back.producer.op_type == "reshape" and back.shape == (2, 3, 4, 5, 6, 7)
    assert _only(g, "neg").inputs[0] is back


def test_the_note_for_an_op_without_a_rule_says_why():
    b = GraphBuilder("pool")
    x = b.input("x", "float32", [1, 2, 4, 4])
    g = b.build({"y": b.maxPool2d(x)})
    [note] = rank_pass(g, target("pool3", {"maxPool2d": (1, 3)})).notes
    assert "no rank rewrite: its input has exactly two spatial dimensions" in note


def test_a_rule_that_plans_an_invalid_op_is_reported_as_a_bug(monkeypatch):
    # [720] and [5] do not broadcast: the shape rule refuses the planned add.
    monkeypatch.setitem(RULES, "add", Rule(RULES["add"].keys,
                                           lambda op, low, high: Plan({0: (720,)}, {})))
    b = GraphBuilder("bad")
    x = b.input("x", "float32", [2, 3, 4, 6, 5])
    g = b.build({"y": b.add(x, b.input("y", "float32", [5]))})
    with pytest.raises(ConverterError, match="the rank rule for add planned an invalid op"):
        rank_pass(g, target("max4", {"add": (0, 4)}))


def test_a_rank_rule_registered_twice_is_refused():
    with pytest.raises(ValueError, match="rank rule for add registered twice"):
        rank_rule("add")(lambda op, low, high: "never")
    assert RULES["add"].plan is rank_rules._elementwise


# -- the limits lookups ---------------------------------------------------------------------
def _relu_target(rank_range):
    limit = {"dataTypes": ["float32"]}
    if rank_range is not ...:
        limit["rankRange"] = rank_range
    return Target(name="t", limits={"relu": {"input": limit, "output": dict(limit)}})


@pytest.mark.parametrize("rank_range, window", [
    ({"max": 3}, (0, 3)), ({"min": 2}, (2, float("inf"))), ({"min": 1, "max": 4}, (1, 4)),
    ({}, (0, float("inf"))), (None, (0, float("inf"))), (..., (0, float("inf"))),
])
def test_a_rank_range_with_one_bound_or_none_leaves_the_other_open(rank_range, window):
    t = _relu_target(rank_range)
    assert rank_window(t, "relu", ["input", "output"]) == window
    b = GraphBuilder("r")
    g = b.build({"y": b.relu(b.input("x", "float32", []))})
    assert bool(rank_problems(t, _only(g, "relu"))) == (window[0] > 0)


def test_a_scalar_operand_stays_a_scalar_when_the_window_has_no_lower_bound():
    t = Target(name="max3", limits={
        "reshape": {k: {"rankRange": {"min": 0, "max": 8}} for k in ("input", "output")},
        "add": {k: {"rankRange": {"max": 3}} for k in ("a", "b", "output")}})
    b = GraphBuilder("scalar")
    x = b.input("x", "float32", [2, 3, 4, 5])
    c = b.constant(np.array(1.5, np.float32))
    g = b.build({"y": b.add(x, c)})
    feeds = {"x": seeded((2, 3, 4, 5))}
    _rewritten(g, t, feeds)
    add = _only(g, "add")
    assert add.inputs[0].shape == (6, 4, 5) and add.inputs[1] is c


def test_split_results_are_checked_under_the_outputs_key():
    t = target("split", {"split": (0, 8)}, split_outputs=(1, 3))
    b = GraphBuilder("split")
    x = b.input("x", "float32", [2, 3, 6, 5])
    a, c = b.split(x, [2, 4], axis=2)
    g = b.build({"a": a, "c": c})
    feeds = {"x": seeded((2, 3, 6, 5))}
    _rewritten(g, t, feeds)
    op = _only(g, "split")
    assert op.inputs[0].shape == (6, 6, 5) and op.attr("axis") == 1


def test_lstm_cell_results_are_checked_under_numbered_keys():
    t = target("cell", {"lstmCell": (0, 8)}, lstmCell_output0=(3, 3))
    b = GraphBuilder("cell")
    x, h, c = (b.input(n, "float32", [1, s]) for n, s in (("x", 3), ("h", 2), ("c", 2)))
    w, r = b.constant(seeded((8, 3), 1)), b.constant(seeded((8, 2), 2))
    hy, cy = b.lstmCell(x, w, r, h, c, 2)
    g = b.build({"h": hy, "c": cy})
    [note] = rank_pass(g, t).notes
    assert "output0 'h' has rank 2 (3 allowed)" in note or "output0" in note and "rank 2" in note


def test_type_allowed_says_yes_unless_the_target_lists_other_types():
    t = Target(name="t", limits={"add": {"a": {"dataTypes": ["float32"]},
                                         "b": {"rankRange": {"max": 4}}}})
    assert type_allowed(t, "add", "a", "float32") is True
    assert type_allowed(t, "add", "a", "int32") is False
    assert type_allowed(t, "add", "b", "int32") is True       # no dataTypes for b
    assert type_allowed(t, "add", "output", "int32") is True  # output not listed
    assert type_allowed(t, "mul", "a", "int32") is True       # mul not listed at all


def test_layer_normalization_scale_below_the_lowest_rank_is_noted_not_rewritten():
    # input's rank fits (3); scale's (2: one dimension per axis) does not, and no plan changes
    # it: the planned op is refused and the note says so.
    b = GraphBuilder("ln_scale")
    x = b.input("x", "float32", [2, 3, 4])
    scale = b.constant(seeded((4, 3), 1))
    g = b.build({"y": b.layerNormalization(x, axes=[2, 1], scale=scale)})
    text = str(g)
    result = rank_pass(g, target("min3", {"layerNormalization": (3, 8)}))
    assert not result.changed and str(g) == text
    [note] = result.notes
    assert "scale" in note and "the planned op still has ranks [3, 2, 3]" in note
