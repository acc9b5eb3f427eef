"""The edges of the layout pass's push steps (layout_push.py): operands a transpose reaches in
a slot its reader does not carry, a flattening reshape that no dense layer takes, a split that
the look ahead refuses, a region with two exits, the look ahead's depth exactly at its limit
and one op past it, a broadcast reader of higher rank, a per-channel constant moved up with a
transpose, and a transpose made by composing that goes on up. Exact ops, permutations and
counts, and the numbers against the graph before the pass."""
from __future__ import annotations

import numpy as np
import pytest

import converter
from converter.ops.builder import GraphBuilder
from converter.passes.layout_push import _LOOKAHEAD

from .layout_helpers import check_numbers, conv, layout_pass, same_values, seeded, types

P = [0, 2, 3, 1]  # nchw -> nhwc
P_BACK = [0, 3, 1, 2]  # its inverse


def _steps(result) -> dict:
    """The pass's counts without the transpose tallies."""
    tallies = ("transposes_before", "transposes_after")
    return {k: v for k, v in result.counts.items() if not k.startswith(tallies)}


def _transposes(graph) -> list[list[int]]:
    return [op.attr("permutation") for op in graph.operations if op.op_type == "transpose"]


def _check_with_feeds(build, feeds, layout="nhwc"):
    """check_numbers for graphs with integer inputs: the feeds are given."""
    want = converter.run(build(), feeds)
    after = build()
    result = layout_pass(after, layout)
    same_values(converter.run(after, feeds), want)
    return after, result


# -- a transpose read in a slot its reader does not carry ---------------------------------------
INDICES = np.array([[0, 3, 1], [2, 2, 0]], dtype=np.int32)


def test_a_transpose_read_as_gather_indices_stays_where_it_is():
    """gather carries only its input: transposed indices are the indices, and moving the
    transpose below would re-lay out the data for nothing."""
    def build():
        b = GraphBuilder("indices")
        i = b.input("i", "int32", [2, 3])
        data = b.constant(seeded((4, 6), 1))
        return b.build({"y": b.gather(data, b.transpose(i, permutation=[1, 0]))})

    after, result = _check_with_feeds(build, {"i": INDICES})
    assert types(after) == ["transpose", "gather"]
    gather = after.operations[1]
    assert gather.inputs[0].is_constant and gather.inputs[0].shape == (4, 6)  # not re-laid out
    assert gather.inputs[1].producer is after.operations[0]
    assert _transposes(after) == [[1, 0]] and _steps(result) == {}


def test_the_look_ahead_stops_at_a_reader_that_takes_the_operand_uncarried():
    """t is shared (an output too), so it goes down only when the look ahead sees its copy
    cancelled; a copy arriving at gather's indices is not, so abs keeps reading t."""
    def build():
        b = GraphBuilder("uncarried")
        i = b.input("i", "int32", [2, 3, 2])
        t = b.transpose(i, permutation=[0, 2, 1])
        return b.build({"t": t, "y": b.gather(b.constant(seeded((4, 6), 1)), b.abs(t))})

    feeds = {"i": (np.arange(12, dtype=np.int32).reshape(2, 3, 2) % 4) - 2}
    after, result = _check_with_feeds(build, feeds)
    assert types(after) == ["transpose", "abs", "gather"]
    assert after.operations[1].inputs[0].producer is after.operations[0]
    assert _transposes(after) == [[0, 2, 1]] and _steps(result) == {}


# -- a flattening reshape that no dense layer takes ---------------------------------------------
@pytest.mark.parametrize("reader", ["matmul of an input", "gemm with aTranspose", "nothing"])
def test_a_flattening_reshape_without_dense_weights_to_permute_still_splits(reader):
    """x [2, 3, 1, 4] transposed by [0, 3, 1, 2] and flattened: no constant weights to take
    the permutation (weights from an input, a transposed `a`, or no reader at all), so the
    transpose is split: the part that only moves the size-1 axis goes through the reshape
    (where it moves nothing) and [0, 3, 2, 1] stays in front of it."""
    def build():
        b = GraphBuilder("flatten")
        x = b.input("x", "float32", [2, 3, 1, 4])
        flat = b.reshape(b.transpose(x, permutation=P_BACK), [2, 12])
        if reader == "matmul of an input":
            return b.build({"y": b.matmul(flat, b.input("w", "float32", [12, 5]))})
        if reader == "gemm with aTranspose":
            return b.build({"y": b.gemm(flat, b.constant(seeded((2, 5), 1)), aTranspose=True)})
        return b.build({"y": b.relu(x)})  # the reshape is read by nothing

    after, result = check_numbers(build, "nhwc")
    assert _transposes(after) == [[0, 3, 2, 1]]
    assert _steps(result) == {"transposes_split": 1, "pushed_down": 1}
    [reshape] = [op for op in after.operations if op.op_type == "reshape"]
    assert reshape.inputs[0].producer.op_type == "transpose"
    assert reshape.attr("newShape") == [2, 12]


# -- a split that the look ahead refuses --------------------------------------------------------
@pytest.mark.parametrize("end", ["its inverse", "a matmul", "relu, an output"])
def test_a_transpose_is_split_at_a_regrouping_reshape_only_when_the_groups_move_on_to_cancel(
        end):
    """[1, 5, 3, 2, 3] transposed by [0, 4, 3, 1, 2] and merged to [1, 6, 5, 3]: [0, 1, 2, 4, 3]
    swaps inside the channel group and [0, 3, 4, 1, 2] moves whole groups. The whole-group part
    goes through only when its copy is cancelled below (by the inverse transpose); in front of
    a matmul nothing moves, nor in front of a relu that is an output (the part would reach it
    uncancelled: two transposes for one)."""
    def build():
        b = GraphBuilder("split")
        x = b.input("x", "float32", [1, 5, 3, 2, 3])
        s = b.reshape(b.transpose(x, permutation=[0, 4, 3, 1, 2]), [1, 6, 5, 3])
        if end == "its inverse":
            return b.build({"y": b.transpose(s, permutation=P)})
        if end == "relu, an output":
            return b.build({"y": b.relu(s)})
        return b.build({"y": b.matmul(s, b.constant(seeded((3, 2), 1)))})

    after, result = check_numbers(build, "nhwc")
    if end == "its inverse":
        assert types(after) == ["transpose", "reshape"]
        assert _transposes(after) == [[0, 1, 2, 4, 3]]
        assert after.operations[1].attr("newShape") == [1, 5, 3, 6]
        assert _steps(result) == {"transposes_split": 1, "pushed_down": 1,
                                  "transpose_pairs_cancelled": 1}
    else:
        assert types(after) == ["transpose", "reshape", "matmul" if "matmul" in end else "relu"]
        assert _transposes(after) == [[0, 4, 3, 1, 2]]
        assert _steps(result) == {}


# -- a region with two exits --------------------------------------------------------------------
@pytest.mark.parametrize("exits", [1, 2])
def test_a_region_with_two_exits_is_passed_only_when_both_copies_would_cancel(exits):
    """A one-group GroupNorm whose result is reshaped back twice, each read by a matmul: a
    transpose through it would leave one copy per exit in front of a matmul, two for one, so
    it stays. With one exit it goes through and up again to the input (region passed twice)."""
    def build():
        b = GraphBuilder("exits")
        x = b.input("x", "float32", [1, 4, 6, 5])
        t = b.transpose(x, permutation=P)
        normed = b.layerNormalization(b.reshape(t, [1, 1, 120]), axes=[2])
        outputs = {}
        for k in range(exits):
            back = b.reshape(normed, [1, 6, 5, 4])
            outputs[f"y{k}"] = b.matmul(back, b.constant(seeded((4, 2), k)))
        return b.build(outputs)

    after, result = check_numbers(build, "nhwc")
    assert _transposes(after) == [P]
    assert after.operations[0].op_type == "transpose"
    assert after.operations[0].inputs[0].is_input
    if exits == 1:
        assert _steps(result) == {"order_free_regions_passed": 2, "pushed_up": 1}
    else:
        assert _steps(result) == {}
        assert types(after) == ["transpose", "reshape", "layerNormalization",
                                "reshape", "matmul", "reshape", "matmul"]


# -- the look ahead's depth ---------------------------------------------------------------------
def _chain(before: int, region: bool, after: int):
    """t = transpose(x, P), also an output, then 1 + `before` relus, an order-free region (a
    one-group GroupNorm), `after` relus and the inverse transpose."""
    def build():
        b = GraphBuilder("chain")
        x = b.input("x", "float32", [2, 3, 4, 5])
        t = b.transpose(x, permutation=P)
        r = b.relu(t)
        for _ in range(before):
            r = b.relu(r)
        if region:
            r = b.reshape(b.layerNormalization(b.reshape(r, [2, 1, 60]), axes=[2]),
                          [2, 4, 5, 3])
        for _ in range(after):
            r = b.relu(r)
        return b.build({"t": t, "y": b.transpose(r, permutation=P_BACK)})
    return build


# The look ahead starts at the first relu's result with _LOOKAHEAD ops to go, and each op it
# passes (a relu, or a whole region) takes one: the inverse transpose is still seen when it is
# the last thing read with none left, after _LOOKAHEAD + 1 ops; one op more is too far.
@pytest.mark.parametrize("case,build,moves", [
    ("relus at the limit", _chain(_LOOKAHEAD, False, 0), True),
    ("relus past the limit", _chain(_LOOKAHEAD + 1, False, 0), False),
    ("a region at the limit", _chain(100, True, _LOOKAHEAD - 101), True),
    ("a region past the limit", _chain(100, True, _LOOKAHEAD - 100), False),
])
def test_the_look_ahead_sees_a_cancelling_transpose_as_far_as_its_depth_and_no_further(
        case, build, moves):
    after, result = check_numbers(build, "nhwc")
    relus = [op for op in after.operations if op.op_type == "relu"]
    first = relus[0]
    if moves:  # t stays for its output; the chain reads x and the inverse is cancelled
        assert _transposes(after) == [P]
        assert first.inputs[0].is_input
        assert result.counts["transpose_pairs_cancelled"] == 1
        assert result.counts.get("order_free_regions_passed", 0) == (1 if "region" in case
                                                                      else 0)
    else:  # nothing moves, not down (too far to see) and not up (as far)
        assert _transposes(after) == [P, P_BACK]
        assert first.inputs[0].producer.op_type == "transpose"
        assert _steps(result) == {}


# -- a broadcast reader of higher rank in the look ahead ----------------------------------------
def test_the_look_ahead_extends_the_permutation_to_a_broadcast_readers_rank():
    """relu(t) added to a rank-4 constant: the copy after relu becomes [0, 1, 3, 2] there, which
    the transpose after the add cancels. t is an output too (so it stays, and only a copy
    that is cancelled lets relu read x): relu then reads x and the add gives y itself."""
    def build():
        b = GraphBuilder("broadcast")
        x = b.input("x", "float32", [2, 3, 4])
        t = b.transpose(x, permutation=[0, 2, 1])
        a = b.add(b.relu(t), b.constant(seeded((5, 2, 4, 3), 1)))
        return b.build({"t": t, "y": b.transpose(a, permutation=[0, 1, 3, 2])})

    after, result = check_numbers(build, "nhwc")
    assert types(after) == ["transpose", "relu", "add"]
    relu, add = after.operations[1], after.operations[2]
    assert relu.inputs[0].is_input and add.inputs[0] is relu.output
    assert add.inputs[1].shape == (5, 2, 3, 4)  # the constant re-laid out
    assert _transposes(after) == [[0, 2, 1]]
    assert after.outputs["y"] is add.output
    assert _steps(result) == {"pushed_down": 2, "transpose_pairs_cancelled": 1,
                              "constants_transposed": 1}


# -- moving up: a per-channel constant and a composed transpose ----------------------------------
def test_a_per_channel_constant_of_four_channels_is_re_laid_out_when_moved_up():
    """sub(x, mean) on an nhwc input with 4 channels, transposed to nchw for the conv: the
    transpose goes up to x and the [4] constant becomes [1, 4, 1, 1]."""
    def build():
        b = GraphBuilder("per_channel")
        x = b.input("x", "float32", [1, 5, 6, 4])
        s = b.sub(x, b.constant(seeded(4, 1)))
        return b.build({"y": conv(b, b.transpose(s, permutation=P_BACK), 4, 3, "nchw")})

    after, result = check_numbers(build, "nchw")
    assert types(after) == ["transpose", "sub", "conv2d"]
    assert after.operations[0].inputs[0].is_input
    assert after.operations[1].inputs[1].shape == (1, 4, 1, 1)
    assert _steps(result) == {"pushed_up": 1, "constants_transposed": 1}


def test_a_transpose_made_by_composing_two_goes_on_up_to_the_input():
    """transpose(add(transpose(relu(a), P), z), [0, 1, 3, 2]) in front of a matmul: moving the
    last one up composes it with the first into [0, 2, 1, 3] on relu's result and puts one on
    z; that new transpose is moved up again, through relu to the graph input."""
    def build():
        b = GraphBuilder("compose")
        a = b.input("a", "float32", [2, 3, 4, 5])
        z = b.input("z", "float32", [2, 4, 5, 3])
        s = b.add(b.transpose(b.relu(a), permutation=P), z)
        return b.build({"y": b.matmul(b.transpose(s, permutation=[0, 1, 3, 2]),
                                      b.constant(seeded((5, 2), 1)))})

    after, result = check_numbers(build, "nhwc")
    assert types(after) == ["transpose", "relu", "transpose", "add", "matmul"]
    assert _transposes(after) == [[0, 2, 1, 3], [0, 1, 3, 2]]
    assert [t.inputs[0].name for t in after.operations if t.op_type == "transpose"] == ["a", "z"]
    assert result.counts["transposes_after_inside"] == 0
    assert _steps(result) == {"pushed_up": 2}
