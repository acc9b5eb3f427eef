"""More of the order-free region's rules (layout_order_free.py), each decided on a small graph
with the numbers checked against the graph before: which ops a region holds, and how the pass
finds a region's start when it moves a transpose up through it."""
from __future__ import annotations

import pytest

from converter.ops.builder import GraphBuilder

from .layout_helpers import check_numbers, conv, seeded, types


@pytest.mark.parametrize("case,passes", [
    ("combines with itself", True),  # add(relu(t), t): both operands are region tensors
    ("layer norm, per-position scale", False),  # positions matter
    ("instance norm, nchw", True),  # one channel: the whole sample
])
def test_the_region_holds_these_ops_or_not(case, passes):
    def build():
        b = GraphBuilder("region")
        x = b.input("x", "float32", [2, 3, 6, 5])
        y = conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1])
        flat = b.reshape(y, [2, 1, 120])
        if case == "combines with itself":
            inner = b.add(b.relu(flat), flat)
        elif case == "layer norm, per-position scale":
            inner = b.layerNormalization(flat, scale=b.constant(seeded((1, 120), 3)),
                                         axes=[1, 2])
        else:
            inner = b.reshape(b.instanceNormalization(b.reshape(flat, [2, 1, 120, 1])),
                              [2, 1, 120])
        back = b.reshape(inner, [2, 4, 6, 5])
        return b.build({"y": b.averagePool2d(back, windowDimensions=[3, 3],
                                             padding=[1, 1, 1, 1], strides=[1, 1])})

    after, result = check_numbers(build, "nhwc")
    assert result.counts.get("order_free_regions_passed", 0) == (1 if passes else 0)
    # passed: only the transposes into the conv and out of the pool; else the conv's and the
    # pool's pairs stay
    assert result.counts["transposes_after"] == (2 if passes else 4)


def test_a_written_out_group_norm_on_the_input_takes_the_transpose_up_to_the_input():
    # mean and variance written out, the region tensor the second operand of a mul and a
    # relu after the normalization: finding the region's start walks through each of them
    def build():
        b = GraphBuilder("written_first")
        x = b.input("x", "float32", [1, 4, 6, 5])
        flat = b.reshape(x, [1, 120])
        centered = b.sub(flat, b.reduceMean(flat, axes=[1], keepDimensions=True))
        var = b.reduceMean(b.mul(centered, centered), axes=[1], keepDimensions=True)
        scale = b.div(b.constant("float32", 1.0), b.sqrt(b.add(var, b.constant("float32", 1e-5))))
        back = b.reshape(b.relu(b.mul(scale, centered)), [1, 4, 6, 5])
        pooled = b.averagePool2d(back, windowDimensions=[3, 3], padding=[1, 1, 1, 1],
                                 strides=[1, 1])
        return b.build({"y": b.matmul(pooled, b.constant(seeded((5, 2), 1)))})

    after, result = check_numbers(build, "nhwc")
    assert result.counts["pushed_up"] == 1
    assert types(after)[:2] == ["transpose", "reshape"]  # x -> nhwc -> the region
    assert after.operations[0].inputs[0] is after.inputs["x"]
    assert result.counts["transposes_after_inside"] == 1  # back to nchw for the matmul


# -- a grouped region (a GroupNorm with two groups), every op accounted for --------------------
def _two_groups(kind):
    def build():
        b = GraphBuilder(f"two_groups_{kind}")
        x = b.input("x", "float32", [2, 3, 6, 5])
        y = conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1])
        flat = b.reshape(y, [2, 2, 60])
        if kind == "layer":
            normed = b.layerNormalization(flat, axes=[2])
        else:  # written out, with a scalar epsilon
            centered = b.sub(flat, b.reduceMean(flat, axes=[2], keepDimensions=True))
            var = b.reduceMean(b.mul(centered, centered), axes=[2], keepDimensions=True)
            normed = b.div(centered, b.sqrt(b.add(var, b.constant("float32", 1e-5))))
        return b.build({"y": b.relu(b.reshape(normed, [2, 4, 6, 5]))})
    return build


@pytest.mark.parametrize("kind,inside", [
    ("layer", ["layerNormalization"]),
    ("written", ["reduceMean", "sub", "mul", "reduceMean", "add", "sqrt", "div"]),
])
def test_a_grouped_region_runs_regrouped_and_its_transpose_goes_on_to_the_output(kind, inside):
    after, result = check_numbers(_two_groups(kind), "nhwc")
    # nothing added inside (the scalar epsilon needs no reshape); the exit's transpose went on
    # through the relu to the output
    assert types(after) == ["transpose", "conv2d", "reshape", *inside, "reshape", "relu",
                            "transpose"]
    reshapes = [op.attr("newShape") for op in after.operations if op.op_type == "reshape"]
    assert reshapes == [[2, 30, 2, 2], [2, 6, 5, 4]]  # [N, H*W, G, C/G], and back to nhwc
    assert all(op.attr("axes") == [1, 3] for op in after.operations
               if op.op_type in ("layerNormalization", "reduceMean"))
    tallies = ("transposes_before", "transposes_after")
    assert {k: v for k, v in result.counts.items() if not k.startswith(tallies)} == {
        "constants_transposed": 1, "filters_relaid": 1, "grouped_regions_relaid": 1,
        "layout_ops_converted": 1, "pushed_down": 1}


def test_a_transpose_without_a_permutation_that_reorders_elements_stops_the_region():
    def build():
        b = GraphBuilder("reversed")
        x = b.input("x", "float32", [1, 3, 6, 5])
        y = conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1])
        # the spec's default permutation reverses the axes: [1, 4, 30] -> [30, 4, 1] moves
        # every element, so the region cannot read it in another order
        inner = b.relu(b.transpose(b.reshape(y, [1, 4, 30])))
        back = b.reshape(inner, [1, 4, 6, 5])
        return b.build({"y": b.averagePool2d(back, windowDimensions=[3, 3],
                                             padding=[1, 1, 1, 1], strides=[1, 1])})

    after, result = check_numbers(build, "nhwc")
    assert "order_free_regions_passed" not in result.counts
    assert "transpose" in types(after)[types(after).index("conv2d") + 1:]


def test_an_identity_transpose_kept_for_an_output_and_read_by_a_reshape():
    def build():
        b = GraphBuilder("identity_output")
        x = b.input("x", "float32", [2, 3, 4, 5])
        t = b.transpose(x, permutation=[0, 1, 2, 3])  # an output: it stays a result
        return b.build({"t": t, "y": b.relu(b.reshape(t, [2, 60]))})

    after, result = check_numbers(build, "nhwc")
    # the identity becomes a reshape for the output; the reshape, pushed past it, reads x
    assert sorted(types(after)) == ["relu", "reshape", "reshape"]
    assert all(op.inputs[0] is after.inputs["x"] for op in after.operations
               if op.op_type == "reshape")
    tallies = ("transposes_before", "transposes_after")
    assert {k: v for k, v in result.counts.items() if not k.startswith(tallies)} == \
        {"pushed_down": 1, "transposes_made_reshapes": 1}


def test_a_grouped_region_whose_tensor_is_also_an_output_is_left_alone():
    def build():
        b = GraphBuilder("grouped_output")
        x = b.input("x", "float32", [2, 3, 6, 5])
        y = conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1])
        flat = b.reshape(y, [2, 2, 60])
        centered = b.sub(flat, b.reduceMean(flat, axes=[2], keepDimensions=True))
        var = b.reduceMean(b.mul(centered, centered), axes=[2], keepDimensions=True)
        normed = b.div(centered, b.sqrt(b.add(var, b.constant("float32", 1e-5))))
        # centered leaves the graph in the source's order: the region cannot regroup it
        return b.build({"y": b.relu(b.reshape(normed, [2, 4, 6, 5])), "centered": centered})

    after, result = check_numbers(build, "nhwc")
    assert "grouped_regions_relaid" not in result.counts
    assert types(after).count("sub") == 1 and types(after).count("reduceMean") == 2
