"""Layout through order-free regions: a transpose passes a reshape chain whose ops normalise or
reduce over a whole sample (one-group GroupNorm, LayerNorm over every non-batch axis), and CNNs
made only of ops with an NHWC form have no interior transposes at an NHWC target."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import converter
from converter.ops.builder import GraphBuilder
from converter.importers.onnx import import_model
from converter.passes.layout import count_transposes
from converter.passes.layout_order_free import _boundary, _covers_sample, _per_sample, _reshape_like
from converter.targets.check import check
from converter.targets.pipeline import convert_for_target
from converter.formats.webnn_text import dumps

from . import cnn_blocks
from .layout_helpers import check_numbers, conv, seeded, types


def _group_norm_block(kind: str):
    """conv (nchw) -> one-group GroupNorm -> per-channel affine -> avg pool -> sub."""
    def build():
        b = GraphBuilder(f"gn_{kind}")
        x = b.input("x", "float32", [1, 3, 6, 5])
        y = conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1])
        if kind == "instance":  # ONNX InstanceNormalization over [N, 1, C*H*W], imported
            flat = b.reshape(y, [1, 1, 120, 1])
            normed = b.instanceNormalization(flat, scale=b.constant(np.ones(1, np.float32)),
                                             bias=b.constant(np.zeros(1, np.float32)))
        elif kind == "layer":  # ONNX GroupNormalization(num_groups=1), imported
            normed = b.layerNormalization(b.reshape(y, [1, 1, 120]), axes=[2])
        else:  # written out: mean and variance over the whole sample
            flat = b.reshape(y, [1, 120])
            centered = b.sub(flat, b.reduceMean(flat, axes=[1], keepDimensions=True))
            var = b.reduceMean(b.mul(centered, centered), axes=[1], keepDimensions=True)
            normed = b.div(centered, b.sqrt(b.add(var, b.constant("float32", 1e-5))))
        back = b.reshape(normed, [1, 4, 6, 5])
        affine = b.add(b.mul(back, b.constant(seeded((4, 1, 1), 1))),
                       b.constant(seeded((4, 1, 1), 2)))
        pooled = b.averagePool2d(affine, windowDimensions=[3, 3], padding=[1, 1, 1, 1],
                                 strides=[1, 1])
        return b.build({"y": b.sub(pooled, affine)})
    return build


@pytest.mark.parametrize("kind", ["instance", "layer", "written"])
def test_a_one_group_group_norm_lets_the_transposes_through(kind):
    build = _group_norm_block(kind)
    before = build()
    assert count_transposes(before)["total"] == 0

    after, result = check_numbers(build, "nhwc")

    # Only the graph boundary: into the conv, out of the final sub.
    assert result.counts["transposes_after_inside"] == 0
    assert result.counts["transposes_after"] == 2
    assert result.counts["order_free_regions_passed"] >= 1
    # The normalization now reads the conv's nhwc result directly.
    first = next(op for op in after.operations if op.op_type == "reshape")
    assert first.inputs[0].producer.op_type == "conv2d"


def test_per_position_operands_stop_the_region():
    # A scale shaped like the whole sample is not order-free: the transposes stay around it.
    def build():
        b = GraphBuilder("per_position")
        x = b.input("x", "float32", [1, 3, 6, 5])
        y = conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1])
        flat = b.reshape(y, [1, 120])
        scaled = b.mul(flat, b.constant(seeded((1, 120), 3)))
        back = b.reshape(scaled, [1, 4, 6, 5])
        return b.build({"y": b.averagePool2d(back, windowDimensions=[3, 3],
                                             padding=[1, 1, 1, 1], strides=[1, 1])})

    after, result = check_numbers(build, "nhwc")
    assert "order_free_regions_passed" not in result.counts
    assert result.counts["transposes_after_inside"] == 2
    assert types(after).count("transpose") == 4


def test_a_reduction_over_part_of_the_sample_is_not_order_free_but_regroups():
    def build():
        b = GraphBuilder("partial")
        x = b.input("x", "float32", [1, 3, 6, 5])
        y = conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1])
        grouped = b.reshape(y, [1, 2, 60])  # two groups: the order between them matters
        centered = b.sub(grouped, b.reduceMean(grouped, axes=[2], keepDimensions=True))
        back = b.reshape(centered, [1, 4, 6, 5])
        return b.build({"y": b.averagePool2d(back, windowDimensions=[3, 3],
                                             padding=[1, 1, 1, 1], strides=[1, 1])})

    after, result = check_numbers(build, "nhwc")
    assert "order_free_regions_passed" not in result.counts
    # layout_grouped.py's business: x's [H*W, G, C/G] (the size-1 batch dropped), the mean
    # over axes 0 and 2.
    assert result.counts["grouped_regions_relaid"] == 1
    assert result.counts["transposes_after_inside"] == 0
    mean = next(op for op in after.operations if op.op_type == "reduceMean")
    assert mean.inputs[0].shape == (30, 2, 2) and mean.attr("axes") == [0, 2]


# -- whole networks, imported from ONNX ------------------------------------------------------
NETWORKS = {
    "poolformer (GroupNorm as InstanceNormalization)": lambda: cnn_blocks.poolformer("instance"),
    "poolformer (GroupNormalization)": lambda: cnn_blocks.poolformer("group"),
    "convnext": cnn_blocks.convnext,
}


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_cnn_blocks_have_no_interior_transposes_at_an_nhwc_target(name):
    model = NETWORKS[name]()
    graph = import_model(model)
    feeds = {"x": np.random.default_rng(0).random(graph.inputs["x"].shape, dtype=np.float32)}
    want = converter.run(graph, feeds)
    reference = ort.InferenceSession(model.SerializeToString(),
                                     providers=["CPUExecutionProvider"]).run(None, feeds)[0]

    report = convert_for_target(graph, "chromium-litert")

    counts = count_transposes(graph)
    assert counts["inside"] == 0, dumps(graph)
    assert counts["boundary"] == 1  # the nchw input into the first conv
    assert report.passed and check(graph, "chromium-litert") == []
    got = converter.run(graph, feeds)
    [key] = want
    np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[key], reference, rtol=1e-4, atol=1e-5)


def test_mobilevit_keeps_only_the_transposes_its_patches_need():
    # Unfolding into patches and folding back move elements in any layout (one transpose
    # each), and attention transposes K: three, where the export has five and the layout
    # conversion alone made seven (a pair around the unfold and the fold).
    model = cnn_blocks.mobilevit()
    graph = import_model(model)
    assert count_transposes(graph)["inside"] == 5
    feeds = {"x": np.random.default_rng(0).random(graph.inputs["x"].shape, dtype=np.float32)}
    want = converter.run(graph, feeds)
    reference = ort.InferenceSession(model.SerializeToString(),
                                     providers=["CPUExecutionProvider"]).run(None, feeds)[0]

    report = convert_for_target(graph, "chromium-litert")

    assert count_transposes(graph) == {"total": 5, "boundary": 2, "inside": 3}
    assert report.passed
    collapsed = dict(report.passes)["layout"].counts["transpose_chains_collapsed"]
    assert collapsed == 2  # the unfold and the fold
    [key] = want
    got = converter.run(graph, feeds)[key]
    np.testing.assert_allclose(got, want[key], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, reference, rtol=1e-4, atol=1e-4)


def test_a_group_norm_on_the_graph_input_takes_the_transpose_up_to_the_input():
    # The region is the network's first op: the transpose in front of the pool moves up
    # through it to the input, and the residual sub reads the pool's input as it is.
    def build():
        b = GraphBuilder("gn_first")
        x = b.input("x", "float32", [1, 4, 6, 5])
        normed = b.layerNormalization(b.reshape(x, [1, 1, 120]), axes=[2])
        back = b.reshape(normed, [1, 4, 6, 5])
        pooled = b.averagePool2d(back, windowDimensions=[3, 3], padding=[1, 1, 1, 1],
                                 strides=[1, 1])
        return b.build({"y": conv(b, b.sub(pooled, back), 4, 4, "nchw")})

    after, result = check_numbers(build, "nhwc")

    assert result.counts["transposes_after"] == 2
    assert result.counts["transposes_after_inside"] == 0
    assert result.counts["order_free_regions_passed"] == 1
    assert types(after)[:2] == ["transpose", "reshape"]  # x -> nhwc -> the region


# -- the region's shape rules, derived by hand ---------------------------------------------
def test_the_sample_boundary_is_the_last_axis_whose_prefix_is_the_batch():
    assert _boundary([2, 1, 3, 4], 2) == 2  # size-1 axes after the batch still index samples
    assert _boundary([2, 3, 4], 2) == 1
    assert _boundary([1, 1, 6], 1) == 2
    assert _boundary([6, 4], 2) is None  # 6 samples-and-more: no axis ends at 2
    assert _boundary([2, 3], 6) == 2  # the whole tensor is the batch
    assert _boundary([4, 3], 1) == 0  # batch 1: even no axis


def test_a_per_sample_operand_is_one_over_every_sample_axis():
    assert _per_sample([2, 1, 1], 3, 1)
    assert _per_sample([1], 3, 1)  # broadcast from the right
    assert not _per_sample([2, 1, 3], 3, 1)
    assert _per_sample([2, 1, 3], 3, 3)  # every axis indexes samples
    assert not _per_sample([1, 1, 1, 1], 3, 1)  # a higher rank broadcasts the region itself


def test_a_reduction_covers_the_sample_when_it_holds_every_non_unit_sample_axis():
    assert _covers_sample([2, 3, 4], [1, 2], 1)
    assert _covers_sample([2, 1, 4], [2], 1)  # the size-1 axis need not be reduced
    assert not _covers_sample([2, 3, 4], [2], 1)
    assert _covers_sample([2, 3, 4], None, 1)  # no axes: every axis
    assert _covers_sample([2, 3, 4], [], 3)  # nothing left in a sample


@pytest.mark.parametrize("case", ["relu", "per-sample scale", "output inside", "broadcast",
                                  "partial layer norm"])
def test_the_region_rules_decide_and_the_numbers_stay(case):
    def build():
        b = GraphBuilder(f"region_{case}")
        x = b.input("x", "float32", [2, 3, 6, 5])
        y = conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1])
        flat = b.reshape(y, [2, 1, 120])
        outputs = {}
        if case == "relu":
            inner = b.relu(flat)
        elif case == "per-sample scale":  # the same for every element of a sample
            inner = b.mul(flat, b.constant(seeded((2, 1, 1), 4)))
        elif case == "output inside":  # a region tensor the caller reads in y's order
            inner = b.relu(flat)
            outputs["inner"] = inner
        elif case == "broadcast":  # the region tensor repeats along a new axis
            inner = b.reduceMean(b.add(flat, b.constant(seeded((2, 2, 1), 5))), axes=[1],
                                 keepDimensions=True)
        else:  # normalised over part of each sample: positions matter
            inner = b.layerNormalization(b.reshape(flat, [2, 4, 30]), axes=[2])
        back = b.reshape(inner, [2, 4, 6, 5])
        outputs["y"] = b.averagePool2d(back, windowDimensions=[3, 3], padding=[1, 1, 1, 1],
                                       strides=[1, 1])
        return b.build(outputs)

    after, result = check_numbers(build, "nhwc")
    passed = result.counts.get("order_free_regions_passed", 0)
    assert passed == (1 if case in ("relu", "per-sample scale") else 0)
    if passed:  # only the transpose into the conv and the one out of the pool
        assert result.counts["transposes_after_inside"] == 0
        assert result.counts["transposes_after"] == 2


@pytest.mark.parametrize("case", ["unpermuted transpose", "layer norm, default axes",
                                  "instance norm, nhwc", "instance norm, channels",
                                  "two exits", "mean of the shape's product"])
def test_more_region_rules_decide_and_the_numbers_stay(case):
    passes = case in ("unpermuted transpose", "layer norm, default axes", "instance norm, nhwc",
                      "two exits")

    def build():
        b = GraphBuilder("region")
        batch = 1 if case == "unpermuted transpose" else 2
        x = b.input("x", "float32", [batch, 3, 6, 5])
        y = conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1])
        outputs = {}
        if case == "unpermuted transpose":  # reversing [1, 120, 1] keeps every element's place
            inner = b.relu(b.transpose(b.reshape(y, [1, 120, 1])))
        elif case == "layer norm, default axes":  # every axis after the first: the sample
            inner = b.layerNormalization(b.reshape(y, [2, 120, 1]))
        elif case == "instance norm, nhwc":  # channels last, one channel: the whole sample
            inner = b.instanceNormalization(b.reshape(y, [2, 120, 1, 1]), layout="nhwc")
        elif case == "instance norm, channels":  # 4 channels: per channel, positions matter
            inner = b.instanceNormalization(b.reshape(y, [2, 1, 30, 4]), layout="nhwc")
        elif case == "two exits":  # both exits are reshapes back: the region is passed whole
            inner = b.reshape(y, [2, 120])
            outputs["z"] = b.averagePool2d(b.reshape(b.sigmoid(inner), [2, 4, 6, 5]),
                                           windowDimensions=[3, 3], strides=[1, 1])
        else:  # a reduction over part of the sample
            flat = b.reshape(y, [2, 4, 30])
            inner = b.sub(flat, b.reduceMax(flat, axes=[1], keepDimensions=True))
        back = b.reshape(inner, [x.shape[0], 4, 6, 5])
        outputs["y"] = b.averagePool2d(back, windowDimensions=[3, 3], padding=[1, 1, 1, 1],
                                       strides=[1, 1])
        return b.build(outputs)

    after, result = check_numbers(build, "nhwc")
    assert result.counts.get("order_free_regions_passed", 0) == (1 if passes else 0)
    if passes:  # into the conv, and out of each pool
        assert result.counts["transposes_after_inside"] == 0
        assert result.counts["transposes_after"] == (3 if case == "two exits" else 2)


@pytest.mark.parametrize("shape,permutation,reshape_like", [
    ([1, 4, 30], None, False),  # the default reverses: [30, 4, 1] moves every element
    ([4, 1, 1], None, True),  # [1, 1, 4]: only size-1 axes move, the bytes stay in order
    ([1, 4, 1], None, True),
    ([2, 1, 3], None, False),  # [3, 1, 2]
    ([1, 4, 30], [1, 0, 2], True),
    ([1, 4, 30], [0, 2, 1], False),
])
def test_a_transpose_reads_as_a_reshape_when_it_moves_only_size_1_axes(
        shape, permutation, reshape_like):
    b = GraphBuilder("reshape_like")
    x = b.input("x", "float32", shape)
    y = b.transpose(x) if permutation is None else b.transpose(x, permutation=permutation)
    graph = b.build({"y": y})
    [op] = graph.operations
    assert ("permutation" in op.attrs) == (permutation is not None)
    assert _reshape_like(op) is reshape_like



@pytest.mark.parametrize("image,flat,axes", [
    ([1, 4, 6, 5], [1, 1, 120], [2]),  # the scale has 120 numbers, one per position
    ([1, 4, 6, 5], [1, 1, 120], [1, 2]),  # [1, 120]
])
def test_a_layer_norm_with_a_scale_per_position_stops_the_region(image, flat, axes):
    """A scale (one number per normalised position) must meet the elements in the order it
    was made for: the region, which reads them in NHWC order, is refused and the transposes
    stay on either side (the numbers are checked against the graph before)."""
    def build():
        b = GraphBuilder("scaled")
        x = b.input("x", "float32", [1, 3, *image[2:]])
        y = conv(b, x, 3, image[1], "nchw", k=3, padding=[1, 1, 1, 1])
        scale = b.constant(seeded([flat[a] for a in axes], 5))
        normed = b.layerNormalization(b.reshape(y, flat), scale=scale, axes=axes)
        back = b.reshape(normed, image)
        return b.build({"y": b.averagePool2d(back, windowDimensions=[3, 3],
                                             padding=[1, 1, 1, 1], strides=[1, 1])})

    after, result = check_numbers(build, "nhwc")
    assert "order_free_regions_passed" not in result.counts
    assert result.counts["transposes_after_inside"] == 2


@pytest.mark.parametrize("flat,axes", [([1, 4, 30], [2]), ([1, 24, 5], [2]), ([1, 4, 30], [0])])
def test_a_reduction_that_leaves_part_of_the_sample_stops_the_order_free_region(flat, axes):
    """A mean over only part of each sample depends on which elements share a row, so the
    region may not read them in NHWC order; the numbers match the graph before."""
    def build():
        b = GraphBuilder("partial_mean")
        x = b.input("x", "float32", [1, 3, 6, 5])
        y = b.reshape(conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1]), flat)
        centered = b.sub(y, b.reduceMean(y, axes=axes, keepDimensions=True))
        back = b.reshape(centered, [1, 4, 6, 5])
        return b.build({"y": b.averagePool2d(back, windowDimensions=[3, 3],
                                             padding=[1, 1, 1, 1], strides=[1, 1])})

    _, result = check_numbers(build, "nhwc")
    assert "order_free_regions_passed" not in result.counts


def test_a_transpose_that_moves_the_batch_axis_passes_a_region_of_whole_tensors():
    """transpose(x, [1, 0, 2, 3]) moves axis 0, so no axis indexes samples: the region (a
    sigmoid between reshapes to [2, 60] and back) counts the whole tensor as one sample, and
    the transpose goes up through it and the relu to the input (the matmul stops it below)."""
    def build():
        b = GraphBuilder("batch_moved")
        x = b.input("x", "float32", [3, 2, 4, 5])
        t = b.transpose(b.relu(x), permutation=[1, 0, 2, 3])
        y = b.reshape(b.sigmoid(b.reshape(t, [2, 60])), [2, 3, 4, 5])
        return b.build({"y": b.matmul(y, b.constant(seeded((5, 2), 1)))})

    after, result = check_numbers(build, "nhwc")
    assert types(after) == ["transpose", "relu", "reshape", "sigmoid", "reshape", "matmul"]
    assert after.operations[0].inputs[0] is after.inputs["x"]
    assert result.counts["order_free_regions_passed"] == 2
    assert result.counts["transposes_after_inside"] == 0


# -- rules each kept by one case (numbers checked against the graph before the pass) ----------
def _pooled(b, value, shape, layout="nchw"):
    back = b.reshape(value, shape)
    return b.averagePool2d(back, windowDimensions=[3, 3], padding=[1, 1, 1, 1], strides=[1, 1],
                           layout=layout)


def test_a_layer_norm_scale_of_twos_is_per_position_too():
    """Every normalised axis has size 2, so the scale's shape is all 2s: one number per position
    still, and the region (which would read the elements in NHWC order) is refused."""
    def build():
        b = GraphBuilder("scale_of_twos")
        x = b.input("x", "float32", [1, 3, 2, 2])
        y = conv(b, x, 3, 2, "nchw", k=3, padding=[1, 1, 1, 1])
        cube = b.reshape(b.reshape(y, [1, 8]), [2, 2, 2])  # [1, 8]: C, H, W merged
        normed = b.layerNormalization(cube, scale=b.constant(seeded((2, 2, 2), 5)),
                                      axes=[0, 1, 2])
        return b.build({"y": _pooled(b, normed, [1, 2, 2, 2])})

    after, result = check_numbers(build, "nhwc")
    assert "order_free_regions_passed" not in result.counts
    assert result.counts["transposes_after_inside"] == 2
    assert types(after).count("transpose") == 4


def test_an_nchw_instance_norm_with_channels_stops_the_region():
    """An NHWC model's reshape to [1, 4, 1, 30] read by an nchw instanceNormalization (four
    channels of 30, per channel statistics) at an NCHW target: which elements share a channel
    depends on the order, so the transposes stay around the region."""
    def build():
        b = GraphBuilder("instance_channels")
        x = b.input("x", "float32", [1, 6, 5, 3])
        y = conv(b, x, 3, 4, "nhwc", k=3, padding=[1, 1, 1, 1])
        normed = b.instanceNormalization(b.reshape(y, [1, 4, 1, 30]))
        return b.build({"y": _pooled(b, normed, [1, 6, 5, 4], layout="nhwc")})

    after, result = check_numbers(build, "nchw")
    assert "order_free_regions_passed" not in result.counts
    assert result.counts["transposes_after_inside"] == 2
    norm = next(op for op in after.operations if op.op_type == "instanceNormalization")
    assert norm.inputs[0].shape == (1, 4, 1, 30) and norm.attr("layout") in (None, "nchw")


def test_a_mean_over_every_sample_axis_passes_with_a_batch_of_three():
    """[3, 24, 5] (C * H, W per sample) with the mean over axes 1 and 2: a whole sample, so the
    region reads the NHWC order and no transpose is left inside."""
    def build():
        b = GraphBuilder("batch_three")
        x = b.input("x", "float32", [3, 3, 6, 5])
        y = conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1])
        flat = b.reshape(y, [3, 24, 5])
        centered = b.sub(flat, b.reduceMean(flat, axes=[1, 2], keepDimensions=True))
        return b.build({"y": _pooled(b, centered, [3, 4, 6, 5])})

    after, result = check_numbers(build, "nhwc")
    assert result.counts["order_free_regions_passed"] == 1
    assert result.counts["transposes_after_inside"] == 0
    assert types(after) == ["transpose", "conv2d", "reshape", "reduceMean", "sub", "reshape",
                            "averagePool2d", "transpose"]


def test_a_partial_mean_read_outside_the_region_stops_it():
    """A mean over W alone of [1, 24, 5], as a graph output of its own: its value depends on
    which elements share a row, so the region is refused (the relu path alone would pass)."""
    def build():
        b = GraphBuilder("partial_outside")
        x = b.input("x", "float32", [1, 3, 6, 5])
        y = conv(b, x, 3, 4, "nchw", k=3, padding=[1, 1, 1, 1])
        rows = b.reshape(y, [1, 24, 5])
        mean = b.reduceMean(rows, axes=[2], keepDimensions=True)
        return b.build({"y": _pooled(b, b.relu(rows), [1, 4, 6, 5]), "m": mean})

    after, result = check_numbers(build, "nhwc")
    assert "order_free_regions_passed" not in result.counts
    assert result.counts["transposes_after_inside"] == 2
    mean = next(op for op in after.operations if op.op_type == "reduceMean")
    assert mean.inputs[0].shape == (1, 24, 5) and mean.attr("axes") == [2]


@pytest.mark.parametrize("between,passes", [(63, True), (64, False)])
def test_the_walk_up_to_a_region_entry_gives_up_after_64_ops(between, passes):
    """A transpose below a region's exit goes up through it when the walk from the exit finds
    the entry within 64 ops (the entry itself the 64th): 63 relus between them, not 64."""
    def build():
        b = GraphBuilder("long_region")
        x = b.input("x", "float32", [1, 4, 6, 5])
        value = b.reshape(x, [1, 120])
        for _ in range(between):
            value = b.relu(value)
        return b.build({"y": _pooled(b, value, [1, 4, 6, 5])})

    after, result = check_numbers(build, "nhwc")
    assert result.counts.get("order_free_regions_passed", 0) == (1 if passes else 0)
    assert result.counts["transposes_after_inside"] == (0 if passes else 1)
    assert types(after)[:2] == (["transpose", "reshape"] if passes else ["reshape", "relu"])
