"""rank: ops outside a target's rank range run at an accepted rank between reshapes."""
from __future__ import annotations

import numpy as np

import converter
from converter import dtypes
from converter.ops.builder import GraphBuilder
from converter.ops.registry import get_op
from converter.verification.parity import Bounds, compare
from converter.passes import PassContext, run_passes
from converter.targets import Target
from converter.formats.webnn_text import dumps

ANY_RANK = (0, 8)


def target(name: str, ranks: dict[str, tuple[int, int]], **per_operand) -> Target:
    """A target with every data type and, per op, one rank range for every operand and result
    (`per_operand` overrides one: batchNormalization_mean=(1, 1)). Reshape takes any rank."""
    limits = {}
    for op_type, (lo, hi) in {"reshape": ANY_RANK, **ranks}.items():
        limits[op_type] = {key: {"dataTypes": list(dtypes.SPEC_DATA_TYPES),
                                 "rankRange": {"min": lo, "max": hi}}
                           for key in get_op(op_type).limits}
    for spec, (lo, hi) in per_operand.items():
        op_type, key = spec.split("_")
        limits[op_type][key]["rankRange"] = {"min": lo, "max": hi}
    return Target(name=name, limits=limits)


def rank_pass(graph, t: Target):
    [(_, result)] = run_passes(graph, ["rank"], PassContext(target=t))
    return result


def seeded(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def same_outputs(before: dict, after: dict, ulp: int = 0) -> None:
    for key in before:
        assert after[key].shape == before[key].shape, key
        if ulp == 0:
            np.testing.assert_array_equal(after[key], before[key], err_msg=key)
        else:
            report = compare(key, after[key], before[key], Bounds(ulp=ulp))
            assert report.passed, report.to_json()


def ranks(graph, op_type):
    return [op.inputs[0].rank for op in graph.operations if op.op_type == op_type]


def test_elementwise_chain_collapses_leading_dimensions_once():
    t = target("max4", {"add": (1, 4), "relu": (1, 4)})
    b = GraphBuilder("chain")
    x = b.input("x", "float32", [2, 3, 4, 5, 6, 7])
    bias = b.constant(seeded(7, seed=1))
    g = b.build({"y": b.relu(b.add(x, bias))})
    feeds = {"x": seeded((2, 3, 4, 5, 6, 7))}
    before = converter.run(g, feeds)
    out_name = g.outputs["y"].name

    result = rank_pass(g, t)

    assert result.counts["ops_rewritten"] == 2 and not result.notes
    # One reshape in, one out: the reshape between add and relu merged away.
    assert g.op_histogram() == {"reshape": 2, "add": 1, "relu": 1}
    add = next(op for op in g.operations if op.op_type == "add")
    assert add.inputs[0].shape == (24, 5, 6, 7)  # 2 * 3 * 4 leading dimensions merged
    assert add.inputs[1] is bias  # [7] broadcasts at rank 4 as it did at rank 6
    assert g.outputs["y"].shape == (2, 3, 4, 5, 6, 7) and g.outputs["y"].name == out_name
    same_outputs(before, converter.run(g, feeds))


def test_broadcasting_limits_which_dimensions_merge():
    t = target("max4", {"mul": (0, 4)})
    b = GraphBuilder("bcast")
    x = b.input("x", "float32", [2, 3, 4, 5, 6])
    s = b.input("s", "float32", [4, 1, 6])  # broadcasts over dims 0, 1 and 3
    g = b.build({"y": b.mul(x, s)})
    feeds = {"x": seeded((2, 3, 4, 5, 6)), "s": seeded((4, 1, 6), seed=2)}
    before = converter.run(g, feeds)

    rank_pass(g, t)

    mul = next(op for op in g.operations if op.op_type == "mul")
    # dims 0 and 1 both broadcast s: they merge; 1|2 and 2|3 and 3|4 do not. s already
    # broadcasts to [6, 4, 5, 6] as it is, so it is not reshaped.
    assert mul.inputs[0].shape == (6, 4, 5, 6) and mul.inputs[1] is s
    same_outputs(before, converter.run(g, feeds))


def test_a_constant_operand_is_reshaped_in_place_without_an_op():
    t = target("max4", {"prelu": (0, 4)})
    b = GraphBuilder("prelu")
    x = b.input("x", "float32", [2, 3, 4, 5, 6])
    slope = b.constant(seeded((3, 1, 1, 1), 5), name="slope")  # per channel, channel is dim 1
    g = b.build({"y": b.prelu(x, slope)})
    feeds = {"x": seeded((2, 3, 4, 5, 6))}
    before = converter.run(g, feeds)

    rank_pass(g, t)

    assert g.op_histogram() == {"reshape": 2, "prelu": 1}  # x in, the result out
    op = next(op for op in g.operations if op.op_type == "prelu")
    # Dims 2, 3 merge (s broadcasts over both); 0|1 and 1|2 differ.
    assert op.inputs[0].shape == (2, 3, 20, 6)
    assert op.inputs[1].is_constant and op.inputs[1].shape == (1, 3, 1, 1)
    assert list(g.constants) == ["slope_1"]  # the old [3, 1, 1, 1] constant is gone
    same_outputs(before, converter.run(g, feeds))


def test_alternating_broadcasts_cannot_merge_and_are_noted():
    t = target("max4", {"add": (0, 4)})
    b = GraphBuilder("alt")
    a = b.input("a", "float32", [2, 1, 3, 1, 4])
    c = b.input("c", "float32", [1, 5, 1, 6, 1])
    g = b.build({"y": b.add(a, c)})
    text = dumps(g)

    result = rank_pass(g, t)

    assert not result.changed and dumps(g) == text
    [note] = result.notes
    assert "add 'y'" in note or "add" in note
    assert "rank 5 (0 to 4 allowed)" in note and "broadcast differently" in note


def test_rank5_batch_normalization_becomes_rank4():
    t = target("bn4", {"batchNormalization": (1, 4)}, batchNormalization_mean=(1, 1),
               batchNormalization_variance=(1, 1), batchNormalization_scale=(1, 1),
               batchNormalization_bias=(1, 1))
    b = GraphBuilder("bn")
    x = b.input("x", "float32", [2, 3, 4, 5, 6])
    mean, var = b.constant(seeded(3, 1)), b.constant(np.abs(seeded(3, 2)) + 0.5)
    scale, bias = b.constant(seeded(3, 3)), b.constant(seeded(3, 4))
    g = b.build({"y": b.batchNormalization(x, mean, var, scale=scale, bias=bias, epsilon=1e-3)})
    feeds = {"x": seeded((2, 3, 4, 5, 6))}
    before = converter.run(g, feeds)

    result = rank_pass(g, t)

    assert result.counts["ops_rewritten"] == 1 and not result.notes
    bn = next(op for op in g.operations if op.op_type == "batchNormalization")
    # The channel axis stays 1; the dimensions after it merge from the left.
    assert bn.inputs[0].shape == (2, 3, 20, 6) and bn.attr("axis") == 1
    assert bn.inputs[1] is mean  # the per-channel operands are untouched
    same_outputs(before, converter.run(g, feeds), ulp=6)  # batchNormalization's budget


def test_scalars_become_rank1_where_the_target_takes_no_scalars():
    t = target("no_scalars", {"add": (1, 8), "reduceSum": (1, 8)})
    b = GraphBuilder("scalars")
    x = b.input("x", "float32", [])
    one = b.constant("float32", 1.5)
    total = b.reduceSum(b.add(x, one))
    g = b.build({"y": total})
    feeds = {"x": np.array(2.25, np.float32)}

    result = rank_pass(g, t)

    assert result.counts["ops_rewritten"] == 2 and not result.notes
    add = next(op for op in g.operations if op.op_type == "add")
    assert [o.shape for o in add.inputs] == [(1,), (1,)]
    assert add.inputs[1].constant.fill == 1.5  # a fill stays a fill at the new shape
    out = converter.run(g, feeds)["y"]
    assert out.shape == () and float(out) == 3.75


def test_reduction_merges_reduced_and_kept_dimensions_separately():
    t = target("max4", {"reduceSum": (0, 4)})
    b = GraphBuilder("reduce")
    x = b.input("x", "float32", [2, 3, 4, 5, 6, 7])
    g = b.build({"y": b.reduceSum(x, axes=[3, 4])})
    feeds = {"x": seeded((2, 3, 4, 5, 6, 7))}
    before = converter.run(g, feeds)

    rank_pass(g, t)

    op = next(op for op in g.operations if op.op_type == "reduceSum")
    assert op.inputs[0].shape == (24, 5, 6, 7)
    assert op.attr("axes") == [1, 2] and op.attr("keepDimensions") is True
    assert g.outputs["y"].shape == (2, 3, 4, 7)
    same_outputs(before, converter.run(g, feeds), ulp=30)  # 5 * 6 reduced elements


def test_softmax_and_arg_max_keep_their_axis_apart():
    t = target("max3", {"softmax": (1, 3), "argMax": (1, 3)})
    b = GraphBuilder("axis")
    x = b.input("x", "float32", [2, 3, 4, 5, 6])
    soft = b.softmax(x, 2)
    g = b.build({"soft": soft, "best": b.argMax(x, 3, keepDimensions=False)})
    feeds = {"x": seeded((2, 3, 4, 5, 6))}
    before = converter.run(g, feeds)

    rank_pass(g, t)

    softmax = next(op for op in g.operations if op.op_type == "softmax")
    assert softmax.inputs[0].shape == (6, 4, 30) and softmax.attr("axis") == 1
    arg = next(op for op in g.operations if op.op_type == "argMax")
    assert arg.inputs[0].shape == (24, 5, 6) and arg.attr("axis") == 1
    assert g.outputs["best"].shape == (2, 3, 4, 6)
    after = converter.run(g, feeds)
    np.testing.assert_array_equal(after["best"], before["best"])
    same_outputs({"soft": before["soft"]}, {"soft": after["soft"]}, ulp=4 * 3 + 3)


def test_six_dimensional_transpose_merges_dimensions_that_move_together():
    # depth-to-space: [N, C, H, W] -> [N, 2, 2, C/4, H, W] -> transpose -> [N, C/4, H, 2, W, 2]
    t = target("max5", {"transpose": (0, 5)})
    b = GraphBuilder("d2s")
    x = b.input("x", "float32", [1, 2, 2, 3, 4, 5])
    g = b.build({"y": b.transpose(x, permutation=[0, 3, 4, 1, 5, 2])})
    feeds = {"x": seeded((1, 2, 2, 3, 4, 5))}

    result = rank_pass(g, t)

    assert not result.notes
    op = next(op for op in g.operations if op.op_type == "transpose")
    assert op.inputs[0].rank == 5  # the leading size-1 dimension dropped out
    assert op.inputs[0].shape == (2, 2, 3, 4, 5) and op.attr("permutation") == [2, 3, 0, 4, 1]
    np.testing.assert_array_equal(converter.run(g, feeds)["y"],
                                  feeds["x"].transpose(0, 3, 4, 1, 5, 2))


def test_matmul_merges_batch_dimensions():
    t = target("max3", {"matmul": (2, 3)})
    b = GraphBuilder("mm")
    a = b.input("a", "float32", [2, 3, 4, 5])
    w = b.constant(seeded((5, 6), 1))
    g = b.build({"y": b.matmul(a, w)})
    feeds = {"a": seeded((2, 3, 4, 5))}
    before = converter.run(g, feeds)

    rank_pass(g, t)

    mm = next(op for op in g.operations if op.op_type == "matmul")
    assert mm.inputs[0].shape == (6, 4, 5) and mm.inputs[1].shape == (5, 6)
    same_outputs(before, converter.run(g, feeds), ulp=5 * 2)


def test_slice_and_concat_merge_the_dimensions_they_leave_alone():
    t = target("max3", {"slice": (1, 3), "concat": (1, 3)})
    b = GraphBuilder("shape")
    x = b.input("x", "float32", [2, 3, 4, 5])
    part = b.slice(x, [0, 0, 1, 0], [2, 3, 2, 5])
    g = b.build({"y": b.concat([part, x], 2)})
    feeds = {"x": seeded((2, 3, 4, 5))}
    before = converter.run(g, feeds)

    result = rank_pass(g, t)

    assert not result.notes
    sl = next(op for op in g.operations if op.op_type == "slice")
    assert sl.inputs[0].shape == (6, 4, 5) and sl.attr("starts") == [0, 1, 0]
    cat = next(op for op in g.operations if op.op_type == "concat")
    assert [o.shape for o in cat.inputs] == [(6, 2, 5), (6, 4, 5)] and cat.attr("axis") == 1
    same_outputs(before, converter.run(g, feeds))


def test_ops_without_a_rank_rule_are_noted():
    # A pool's window runs over two fixed spatial dimensions: it has no rank rule.
    t = target("pool3", {"averagePool2d": (1, 3)})
    b = GraphBuilder("pool")
    x = b.input("x", "float32", [1, 2, 4, 4])
    g = b.build({"y": b.averagePool2d(x)})

    result = rank_pass(g, t)

    assert not result.changed
    [note] = result.notes
    assert "input 'x' has rank 4 (1 to 3 allowed)" in note and "no rank rewrite" in note


def test_ops_in_range_and_no_target_change_nothing():
    b = GraphBuilder("fine")
    x = b.input("x", "float32", [2, 3])
    g = b.build({"y": b.relu(x)})
    text = dumps(g)
    assert not rank_pass(g, target("ok", {"relu": (0, 4)})).changed and dumps(g) == text
    [(_, result)] = run_passes(g, ["rank"], PassContext())
    assert not result.changed and dumps(g) == text


def test_a_rewrite_that_would_not_fix_the_problem_is_not_made():
    # The target wants rank-2 per-channel operands; the rule only reshapes input and output.
    t = target("bn_mean2", {"batchNormalization": (1, 4)}, batchNormalization_mean=(2, 2),
               batchNormalization_variance=(1, 1))
    b = GraphBuilder("bn_mean")
    x = b.input("x", "float32", [2, 3, 4, 5, 6])
    g = b.build({"y": b.batchNormalization(x, b.constant(seeded(3)),
                                           b.constant(np.ones(3, np.float32)))})
    text = dumps(g)

    result = rank_pass(g, t)

    assert not result.changed and dumps(g) == text
    [note] = result.notes
    assert "mean 'const' has rank 1 (2 allowed)" in note
    assert "input 'x' has rank 5 (1 to 4 allowed)" in note
    assert "leaves mean as it is" in note


def test_depth_to_space_through_rank6_reshapes_keeps_no_rank6_tensor():
    # reshape to 6-D, transpose, reshape back: on a rank-5 target the 6-D tensors vanish once
    # the transpose is merged and the reshape chains around it collapse.
    t = target("max5", {"transpose": (0, 5), "reshape": (0, 5), "relu": (0, 5)})
    b = GraphBuilder("d2s_chain")
    x = b.input("x", "float32", [1, 12, 4, 5])
    blocks = b.reshape(x, [1, 2, 2, 3, 4, 5])
    moved = b.transpose(blocks, permutation=[0, 3, 4, 1, 5, 2])
    g = b.build({"y": b.relu(b.reshape(moved, [1, 3, 8, 10]))})
    feeds = {"x": seeded((1, 12, 4, 5))}
    before = converter.run(g, feeds)

    result = rank_pass(g, t)

    assert not result.notes
    assert g.op_histogram() == {"reshape": 2, "relu": 1, "transpose": 1}
    assert max(o.rank for o in g.operands()) == 5
    [first, transpose, _, _] = g.operations
    assert first.inputs[0] is g.inputs["x"] and first.attrs["newShape"] == [2, 2, 3, 4, 5]
    assert transpose.attrs["permutation"] == [2, 3, 0, 4, 1]
    same_outputs(before, converter.run(g, feeds))
