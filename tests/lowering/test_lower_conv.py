"""conv2d and convTranspose2d through the ONNX lowering, against direct-loop references.

Budgets: kernelHeight x kernelWidth x (inputChannels / groups) x 2 ULP (tolerances.md). Inputs
and filters are non-negative so no sum cancels and the ULP measure stays meaningful.
"""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from . import references as ref
from .helpers import assert_exact, assert_ulp, run1

RNG = np.random.default_rng(7)


def _rand(*shape):
    return RNG.random(shape).astype(np.float32)


def test_conv2d_hand_values_with_padding_and_bias():
    # 3x3 input of 1..9, 2x2 filter of ones, padding 1 on the end only, bias 10.
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 3, 3])
    y = b.conv2d(x, b.constant(np.ones((1, 1, 2, 2), np.float32)), padding=[0, 1, 0, 1],
                 bias=b.constant(np.array([10], np.float32)))
    got = run1(b, y, {"x": np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)})
    assert_exact(got, [[[[22, 26, 19], [34, 38, 25], [25, 27, 19]]]], np.float32)


@pytest.mark.parametrize("options", [
    dict(),
    dict(padding=[1, 1, 1, 1]),
    dict(strides=[2, 2], padding=[1, 0, 2, 1]),
    dict(dilations=[2, 1], padding=[2, 2, 0, 1]),
    dict(groups=2),
    dict(groups=4, strides=[1, 2]),  # depthwise
])
def test_conv2d_matches_direct_loops(options):
    groups = options.get("groups", 1)
    x, w = _rand(2, 4, 6, 7), _rand(4, 4 // groups, 3, 2)
    bias = _rand(4)
    b = GraphBuilder()
    xi = b.input("x", "float32", list(x.shape))
    y = b.conv2d(xi, b.constant(w), bias=b.constant(bias), **options)
    got = run1(b, y, {"x": x})
    want = ref.conv2d(x, w, bias, **{k: v for k, v in options.items()})
    assert_ulp(got, want, 3 * 2 * (4 // groups) * 2 + 1)  # +1 for the bias add


@pytest.mark.parametrize("layout,perm", [("oihw", (0, 1, 2, 3)), ("hwio", (2, 3, 1, 0)),
                                         ("ohwi", (0, 2, 3, 1)), ("ihwo", (1, 2, 3, 0))])
@pytest.mark.parametrize("input_layout", ["nchw", "nhwc"])
def test_conv2d_every_filter_and_input_layout(layout, perm, input_layout):
    x, w = _rand(1, 2, 5, 5), _rand(4, 1, 3, 3)  # groups=2: inputChannels/groups = 1
    want = ref.conv2d(x, w, padding=(1, 0, 0, 1), groups=2)
    feed = x if input_layout == "nchw" else x.transpose(0, 2, 3, 1)
    b = GraphBuilder()
    xi = b.input("x", "float32", list(feed.shape))
    y = b.conv2d(xi, b.constant(np.ascontiguousarray(w.transpose(perm))), padding=[1, 0, 0, 1],
                 groups=2, inputLayout=input_layout, filterLayout=layout)
    got = run1(b, y, {"x": feed})
    if input_layout == "nhwc":
        got = got.transpose(0, 3, 1, 2)
    assert_ulp(got, want, 3 * 3 * 1 * 2)


def test_conv2d_float16():
    x, w = _rand(1, 2, 4, 4), _rand(3, 2, 2, 2)
    b = GraphBuilder()
    xi = b.input("x", "float16", [1, 2, 4, 4])
    y = b.conv2d(xi, b.constant(w.astype(np.float16)))
    got = run1(b, y, {"x": x.astype(np.float16)})
    want = ref.conv2d(x.astype(np.float16), w.astype(np.float16))
    assert got.dtype == np.float16
    assert_ulp(got, want, 2 * 2 * 2 * 2)


def test_conv_transpose2d_hand_values():
    # 2x2 input [[1,2],[3,4]], 2x2 filter of ones, stride 2: each input value fills a 2x2 block.
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 2, 2])
    y = b.convTranspose2d(x, b.constant(np.ones((1, 1, 2, 2), np.float32)), strides=[2, 2])
    got = run1(b, y, {"x": np.array([[[[1, 2], [3, 4]]]], np.float32)})
    assert_exact(got, [[[[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]]]], np.float32)


@pytest.mark.parametrize("options", [
    dict(),
    dict(strides=[2, 2], padding=[1, 1, 1, 1]),
    dict(strides=[2, 3], outputPadding=[1, 2]),
    dict(strides=[2, 2], dilations=[2, 1], padding=[0, 1, 1, 0]),
    dict(groups=2, strides=[2, 1]),
])
def test_conv_transpose2d_matches_scatter_reference(options):
    groups = options.get("groups", 1)
    x, w = _rand(2, 4, 3, 4), _rand(4, 6 // groups, 3, 2)
    bias = _rand(6)
    b = GraphBuilder()
    xi = b.input("x", "float32", list(x.shape))
    y = b.convTranspose2d(xi, b.constant(w), bias=b.constant(bias), **options)
    got = run1(b, y, {"x": x})
    kw = {k: v for k, v in options.items() if k != "outputPadding"}
    want = ref.conv_transpose2d(x, w, bias, output_padding=options.get("outputPadding", (0, 0)),
                                **kw)
    assert_ulp(got, want, 3 * 2 * (4 // groups) * 2 + 1)


def test_conv_transpose2d_output_sizes_pick_the_padding():
    x, w = _rand(1, 1, 3, 3), _rand(1, 2, 3, 3)
    b = GraphBuilder()
    xi = b.input("x", "float32", [1, 1, 3, 3])
    # stride 2: the formula gives 7; outputSizes 8 means one row/column of output padding.
    y = b.convTranspose2d(xi, b.constant(w), strides=[2, 2], outputSizes=[8, 8])
    got = run1(b, y, {"x": x})
    assert got.shape == (1, 2, 8, 8)
    assert_ulp(got, ref.conv_transpose2d(x, w, strides=(2, 2), output_padding=(1, 1)), 18)


@pytest.mark.parametrize("layout,perm", [("iohw", (0, 1, 2, 3)), ("hwoi", (2, 3, 1, 0)),
                                         ("ohwi", (1, 2, 3, 0))])
def test_conv_transpose2d_filter_layouts_and_nhwc(layout, perm):
    x, w = _rand(1, 2, 3, 3), _rand(2, 3, 2, 2)  # iohw: [in 2, out 3, 2, 2]
    want = ref.conv_transpose2d(x, w, strides=(2, 1))
    b = GraphBuilder()
    xi = b.input("x", "float32", [1, 3, 3, 2])
    y = b.convTranspose2d(xi, b.constant(np.ascontiguousarray(w.transpose(perm))),
                          strides=[2, 1], inputLayout="nhwc", filterLayout=layout)
    got = run1(b, y, {"x": x.transpose(0, 2, 3, 1)})
    assert_ulp(got.transpose(0, 3, 1, 2), want, 2 * 2 * 2 * 2)


@pytest.mark.parametrize("op_type, options", [
    ("conv2d", ("padding", "strides", "dilations")),
    ("convTranspose2d", ("padding", "strides", "dilations", "outputPadding")),
    ("averagePool2d", ("windowDimensions", "padding", "strides", "dilations")),
    ("maxPool2d", ("windowDimensions", "padding", "strides", "dilations")),
])
def test_options_given_as_none_lower_as_the_spec_s_defaults(op_type, options):
    # None in an operation's attrs means "not given" (an importer may write it so): the
    # lowering then uses the spec's defaults, and the numbers are those of the plain call
    from converter.ops.builder import GraphBuilder
    from converter.runtimes.execute import run

    xs = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    ws = np.array([[[[1, -2], [3, 0.5]]]], np.float32)
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 4, 4])
    w = b.input("w", "float32", [1, 1, 2, 2])
    operands = [x] if "Pool" in op_type else [x, w]
    plain = getattr(b, op_type)(*operands)
    given_none = b.graph.add_operation(op_type, operands, {o: None for o in options}).output
    g = b.build({"plain": plain, "none": given_none})
    got = run(g, {"x": xs, "w": ws})
    assert got["none"].shape == got["plain"].shape
    np.testing.assert_array_equal(got["none"], got["plain"])


def test_conv_transpose2d_output_sizes_with_nhwc_padding_and_a_non_square_filter():
    # in 3x4, filter 2x3 (hwoi), strides [2, 3], dilations [1, 2], padding [1, 0, 0, 2]:
    # the formula gives H (3-1)*2 + (2-1)*1 + 1 - 1 - 0 = 5, W (4-1)*3 + (3-1)*2 + 1 - 0 - 2 = 12;
    # outputSizes [5, 13] is output padding 0 on H and 1 on W.
    x, w = _rand(1, 2, 3, 4), _rand(2, 1, 2, 3)  # w as iohw
    b = GraphBuilder()
    xi = b.input("x", "float32", [1, 3, 4, 2])
    y = b.convTranspose2d(xi, b.constant(np.ascontiguousarray(w.transpose(2, 3, 1, 0))),
                          strides=[2, 3], dilations=[1, 2], padding=[1, 0, 0, 2],
                          outputSizes=[5, 13], inputLayout="nhwc", filterLayout="hwoi")
    got = run1(b, y, {"x": np.ascontiguousarray(x.transpose(0, 2, 3, 1))})
    assert got.shape == (1, 5, 13, 1)
    want = ref.conv_transpose2d(x, w, padding=(1, 0, 0, 2), strides=(2, 3), dilations=(1, 2),
                                output_padding=(0, 1))
    assert_ulp(got.transpose(0, 3, 1, 2), want, 2 * 3 * 2 * 2)

