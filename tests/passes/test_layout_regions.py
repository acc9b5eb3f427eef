"""When a transpose passes an order-free region (a one-group GroupNorm: layerNormalization over
the whole sample between two reshapes): alone it always goes through; shared with a graph output
only when the copy it leaves after the region goes on to an output. And where size-1 axes go when
a transpose moves through a reshape (up or down) or a reduction drops axes. Exact ops, counts
and arguments, and the numbers against the graph before."""
from __future__ import annotations

import pytest

from converter.ops.builder import GraphBuilder

from .layout_helpers import check_numbers, conv, seeded, types


def _region(case):
    def build():
        b = GraphBuilder(case.replace(" ", "_"))
        x = b.input("x", "float32", [1, 4, 6, 5])
        t = b.transpose(x, permutation=[0, 2, 3, 1])
        normed = b.layerNormalization(b.reshape(t, [1, 1, 120]), axes=[2])
        back = b.reshape(normed, [1, 6, 5, 4])
        if "matmul" in case:  # opaque: a transpose after the region would stay there
            end = b.matmul(back, b.constant(seeded((4, 2), 1)))
        else:
            end = b.relu(back)
        outputs = {"y": end}
        if "shared" in case:
            outputs["t"] = t
        return b.build(outputs)
    return build


REGION = ["reshape", "layerNormalization", "reshape"]
EXPECTED = {
    # through the region, then on through relu to the output
    "alone relu": (REGION + ["relu", "transpose"], {"order_free_regions_passed": 1,
                                                    "pushed_down": 1}),
    # through the region (it reads x in x's order), then up again in front of the matmul:
    # the region's input is the graph input, where the transpose costs nothing
    "alone matmul": (["transpose"] + REGION + ["matmul"], {"order_free_regions_passed": 2,
                                                           "pushed_up": 1}),
    # t stays for its output; a copy through the region would reach y uncancelled, one
    # transpose more: nothing moves
    "shared relu": (["transpose"] + REGION + ["relu"], {}),
    # the copy would stay in front of the matmul: nothing moves
    "shared matmul": (["transpose"] + REGION + ["matmul"], {}),
}


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_a_transpose_passes_an_order_free_region_when_no_copy_is_left_inside(case):
    after, result = check_numbers(_region(case), "nhwc")
    ops, steps = EXPECTED[case]
    assert types(after) == ops
    tallies = ("transposes_before", "transposes_after")
    assert {k: v for k, v in result.counts.items() if not k.startswith(tallies)} == steps
    assert result.counts["transposes_after_inside"] == 0
    entry = next(op for op in after.operations if op.op_type == "reshape")
    # moved on: the region reads x itself; else the transpose in front of it
    assert entry.inputs[0].producer is (None if case == "alone relu" else after.operations[0])


# -- pushing up through a reshape that adds or drops size-1 axes -------------------------------
@pytest.mark.parametrize("shape,new_shape,perm", [
    ([2, 1, 3, 5], [2, 3, 1, 5], [0, 1, 3, 2]),
    ([1, 3, 5], [1, 3, 1, 5], [0, 2, 1]),  # a conv1d's input: x's leading 1 stays first
    ([1, 3, 5], [1, 3, 5, 1], [0, 2, 1]),
    ([3, 1, 5, 1], [1, 3, 1, 5], [2, 3, 0, 1]),  # each size-1 axis follows the axis before it
    ([1, 3, 1, 5, 1], [1, 3, 1, 5], [0, 3, 4, 1, 2]),
])
def test_a_transpose_moved_up_through_a_reshape_keeps_size_1_axes_behind_their_neighbour(
        shape, new_shape, perm):
    def build():
        b = GraphBuilder("unit_axes")
        x = b.input("x", "float32", shape)
        y = conv(b, b.reshape(x, new_shape), 3, 4, "nchw")
        return b.build({"y": b.matmul(y, b.constant(seeded((new_shape[3], 2), 1)))})

    after, result = check_numbers(build, "nhwc")
    assert result.counts["pushed_up"] == 1
    first, reshape = after.operations[:2]
    assert first.op_type == "transpose" and first.inputs[0] is after.inputs["x"]
    assert first.attr("permutation") == perm
    nhwc = [new_shape[a] for a in (0, 2, 3, 1)]
    assert reshape.op_type == "reshape" and reshape.attr("newShape") == nhwc


# -- pushing down through a reshape that regroups, with size-1 axes ---------------------------
@pytest.mark.parametrize("new_shape,x_shape,perm", [
    ([2, 5, 3, 1, 2, 3], [2, 2, 3, 5, 3, 1], [0, 3, 4, 5, 1, 2]),
    ([2, 1, 5, 3, 6], [2, 1, 6, 5, 3], [0, 1, 3, 4, 2]),  # a size-1 axis follows the batch
    ([2, 5, 3, 6, 1], [2, 6, 1, 5, 3], [0, 3, 4, 1, 2]),  # ... and the channels
    ([1, 2, 5, 3, 6], [1, 2, 6, 5, 3], [0, 1, 3, 4, 2]),  # a leading one stays first
    ([2, 15, 1, 6], [2, 6, 15, 1], [0, 2, 3, 1]),
])
def test_a_transpose_moved_down_a_reshape_keeps_size_1_axes_behind_their_neighbour(
        new_shape, x_shape, perm):
    def build():
        b = GraphBuilder("regroup")
        x = b.input("x", "float32", [2, 6, 5, 3])
        moved = b.reshape(b.transpose(x, permutation=[0, 2, 3, 1]), new_shape)
        return b.build({"y": b.relu(moved)})

    after, result = check_numbers(build, "nhwc")
    assert types(after) == ["reshape", "relu", "transpose"]
    assert after.operations[0].attr("newShape") == x_shape
    assert after.operations[2].attr("permutation") == perm


def test_a_transpose_moved_down_a_reduction_that_drops_axes_keeps_their_order():
    def build():
        b = GraphBuilder("reduce")
        x = b.input("x", "float32", [2, 3, 4, 5])
        t = b.transpose(x, permutation=[0, 2, 3, 1])
        return b.build({"y": b.reduceSum(t, axes=[0], keepDimensions=False)})

    after, result = check_numbers(build, "nhwc")
    # x summed over its batch is [3, 4, 5]; the result wants [4, 5, 3]: a 3-cycle
    assert types(after) == ["reduceSum", "transpose"]
    assert after.operations[1].attr("permutation") == [1, 2, 0]
