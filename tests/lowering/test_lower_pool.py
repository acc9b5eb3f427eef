"""averagePool2d, l2Pool2d and maxPool2d through the ONNX lowering.

The reference averages and takes l2 norms over the window's elements that lie inside the input
(padding never counts). Budgets: max is exact; average and l2 get the reduction budget of the
number of elements in the window (tolerances.md), l2 doubled plus one for its squares and root.
"""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from . import references as ref
from .helpers import assert_exact, assert_ulp, run1

RNG = np.random.default_rng(11)
X16 = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)


def _pool(kind: str, x: np.ndarray, dtype="float32", **options) -> np.ndarray:
    b = GraphBuilder()
    xi = b.input("x", dtype, list(x.shape))
    return run1(b, getattr(b, kind)(xi, **options), {"x": x.astype(dtype)})


def test_average_and_max_hand_values():
    got = _pool("averagePool2d", X16, windowDimensions=[2, 2], strides=[2, 2])
    assert_exact(got, [[[[3.5, 5.5], [11.5, 13.5]]]], np.float32)
    got = _pool("maxPool2d", X16, windowDimensions=[2, 2], strides=[2, 2])
    assert_exact(got, [[[[6, 8], [14, 16]]]], np.float32)


def test_l2_pool_hand_values():
    x = np.array([[[[3, 4], [0, 0]], [[1, 2], [2, 4]]]], np.float32)  # two channels
    got = _pool("l2Pool2d", x)  # global window
    assert_ulp(got, np.array([[[[5.0]], [[5.0]]]]), 1)


def test_global_pooling_is_the_default_window():
    got = _pool("averagePool2d", X16)
    assert_exact(got, [[[[8.5]]]], np.float32)
    assert_exact(_pool("maxPool2d", X16), [[[[16]]]], np.float32)


@pytest.mark.parametrize("kind,short", [("averagePool2d", "avg"), ("maxPool2d", "max"),
                                        ("l2Pool2d", "l2")])
@pytest.mark.parametrize("options", [
    dict(windowDimensions=[3, 3], padding=[1, 1, 1, 1]),
    dict(windowDimensions=[2, 3], strides=[2, 1], padding=[0, 1, 2, 0]),
    dict(windowDimensions=[2, 2], dilations=[2, 2], padding=[1, 0, 0, 1]),
])
def test_pools_match_the_reference(kind, short, options):
    x = RNG.random((2, 3, 6, 5)).astype(np.float32)
    got = _pool(kind, x, **options)
    want = ref.pool2d(short, x, options["windowDimensions"], options.get("padding", (0,) * 4),
                      options.get("strides", (1, 1)), options.get("dilations", (1, 1)))
    n = options["windowDimensions"][0] * options["windowDimensions"][1]
    assert_ulp(got, want, {"max": 0, "avg": n + 1, "l2": 2 * n + 1}[short])


@pytest.mark.parametrize("kind,short", [("averagePool2d", "avg"), ("maxPool2d", "max"),
                                        ("l2Pool2d", "l2")])
@pytest.mark.parametrize("options", [
    # padding as large as the (undilated) window: ONNX pools refuse pads >= kernel, so the
    # input is padded by a Pad node (no window lies wholly in the padding)
    dict(windowDimensions=[2, 2], dilations=[2, 2], padding=[2, 2, 2, 0]),
    dict(windowDimensions=[3, 2], strides=[1, 2], dilations=[1, 3], padding=[0, 0, 2, 2]),
    # ceil rounding with dilation widens the end padding to the window's size
    dict(windowDimensions=[2, 1], strides=[2, 1], dilations=[2, 1], padding=[0, 1, 0, 0],
         outputShapeRounding="ceil"),
])
def test_padding_as_large_as_the_window(kind, short, options):
    x = RNG.standard_normal((1, 2, 3, 4)).astype(np.float32) + 0.5
    got = _pool(kind, x, **options)
    pad = options["padding"]
    out_hw = None
    if options.get("outputShapeRounding") == "ceil":
        eff = [(k - 1) * d + 1 for k, d in zip(options["windowDimensions"], options["dilations"])]
        out_hw = [-(-(3 + pad[0] + pad[1] - eff[0]) // options["strides"][0]) + 1,
                  -(-(4 + pad[2] + pad[3] - eff[1]) // options["strides"][1]) + 1]
    want = ref.pool2d(short, x, options["windowDimensions"], pad, options.get("strides", (1, 1)),
                      options.get("dilations", (1, 1)), out_hw=out_hw)
    assert got.shape == want.shape
    n = options["windowDimensions"][0] * options["windowDimensions"][1]
    assert_ulp(got, want, {"max": 0, "avg": n + 1, "l2": 2 * n + 1}[short])


@pytest.mark.parametrize("kind,short", [("averagePool2d", "avg"), ("maxPool2d", "max")])
def test_ceil_rounding_keeps_the_partial_last_window(kind, short):
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    got = _pool(kind, x, windowDimensions=[2, 2], strides=[2, 2], outputShapeRounding="ceil")
    assert got.shape == (1, 1, 3, 3)  # floor would give 2x2
    want = ref.pool2d(short, x, [2, 2], strides=(2, 2), out_hw=[3, 3])
    assert_ulp(got, want, 5)
    # the corner window holds element 24 alone
    assert got[0, 0, 2, 2] == 24


def test_output_sizes_select_the_ceil_shape():
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    got = _pool("maxPool2d", x, windowDimensions=[2, 2], strides=[2, 2], outputSizes=[3, 3])
    assert_exact(got, [[[[6, 8, 9], [16, 18, 19], [21, 23, 24]]]], np.float32)
    got = _pool("maxPool2d", x, windowDimensions=[2, 2], strides=[2, 2], outputSizes=[2, 2])
    assert_exact(got, [[[[6, 8], [16, 18]]]], np.float32)


def test_nhwc_layout():
    x = RNG.random((1, 4, 4, 3)).astype(np.float32)
    got = _pool("averagePool2d", x, windowDimensions=[2, 2], layout="nhwc")
    want = ref.pool2d("avg", x.transpose(0, 3, 1, 2), [2, 2]).transpose(0, 2, 3, 1)
    assert_ulp(got, want, 5)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint32", "int64", "uint64"])
def test_max_pool_on_integers(dtype):
    x = np.array([[[[1, 9, 3], [4, 2, 8], [7, 5, 6]]]])
    got = _pool("maxPool2d", x, dtype, windowDimensions=[2, 2], padding=[0, 1, 0, 1],
                strides=[2, 2])
    assert_exact(got, [[[[9, 8], [7, 6]]]], dtype)


def test_max_pool_int64_extremes_and_dilations():
    big = 2**62 + 1
    x = np.array([[[[big, -big, 0], [1, 2, 3], [-5, 7, big + 2]]]], np.int64)
    got = _pool("maxPool2d", x, "int64", windowDimensions=[2, 2], dilations=[2, 2])
    assert_exact(got, [[[[big + 2]]]], np.int64)


def test_float16_average_pool():
    got = _pool("averagePool2d", X16, "float16", windowDimensions=[2, 2], strides=[2, 2])
    assert_exact(got, [[[[3.5, 5.5], [11.5, 13.5]]]], np.float16)


@pytest.mark.parametrize("options", [
    dict(windowDimensions=[2, 2], padding=[1, 0, 0, 1]),
    dict(windowDimensions=[2, 3], strides=[2, 1], dilations=[1, 2], padding=[0, 1, 2, 0]),
    dict(windowDimensions=[1, 1], strides=[1, 2]),
])
def test_int64_max_pool_by_taps_with_padding_strides_and_dilations(options):
    # No ORT MaxPool kernel takes int64: the lowering pads with the lowest int64 and takes the
    # max of the window's strided slices. Values beyond int32 must come through exactly.
    x = (RNG.integers(-1000, 1000, (1, 2, 5, 6)) * (2**40)).astype(np.int64)
    got = _pool("maxPool2d", x, dtype="int64", **options)
    want = ref.pool2d("max", x.astype(np.float64), options["windowDimensions"],
                      options.get("padding", (0, 0, 0, 0)), options.get("strides", (1, 1)),
                      options.get("dilations", (1, 1)))
    assert got.dtype == np.int64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want.astype(np.int64))


@pytest.mark.parametrize("op_type", ["averagePool2d", "l2Pool2d", "maxPool2d"])
def test_nhwc_pool_without_window_dimensions_pools_the_whole_plane(op_type):
    # windowDimensions absent (None): the window is the input's [H, W], read from the nhwc shape
    x = np.array([[[[1, -2], [3, 4], [0, 2]], [[-1, 6], [2, 0], [1, 2]]]], np.float32)  # 1x2x3x2
    b = GraphBuilder()
    xi = b.input("x", "float32", [1, 2, 3, 2])
    y = b.graph.add_operation(op_type, [xi], {"layout": "nhwc", "windowDimensions": None}).output
    got = run1(b, y, {"x": x})
    plane = x.reshape(6, 2)
    want = {"averagePool2d": plane.mean(0), "maxPool2d": plane.max(0),
            "l2Pool2d": np.sqrt((plane.astype(np.float64) ** 2).sum(0))}[op_type]
    assert_ulp(got, want.reshape(1, 1, 1, 2).astype(np.float32), 8)


def test_average_pool_at_opset_18_runs_without_the_dilations_attribute():
    # AveragePool has no dilations before opset 19: [1, 1] is dropped, not refused
    from converter.lowering.onnx.executor import prepare
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    b = GraphBuilder()
    xi = b.input("x", "float32", [1, 1, 4, 4])
    g = b.build({"y": b.averagePool2d(xi, windowDimensions=[2, 2], strides=[2, 2])})
    got = prepare(g, 18)({"x": x})["y"]
    assert_exact(got, [[[[2.5, 4.5], [10.5, 12.5]]]], np.float32)


def test_nhwc_average_pool_with_padding_as_wide_as_the_window_divides_by_real_counts():
    # padding >= window: the input is padded first and each window's sum divided by its count
    # of real elements, a [OH, OW] table that must broadcast over nhwc's channels too
    x = RNG.random((1, 2, 3, 3)).astype(np.float32)
    b = GraphBuilder()
    xi = b.input("x", "float32", [1, 3, 3, 2])
    # (dilation 3 on H: every window still reaches a real row)
    y = b.averagePool2d(xi, windowDimensions=[2, 2], padding=[2, 2, 0, 1], dilations=[3, 1],
                        layout="nhwc")
    got = run1(b, y, {"x": np.ascontiguousarray(x.transpose(0, 2, 3, 1))})
    want = ref.pool2d("avg", x, (2, 2), padding=(2, 2, 0, 1), dilations=(3, 1))
    assert_ulp(got.transpose(0, 3, 1, 2), want, 8)
