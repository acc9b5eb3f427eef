"""The vectorised conv2d, convTranspose2d and pooling kernels against straightforward loops over
the spec's definitions (tests/lowering/references.py, written independently), across layouts,
groups, strides, dilations, asymmetric padding, outputPadding/outputSizes and ceil rounding."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.errors import UnsupportedError
from converter.verification.reference import evaluate
from converter.verification.reference.conv import FILTER_AXES
from tests.lowering import references as loops

RNG = np.random.default_rng(11)


def _from_oihw(w: np.ndarray, layout: str) -> np.ndarray:
    """An [out, in, h, w] filter stored in `layout` (the inverse of the layout's axes)."""
    return w.transpose(np.argsort(FILTER_AXES[layout]))


CONV = [  # (input nchw shape, out channels, kernel, options)
    ((1, 4, 7, 6), 6, (3, 3), dict(padding=[1, 0, 2, 1], strides=[2, 1], groups=2)),
    ((2, 3, 9, 9), 4, (3, 2), dict(dilations=[2, 3], padding=[2, 2, 0, 3])),
    ((1, 6, 5, 5), 6, (3, 3), dict(groups=6, padding=[1, 1, 1, 1])),  # depthwise
    ((1, 3, 8, 8), 5, (1, 1), dict(strides=[3, 2])),
]


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("filter_layout", ["oihw", "hwio", "ohwi", "ihwo"])
@pytest.mark.parametrize("shape,out_c,kernel,options", CONV)
def test_conv2d_matches_the_loop_definition(shape, out_c, kernel, options, layout,
                                            filter_layout):
    groups = options.get("groups", 1)
    x = RNG.standard_normal(shape)
    w = RNG.standard_normal((out_c, shape[1] // groups, *kernel))
    bias = RNG.standard_normal(out_c)
    want = loops.conv2d(x, w, bias, **options)
    b = GraphBuilder("conv")
    xin = x if layout == "nchw" else x.transpose(0, 2, 3, 1)
    xi = b.input("x", "float32", list(xin.shape))
    y = b.conv2d(xi, b.constant(_from_oihw(w, filter_layout).astype(np.float32)),
                 bias=b.constant(bias.astype(np.float32)), inputLayout=layout,
                 filterLayout=filter_layout, **options)
    got = evaluate(b.build({"y": y}), {"x": xin.astype(np.float32)})["y"]
    if layout == "nhwc":
        got = got.transpose(0, 3, 1, 2)
    # Both sides sum the same float32-valued products in float64.
    want = loops.conv2d(x.astype(np.float32), w.astype(np.float32),
                        bias.astype(np.float32), **options)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


CONV_T = [  # (input nchw shape, out channels per group, kernel, options)
    ((1, 2, 3, 3), 3, (3, 3), dict(strides=[2, 2], padding=[0, 1, 0, 1])),
    ((2, 4, 3, 4), 2, (2, 3), dict(strides=[3, 2], dilations=[2, 1], groups=2,
                                   padding=[1, 0, 0, 2], outputPadding=[1, 1])),
    ((1, 2, 4, 4), 1, (3, 3), dict(strides=[2, 2], padding=[1, 1, 1, 1],
                                   outputSizes=[8, 8])),
]


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("filter_layout", ["iohw", "hwoi", "ohwi"])
@pytest.mark.parametrize("shape,out_per_group,kernel,options", CONV_T)
def test_conv_transpose2d_matches_the_loop_definition(shape, out_per_group, kernel, options,
                                                      layout, filter_layout):
    groups = options.get("groups", 1)
    x = RNG.standard_normal(shape).astype(np.float32)
    w_iohw = RNG.standard_normal((shape[1], out_per_group, *kernel)).astype(np.float32)
    bias = RNG.standard_normal(out_per_group * groups).astype(np.float32)
    loop_options = {k: v for k, v in options.items() if k != "outputSizes"}
    if "outputSizes" in options:  # outputSizes = computed size + 1 here: outputPadding 1
        loop_options["output_padding"] = (1, 1)
    if "outputPadding" in loop_options:
        loop_options["output_padding"] = loop_options.pop("outputPadding")
    want = loops.conv_transpose2d(x, w_iohw, bias, **loop_options)
    # The filter's [out/groups, in, h, w] view, stored in `filter_layout`.
    stored = _from_oihw(w_iohw.transpose(1, 0, 2, 3), filter_layout)
    b = GraphBuilder("convt")
    xin = x if layout == "nchw" else x.transpose(0, 2, 3, 1)
    xi = b.input("x", "float32", list(xin.shape))
    y = b.convTranspose2d(xi, b.constant(np.ascontiguousarray(stored)),
                          bias=b.constant(bias), inputLayout=layout,
                          filterLayout=filter_layout, **options)
    got = evaluate(b.build({"y": y}), {"x": xin})["y"]
    if layout == "nhwc":
        got = got.transpose(0, 3, 1, 2)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


POOL = [
    dict(windowDimensions=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]),
    dict(windowDimensions=[2, 3], strides=[2, 2], dilations=[2, 1], padding=[0, 1, 2, 0]),
    dict(windowDimensions=[2, 2], strides=[2, 2], outputShapeRounding="ceil"),
    dict(windowDimensions=[3, 3], strides=[2, 2], outputSizes=[2, 3]),  # = ceil rounding
    dict(),  # global pooling
]


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("kind", ["averagePool2d", "maxPool2d", "l2Pool2d"])
@pytest.mark.parametrize("options", POOL)
def test_pooling_matches_the_loop_definition(options, kind, layout):
    x = RNG.standard_normal((2, 3, 5, 6)).astype(np.float32)
    b = GraphBuilder("pool")
    xin = x if layout == "nchw" else x.transpose(0, 2, 3, 1)
    xi = b.input("x", "float32", list(xin.shape))
    y = getattr(b, kind)(xi, layout=layout, **options)
    g = b.build({"y": y})
    got = evaluate(g, {"x": xin})["y"]
    if layout == "nhwc":
        got = got.transpose(0, 3, 1, 2)
    out_hw = got.shape[2:]
    window = options.get("windowDimensions", [5, 6])
    want = loops.pool2d({"averagePool2d": "avg", "maxPool2d": "max", "l2Pool2d": "l2"}[kind],
                        x, window, options.get("padding", (0, 0, 0, 0)),
                        options.get("strides", (1, 1)), options.get("dilations", (1, 1)),
                        out_hw=list(out_hw))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def test_a_window_past_the_input_has_no_value_and_raises():
    """5 x 6 input, window [3, 2], strides [2, 3], ceil rounding: the third window column
    starts at column 6, past the input, so it would average nothing."""
    b = GraphBuilder("empty")
    xi = b.input("x", "float32", [1, 1, 5, 6])
    g = b.build({"y": b.averagePool2d(xi, windowDimensions=[3, 2], strides=[2, 3],
                                      outputShapeRounding="ceil")})
    with pytest.raises(UnsupportedError, match=r"window \(0, 2\) holds no input element"):
        evaluate(g, {"x": np.zeros((1, 1, 5, 6), np.float32)})
