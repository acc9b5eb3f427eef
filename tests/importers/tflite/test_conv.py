"""TFLite convolutions and matrix products against LiteRT: layouts kept NHWC (no transposes),
padding, strides, dilations, groups, fused activations, and hand-computed values."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from converter.testing.tflite_fixtures import (RELU, SAME, VALID, Const, Input, Output,
                                               TfliteBuilder, one_op)

from .helpers import EXACT, atol, check, op_named, ops_of, rand, refused


def test_conv_2d_keeps_nhwc_and_ohwi_with_same_padding():
    # 1 channel, 3x3 input 1..9, a 2x2 filter of ones, SAME, stride 1: each output sums the
    # 2x2 block at its top-left; the last row and column see TFLite's end padding.
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)
    w = np.ones((1, 2, 2, 1), np.float32)
    # (LiteRT's CONV_2D requires its bias input)
    model = one_op("CONV_2D", [Input("x", [1, 3, 3, 1]), Const(w), Const(np.zeros(1, np.float32))],
                   [Output("y", [1, 3, 3, 1])], padding=SAME, strideW=1, strideH=1)
    graph, got = check(model, {"x": x}, EXACT)
    np.testing.assert_array_equal(got["y"].reshape(3, 3), [[12, 16, 9], [24, 28, 15],
                                                           [15, 17, 9]])
    conv = op_named(graph, "conv2d")
    assert conv.attrs["padding"] == [0, 1, 0, 1]  # TFLite puts the odd pad at the end
    assert conv.attrs["inputLayout"] == "nhwc" and conv.attrs["filterLayout"] == "ohwi"
    assert ops_of(graph) == ["conv2d"]


@pytest.mark.parametrize("padding, strides, dilations, out_hw, pads", [
    (SAME, (2, 2), (1, 1), (4, 3), [1, 1, 0, 1]),
    (VALID, (1, 2), (1, 1), (5, 2), [0, 0, 0, 0]),
    (SAME, (1, 1), (2, 2), (7, 6), [2, 2, 2, 2]),
])
def test_conv_2d_geometry_matches_litert(padding, strides, dilations, out_hw, pads):
    x, w, b = rand(2, 7, 6, 4), rand(5, 3, 3, 4), rand(5)
    model = one_op("CONV_2D", [Input("x", x.shape), Const(w), Const(b)],
                   [Output("y", [2, *out_hw, 5])], padding=padding, strideH=strides[0],
                   strideW=strides[1], dilationHFactor=dilations[0],
                   dilationWFactor=dilations[1], fusedActivationFunction=RELU)
    # 3 x 3 x 4 products summed: the policy's 72 ULPs, as an absolute bound near zero.
    graph, got = check(model, {"x": x}, atol(2e-6))
    assert got["y"].shape == (2, *out_hw, 5)
    assert op_named(graph, "conv2d").attrs["padding"] == pads
    assert ops_of(graph) == ["conv2d", "relu"]


def test_grouped_conv_2d():
    # 4 input channels, filters of 2 channels: 2 groups
    x, w = rand(1, 5, 5, 4), rand(6, 3, 3, 2)
    model = one_op("CONV_2D", [Input("x", x.shape), Const(w), Const(rand(6))],
                   [Output("y", [1, 3, 3, 6])], padding=VALID, strideW=1, strideH=1)
    graph, _ = check(model, {"x": x}, atol(2e-6))
    assert op_named(graph, "conv2d").attrs["groups"] == 2


def test_depthwise_conv_2d_is_a_grouped_ihwo_conv():
    # 2 channels, multiplier 2: output channel 2c + m reads input channel c.
    x = np.zeros((1, 2, 2, 2), np.float32)
    x[..., 0], x[..., 1] = 1, 10
    w = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 1, 4)
    model = one_op("DEPTHWISE_CONV_2D", [Input("x", x.shape), Const(w), Const(np.zeros(4,
                   np.float32))], [Output("y", [1, 2, 2, 4])], padding=VALID, strideW=1,
                   strideH=1, depthMultiplier=2)
    graph, got = check(model, {"x": x}, EXACT)
    np.testing.assert_array_equal(got["y"][0, 0, 0], [1, 2, 30, 40])
    conv = op_named(graph, "conv2d")
    assert conv.attrs["groups"] == 2 and conv.attrs["filterLayout"] == "ihwo"
    assert conv.input("filter").shape == (1, 1, 1, 4)


def test_depthwise_conv_2d_strided_dilated_matches_litert():
    x, w, b = rand(1, 9, 8, 3), rand(1, 3, 3, 6), rand(6)
    model = one_op("DEPTHWISE_CONV_2D", [Input("x", x.shape), Const(w), Const(b)],
                   [Output("y", [1, 5, 4, 6])], padding=SAME, strideW=2, strideH=2,
                   depthMultiplier=2, dilationHFactor=2, dilationWFactor=1)
    check(model, {"x": x}, atol(1e-6))


@pytest.mark.parametrize("padding, strides, dilations, out_hw", [
    (SAME, (2, 1), (1, 1), (5, 7)),
    (SAME, (1, 3), (1, 1), (9, 3)),
    (VALID, (3, 1), (1, 2), (3, 3)),
    (SAME, (1, 2), (2, 1), (9, 4)),
    (VALID, (1, 1), (2, 1), (5, 5)),
])
def test_depthwise_conv_2d_unequal_strides_and_dilations_match_litert(padding, strides,
                                                                      dilations, out_hw):
    # A 9x7 input and a 3x3 filter: with stride or dilation height != width, reading the
    # options the wrong way round changes the output size or which rows/columns are summed.
    x, w, b = rand(1, 9, 7, 2), rand(1, 3, 3, 4), rand(4)
    model = one_op("DEPTHWISE_CONV_2D", [Input("x", x.shape), Const(w), Const(b)],
                   [Output("y", [1, *out_hw, 4])], padding=padding, strideH=strides[0],
                   strideW=strides[1], depthMultiplier=2, dilationHFactor=dilations[0],
                   dilationWFactor=dilations[1])
    graph, got = check(model, {"x": x}, atol(1e-6))
    assert got["y"].shape == (1, *out_hw, 4)
    conv = op_named(graph, "conv2d")
    assert conv.attrs["strides"] == list(strides)
    assert conv.attrs["dilations"] == list(dilations)


def test_depthwise_conv_2d_stride_per_axis_hand_values():
    # A 1-channel 4x4 ramp, a 1x1 filter of 1: the output samples every strideH-th row and
    # every strideW-th column.
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    model = one_op("DEPTHWISE_CONV_2D", [Input("x", x.shape),
                                         Const(np.ones((1, 1, 1, 1), np.float32)),
                                         Const(np.zeros(1, np.float32))],
                   [Output("y", [1, 2, 4, 1])], padding=VALID, strideH=2, strideW=1,
                   depthMultiplier=1)
    _, got = check(model, {"x": x}, EXACT)
    np.testing.assert_array_equal(got["y"].reshape(2, 4), [[0, 1, 2, 3], [8, 9, 10, 11]])


def test_transpose_conv_places_each_input_at_stride_offsets():
    # One input pixel per position, filter of ones 2x2, stride 2, VALID: every input value is
    # copied to a 2x2 block.
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
    w = np.ones((1, 2, 2, 1), np.float32)
    model = one_op("TRANSPOSE_CONV", [Const(np.array([1, 4, 4, 1], np.int32)), Const(w),
                                      Input("x", x.shape)], [Output("y", [1, 4, 4, 1])],
                   padding=VALID, strideW=2, strideH=2)
    graph, got = check(model, {"x": x}, EXACT)
    np.testing.assert_array_equal(got["y"].reshape(4, 4), [[1, 1, 2, 2], [1, 1, 2, 2],
                                                           [3, 3, 4, 4], [3, 3, 4, 4]])
    conv = op_named(graph, "convTranspose2d")
    assert conv.attrs["filterLayout"] == "ohwi" and conv.attrs["inputLayout"] == "nhwc"


@pytest.mark.parametrize("padding, out_hw, kernel", [(SAME, (10, 8), 3), (VALID, (11, 9), 3),
                                                     (SAME, (10, 8), 4)])
def test_transpose_conv_with_bias_matches_litert(padding, out_hw, kernel):
    x, w, b = rand(1, 5, 4, 3), rand(2, kernel, kernel, 3), rand(2)
    if padding == VALID:
        out_hw = (2 * 4 + kernel, 2 * 3 + kernel)
    model = one_op("TRANSPOSE_CONV", [Const(np.array([1, *out_hw, 2], np.int32)), Const(w),
                                      Input("x", x.shape), Const(b)],
                   [Output("y", [1, *out_hw, 2])], padding=padding, strideW=2, strideH=2)
    graph, got = check(model, {"x": x}, atol(1e-6))
    assert got["y"].shape == (1, *out_hw, 2)
    assert ops_of(graph) == ["convTranspose2d"]


def test_mediapipe_convolution_2d_transpose_bias():
    """MediaPipe's custom op: options are (padding=SAME 1 / VALID 2, stride w, stride h) as
    raw int32; SAME doubles each side at stride 2 and the bias is added."""
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
    w = np.ones((1, 2, 2, 1), np.float32)
    b = np.array([0.5], np.float32)
    model = one_op("CUSTOM:Convolution2DTransposeBias", [Input("x", x.shape), Const(w), Const(b)],
                   [Output("y", [1, 4, 4, 1])], custom_options=struct.pack("<3i", 1, 2, 2))
    graph, got = check(model, {"x": x}, EXACT)
    np.testing.assert_array_equal(got["y"].reshape(4, 4)[0], [1.5, 1.5, 2.5, 2.5])
    conv = op_named(graph, "convTranspose2d")
    assert conv.input("bias") is not None and conv.attrs["strides"] == [2, 2]


def test_mediapipe_transpose_bias_with_more_channels_matches_litert():
    x, w, b = rand(1, 6, 5, 8), rand(3, 2, 2, 8), rand(3)
    model = one_op("CUSTOM:Convolution2DTransposeBias", [Input("x", x.shape), Const(w), Const(b)],
                   [Output("y", [1, 12, 10, 3])], custom_options=struct.pack("<3i", 1, 2, 2))
    check(model, {"x": x}, atol(1e-6))


def test_fully_connected_is_gemm_with_transposed_weights():
    x = np.array([[1, 2, 3], [0, -1, 1]], np.float32)
    w = np.array([[1, 0, 0], [1, 1, 1]], np.float32)  # [units, depth]
    b = np.array([0.5, -1], np.float32)
    model = one_op("FULLY_CONNECTED", [Input("x", [2, 3]), Const(w), Const(b)],
                   [Output("y", [2, 2])], fusedActivationFunction=RELU)
    graph, got = check(model, {"x": x}, EXACT)
    np.testing.assert_array_equal(got["y"], [[1.5, 5], [0.5, 0]])
    gemm = op_named(graph, "gemm")
    assert gemm.attrs["bTranspose"] is True and gemm.input("c") is not None
    assert "transpose" not in ops_of(graph)


@pytest.mark.parametrize("bias_shape", [[1, 1, 1, 5], [1, 5]])
def test_fully_connected_bias_of_higher_rank_is_a_vector_for_gemm(bias_shape):
    """Issue 17: litert-torch folds a layer scale into a bias stored as [1, 1, 1, N]; the
    kernel reads its N values, gemm needs them as [N]."""
    x, w, b = rand(3, 4), rand(5, 4), rand(*bias_shape)
    model = one_op("FULLY_CONNECTED", [Input("x", x.shape), Const(w), Const(b)],
                   [Output("y", [3, 5])])
    graph, got = check(model, {"x": x}, atol(1e-6))
    np.testing.assert_allclose(got["y"], x @ w.T + b.reshape(5), atol=1e-6)
    assert op_named(graph, "gemm").input("c").shape == (5,)


def test_fully_connected_bias_of_the_wrong_size_is_refused():
    model = one_op("FULLY_CONNECTED", [Input("x", [3, 4]), Const(rand(5, 4)),
                                       Const(rand(1, 6))], [Output("y", [3, 5])])
    assert "its bias [1, 6] has 6 values for 5 units" in refused(model).line()


@pytest.mark.parametrize("keep, out_shape", [(False, [6, 5]), (True, [2, 3, 5])])
def test_fully_connected_flattens_or_keeps_leading_dims(keep, out_shape):
    x, w = rand(2, 3, 4), rand(5, 4)
    model = one_op("FULLY_CONNECTED", [Input("x", x.shape), Const(w), None],
                   [Output("y", out_shape)], keepNumDims=keep)
    _, got = check(model, {"x": x}, atol(1e-6))
    assert list(got["y"].shape) == out_shape


@pytest.mark.parametrize("adj_x, adj_y", [(False, False), (True, False), (False, True)])
def test_batch_matmul_with_adjoints_and_broadcast_batch(adj_x, adj_y):
    a = rand(2, 3, 4) if not adj_x else rand(2, 4, 3)
    b = rand(1, 4, 5) if not adj_y else rand(1, 5, 4)
    model = one_op("BATCH_MATMUL", [Input("a", a.shape), Input("b", b.shape)],
                   [Output("y", [2, 3, 5])], adjX=adj_x, adjY=adj_y)
    graph, got = check(model, {"a": a, "b": b}, atol(1e-6))
    want = np.matmul(a.swapaxes(-1, -2) if adj_x else a, b.swapaxes(-1, -2) if adj_y else b)
    np.testing.assert_allclose(got["y"], want, atol=1e-5)
    assert ops_of(graph).count("transpose") == int(adj_x) + int(adj_y)


# Operands the kernels would misread: each refused with the reason, never a Python error.
@pytest.mark.parametrize("code, inputs, out, reason", [
    ("CONV_2D", [Input("x", [4, 4, 2]), Const(rand(3, 2, 2, 2)), None], [3, 3, 3],
     "its input has rank 3"),
    ("CONV_2D", [Input("x", [1, 4, 4, 2]), Const(rand(3, 2, 2)), None], [1, 3, 3, 3],
     "its filter has rank 3"),
    ("CONV_2D", [Input("x", [1, 4, 4, 5]), Const(rand(3, 2, 2, 2)), None], [1, 3, 3, 3],
     "5 channels, not a multiple of the filter's 2"),
    ("DEPTHWISE_CONV_2D", [Input("x", [4, 4, 2]), Const(rand(1, 2, 2, 4)), None], [3, 3, 4],
     "its input has rank 3"),
    ("DEPTHWISE_CONV_2D", [Input("x", [1, 4, 4, 2]), Const(rand(2, 2, 4)), None],
     [1, 3, 3, 4], "its filter has rank 3"),
    ("DEPTHWISE_CONV_2D", [Input("x", [1, 4, 4, 2]), Const(rand(2, 2, 2, 4)), None],
     [1, 3, 3, 4], "is not [1, height, width, 2 x multiplier]"),
    ("DEPTHWISE_CONV_2D", [Input("x", [1, 4, 4, 2]), Const(rand(1, 2, 2, 3)), None],
     [1, 3, 3, 3], "is not [1, height, width, 2 x multiplier]"),
])
def test_conv_operands_of_the_wrong_form_are_refused(code, inputs, out, reason):
    model = one_op(code, inputs, [Output("y", out)], padding=VALID, strideW=1, strideH=1)
    assert reason in refused(model).line()


def test_depthwise_multiplier_disagreeing_with_the_filter_is_refused():
    model = one_op("DEPTHWISE_CONV_2D", [Input("x", [1, 4, 4, 2]), Const(rand(1, 2, 2, 4)),
                                         None], [Output("y", [1, 3, 3, 4])], padding=VALID,
                   strideW=1, strideH=1, depthMultiplier=3)
    assert "depth_multiplier 3 disagrees" in refused(model).line()


def _transpose_conv_model(out_shape, w_shape, x_shape, padding=VALID):
    return one_op("TRANSPOSE_CONV", [Const(np.array(out_shape, np.int32)), Const(rand(*w_shape)),
                                     Input("x", x_shape)], [Output("y", out_shape)],
                  padding=padding, strideW=2, strideH=2)


@pytest.mark.parametrize("out_shape, w_shape, x_shape, reason", [
    ([1, 4, 4, 1], [1, 2, 2, 1], [2, 2, 1], "its input has rank 3"),
    ([1, 4, 4, 1], [2, 2, 1], [1, 2, 2, 1], "its filter has rank 3"),
    ([1, 4, 4, 1], [1, 2, 2, 3], [1, 2, 2, 1], "its input has 1 channels, its filter 3"),
    ([2, 4, 4, 1], [1, 2, 2, 1], [1, 2, 2, 1], "does not fit input"),  # batch
    ([1, 4, 4, 2], [1, 2, 2, 1], [1, 2, 2, 1], "does not fit input"),  # channels
    ([1, 4, 4], [1, 2, 2, 1], [1, 2, 2, 1], "does not fit input"),  # rank
])
def test_transpose_conv_operands_of_the_wrong_form_are_refused(out_shape, w_shape, x_shape,
                                                               reason):
    assert reason in refused(_transpose_conv_model(out_shape, w_shape, x_shape)).line()


def test_transpose_conv_with_an_unknown_padding_code_is_refused():
    model = _transpose_conv_model([1, 4, 4, 1], [1, 2, 2, 1], [1, 2, 2, 1], padding=2)
    assert "padding code 2 is neither SAME nor VALID" in refused(model).line()


def test_mediapipe_transpose_bias_valid_and_unequal_strides_match_litert():
    # VALID with a 3x2 filter: (5 - 1) * 3 + 3 = 15 rows, (4 - 1) * 2 + 2 = 8 columns; SAME
    # would give 15 x 8 only by chance, and the strides read the other way round give 11 x 11.
    x, w, b = rand(1, 5, 4, 2), rand(3, 3, 2, 2), rand(3)
    model = one_op("CUSTOM:Convolution2DTransposeBias", [Input("x", x.shape), Const(w), Const(b)],
                   [Output("y", [1, 15, 8, 3])], custom_options=struct.pack("<3i", 2, 2, 3))
    graph, got = check(model, {"x": x}, atol(1e-6))
    assert got["y"].shape == (1, 15, 8, 3)
    assert op_named(graph, "convTranspose2d").attrs["strides"] == [3, 2]


def test_mediapipe_transpose_bias_same_with_unequal_strides_matches_litert():
    x, w, b = rand(1, 3, 4, 2), rand(2, 3, 3, 2), rand(2)
    model = one_op("CUSTOM:Convolution2DTransposeBias", [Input("x", x.shape), Const(w), Const(b)],
                   [Output("y", [1, 6, 12, 2])], custom_options=struct.pack("<3i", 1, 3, 2))
    _, got = check(model, {"x": x}, atol(1e-6))
    assert got["y"].shape == (1, 6, 12, 2)  # height 3 * stride 2, width 4 * stride 3


@pytest.mark.parametrize("raw, x_shape, w_shape, reason", [
    (struct.pack("<2i", 1, 2), [1, 2, 2, 1], [1, 2, 2, 1], "have 8 bytes; they need 12"),
    (struct.pack("<3i", 0, 2, 2), [1, 2, 2, 1], [1, 2, 2, 1], "padding code 0 is neither"),
    (struct.pack("<3i", 1, 2, 2), [2, 2, 1], [1, 2, 2, 1], "its input has rank 3"),
    (struct.pack("<3i", 1, 2, 2), [1, 2, 2, 1], [2, 2, 1], "its filter has rank 3"),
])
def test_mediapipe_transpose_bias_of_the_wrong_form_is_refused(raw, x_shape, w_shape, reason):
    model = one_op("CUSTOM:Convolution2DTransposeBias",
                   [Input("x", x_shape), Const(rand(*w_shape)), Const(rand(1))],
                   [Output("y", [1, 4, 4, 1])], custom_options=raw)
    assert reason in refused(model).line()


@pytest.mark.parametrize("inputs, options, reason", [
    ([Input("x", [3, 4]), Const(rand(5, 4))], dict(weightsFormat=1), "SHUFFLED4x16INT8"),
    ([Input("x", [3, 4]), Const(rand(5, 4, 1))], {}, "its weights have rank 3"),
    ([Input("x", [3, 5]), Const(rand(5, 4))], {}, "does not split into rows of 4"),
])
def test_fully_connected_of_the_wrong_form_is_refused(inputs, options, reason):
    model = one_op("FULLY_CONNECTED", [*inputs, None], [Output("y", [3, 5])], **options)
    assert reason in refused(model).line()


def test_fully_connected_without_options_has_no_activation():
    # An options table is optional for FULLY_CONNECTED: then no activation is fused.
    x, w = rand(3, 4), rand(5, 4)
    b = TfliteBuilder()
    y = b.tensor("y", [3, 5])
    b.op("FULLY_CONNECTED", [b.input("x", [3, 4]), b.constant("w", w), -1], [y])
    b.current.operators[-1].builtinOptionsType = 0
    b.current.operators[-1].builtinOptions = None
    graph, got = check(b.build([y]), {"x": x}, atol(1e-6))
    np.testing.assert_allclose(got["y"], x @ w.T, atol=1e-6)  # negative values survive
    assert ops_of(graph) == ["gemm"]


@pytest.mark.parametrize("a_shape, b_shape, out", [([3, 4], [2, 4, 5], [2, 3, 5]),
                                                   ([2, 3, 4], [4, 5], [2, 3, 5])])
def test_batch_matmul_of_a_matrix_and_a_batch_matches_litert(a_shape, b_shape, out):
    a, b = rand(*a_shape), rand(*b_shape)
    model = one_op("BATCH_MATMUL", [Input("a", a.shape), Input("b", b.shape)],
                   [Output("y", out)])
    _, got = check(model, {"a": a, "b": b}, atol(1e-6))
    np.testing.assert_allclose(got["y"], np.matmul(a, b), atol=1e-5)


@pytest.mark.parametrize("a_shape, b_shape", [([4], [4, 5]), ([3, 4], [4])])
def test_batch_matmul_of_a_vector_is_refused(a_shape, b_shape):
    model = one_op("BATCH_MATMUL", [Input("a", a_shape), Input("b", b_shape)],
                   [Output("y", [5])])
    assert "its operands need rank 2 or more" in refused(model).line()
