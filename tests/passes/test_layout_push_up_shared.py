"""Pushing a transpose up through ops that read one operand on two paths: concat([x, f(x)])
(or x + f(x)) before a convolution, converted to the other layout. The transposes that would
go on each read of x are one transpose, so the pass moves it to the graph input instead of
leaving one after the concat. Structure before and after (how many transposes, and where),
and the numbers against numpy on the source graph, within the graph's ULP budget."""
from __future__ import annotations

import numpy as np
import pytest

import converter
from converter.ops.builder import GraphBuilder
from converter.verification.op_budgets import op_ulp_budget

from .layout_helpers import (NCHW_TO_NHWC, NHWC_TO_NCHW, check_numbers, conv, feeds_for,
                             layout_pass, same_values, seeded, types)

H, W, OUT = 3, 4, 2  # height 3, width 4: a swapped spatial axis changes the shapes

UNARY = {"sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh,
         "relu": lambda v: np.maximum(v, 0), "abs": np.abs}


def _build(layout, c, f, reader="concat", extra=None):
    """x -> reader(x, f(x)) -> 3x3 conv -> y, in `layout`. `extra` adds a third reader of x:
    "inside" a third concat operand tanh(x), "outside" an output z = relu(x) nothing else
    reads; "relu first" makes x itself relu(input), an op with several readers."""
    def build():
        ch = 1 if layout == "nchw" else 3
        b = GraphBuilder(f"shared_{layout}_{c}_{f}_{reader}_{extra}")
        x = b.input("x", "float32", [1, c, H, W] if layout == "nchw" else [1, H, W, c])
        if extra == "relu first":
            x = b.relu(x)
        parts = [x, getattr(b, f)(x)]
        if extra == "inside":
            parts.append(b.tanh(x))
        joined = b.concat(parts, ch) if reader == "concat" else b.add(*parts)
        cin = c * len(parts) if reader == "concat" else c
        outputs = {"y": conv(b, joined, cin, OUT, layout, k=3, seed=7,
                             padding=[1, 1, 1, 1])}
        if extra == "outside":
            outputs["z"] = b.relu(x)
        return b.build(outputs)
    return build


def _numpy(layout, c, f, reader, extra, x):
    """The source graph in float64 numpy: everything in nchw, the 3x3 conv as nine shifted
    products of the padded input."""
    if layout == "nhwc":
        x = x.transpose(NHWC_TO_NCHW)
    x = x.astype(np.float64)
    if extra == "relu first":
        x = np.maximum(x, 0)
    parts = [x, UNARY[f](x)] + ([np.tanh(x)] if extra == "inside" else [])
    joined = np.concatenate(parts, axis=1) if reader == "concat" else parts[0] + parts[1]
    cin = joined.shape[1]
    w = seeded((OUT, cin, 3, 3) if layout == "nchw" else (3, 3, cin, OUT), 7).astype(np.float64)
    if layout == "nhwc":  # hwio -> oihw
        w = w.transpose(3, 2, 0, 1)
    padded = np.pad(joined, [(0, 0), (0, 0), (1, 1), (1, 1)])
    y = sum(np.einsum("nchw,oc->nohw", padded[:, :, i:i + H, j:j + W], w[:, :, i, j])
            for i in range(3) for j in range(3))
    out = {"y": y}
    if extra == "outside":
        out["z"] = np.maximum(x, 0)
    back = NCHW_TO_NHWC if layout == "nhwc" else [0, 1, 2, 3]
    return {k: v.transpose(back).astype(np.float32) for k, v in out.items()}


def _check(layout, c, f, reader="concat", extra=None):
    """Convert to the other layout; the numbers against numpy (and against the graph before,
    through check_numbers); return the graph after and the pass result."""
    target = "nhwc" if layout == "nchw" else "nchw"
    build = _build(layout, c, f, reader, extra)
    after, result = check_numbers(build, target)
    before = build()
    feeds = feeds_for(before)
    budget = sum(op_ulp_budget(op) for op in before.operations)
    same_values(converter.run(after, feeds), _numpy(layout, c, f, reader, extra, feeds["x"]),
                ulp=max(budget, 16))
    return after, result


def _transposes_at_input_only(after):
    """Each transpose (or the reshape a transpose of size-1 axes becomes) that reads x reads
    the graph input; the only other transpose gives y."""
    moves = [op for op in after.operations if op.op_type in ("transpose", "reshape")]
    reading_x = [op for op in moves if op.inputs[0] is after.inputs["x"]]
    rest = [op for op in moves if op not in reading_x]
    assert len(reading_x) == 1, types(after)
    assert [op.output.is_graph_output() for op in rest] == [True], types(after)
    assert rest[0].output is after.outputs["y"]
    return reading_x[0]


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("c", [1, 2])
@pytest.mark.parametrize("f", sorted(UNARY))
def test_concat_of_x_and_f_of_x_takes_one_transpose_at_the_input(layout, c, f):
    after, result = _check(layout, c, f)
    first = _transposes_at_input_only(after)
    # c = 1: the transpose only moves the size-1 channel axis, so it is a reshape
    assert first.op_type == ("reshape" if c == 1 else "transpose")
    assert types(after) == [first.op_type, f, "concat", "conv2d", "transpose"]
    unary = after.operations[1]
    concat = after.operations[2]
    assert unary.inputs[0] is first.output
    assert concat.inputs == [first.output, unary.output] and concat.attr("axis") == (
        3 if layout == "nchw" else 1)
    assert result.counts["pushed_up"] == 1
    assert (result.counts["transposes_before"], result.counts["transposes_after_inside"]) == \
        (0, 0)
    assert result.counts["transposes_after"] == (1 if c == 1 else 2)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("c", [1, 2])
def test_an_add_of_x_and_f_of_x_takes_one_transpose_at_the_input(layout, c):
    after, result = _check(layout, c, "sigmoid", reader="add")
    first = _transposes_at_input_only(after)
    assert types(after) == [first.op_type, "sigmoid", "add", "conv2d", "transpose"]
    assert result.counts["transposes_after_inside"] == 0


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("c", [1, 2])
def test_a_third_reader_in_the_concat_still_shares_the_one_transpose(layout, c):
    after, result = _check(layout, c, "sigmoid", extra="inside")
    first = _transposes_at_input_only(after)
    assert types(after) == [first.op_type, "sigmoid", "tanh", "concat", "conv2d", "transpose"]
    concat = after.operations[3]
    assert concat.inputs[0] is first.output
    assert all(op.inputs[0] is first.output for op in after.operations[1:3])


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("c", [1, 2])
def test_a_third_reader_outside_keeps_the_input_as_it_is(layout, c):
    # z = relu(x) is an output in the source layout: it reads x itself, and the concat's
    # branch reads the transposed x, made once
    after, result = _check(layout, c, "sigmoid", extra="outside")
    first = _transposes_at_input_only(after)
    relu = after.outputs["z"].producer
    assert relu.op_type == "relu" and relu.inputs[0] is after.inputs["x"]
    assert sorted(types(after)) == sorted([first.op_type, "sigmoid", "concat", "conv2d",
                                           "transpose", "relu"])
    assert result.counts["transposes_after_inside"] == 0


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("c", [1, 2])
def test_an_op_read_twice_on_the_way_up_is_rewritten_once(layout, c):
    # x = relu(input), read by the concat and by sigmoid: both readers are rewritten, so the
    # relu moves too and the transpose reaches the input
    after, result = _check(layout, c, "sigmoid", extra="relu first")
    first = _transposes_at_input_only(after)
    assert types(after) == [first.op_type, "relu", "sigmoid", "concat", "conv2d", "transpose"]
    relu = after.operations[1]
    assert relu.inputs[0] is first.output
    assert after.operations[3].inputs[0] is relu.output
    assert after.operations[2].inputs[0] is relu.output


def test_an_op_with_a_reader_outside_the_plan_keeps_the_transpose_below():
    # r = relu(x) is read by the concat, by sigmoid and by a matmul (which takes no transpose
    # down): rewriting the relu would leave the old one for the matmul, so the transpose
    # stays after the concat
    def build():
        b = GraphBuilder("outside_reader")
        x = b.input("x", "float32", [1, 2, H, W])
        r = b.relu(x)
        joined = b.concat([r, b.sigmoid(r)], 1)
        return b.build({"y": conv(b, joined, 4, OUT, "nchw", k=3, seed=7, padding=[1] * 4),
                        "z": b.matmul(r, b.constant(seeded((W, 2), 3)))})

    after, result = check_numbers(build, "nhwc")
    assert types(after) == ["relu", "sigmoid", "concat", "transpose", "conv2d", "transpose",
                            "matmul"]
    assert after.operations[3].inputs[0] is after.operations[2].output
    assert "pushed_up" not in result.counts
    assert result.counts["transposes_after_inside"] == 1


def test_the_two_reads_of_x_cost_one_transpose():
    # the count the pass moves by: two transposes of x by one permutation are one, so moving
    # up costs one (the input's) for the one after the concat it removes
    graph = _build("nchw", 2, "sigmoid")()
    result = layout_pass(graph, "nhwc")
    assert types(graph).count("transpose") == 2
    [t] = [op for op in graph.operations
           if op.op_type == "transpose" and op.inputs[0] is graph.inputs["x"]]
    assert t.attr("permutation") == NCHW_TO_NHWC
    assert len(graph.inputs["x"].uses()) == 1
    assert result.counts["transposes_after_at_boundary"] == 2


@pytest.mark.parametrize("region_first", [True, False])
def test_an_operand_read_by_an_order_free_region_and_beside_it_is_planned_once(region_first):
    # z = relu(x) is read by a one-group GroupNorm (a region reshaping the whole sample) and
    # by the concat beside it: both reach z with one permutation, so the relu is rewritten
    # once and the region reads the rewritten relu, whichever concat operand is planned first
    def build():
        b = GraphBuilder("region_shared")
        x = b.input("x", "float32", [1, 4, 6, 5])
        z = b.relu(x)
        normed = b.layerNormalization(b.reshape(z, [1, 1, 120]), axes=[2])
        back = b.reshape(normed, [1, 4, 6, 5])
        parts = [back, z] if region_first else [z, back]
        return b.build({"y": conv(b, b.concat(parts, 1), 8, 4, "nchw", seed=3)})

    after, result = check_numbers(build, "nhwc")
    assert types(after) == ["transpose", "relu", "reshape", "layerNormalization", "reshape",
                            "concat", "conv2d", "transpose"]
    transpose, relu, entry = after.operations[:3]
    assert transpose.inputs[0] is after.inputs["x"] and relu.inputs[0] is transpose.output
    assert entry.inputs[0] is relu.output and relu.output in after.operations[5].inputs
    assert (result.counts["pushed_up"], result.counts["order_free_regions_passed"]) == (1, 1)
    assert result.counts["transposes_after_inside"] == 0


def test_an_op_the_plan_would_rewrite_twice_keeps_the_transpose_below():
    # r = relu(s) is read as a [1, 3, 3] operand of an add (moved by [1, 2, 0]) and through
    # a reshape to [1, 3, 3, 1] (moved by [0, 2, 1]): the relu would be computed twice, once
    # per layout, so the transpose stays after the last add (s is a constant: no transpose
    # would be made for it either way)
    def build():
        b = GraphBuilder("two_permutations")
        r = b.relu(b.constant(seeded((1, 3, 3), 5)))
        a = b.add(b.constant(seeded((1, 1, 3, 3), 1)), r)
        y = b.add(a, b.reshape(r, [1, 3, 3, 1]))  # [1, 3, 3, 3]
        return b.build({"y": conv(b, y, 3, 2, "nchw", seed=2)})

    after, result = check_numbers(build, "nhwc")
    assert types(after) == ["relu", "add", "reshape", "add", "transpose", "conv2d", "transpose"]
    assert "pushed_up" not in result.counts
    assert result.counts["transposes_after_inside"] == 1
