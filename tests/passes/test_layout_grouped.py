"""Grouped regions (layout_grouped.py): a GroupNorm with several groups runs on the NHWC tensor
regrouped ([N, H*W, G, C/G], statistics over axes 1 and 3) instead of between transposes."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import converter
from converter.ops.builder import GraphBuilder
from converter.importers.onnx import import_model
from converter.passes import PassContext, run_passes
from converter.passes.layout import count_transposes
from converter.passes.layout_grouped import GroupedRegion
from converter.targets import Target
from converter.targets.pipeline import convert_for_target

from . import cnn_blocks
from .layout_helpers import check_numbers, conv, feeds_for, same_values, seeded, types


def _group_norm(kind: str, groups: int = 2):
    def build():
        b = GraphBuilder(f"gn_{kind}_{groups}")
        x = b.input("x", "float32", [2, 3, 6, 5])
        y = conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1])
        flat = b.reshape(y, [2, groups, 4 // groups * 30])
        if kind == "layer":  # ONNX GroupNormalization, imported
            normed = b.layerNormalization(flat, axes=[2])
        else:  # written out, with a per-group scale
            centered = b.sub(flat, b.reduceMean(flat, axes=[2], keepDimensions=True))
            var = b.reduceMean(b.mul(centered, centered), axes=[2], keepDimensions=True)
            normed = b.div(centered, b.sqrt(b.add(var, b.constant("float32", 1e-5))))
            normed = b.mul(normed, b.constant(seeded((1, groups, 1), 4)))
        back = b.reshape(normed, [2, 4, 6, 5])
        affine = b.add(b.mul(back, b.constant(seeded((4, 1, 1), 1))),
                       b.constant(seeded((4, 1, 1), 2)))
        pooled = b.averagePool2d(affine, windowDimensions=[3, 3], padding=[1, 1, 1, 1],
                                 strides=[1, 1])
        return b.build({"y": conv(b, b.sub(pooled, affine), 4, 4, "nchw")})
    return build


@pytest.mark.parametrize("kind", ["layer", "written"])
def test_a_group_norm_with_two_groups_runs_regrouped_in_nhwc(kind):
    after, result = check_numbers(_group_norm(kind), "nhwc")

    assert result.counts["grouped_regions_relaid"] == 1
    assert result.counts["transposes_after_inside"] == 0
    assert result.counts["transposes_after"] == 2  # the input and the output
    [stat] = [op for op in after.operations
              if op.op_type in ("layerNormalization", "reduceMean")][:1]
    # [N, H*W, G, C/G] = [2, 30, 2, 2]; statistics over the spatial and within-group axes.
    assert stat.inputs[0].shape == (2, 30, 2, 2) and stat.attr("axes") == [1, 3]


def test_a_kept_axis_that_x_holds_apart_stops_the_region():
    # Statistics over W keep C * H as one axis, which NHWC holds apart (H, W, C).
    def build():
        b = GraphBuilder("over_h")
        x = b.input("x", "float32", [1, 3, 6, 5])
        y = conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1])
        rows = b.reshape(y, [1, 24, 5])
        centered = b.sub(rows, b.reduceMean(rows, axes=[2], keepDimensions=True))
        back = b.reshape(centered, [1, 4, 6, 5])
        return b.build({"y": b.averagePool2d(back, windowDimensions=[3, 3],
                                             padding=[1, 1, 1, 1], strides=[1, 1])})

    _, result = check_numbers(build, "nhwc")
    assert "grouped_regions_relaid" not in result.counts
    assert result.counts["transposes_after_inside"] == 2


@pytest.mark.parametrize("form", ["group", "instance"])
@pytest.mark.parametrize("groups", [2, 4])
def test_poolformer_with_several_groups_has_no_interior_transposes(form, groups):
    # "group": ONNX GroupNormalization; "instance": reshape to [N, G, M] -> rank-3
    # InstanceNormalization -> reshape back (its instanceNormalization becomes a
    # layerNormalization over the spatial axes, which joins the grouped region).
    model = cnn_blocks.poolformer(form, groups=groups)
    graph = import_model(model)
    feeds = {"x": np.random.default_rng(0).random(graph.inputs["x"].shape, dtype=np.float32)}
    want = converter.run(graph, feeds)
    reference = ort.InferenceSession(model.SerializeToString(),
                                     providers=["CPUExecutionProvider"]).run(None, feeds)[0]

    report = convert_for_target(graph, "chromium-litert")

    assert count_transposes(graph) == {"total": 1, "boundary": 1, "inside": 0}
    assert report.passed
    counts = dict(report.passes)["layout"].counts
    assert counts["grouped_regions_relaid"] == 4  # two GroupNorms in each of two blocks
    if form == "instance":
        assert counts["instance_norms_as_layer_norms"] == 4
    [key] = want
    got = converter.run(graph, feeds)[key]
    np.testing.assert_allclose(got, want[key], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, reference, rtol=1e-4, atol=1e-5)


def test_twelve_poolformer_blocks_keep_no_interior_transposes():
    # The transpose after the stem is read by the first GroupNorm and the residual stream,
    # which the look ahead follows through all twelve blocks.
    graph = import_model(cnn_blocks.poolformer("group", blocks=12, groups=4))
    feeds = {"x": np.random.default_rng(0).random(graph.inputs["x"].shape, dtype=np.float32)}
    want = converter.run(graph, feeds)
    convert_for_target(graph, "chromium-litert")
    assert count_transposes(graph) == {"total": 1, "boundary": 1, "inside": 0}
    [key] = want
    np.testing.assert_allclose(converter.run(graph, feeds)[key], want[key], rtol=1e-5,
                               atol=1e-5)


def test_a_regrouped_shape_and_its_outside_operands_by_hand():
    # Entry [2, 2, 60] of y = transpose(x [2, 6, 5, 4], nhwc -> nchw): in x the entry's axes
    # are [N, H*W, G, C/G]; axis 2 (the group's elements) is free, spread over new axes 1, 3.
    region = GroupedRegion(None, [2, 30, 2, 2], {0: [0], 1: [2], 2: [1, 3]}, {2})
    assert region.stat_shape() == [2, 1, 2, 1]
    assert region.moved([1, 2, 1]) == [1, 1, 2, 1]  # per group: onto the group axis
    assert region.moved([2, 1]) == [1, 1, 2, 1]  # broadcast from the right
    assert region.moved([2, 1, 1]) == [2, 1, 1, 1]  # per sample
    assert region.moved([2, 2, 1]) == [2, 1, 2, 1]
    assert region.moved([]) == [1, 1, 1, 1]  # a scalar
    assert region.moved([1, 1, 60]) is None  # varies along the free axis
    assert region.moved([1, 2, 2, 1]) is None  # a higher rank broadcasts the region


@pytest.mark.parametrize("case", ["no keepDimensions", "two free sets", "scale", "whole sample",
                                  "flattened elsewhere", "whole tensor", "mean of the mean"])
def test_statistics_the_region_cannot_regroup_leave_it_alone(case):
    def build():
        b = GraphBuilder(f"grouped_{case}")
        x = b.input("x", "float32", [2, 3, 6, 5])
        y = conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1])
        flat = b.reshape(y, [2, 2, 2, 30])
        outputs = {}
        if case == "flattened elsewhere":  # a region tensor reshaped to another shape, an
            # output (which a transpose could reach): not an exit, so there is no region
            inner = b.layerNormalization(b.reshape(y, [2, 2, 60]), axes=[2])
            outputs["f"] = b.reshape(inner, [2, 120])
        elif case == "whole tensor":  # [4, 60]: batch and groups merged, statistics over all
            inner = b.layerNormalization(b.reshape(y, [4, 60]), axes=[0, 1])
        elif case == "mean of the mean":  # statistics are taken of full region tensors only
            groups = b.reshape(y, [2, 2, 60])
            mean = b.reduceMean(groups, axes=[2], keepDimensions=True)
            inner = b.sub(groups, b.reduceMean(mean, axes=[2], keepDimensions=True))
        elif case == "no keepDimensions":
            mean = b.reshape(b.reduceMean(flat, axes=[3]), [2, 2, 2, 1])
            inner = b.sub(flat, mean)
        elif case == "two free sets":  # statistics over different axes
            inner = b.sub(b.sub(flat, b.reduceMean(flat, axes=[3], keepDimensions=True)),
                          b.reduceMean(flat, axes=[2, 3], keepDimensions=True))
        elif case == "scale":  # a layer norm's scale varies along the free axis
            inner = b.layerNormalization(flat, scale=b.constant(seeded((30,), 6)), axes=[3])
        else:  # every non-batch axis: layout_order_free's region, not a grouped one
            inner = b.sub(flat, b.reduceMean(flat, axes=[1, 2, 3], keepDimensions=True))
        back = b.reshape(inner, [2, 4, 6, 5])
        outputs["y"] = b.averagePool2d(back, windowDimensions=[3, 3], padding=[1, 1, 1, 1],
                                       strides=[1, 1])
        return b.build(outputs)

    after, result = check_numbers(build, "nhwc")
    assert "grouped_regions_relaid" not in result.counts
    if case == "whole sample":  # passed another way: only the boundary transposes are left
        assert result.counts["transposes_after_inside"] == 0
        assert result.counts["transposes_after"] == 2
    if case in ("flattened elsewhere", "whole tensor", "mean of the mean"):  # transposes stay
        assert result.counts["transposes_after_inside"] == 2
        stat = next(op for op in after.operations
                    if op.op_type in ("layerNormalization", "reduceMean"))
        assert stat.inputs[0].producer.inputs[0].producer.op_type == "transpose"


def _relaid_with_layer_norms(build, layout: str):
    """The layout pass on build() for a target preferring `layout` that has layerNormalization,
    mul and add (the rewrite of an instance norm into them is made only for such a target),
    checked against the graph before it; (the graph after, the pass's result)."""
    before = build()
    feeds = feeds_for(before)
    want = converter.run(before, feeds)
    after = build()
    target = Target(name="t", limits={"preferredInputLayout": layout, "layerNormalization": {},
                                      "mul": {}, "add": {}})
    [(_, result)] = run_passes(after, ["layout"], PassContext(target=target))
    same_values(converter.run(after, feeds), want)
    return after, result


@pytest.mark.parametrize("case", ["instance, no scale", "instance, scale only",
                                  "layer norm, default axes"])
def test_group_norm_forms_by_their_parts(case):
    def build():
        b = GraphBuilder(f"forms_{case}")
        x = b.input("x", "float32", [2, 3, 6, 5])
        y = conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1])
        if case == "instance, no scale":  # ONNX's rank-3 InstanceNormalization, no affine
            normed = b.instanceNormalization(b.reshape(y, [2, 2, 60, 1]))
        elif case == "instance, scale only":
            normed = b.instanceNormalization(b.reshape(y, [2, 2, 60, 1]),
                                             scale=b.constant(seeded((2,), 7)))
        else:  # no axes: every axis after the batch, so the whole sample (not grouped)
            normed = b.layerNormalization(b.reshape(y, [2, 2, 60]))
        back = b.reshape(normed, [2, 4, 6, 5])
        return b.build({"y": b.averagePool2d(back, windowDimensions=[3, 3],
                                             padding=[1, 1, 1, 1], strides=[1, 1])})

    after, result = _relaid_with_layer_norms(build, "nhwc")
    assert result.counts["transposes_after_inside"] == 0
    assert result.counts["transposes_after"] == 2
    if case.startswith("instance"):
        assert result.counts["instance_norms_as_layer_norms"] == 1
        assert result.counts["grouped_regions_relaid"] == 1
        assert types(after).count("mul") == (1 if case == "instance, scale only" else 0)
        assert "add" not in types(after)
    else:
        assert "grouped_regions_relaid" not in result.counts


@pytest.mark.parametrize("case,target_layout,flat,rewritten", [
    # nhwc [N, M, 1, G] with scale and bias: layerNormalization over axes 1 and 2, then the
    # scale and bias per channel (axis 3)
    ("nhwc, scale and bias", "nchw", [2, 60, 1, 2], True),
    ("both spatial axes longer than 1", "nhwc", [2, 2, 6, 10], False),  # plain conversion
    ("already in the target layout", "nchw", [2, 2, 60, 1], False),  # nothing to gain
])
def test_an_instance_norm_becomes_a_layer_norm_only_off_the_target_layout_with_a_unit_axis(
        case, target_layout, flat, rewritten):
    nhwc = case.startswith("nhwc")

    def build():
        b = GraphBuilder("instance_forms")
        x = b.input("x", "float32", [2, 3, 6, 5])
        y = conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1])
        channels = flat[3] if nhwc else flat[1]
        extra = {"layout": "nhwc", "scale": b.constant(seeded((channels,), 7)),
                 "bias": b.constant(seeded((channels,), 8))} if nhwc else {}
        normed = b.instanceNormalization(b.reshape(y, flat), **extra)
        back = b.reshape(normed, [2, 4, 6, 5])
        return b.build({"y": b.averagePool2d(back, windowDimensions=[3, 3],
                                             padding=[1, 1, 1, 1], strides=[1, 1])})

    after, result = _relaid_with_layer_norms(build, target_layout)
    assert result.counts.get("instance_norms_as_layer_norms", 0) == (1 if rewritten else 0)
    assert ("instanceNormalization" in types(after)) == (not rewritten)
    if rewritten:
        [norm] = [op for op in after.operations if op.op_type == "layerNormalization"]
        assert norm.attr("axes") == [1, 2]
        shaped = [op.attr("newShape") for op in after.operations
                  if op.op_type == "reshape" and op.inputs[0].is_constant]
        assert shaped == [[1, 1, 1, 2], [1, 1, 1, 2]]  # the scale and the bias, per channel


def test_a_layer_norm_with_default_axes_keeps_the_batch_axis_that_a_transpose_moved():
    """transpose(x, [1, 0, 2, 3]) moves the batch axis, so the layer norm's default axes (all
    but the first, here [1] of [2, 60]) leave entry axis 0 kept: a grouped region (the order-free
    one sees a single sample it does not cover). It runs on x regrouped as [3, 2, 20] with
    statistics over axes 0 and 2, and the transpose then goes up to the input."""
    def build():
        b = GraphBuilder("batch_kept")
        x = b.input("x", "float32", [3, 2, 4, 5])
        t = b.transpose(b.relu(x), permutation=[1, 0, 2, 3])
        normed = b.layerNormalization(b.reshape(t, [2, 60]))
        y = b.reshape(normed, [2, 3, 4, 5])
        return b.build({"y": b.matmul(y, b.constant(seeded((5, 2), 1)))})

    after, result = check_numbers(build, "nhwc")
    assert result.counts["grouped_regions_relaid"] == 1
    assert result.counts["transposes_after"] == 1 and result.counts["pushed_up"] == 1
    assert types(after) == ["transpose", "relu", "reshape", "layerNormalization", "reshape",
                            "matmul"]
    assert after.operations[0].inputs[0] is after.inputs["x"]
