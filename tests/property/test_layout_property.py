"""The layout pass on random chains of layout-bearing ops: convolutions (grouped, depthwise,
strided), pools, per-channel biases, residual adds, channel concats and softmaxes, batch and
instance normalization, resample and spatial reductions, built in nchw or nhwc and converted
to the other layout. After the pass every convolution and pool is in the target's layout, the
only transposes are at the graph boundary (one per input, one per output at most), and the
graph computes the same numbers as before (seeded inputs, a few ULP: a convolution in the
other layout may add in another order)."""
from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from converter.ops.builder import GraphBuilder

from converter.passes.layout import source_layouts

from ..passes.layout_helpers import (NCHW_TO_NHWC, NHWC_TO_NCHW, check_numbers, conv, seeded,
                                   types)

STEPS = ["conv", "depthwise", "unary", "pool", "bias", "residual", "concat", "softmax",
         "batchnorm", "instancenorm", "resample", "reduce"]


def build_chain(layout: str, c: int, h: int, w: int, steps: list[tuple[str, int]]):
    """A graph applying `steps` (name, small parameter) in order to one input."""
    nchw = layout == "nchw"
    ch = 1 if nchw else 3
    spatial = [2, 3] if nchw else [1, 2]
    b = GraphBuilder(f"chain_{layout}")
    x = b.input("x", "float32", [1, c, h, w] if nchw else [1, h, w, c])
    cur = x
    for i, (step, p) in enumerate(steps):
        seed = 100 + i
        if step == "conv":
            k, stride = 1 + p % 3, 1 + (p // 3) % 2
            if h < k or w < k:
                continue
            out_c = 2 + p % 3
            cur = conv(b, cur, c, out_c, layout, k=k, seed=seed, strides=[stride, 1],
                       padding=[k // 2, (k - 1) // 2, 0, k - 1])
            h = (h + k // 2 + (k - 1) // 2 - k) // stride + 1
            w = w
            c = out_c
        elif step == "depthwise":
            if h < 3 or w < 3:
                continue
            if nchw:
                f = b.constant(seeded((c, 1, 3, 3), seed))
                cur = b.conv2d(cur, f, groups=c, padding=[1, 1, 1, 1], dilations=[1, 1])
            else:
                f = b.constant(seeded((1, 3, 3, c), seed))
                cur = b.conv2d(cur, f, groups=c, padding=[1, 1, 1, 1], inputLayout="nhwc",
                               filterLayout="ihwo")
        elif step == "unary":
            cur = [b.relu, b.sigmoid, b.tanh, lambda v: b.clamp(v, minValue=-0.5,
                                                                maxValue=0.5)][p % 4](cur)
        elif step == "pool":
            if h < 2 or w < 2:
                continue
            stride = [1, 2][p % 2]
            pool = [b.maxPool2d, b.averagePool2d, b.l2Pool2d][(p // 2) % 3]
            cur = pool(cur, windowDimensions=[2, 2], strides=[stride, 1], layout=layout)
            h, w = (h - 2) // stride + 1, w - 1
        elif step == "bias":
            shape = [c, 1, 1] if nchw else [c]
            cur = b.add(cur, b.constant(seeded(shape, seed)))
        elif step == "residual":
            cur = b.add(cur, b.relu(cur))
        elif step == "concat":
            if c > 6:
                continue
            cur = b.concat([cur, b.sigmoid(cur)], ch)
            c *= 2
        elif step == "softmax":
            cur = b.softmax(cur, ch)
        elif step == "batchnorm":
            mean, var = b.constant(seeded([c], seed)), b.constant(
                np.abs(seeded([c], seed + 1)) + 0.5)
            cur = b.batchNormalization(cur, mean, var, axis=ch,
                                       scale=b.constant(seeded([c], seed + 2)))
        elif step == "instancenorm":
            # A fixed spatial pattern first: over a constant channel (a relu that zeroed it, a
            # softmax over one channel) the variance is 0 and instance normalization multiplies
            # the mean's rounding, which depends on the order of the additions, by
            # 1/sqrt(epsilon); the comparison would then measure that conditioning, not the
            # layout.
            pattern = seeded([1, c, h, w] if nchw else [1, h, w, c], seed + 1)
            cur = b.instanceNormalization(b.add(cur, b.constant(pattern)), layout=layout,
                                          bias=b.constant(seeded([c], seed)))
        elif step == "resample":
            cur = b.resample2d(cur, scales=[2.0, 1.0], axes=spatial,
                               mode=["nearest-neighbor", "linear"][p % 2])
            h *= 2
        elif step == "reduce":
            cur = b.reduceMean(cur, axes=[spatial[p % 2]], keepDimensions=True)
            if p % 2 == 0:
                h = 1
            else:
                w = 1
    return b.build({"y": b.relu(cur)})


@given(st.sampled_from(["nchw", "nhwc"]), st.integers(1, 3), st.integers(3, 7),
       st.integers(3, 7), st.lists(st.tuples(st.sampled_from(STEPS), st.integers(0, 11)),
                                   min_size=1, max_size=6))
def test_random_layout_chains_keep_numbers_and_transpose_only_at_the_boundary(
        layout, c, h, w, steps):
    target = "nhwc" if layout == "nchw" else "nchw"
    graph, result = check_numbers(lambda: build_chain(layout, c, h, w, steps), target)

    for op in graph.operations:
        if op.op_type == "conv2d":
            assert op.attr("inputLayout") == target, op
            assert op.inputs[1].is_constant  # re-laid out at conversion time
        if op.op_type in ("maxPool2d", "averagePool2d", "l2Pool2d"):
            assert op.attr("layout") == target, op
        if op.op_type == "instanceNormalization":
            assert op.attr("layout") == target, op
    assert result.counts["transposes_after_inside"] == 0, (types(graph), result.notes)
    assert types(graph).count("transpose") <= 2  # the input's and the output's, at most
    for op in graph.operations:
        if op.op_type == "transpose":
            at_input = op.inputs[0] is graph.inputs["x"]
            at_output = any(o is graph.outputs["y"] for o in op.outputs)
            assert at_input or at_output, types(graph)


@given(st.sampled_from(["nchw", "nhwc"]), st.integers(1, 3), st.integers(3, 7),
       st.integers(3, 7), st.lists(st.tuples(st.sampled_from(STEPS), st.integers(0, 11)),
                                   min_size=1, max_size=5))
def test_random_chains_presented_in_the_target_layout_need_no_transpose(layout, c, h, w, steps):
    # Asked to present inputs and outputs in the target's layout (io), the pass first finds
    # the layout each one has from the layout-bearing ops it meets; it is never the wrong one,
    # and where both are known the converted graph has no transpose at all.
    target = "nhwc" if layout == "nchw" else "nchw"
    perm = NCHW_TO_NHWC if layout == "nchw" else NHWC_TO_NCHW
    inputs, outputs = source_layouts(build_chain(layout, c, h, w, steps))
    assert inputs["x"] in (layout, None) and outputs["y"] in (layout, None)
    graph, result = check_numbers(
        lambda: build_chain(layout, c, h, w, steps), target, io=target,
        inputs={"x": perm} if inputs["x"] else {}, outputs={"y": perm} if outputs["y"] else {})
    assert result.counts["transposes_after_inside"] == 0, types(graph)
    if inputs["x"] and outputs["y"]:
        assert types(graph).count("transpose") == 0, types(graph)
