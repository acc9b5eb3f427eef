"""layout: layout-bearing ops in the target's layout, transposes pushed through and cancelled.

Each case builds a graph with GraphBuilder, runs the pass for an nchw or nhwc target, checks
the ops, their arguments and the transposes left (and where), then runs the graph before and
after on the same seeded inputs: the values must agree to within a few ULP (a convolution in
another layout may add in another order; data movement is exact).
"""
from __future__ import annotations

import numpy as np
import pytest

import converter
from converter.ops.builder import GraphBuilder
from converter.errors import ConverterError
from converter.passes import PassContext, run_passes
from converter.passes.layout import count_transposes, source_layouts
from converter.passes.layout_perms import compose, extend, inverse, keeps_element_order
from converter.passes.layout_rules import missing_rules, rule_for
from converter.formats.webnn_text import dumps
from converter.targets import Target

from .layout_helpers import (NCHW_TO_NHWC, NHWC_TO_NCHW, assert_in_layout, channel_shuffle,
                             check_numbers, cnn, conv, feeds_for, layout_pass, only,
                             same_values, seeded, types)


# -- whole networks ----------------------------------------------------------------------------
def test_nhwc_cnn_for_an_nchw_target_has_transposes_only_at_the_boundary():
    graph, result = check_numbers(lambda: cnn("nhwc"), "nchw")

    assert_in_layout(graph, "nchw")
    assert only(graph, "concat").attr("axis") == 1 and only(graph, "softmax").attr("axis") == 1
    # One transpose, the input's: nothing between the convolutions, the head reads nchw.
    assert types(graph).count("transpose") == 1
    [t] = [op for op in graph.operations if op.op_type == "transpose"]
    assert t.inputs[0] is graph.inputs["x"] and t.attr("permutation") == NHWC_TO_NCHW
    assert result.counts["transposes_before"] == 0
    assert result.counts["transposes_after"] == 1
    assert result.counts["transposes_after_at_boundary"] == 1
    assert result.counts["transposes_after_inside"] == 0
    assert result.counts["layout_ops_converted"] == 5  # 3 convs, 2 pools
    assert result.counts["filters_relaid"] == 3
    assert graph.inputs["x"].shape == (1, 9, 7, 3) and graph.outputs["y"].shape == (1, 5)
    assert "transposes 0 -> 1 (1 at the graph boundary, 0 inside)" in result.notes[-1]


def test_nchw_cnn_for_an_nhwc_target_has_transposes_only_at_the_boundary():
    graph, result = check_numbers(lambda: cnn("nchw"), "nhwc")

    assert_in_layout(graph, "nhwc")
    assert only(graph, "concat").attr("axis") == 3 and only(graph, "softmax").attr("axis") == 3
    [t] = [op for op in graph.operations if op.op_type == "transpose"]
    assert t.inputs[0] is graph.inputs["x"] and t.attr("permutation") == NCHW_TO_NHWC
    assert (result.counts["transposes_after"], result.counts["transposes_after_inside"]) == (1, 0)


def test_filters_are_transposed_at_conversion_time():
    graph = cnn("nhwc")
    original = graph.operations[0].inputs[1].constant.numpy().copy()  # hwio [3, 3, 3, 8]
    layout_pass(graph, "nchw")
    first = next(op for op in graph.operations if op.op_type == "conv2d")
    assert first.inputs[1].shape == (8, 3, 3, 3)
    np.testing.assert_array_equal(first.inputs[1].constant.numpy(),
                                  original.transpose(3, 2, 0, 1))  # hwio -> oihw
    assert not any(op.inputs[0].is_constant for op in graph.operations
                   if op.op_type == "transpose")
    # The hwio originals are gone: nothing reads them.
    assert all(c.uses() for c in graph.constants.values())


def test_a_graph_already_in_the_target_layout_is_left_alone():
    graph = cnn("nchw")
    text = dumps(graph)
    result = layout_pass(graph, "nchw")
    assert not result.changed and dumps(graph) == text
    assert result.counts["transposes_after"] == 0


def test_no_target_changes_nothing():
    graph = cnn("nhwc")
    text = dumps(graph)
    result = layout_pass(graph, None, io="nchw")
    assert not result.changed and dumps(graph) == text and "no target" in result.notes[0]


# -- the graph boundary ------------------------------------------------------------------------
def test_io_layout_nhwc_presents_an_nchw_model_in_nhwc_with_no_transposes():
    graph, result = check_numbers(lambda: cnn("nchw", features=True), "nhwc", io="nhwc",
                                  inputs={"x": NCHW_TO_NHWC},
                                  outputs={"features": NCHW_TO_NHWC})
    assert graph.inputs["x"].shape == (1, 9, 7, 3)
    assert graph.outputs["features"].shape == (1, 9, 7, 8)
    assert list(graph.inputs) == ["x"] and list(graph.outputs) == ["y", "features"]
    assert "transpose" not in types(graph)
    assert result.counts["inputs_presented"] == 1 and result.counts["outputs_presented"] == 1


def test_io_layout_nchw_for_an_nhwc_target_keeps_transposes_at_the_boundary():
    graph, result = check_numbers(lambda: cnn("nhwc", features=True), "nhwc", io="nchw",
                                  inputs={"x": NHWC_TO_NCHW},
                                  outputs={"features": NHWC_TO_NCHW})
    assert graph.inputs["x"].shape == (1, 3, 9, 7)
    assert graph.outputs["features"].shape == (1, 8, 9, 7)
    assert (result.counts["transposes_after"], result.counts["transposes_after_at_boundary"]) \
        == (2, 2)
    assert_in_layout(graph, "nhwc")


def test_io_layout_matching_the_target_removes_every_transpose():
    graph, result = check_numbers(lambda: cnn("nhwc", features=True), "nchw", io="nchw",
                                  inputs={"x": NHWC_TO_NCHW},
                                  outputs={"features": NHWC_TO_NCHW})
    assert "transpose" not in types(graph) and result.counts["transposes_after"] == 0


def test_source_layouts_are_traced_through_agnostic_ops_and_transposes():
    def build():
        b = GraphBuilder("trace")
        x = b.input("x", "float32", [1, 3, 8, 6])
        m = b.input("mask", "float32", [1, 1, 4, 4])  # reaches no layout-bearing op
        z = b.input("z", "float32", [1, 8, 6, 3])  # an nhwc input the nchw model transposes
        c = conv(b, b.mul(x, b.constant("float32", 2.0)), 3, 4, "nchw")
        c = b.add(c, conv(b, b.transpose(z, permutation=NHWC_TO_NCHW), 3, 4, "nchw"))
        t = b.transpose(c, permutation=NCHW_TO_NHWC)
        return b.build({"y": t, "m": b.relu(m), "c": b.sigmoid(c)})

    inputs, outputs = source_layouts(build())
    assert inputs == {"x": "nchw", "mask": None, "z": "nhwc"}
    assert outputs == {"y": "nhwc", "m": None, "c": "nchw"}
    graph, result = check_numbers(build, "nchw", io="nhwc", inputs={"x": NCHW_TO_NHWC},
                                  outputs={"c": NCHW_TO_NHWC})
    assert graph.inputs["x"].shape == graph.inputs["z"].shape == (1, 8, 6, 3)
    assert graph.inputs["mask"].shape == (1, 1, 4, 4) and graph.outputs["m"].shape == (1, 1, 4, 4)
    assert any("input 'mask': its layout is unknown" in n for n in result.notes)
    assert graph.outputs["y"].shape == graph.outputs["c"].shape == (1, 8, 6, 4)
    # x and z both come in nhwc and the convs read nchw: one transpose each; y and c leave
    # in nhwc: one transpose each. Nothing inside.
    assert (result.counts["transposes_after"], result.counts["transposes_after_inside"]) == (4, 0)


# -- known traps -------------------------------------------------------------------------------
def test_softmax_after_conv_follows_the_channel_axis():
    def build():
        b = GraphBuilder("softmax")
        x = b.input("x", "float32", [2, 5, 3, 4])
        return b.build({"y": b.softmax(conv(b, x, 4, 6, "nhwc"), 3)})

    graph, result = check_numbers(build, "nchw")
    assert only(graph, "softmax").attr("axis") == 1  # the channels, in nchw
    assert types(graph) == ["transpose", "conv2d", "softmax", "transpose"]
    assert result.counts["transposes_after_inside"] == 0


def test_a_models_own_transpose_after_conv_cancels_the_inserted_one():
    def build():
        b = GraphBuilder("t_after_conv")
        x = b.input("x", "float32", [1, 3, 9, 7])
        c = conv(b, x, 3, 4, "nchw", k=3)
        t = b.transpose(c, permutation=NCHW_TO_NHWC)  # an NCHW model handing NHWC on
        return b.build({"y": b.reshape(t, [1, 7 * 5 * 4])})

    graph, result = check_numbers(build, "nhwc")
    assert types(graph) == ["transpose", "conv2d", "reshape"]
    assert graph.operations[0].inputs[0] is graph.inputs["x"]
    assert result.counts["transposes_before"] == 1 and result.counts["transposes_after"] == 1
    assert result.counts["transposes_before_inside"] == 1
    assert result.counts["transposes_after_inside"] == 0
    # For an nchw target the model's own transpose is all there is, and it stays.
    graph, result = check_numbers(build, "nchw")
    assert types(graph) == ["conv2d", "transpose", "reshape"] and not result.changed


def test_a_transpose_before_a_reordering_reshape_stays_inside_and_is_counted():
    def build():
        b = GraphBuilder("flatten")
        x = b.input("x", "float32", [1, 5, 3, 4])
        return b.build({"y": b.reshape(conv(b, x, 4, 2, "nhwc"), [1, 30])})

    graph, result = check_numbers(build, "nchw")
    assert types(graph) == ["transpose", "conv2d", "transpose", "reshape"]
    assert result.counts["transposes_after_inside"] == 1


def test_a_flattening_head_permutes_the_dense_weights_instead():
    def build():
        b = GraphBuilder("dense")
        x = b.input("x", "float32", [2, 6, 5, 3])
        f = b.reshape(conv(b, x, 3, 4, "nhwc", k=3), [2, 4 * 3 * 4])
        return b.build({"y": b.gemm(f, b.constant(seeded((48, 5), 7))),
                        "z": b.gemm(f, b.constant(seeded((7, 48), 8)), bTranspose=True),
                        "m": b.matmul(f, b.constant(seeded((48, 2), 9)))})

    graph, result = check_numbers(build, "nchw")
    assert types(graph) == ["transpose", "conv2d", "reshape", "gemm", "gemm", "matmul"]
    assert result.counts["dense_weights_permuted"] == 3
    # Row j of the new weights is the row that met x's j-th flattened element: element
    # (h, w, c) = (0, 0, 1) comes at 1 in the nhwc flattening, at 1 * 4 * 3 = 12 in nchw.
    before = build()
    old = next(op for op in before.operations if op.op_type == "gemm").inputs[1].constant.numpy()
    new = next(op for op in graph.operations if op.op_type == "gemm").inputs[1].constant.numpy()
    np.testing.assert_array_equal(new[12], old[1])
    np.testing.assert_array_equal(new[0], old[0])


# -- layout-bearing ops ------------------------------------------------------------------------
@pytest.mark.parametrize("source,target,filter_shape,filter_layout", [
    ("nchw", "nhwc", (1, 3, 3, 6), "ihwo"),
    ("nhwc", "nchw", (6, 1, 3, 3), "oihw"),
])
def test_depthwise_conv_gets_the_targets_depthwise_filter_layout(source, target,
                                                                 filter_shape, filter_layout):
    def build():
        b = GraphBuilder("depthwise")
        x = b.input("x", "float32", [1, 6, 7, 5] if source == "nchw" else [1, 7, 5, 6])
        if source == "nchw":
            w = b.constant(seeded((6, 1, 3, 3), 1))
            y = b.conv2d(x, w, groups=6, padding=[1, 1, 1, 1], strides=[2, 1])
        else:
            w = b.constant(seeded((1, 3, 3, 6), 1))
            y = b.conv2d(x, w, groups=6, padding=[1, 1, 1, 1], strides=[2, 1],
                         inputLayout="nhwc", filterLayout="ihwo")
        return b.build({"y": b.relu(y)})

    graph, _ = check_numbers(build, target)
    op = only(graph, "conv2d")
    assert (op.attr("inputLayout"), op.attr("filterLayout"), op.attr("groups")) == \
        (target, filter_layout, 6)
    assert op.inputs[1].shape == filter_shape and op.attr("strides") == [2, 1]
    assert types(graph) == ["transpose", "conv2d", "relu", "transpose"]


def test_conv_transpose_filters_go_to_the_targets_layout():
    def build():
        b = GraphBuilder("convT")
        x = b.input("x", "float32", [1, 4, 5, 3])
        w = b.constant(seeded((4, 2, 3, 2), 1))  # iohw: in 4, out 2, kernel 3 x 2
        y = b.convTranspose2d(x, w, strides=[2, 1], padding=[1, 0, 0, 1], outputPadding=[1, 0],
                              bias=b.constant(seeded(2, 2)))
        return b.build({"y": y})

    graph, _ = check_numbers(build, "nhwc")
    op = only(graph, "convTranspose2d")
    assert (op.attr("inputLayout"), op.attr("filterLayout")) == ("nhwc", "ohwi")
    assert op.inputs[1].shape == (2, 3, 2, 4)


def test_a_computed_filter_gets_a_transpose_op():
    def build():
        b = GraphBuilder("runtime_filter")
        x = b.input("x", "float32", [1, 3, 6, 5])
        w = b.input("w", "float32", [4, 3, 3, 3])  # oihw, known only at run time
        return b.build({"y": b.conv2d(x, w)})

    graph, result = check_numbers(build, "nhwc")
    op = only(graph, "conv2d")
    assert op.attr("filterLayout") == "ohwi"
    assert op.inputs[1].producer.op_type == "transpose"
    assert op.inputs[1].producer.attr("permutation") == [0, 2, 3, 1]
    assert result.counts["filter_transposes"] == 1
    assert result.counts["transposes_after_at_boundary"] == 3  # x, w in; y out


@pytest.mark.parametrize("op_type", ["averagePool2d", "l2Pool2d", "maxPool2d"])
def test_pools_change_layout_and_keep_window_and_padding(op_type):
    def build():
        b = GraphBuilder(op_type)
        x = b.input("x", "float32", [1, 9, 7, 3])
        y = getattr(b, op_type)(x, windowDimensions=[3, 2], strides=[2, 1],
                                padding=[1, 0, 0, 1], layout="nhwc")
        return b.build({"y": y})

    graph, _ = check_numbers(build, "nchw")
    op = only(graph, op_type)
    assert op.attr("layout") == "nchw" and op.attr("windowDimensions") == [3, 2]
    assert op.attr("padding") == [1, 0, 0, 1] and op.output.shape == (1, 3, 4, 7)


def test_instance_normalization_changes_layout():
    def build():
        b = GraphBuilder("instnorm")
        x = b.input("x", "float32", [2, 4, 5, 3])
        y = b.instanceNormalization(x, scale=b.constant(seeded(4, 1)),
                                    bias=b.constant(seeded(4, 2)))
        return b.build({"y": y})

    graph, _ = check_numbers(build, "nhwc")
    op = only(graph, "instanceNormalization")
    assert op.attr("layout") == "nhwc" and op.inputs[0].shape == (2, 5, 3, 4)


@pytest.mark.parametrize("axes,target,new_axes,perm", [
    ([1, 2], "nchw", [2, 3], NHWC_TO_NCHW),
    ([2, 3], "nhwc", [1, 2], NCHW_TO_NHWC),
    ([2, 3], "nchw", [2, 3], None),
    ([3, 2], "nchw", [2, 3], [0, 1, 3, 2]),
    ([0, 1], "nhwc", [1, 2], [2, 0, 1, 3]),
])
def test_resample2d_axes_go_to_the_targets_spatial_axes(axes, target, new_axes, perm):
    def build():
        b = GraphBuilder("resample")
        x = b.input("x", "float32", [2, 5, 3, 4])
        y = b.resample2d(x, mode="linear", scales=[2.0, 1.5], axes=axes)
        return b.build({"y": y})

    graph, _ = check_numbers(build, target)
    op = only(graph, "resample2d")
    assert op.attr("axes") == new_axes and op.attr("scales") == [2.0, 1.5]
    if perm is None:
        assert types(graph) == ["resample2d"]
    else:
        assert op.inputs[0].producer.attr("permutation") == perm
        assert graph.outputs["y"].producer.attr("permutation") == inverse(perm)


@pytest.mark.parametrize("shape,axis,target,new_axis", [
    ([2, 4, 5, 3], 1, "nhwc", 3),
    ([2, 5, 3, 4], 3, "nchw", 1),
    ([2, 5, 3, 4], 3, "nhwc", 3),
    ([2, 4, 5], 1, "nhwc", 1),  # below rank 4 the axis is not a layout: left alone
])
def test_batch_normalization_axis_goes_to_the_targets_channel_axis(shape, axis, target,
                                                                   new_axis):
    def build():
        b = GraphBuilder("bn")
        x = b.input("x", "float32", shape)
        c = shape[axis]
        y = b.batchNormalization(x, b.constant(seeded(c, 1)),
                                 b.constant(np.abs(seeded(c, 2)) + 0.5), axis=axis,
                                 scale=b.constant(seeded(c, 3)), epsilon=1e-3)
        return b.build({"y": y})

    graph, _ = check_numbers(build, target)
    op = only(graph, "batchNormalization")
    assert op.attr("axis") == new_axis
    assert types(graph).count("transpose") == (0 if new_axis == axis else 2)


# -- moving and cancelling ---------------------------------------------------------------------
def test_input_normalization_moves_the_first_transpose_to_the_input():
    def build():
        b = GraphBuilder("normalize")
        x = b.input("x", "float32", [1, 3, 8, 6])
        mean = b.constant(np.float32([0.5, 0.4, 0.3]).reshape(3, 1, 1))
        xs = b.div(b.sub(x, mean), b.constant("float32", 0.25))
        xs = b.pad(xs, [0, 0, 1, 1], [0, 0, 1, 1], mode="reflection")
        return b.build({"y": b.relu(conv(b, xs, 3, 4, "nchw", k=3))})

    graph, result = check_numbers(build, "nhwc")
    assert types(graph) == ["transpose", "sub", "div", "pad", "conv2d", "relu", "transpose"]
    assert graph.operations[0].inputs[0] is graph.inputs["x"]
    assert only(graph, "sub").inputs[1].shape == (1, 1, 3)  # [3, 1, 1] re-laid out now
    assert only(graph, "pad").attr("beginningPadding") == [0, 1, 1, 0]
    assert result.counts["pushed_up"] == 1 and result.counts["transposes_after_inside"] == 0


def test_split_branches_and_concat_keep_the_inside_free_of_transposes():
    def build():
        b = GraphBuilder("shuffle")
        x = b.input("x", "float32", [1, 5, 3, 8])
        c = b.relu(conv(b, x, 8, 8, "nhwc", seed=1))
        left, right = b.split(c, 2, axis=3)
        right = conv(b, b.sigmoid(right), 4, 4, "nhwc", seed=2)
        return b.build({"y": conv(b, b.concat([left, right], 3), 8, 2, "nhwc", seed=3)})

    graph, result = check_numbers(build, "nchw")
    assert only(graph, "split").attr("axis") == 1 and only(graph, "concat").attr("axis") == 1
    assert result.counts["transposes_after"] == 2
    assert result.counts["transposes_after_inside"] == 0


def test_transposes_of_transposes_and_constants_fold():
    b = GraphBuilder("fold")
    x = b.input("x", "float32", [2, 3, 4, 5])
    k = b.constant(seeded((3, 5), 1))
    t = b.transpose(b.transpose(x, permutation=[0, 2, 3, 1]), permutation=[1, 0, 2, 3])
    y = b.add(b.relu(t), b.transpose(k))  # [4, 2, 5, 3] + [5, 3]
    graph = b.build({"y": b.transpose(y, permutation=[0, 1, 3, 2])})
    feeds = feeds_for(graph)
    want = converter.run(graph, feeds)
    result = layout_pass(graph, "nchw")
    same_values(converter.run(graph, feeds), want)
    # The two transposes of x compose into one, which moves down through relu and add and
    # merges with the output's; the constant's transpose is done now, then re-laid out for
    # the add: [5, 3] aligned to [1, 1, 5, 3], transposed back into x's order.
    assert types(graph) == ["relu", "add", "transpose"]
    assert only(graph, "transpose").attr("permutation") == compose(
        compose([0, 2, 3, 1], [1, 0, 2, 3]), [0, 1, 3, 2])
    constant = only(graph, "add").inputs[1]
    assert constant.is_constant and constant.shape == (1, 3, 1, 5)
    np.testing.assert_array_equal(constant.constant.numpy()[0, :, 0, :], k.constant.numpy())
    assert result.counts["transposes_before"] == 4 and result.counts["transposes_after"] == 1
    assert result.counts["transposes_after_at_boundary"] == 1


def test_permutation_helpers():
    x = np.arange(24).reshape(2, 3, 4)
    p, q = [2, 0, 1], [1, 2, 0]
    np.testing.assert_array_equal(x.transpose(p).transpose(q), x.transpose(compose(p, q)))
    np.testing.assert_array_equal(x.transpose(p).transpose(inverse(p)), x)
    assert extend([1, 0], 4) == [0, 1, 3, 2]
    assert keeps_element_order((2, 1, 1, 5), [0, 2, 1, 3])
    assert not keeps_element_order((2, 3, 1, 5), [0, 3, 1, 2])


def test_every_catalogue_op_has_a_layout_rule():
    assert missing_rules() == []
    assert rule_for("matmul").opaque and "contracts" in rule_for("matmul").why_opaque
    assert count_transposes(cnn("nchw")) == {"total": 0, "boundary": 0, "inside": 0}


def test_a_channel_shuffle_keeps_only_its_own_transpose_in_nhwc():
    graph, result = check_numbers(channel_shuffle, "nhwc")
    # In nhwc the shuffle is [n, h, w, groups, per group] -> swap the last two -> [n, h, w, c].
    assert types(graph) == ["transpose", "conv2d", "reshape", "transpose", "reshape", "conv2d",
                            "transpose"]
    inside = [op for op in graph.operations if op.op_type == "transpose"][1]
    assert inside.attr("permutation") == [0, 1, 2, 4, 3]
    assert only_shapes(graph, "reshape") == [[1, 5, 3, 2, 3], [1, 5, 3, 6]]
    assert result.counts["transposes_split"] == 1
    assert result.counts["transposes_after_inside"] == result.counts["transposes_before"] == 1


def only_shapes(graph, op_type):
    return [op.attr("newShape") for op in graph.operations if op.op_type == op_type]


def test_a_shared_transpose_is_not_copied_into_branches_where_it_would_stay():
    def build():
        b = GraphBuilder("branches")
        x = b.input("x", "float32", [1, 5, 3, 4])
        c = conv(b, x, 4, 4, "nhwc")
        # Both branches end in a reshape that reorders elements: a transpose copied into each
        # would stay there, two where there was one.
        return b.build({"a": b.reshape(b.relu(c), [1, 60]),
                        "b": b.reshape(b.sigmoid(c), [60, 1])})

    graph, result = check_numbers(build, "nchw")
    assert types(graph).count("transpose") == 2  # the input's, and one shared inside
    assert result.counts["transposes_after_inside"] == 1


def test_a_transpose_at_an_output_is_not_moved_up_to_an_input():
    def build():
        b = GraphBuilder("out")
        x = b.input("x", "float32", [1, 5, 3, 4])
        z = b.input("z", "float32", [1, 4, 5, 3])
        c = conv(b, x, 4, 4, "nhwc")  # the result leaves as nhwc through an add with z
        return b.build({"y": b.add(c, b.transpose(z, permutation=NCHW_TO_NHWC))})

    graph, result = check_numbers(build, "nchw")
    # z's own transpose cancels the conv's: the add works in nchw, one transpose at the output.
    assert types(graph) == ["transpose", "conv2d", "add", "transpose"]
    assert graph.outputs["y"].producer.op_type == "transpose"
    assert result.counts["transposes_after_at_boundary"] == 2


def test_squeezenet_for_an_nhwc_target(tmp_path):
    from converter.testing.light_models import light_model

    path = light_model("squeezenet", tmp_path)
    before = converter.load(path)
    feeds = feeds_for(before)
    want = converter.run(before, feeds)
    graph = converter.load(path)
    result = layout_pass(graph, "nhwc")
    assert result.counts["layout_ops_converted"] == 29  # 26 convs, 3 pools
    assert (result.counts["transposes_after"], result.counts["transposes_after_inside"]) == (1, 0)
    assert all(op.attr("inputLayout") == "nhwc" for op in graph.operations
               if op.op_type == "conv2d")
    same_values(converter.run(graph, feeds), want, ulp=64)


def test_a_conv1d_between_reshapes_keeps_its_transposes_at_the_boundary():
    # What the rank pass makes of a Whisper-style Conv1d: [n, c, l] -> [n, c, 1, l] -> conv2d
    # -> [n, c', l'], then gelu and another such conv.
    def build():
        b = GraphBuilder("conv1d")
        x = b.input("x", "float32", [2, 4, 10])
        c = conv(b, b.reshape(x, [2, 4, 1, 10]), 4, 6, "nchw", seed=1)  # 1 x 1 kernel
        r = b.gelu(b.reshape(c, [2, 6, 10]))
        w = b.constant(seeded((2, 6, 1, 3), 2))
        y = b.conv2d(b.reshape(r, [2, 6, 1, 10]), w, padding=[0, 0, 1, 1])
        return b.build({"y": b.reshape(y, [2, 2, 10])})

    graph, result = check_numbers(build, "nhwc")
    # In nhwc the sequence axis comes before the channels: x is transposed once ([n, l, c]),
    # every reshape in between reads nhwc data as it is, and the result goes back once.
    assert types(graph) == ["transpose", "reshape", "conv2d", "reshape", "gelu", "reshape",
                            "conv2d", "reshape", "transpose"]
    first, last = graph.operations[0], graph.operations[-1]
    assert first.inputs[0] is graph.inputs["x"] and first.attr("permutation") == [0, 2, 1]
    assert last.output is graph.outputs["y"] and last.attr("permutation") == [0, 2, 1]
    assert only_shapes(graph, "reshape") == [[2, 1, 10, 4], [2, 10, 6], [2, 1, 10, 6],
                                             [2, 10, 2]]
    assert result.counts["transposes_after_inside"] == 0


def test_a_transpose_above_packed_int4_weights_stays_where_it_is():
    # A MatMulNBits-style decoder layer: int4 weights dequantized, then transposed. Pushing the
    # transpose up meets a constant that cannot be re-laid out (its producer is None).
    def build():
        b = GraphBuilder("int4")
        x = b.input("x", "float32", [2, 8])
        w = b.constant("int4", [4, 8], np.arange(32, dtype=np.int8).reshape(4, 8) % 8 - 4)
        scale = b.constant(np.full((4, 1), 0.5, np.float32))
        zero = b.constant("int4", [4, 1], np.zeros((4, 1), np.int8))
        weights = b.dequantizeLinear(w, scale, zero)
        return b.build({"y": b.matmul(x, b.transpose(weights, permutation=[1, 0]))})

    for layout in ("nchw", "nhwc"):
        after, result = check_numbers(build, layout)
        assert types(after) == ["dequantizeLinear", "transpose", "matmul"]
        assert result.counts["transposes_after"] == 1
    feeds = feeds_for(build())
    w = (np.arange(32).reshape(4, 8) % 8 - 4).astype(np.float32) * 0.5
    np.testing.assert_allclose(converter.run(after, feeds)["y"], feeds["x"] @ w.T, rtol=1e-6)


@pytest.mark.parametrize("case", ["weights an input", "aTranspose", "another reader",
                                  "second operand", "flattened output", "rank-3 weights"])
def test_a_flattening_head_keeps_its_weights_when_they_cannot_be_permuted(case):
    def build():
        b = GraphBuilder("dense_kept")
        x = b.input("x", "float32", [2, 6, 5, 3])
        f = b.reshape(conv(b, x, 3, 4, "nhwc", k=3), [2, 4 * 3 * 4])
        if case == "weights an input":
            out = {"y": b.gemm(f, b.input("w", "float32", [48, 5]))}
        elif case == "aTranspose":  # the flattened map is read as its transpose
            out = {"y": b.gemm(f, b.constant(seeded((2, 5), 7)), aTranspose=True)}
        elif case == "another reader":
            out = {"y": b.matmul(f, b.constant(seeded((48, 2), 9))), "r": b.relu(f)}
        elif case == "second operand":  # the map is the weights, not the rows met
            out = {"y": b.matmul(b.constant(seeded((3, 2), 9)), f)}
        elif case == "flattened output":
            out = {"y": b.matmul(f, b.constant(seeded((48, 2), 9))), "f": f}
        else:  # a batched matmul: the weights are not one 2-D matrix
            out = {"y": b.matmul(f, b.constant(seeded((3, 48, 2), 9)))}
        return b.build(out)

    graph, result = check_numbers(build, "nchw")
    assert "dense_weights_permuted" not in result.counts
    # The transpose before the flattening stays (the elements must meet the weights' rows).
    assert result.counts["transposes_after_inside"] == 1


def test_an_unknown_layout_is_refused_before_anything_changes():
    graph = cnn("nchw")
    text = dumps(graph)
    bad = Target(name="odd", limits={"preferredInputLayout": "nwhc"})
    with pytest.raises(ConverterError, match="target 'odd' prefers layout 'nwhc'"):
        run_passes(graph, ["layout"], PassContext(target=bad))
    with pytest.raises(ConverterError, match="unknown io layout 'ncwh'"):
        layout_pass(graph, "nhwc", io="ncwh")
    assert dumps(graph) == text


def test_a_presented_output_keeps_its_name_on_its_operand():
    # An output whose operand has the output's name (as ONNX models have): after presenting
    # it in nhwc, the operand named 'y' is still the output, now the transposed one.
    def build():
        b = GraphBuilder("named")
        x = b.input("x", "float32", [1, 3, 6, 5])
        mask = b.input("mask", "float32", [1, 1, 4, 4])  # reaches no layout-bearing op
        graph = b.build({"y": conv(b, x, 3, 4, "nchw"), "m": b.relu(mask)})
        graph.rename(graph.outputs["y"], "y")
        return graph

    graph, result = check_numbers(build, "nchw", io="nhwc", inputs={"x": NCHW_TO_NHWC},
                                  outputs={"y": NCHW_TO_NHWC})
    assert graph.outputs["y"].name == "y" and graph.outputs["y"].shape == (1, 6, 5, 4)
    assert graph.outputs["y"].producer.op_type == "transpose"
    assert graph.operand("y") is graph.outputs["y"]
    assert any("output 'm': its layout is unknown" in n for n in result.notes)
    assert result.counts["outputs_presented"] == 1
