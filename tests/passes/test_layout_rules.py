"""The layout pass's per-op rules: every axis-bearing rule remaps its arguments under a
permutation, checked on a shape with no two axes alike, before/after and numerically."""
from __future__ import annotations
import numpy as np
import pytest
from converter.ops.builder import GraphBuilder
from converter.formats.webnn_text import dumps

from .layout_helpers import (NHWC_TO_NCHW, assert_in_layout, check_numbers, conv, only, seeded,
    types)


# -- every axis-bearing rule, on a shape with no two axes alike --------------------------------
# x is nhwc [2, 5, 3, 4]; the conv hands the op `transpose(c, [0, 2, 3, 1])` for an nchw
# target, so axis 1 (h) becomes 2, 2 (w) becomes 3, 3 (c) becomes 1.
def _indices(shape, high, seed=3):
    return np.random.default_rng(seed).integers(0, high, shape).astype(np.int32)


AXIS_CASES = {
    "softmax": (lambda b, c, d: b.softmax(c, 1), {"axis": 2}),
    "cumulativeSum": (lambda b, c, d: b.cumulativeSum(c, 2, reversed=True), {"axis": 3}),
    "argMax": (lambda b, c, d: b.argMax(c, 1), {"axis": 2}),
    "argMin": (lambda b, c, d: b.argMin(c, 3, keepDimensions=True), {"axis": 1}),
    "reduceSum": (lambda b, c, d: b.reduceSum(c, axes=[1, 2]), {"axes": [2, 3]}),
    "reduceMean": (lambda b, c, d: b.reduceMean(c, axes=[3, 1], keepDimensions=True),
                   {"axes": [1, 2]}),
    "reduceMax": (lambda b, c, d: b.reduceMax(c), {"axes": None}),
    "concat": (lambda b, c, d: b.concat([c, d, c], 3), {"axis": 1}),
    "split": (lambda b, c, d: b.split(c, [1, 3], axis=3), {"axis": 1}),
    "slice": (lambda b, c, d: b.slice(c, [0, 1, 0, 1], [2, 3, 2, 3], strides=[1, 2, 1, 1]),
              {"starts": [0, 1, 1, 0], "sizes": [2, 3, 3, 2], "strides": [1, 1, 2, 1]}),
    "pad": (lambda b, c, d: b.pad(c, [0, 1, 2, 0], [0, 0, 1, 3], mode="edge"),
            {"beginningPadding": [0, 0, 1, 2], "endingPadding": [0, 3, 0, 1]}),
    "reverse": (lambda b, c, d: b.reverse(c, axes=[1, 3]), {"axes": [2, 1]}),
    "tile": (lambda b, c, d: b.tile(c, [1, 2, 1, 3]), {"repetitions": [1, 3, 2, 1]}),
    "gather": (lambda b, c, d: b.gather(c, b.constant(_indices((2, 2), 5)), axis=1),
               {"axis": 2}),
    "gatherElements": (lambda b, c, d: b.gatherElements(
        c, b.constant(_indices((2, 5, 3, 2), 4)), axis=3), {"axis": 1}),
    "layerNormalization": (lambda b, c, d: b.layerNormalization(
        c, axes=[1, 2], scale=b.constant(seeded((5, 3), 4))), {"axes": [2, 3]}),
    "scatterElements": (lambda b, c, d: b.scatterElements(
        c, b.constant(_indices((2, 5, 3, 1), 4)), b.constant(seeded((2, 5, 3, 1), 7)), axis=3),
        {"axis": 1}),
    "cast": (lambda b, c, d: b.cast(b.clamp(c, minValue=-0.5, maxValue=0.75), "float16"), {}),
    "where": (lambda b, c, d: b.where(b.constant(np.array([1, 0, 0, 1], np.uint8)), c, d), {}),
    "prelu": (lambda b, c, d: b.prelu(c, b.constant(seeded(4, 5))), {}),
    "add": (lambda b, c, d: b.add(b.add(c, b.constant(seeded(4, 6))),
                                  b.constant("float32", 0.5)), {}),
    "transpose": (lambda b, c, d: b.transpose(c, permutation=NHWC_TO_NCHW), {}),
}


def _axis_case(name):
    make, _ = AXIS_CASES[name]

    def build():
        b = GraphBuilder(name)
        x = b.input("x", "float32", [2, 5, 3, 4])
        c, d = conv(b, x, 4, 4, "nhwc", seed=1), conv(b, x, 4, 4, "nhwc", seed=2)
        result = make(b, c, d)
        results = result if isinstance(result, list) else [result]
        return b.build({f"y{i}": r for i, r in enumerate(results)})

    return build


@pytest.mark.parametrize("name", sorted(AXIS_CASES))
def test_axis_rules_remap_arguments_under_the_permutation(name):
    graph, result = check_numbers(_axis_case(name), "nchw")
    _, expected = AXIS_CASES[name]
    if expected:
        op = only(graph, name)
        for key, value in expected.items():
            assert op.attrs.get(key) == value, (key, op.attrs)
    # The transposes made around the convs have all moved out to the inputs and outputs.
    assert result.counts["transposes_after_inside"] == 0, dumps(graph)
    assert_in_layout(graph, "nchw")


def test_axis_rule_results_of_another_rank_get_their_own_permutation():
    graph, _ = check_numbers(_axis_case("gather"), "nchw")
    # gather over w (axis 2 in nchw) of [2, 4, 5, 3] by [2, 2] indices gives [2, 4, 2, 2, 3];
    # the original nhwc result [2, 2, 2, 3, 4] is that, transposed by [0, 2, 3, 4, 1].
    out = graph.outputs["y0"].producer
    assert out.op_type == "transpose" and out.attr("permutation") == [0, 2, 3, 4, 1]
    graph, _ = check_numbers(_axis_case("reduceSum"), "nchw")
    assert "transpose" not in types(graph)[1:]  # [n, c] is [n, c] in both layouts


def test_expand_and_order_keeping_reshape_take_the_permutation():
    def build():
        b = GraphBuilder("expand")
        x = b.input("x", "float32", [2, 5, 3, 4])
        c = conv(b, x, 4, 1, "nhwc")  # [2, 5, 3, 1]
        return b.build({"e": b.expand(c, [3, 2, 5, 3, 4]), "r": b.reshape(c, [2, 15])})

    graph, result = check_numbers(build, "nchw")
    assert only(graph, "expand").attr("newShape") == [3, 2, 4, 5, 3]
    assert graph.outputs["e"].producer.attr("permutation") == [0, 1, 3, 4, 2]
    assert graph.outputs["r"].producer.op_type == "reshape"  # reads the nchw conv directly
    assert result.counts["transposes_after_inside"] == 0


def test_an_op_that_cannot_take_the_permutation_keeps_the_transpose_in_front():
    def build():
        b = GraphBuilder("triangular")
        x = b.input("x", "float32", [2, 5, 3, 4])
        return b.build({"y": b.triangular(conv(b, x, 4, 4, "nhwc"), diagonal=1)})

    graph, result = check_numbers(build, "nchw")
    assert types(graph) == ["transpose", "conv2d", "transpose", "triangular"]
    assert result.counts["transposes_after_inside"] == 1


def test_quantize_dequantize_move_with_their_scales():
    def build():
        b = GraphBuilder("qdq")
        x = b.input("x", "float32", [2, 5, 3, 4])
        scale = b.constant(np.float32([0.1, 0.2, 0.05, 0.3]).reshape(1, 1, 1, 4))
        zero = b.constant(np.int8([0, 1, -2, 3]).reshape(1, 1, 1, 4))
        q = b.quantizeLinear(conv(b, x, 4, 4, "nhwc"), scale, zero)
        return b.build({"y": conv(b, b.dequantizeLinear(q, scale, zero), 4, 2, "nhwc")})

    graph, result = check_numbers(build, "nchw")
    assert only(graph, "quantizeLinear").inputs[1].shape == (1, 4, 1, 1)
    assert types(graph).count("transpose") == 2 and result.counts["transposes_after_inside"] == 0
