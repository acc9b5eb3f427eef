"""averagePool2d, l2Pool2d and maxPool2d exported to TFLite's NHWC pools. Padding never counts
in WebNN: an average divides by the input elements in its window, a maximum ignores padding,
and an L2 norm adds nothing for it. Budget: one rounding per window element plus two."""
from __future__ import annotations

import math

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.errors import UnsupportedError
from converter.exporters.tflite import to_tflite

from .helpers import assert_declared_shapes_hold, check, ops_of, rand

RNG = np.random.default_rng(14)
X = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)  # 1..9


def test_hand_values_with_padding_that_does_not_count():
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 3, 3])
    opts = dict(windowDimensions=[2, 2], padding=[0, 1, 0, 1])
    graph = b.build({"avg": b.averagePool2d(x, **opts), "max": b.maxPool2d(x, **opts),
                     "l2": b.l2Pool2d(x, **opts)})
    got = check(graph, {"x": X}, ulp=6)
    assert got["avg"][0, 0].tolist() == [[3, 4, 4.5], [6, 7, 7.5], [7.5, 8.5, 9]]
    assert got["max"][0, 0].tolist() == [[5, 6, 6], [8, 9, 9], [8, 9, 9]]
    l2 = [[math.sqrt(1 + 4 + 16 + 25), math.sqrt(4 + 9 + 25 + 36), math.sqrt(9 + 36)],
          [math.sqrt(16 + 25 + 49 + 64), math.sqrt(25 + 36 + 64 + 81), math.sqrt(36 + 81)],
          [math.sqrt(49 + 64), math.sqrt(64 + 81), 9]]
    np.testing.assert_allclose(got["l2"][0, 0], l2, rtol=3e-7)


def test_negative_inputs_never_lose_to_padding_in_max_pool():
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 3, 3])
    graph = b.build({"y": b.maxPool2d(x, windowDimensions=[2, 2], padding=[1, 0, 1, 0])})
    got = check(graph, {"x": -X}, ulp=0)["y"]
    assert got[0, 0].tolist() == [[-1, -1, -2], [-1, -1, -2], [-4, -4, -5]]


@pytest.mark.parametrize("kind", ["maxPool2d", "averagePool2d", "l2Pool2d"])
@pytest.mark.parametrize("shape,opts", [
    ((1, 3, 8, 8), dict(windowDimensions=[2, 2], strides=[2, 2])),
    ((2, 3, 7, 8), dict(windowDimensions=[3, 3], padding=[1, 1, 1, 1])),
    ((1, 3, 8, 8), dict(windowDimensions=[3, 3], padding=[1, 1, 1, 1], strides=[2, 2])),
    ((1, 3, 7, 7), dict(windowDimensions=[3, 3], strides=[2, 2], outputShapeRounding="ceil")),
    ((1, 3, 7, 9), dict(windowDimensions=[2, 3], padding=[0, 1, 2, 0], strides=[1, 2])),
    ((1, 7, 9, 3), dict(windowDimensions=[3, 3], padding=[1, 1, 1, 1], layout="nhwc")),
    ((1, 3, 5, 6), dict()),  # the whole plane
])
def test_pool_options(kind, shape, opts):
    b = GraphBuilder()
    x = b.input("x", "float32", list(shape))
    graph = b.build({"y": getattr(b, kind)(x, **opts)})
    window = opts.get("windowDimensions", list(shape[2:4]))
    check(graph, {"x": rand(RNG, shape, "float32", 0, 1)}, ulp=2 * window[0] * window[1] + 2)
    assert ("TRANSPOSE" in ops_of(graph)) == (opts.get("layout") != "nhwc")


@pytest.mark.parametrize("kind", ["maxPool2d", "averagePool2d", "l2Pool2d"])
def test_float16_pools(kind):
    b = GraphBuilder()
    x = b.input("x", "float16", [1, 2, 6, 6])
    graph = b.build({"y": getattr(b, kind)(x, windowDimensions=[3, 3], padding=[1, 1, 1, 1])})
    y = check(graph, {"x": rand(RNG, (1, 2, 6, 6), "float16", 0, 1)}, ulp=2)["y"]
    assert y.dtype == np.float16


def test_dilated_pools_are_reported():
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 7, 7])
    graph = b.build({"y": b.maxPool2d(x, windowDimensions=[2, 2], dilations=[2, 2])})
    with pytest.raises(UnsupportedError, match="TFLite's pools have no dilations"):
        to_tflite(graph)


def _exported(kind, shape, **opts):
    b = GraphBuilder()
    x = b.input("x", "float32", list(shape))
    graph = b.build({"y": getattr(b, kind)(x, **opts)})
    check(graph, {"x": rand(RNG, shape, "float32", 0, 1)}, ulp=20)
    assert_declared_shapes_hold(to_tflite(graph))
    return graph


@pytest.mark.parametrize("kind", ["maxPool2d", "averagePool2d", "l2Pool2d"])
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_ceil_rounding_that_adds_a_window_widens_the_end_padding(kind, layout):
    # height 8, window 3, stride 2: floor gives 3 windows, ceil 4 (1 more end padding);
    # width 7, window 3, stride 3: floor 2, ceil 3 (2 more): each axis widened by its own need
    shape = (1, 2, 8, 7) if layout == "nchw" else (1, 8, 7, 2)
    graph = _exported(kind, shape, windowDimensions=[3, 3], strides=[2, 3], layout=layout,
                      outputShapeRounding="ceil")
    assert graph.outputs["y"].shape == ((1, 2, 4, 3) if layout == "nchw" else (1, 4, 3, 2))


@pytest.mark.parametrize("kind", ["maxPool2d", "averagePool2d"])
@pytest.mark.parametrize("strides, padding", [([2, 2], [0, 1, 0, 1]), ([1, 1], [1, 1, 1, 1]),
                                              ([2, 1], [0, 1, 1, 1])])
def test_padding_that_is_tflites_same_exports_without_a_pad(kind, strides, padding):
    # 8 x 8, window 3: stride 2 needs 1 padding (at the end), stride 1 needs 2 (one each side)
    graph = _exported(kind, (1, 2, 8, 8), windowDimensions=[3, 3], strides=strides,
                      padding=padding)
    assert not {"PAD", "PADV2"} & set(ops_of(graph))


def test_average_pool_whose_windows_never_reach_the_padding_has_no_correction():
    # 4 x 6, window 2 x 3 at its own stride, end padding 1: windows [0, 1], [2, 3] by
    # [0, 2], [3, 5], every one of 6 input elements
    graph = _exported("averagePool2d", (1, 1, 4, 6), windowDimensions=[2, 3], strides=[2, 3],
                      padding=[0, 1, 0, 1])
    assert "MUL" not in ops_of(graph)


def test_l2_pool_without_padding_has_no_pad():
    graph = _exported("l2Pool2d", (1, 2, 6, 6), windowDimensions=[2, 3], strides=[2, 3])
    assert "PAD" not in ops_of(graph)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_average_pool_windows_of_padding_only_average_to_zero(layout):
    # padding 2 below a 2-row input with a 1x1 window: the last two rows see only padding, and
    # their average is their zero sum (the ONNX lowering's answer), not 0/0
    b = GraphBuilder()
    shape = [1, 1, 2, 2] if layout == "nchw" else [1, 2, 2, 1]
    x = b.input("x", "float32", shape)
    graph = b.build({"y": b.averagePool2d(x, windowDimensions=[1, 1], padding=[0, 2, 1, 0],
                                          layout=layout)})
    got = check(graph, {"x": np.arange(1, 5, dtype=np.float32).reshape(shape)}, ulp=0)["y"]
    rows = got[0, 0] if layout == "nchw" else got[0, :, :, 0]
    assert rows.tolist() == [[0, 1, 2], [0, 3, 4], [0, 0, 0], [0, 0, 0]]


def test_average_pool_where_every_window_reaches_the_padding():
    # 2 x 2, window 2, stride 2, padding 1 each side: every window holds one input element
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 2, 2])
    graph = b.build({"y": b.averagePool2d(x, windowDimensions=[2, 2], strides=[2, 2],
                                          padding=[1, 1, 1, 1])})
    got = check(graph, {"x": X[:, :, :2, :2]}, ulp=4)["y"]
    assert got[0, 0].tolist() == [[1, 2], [4, 5]]


@pytest.mark.parametrize("kind", ["maxPool2d", "averagePool2d", "l2Pool2d"])
def test_end_padding_on_one_axis_only_stays_on_that_axis(kind):
    # width padded 2 at the end, height not at all: 3 x 4 windows
    graph = _exported(kind, (1, 2, 8, 8), windowDimensions=[3, 3], strides=[2, 2],
                      padding=[0, 0, 0, 2])
    assert graph.outputs["y"].shape == (1, 2, 3, 4)
