"""ONNX Conv, ConvTranspose and ConvInteger import: hand-computed values, the WebNN ops and
options chosen, and agreement with ONNX Runtime on the same model."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from .helpers import RNG, check, op_named, ops_of, ort_outputs, rand, refused, single_node

# -- Conv --------------------------------------------------------------------------------
def test_conv_1d_runs_as_2d_with_a_unit_width():
    x = np.array([[[1, 2, 3, 4, 5]]], np.float32)
    w = np.array([[[1, 0, -1]]], np.float32)
    model = single_node("Conv", ["x", "w"], {"x": x}, {"w": w}, pads=[1, 1])
    graph, (y,) = check(model, {"x": x})
    # padded [0 1 2 3 4 5 0]; y[i] = p[i] - p[i + 2]
    np.testing.assert_array_equal(y, [[[-2, -2, -2, -2, 4]]])
    assert ops_of(graph) == ["reshape", "conv2d", "reshape"]
    conv = op_named(graph, "conv2d")
    assert conv.attrs["padding"] == [1, 1, 0, 0]
    assert conv.input("filter").kind == "constant" and conv.input("filter").shape == (1, 1, 3, 1)


@pytest.mark.parametrize("auto_pad, padding", [("SAME_UPPER", [0, 1, 0, 1]),
                                               ("SAME_LOWER", [1, 0, 1, 0]),
                                               ("VALID", [0, 0, 0, 0])])
def test_conv_auto_pad_becomes_explicit_padding(auto_pad, padding):
    # 4 inputs, kernel 3, stride 2: SAME gives ceil(4 / 2) = 2 outputs, which need
    # (2 - 1) * 2 + 3 - 4 = 1 padding; UPPER puts it at the end, LOWER at the beginning.
    x = rand(1, 2, 4, 4)
    w = rand(3, 2, 3, 3)
    model = single_node("Conv", ["x", "w"], {"x": x}, {"w": w}, auto_pad=auto_pad,
                        strides=[2, 2])
    graph, (y,) = check(model, {"x": x})
    assert op_named(graph, "conv2d").attrs["padding"] == padding
    assert y.shape == ((1, 3, 2, 2) if auto_pad != "VALID" else (1, 3, 1, 1))


@pytest.mark.parametrize("auto_pad, pads", [("SAME_UPPER", [2, 1, 2, 2]),
                                            ("SAME_LOWER", [2, 2, 2, 1])])
def test_conv_auto_pad_same_counts_the_dilated_kernel(auto_pad, pads):
    # 5 x 6 inputs, kernel 3 dilated by 2 (reach 5), strides [1, 2]: SAME gives 5 x 3
    # outputs, which need 4 padding in H ((5 - 1) * 1 + 5 - 5) and 3 in W ((3 - 1) * 2 + 5 - 6),
    # the odd one at the end (UPPER) or the beginning (LOWER). ONNX Runtime refuses dilation
    # with SAME, so the oracle is its run of the same Conv with those pads written out.
    x = rand(1, 2, 5, 6)
    w = rand(3, 2, 3, 3)
    model = single_node("Conv", ["x", "w"], {"x": x}, {"w": w}, auto_pad=auto_pad,
                        dilations=[2, 2], strides=[1, 2])
    graph, (y,) = check(model, {"x": x}, ort=False)
    b_h, b_w, e_h, e_w = pads
    assert op_named(graph, "conv2d").attrs["padding"] == [b_h, e_h, b_w, e_w]
    explicit = single_node("Conv", ["x", "w"], {"x": x}, {"w": w}, pads=pads,
                           dilations=[2, 2], strides=[1, 2])
    (want,) = ort_outputs(explicit, {"x": x})
    assert want.shape == (1, 3, 5, 3)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_conv_groups_dilations_bias_and_asymmetric_pads_match_onnx_runtime():
    x = rand(2, 4, 7, 6)
    w, b = rand(6, 2, 3, 2), rand(6)
    model = single_node("Conv", ["x", "w", "b"], {"x": x}, {"w": w, "b": b}, group=2,
                        dilations=[2, 1], strides=[1, 2], pads=[1, 0, 2, 1])
    graph, (y,) = check(model, {"x": x})
    conv = op_named(graph, "conv2d")
    # ONNX [beginH, beginW, endH, endW] = [1, 0, 2, 1] -> WebNN [beginH, endH, beginW, endW]
    assert conv.attrs["padding"] == [1, 2, 0, 1]
    assert conv.attrs["groups"] == 2 and conv.attrs["dilations"] == [2, 1]
    assert y.shape == (2, 6, 6, 3)


def test_conv_1d_with_a_computed_filter_reshapes_it_in_the_graph():
    x, w = rand(1, 2, 6), rand(3, 2, 2)
    model = single_node("Conv", ["x", "w"], {"x": x, "w": w}, strides=[2])
    graph, (y,) = check(model, {"x": x, "w": w})
    assert ops_of(graph).count("reshape") == 3
    assert y.shape == (1, 3, 3)
    # the added unit width axis steps by 1, whatever the real axis does
    conv = op_named(graph, "conv2d")
    assert conv.attrs["strides"] == [2, 1] and conv.attrs["dilations"] == [1, 1]


# -- 3-D: depth taps stacked as channels of one 2-D convolution ----------------------------
def test_conv_3d_sums_the_depth_taps():
    x = np.array([1, 2, 3], np.float32).reshape(1, 1, 3, 1, 1)
    w = np.array([1, -1], np.float32).reshape(1, 1, 2, 1, 1)
    model = single_node("Conv", ["x", "w"], {"x": x}, {"w": w}, pads=[1, 0, 0, 1, 0, 0])
    graph, (y,) = check(model, {"x": x})
    # padded depth [0 1 2 3 0]; y[o] = p[o] - p[o + 1]
    np.testing.assert_array_equal(y.reshape(-1), [-1, -1, -1, 3])
    assert ops_of(graph).count("conv2d") == 1 and "pad" in ops_of(graph)
    # output depth o reads input depths o - 1 and o; 3 (past the end) is the zero slice
    gather = op_named(graph, "gather")
    assert gather.input("indices").constant.numpy().tolist() == [3, 0, 0, 1, 1, 2, 2, 3]
    # one zero slice appended after the 3 depths, the one index 3 reads
    assert op_named(graph, "pad").attrs["endingPadding"] == [1, 0, 0, 0]
    conv = op_named(graph, "conv2d")
    assert conv.input("input").shape == (4, 2, 1, 1)  # [N * depth, taps * C, H, W]
    assert conv.input("filter").kind == "constant"
    assert max(op.outputs[0].rank for op in graph.operations) <= 5


def test_conv_3d_whose_every_depth_tap_reads_padding_gives_the_bias():
    # depth 1 padded [1, 1], kernel depth 1, stride 2: output depth 0 reads padding depth -1,
    # output depth 1 reads depth 1, past the end: only the zero slice is ever read
    x, w, b = rand(1, 2, 1, 3, 3), rand(2, 2, 1, 2, 2), np.array([0.5, -2], np.float32)
    model = single_node("Conv", ["x", "w", "b"], {"x": x}, {"w": w, "b": b},
                        strides=[2, 1, 1], pads=[1, 0, 0, 1, 0, 0])
    graph, (y,) = check(model, {"x": x})
    assert y.shape == (1, 2, 2, 2, 2)
    np.testing.assert_array_equal(y[:, 0], np.full((1, 2, 2, 2), 0.5, np.float32))
    np.testing.assert_array_equal(y[:, 1], np.full((1, 2, 2, 2), -2, np.float32))
    assert op_named(graph, "gather").input("indices").constant.numpy().tolist() == [1, 1]


def test_conv_3d_depth_dilation_of_its_own_giving_one_output_depth():
    # depth 4, kernel depth 2 dilated by 3: one window, reading depths 0 and 3; the other axes
    # are not dilated
    x, w = rand(1, 2, 4, 3, 3), rand(2, 2, 2, 2, 2)
    model = single_node("Conv", ["x", "w"], {"x": x}, {"w": w}, dilations=[3, 1, 1])
    graph, (y,) = check(model, {"x": x})
    assert y.shape == (1, 2, 1, 2, 2)
    want = sum(np.einsum("nchw,mchw->nm", x[:, :, 3 * k, i:i + 2, j:j + 2], w[:, :, k])
               for k in range(2) for i in range(1) for j in range(1))
    np.testing.assert_allclose(y[:, :, 0, 0, 0], want, rtol=1e-5, atol=1e-5)
    assert op_named(graph, "gather").input("indices").constant.numpy().tolist() == [0, 3]


def test_conv_3d_with_no_output_depth_is_refused():
    # depth 2, kernel depth 3, stride 2: (2 - 3) // 2 + 1 = 0 output depths
    x, w = rand(1, 1, 2, 3, 3), rand(1, 1, 3, 1, 1)
    model = single_node("Conv", ["x", "w"], {"x": x}, {"w": w}, strides=[2, 1, 1])
    assert "the output depth 0 is not positive" in refused(model, {"x": x})


def test_conv_3d_groups_strides_dilations_pads_and_bias_match_onnx_runtime():
    x = rand(2, 4, 7, 6, 5)
    w, b = rand(6, 2, 3, 2, 3), rand(6)
    model = single_node("Conv", ["x", "w", "b"], {"x": x}, {"w": w, "b": b}, group=2,
                        strides=[2, 1, 2], dilations=[2, 2, 1], pads=[2, 1, 0, 1, 0, 1])
    graph, (y,) = check(model, {"x": x})
    # depth (7 + 3 - 5) // 2 + 1 = 3; height (6 + 1 - 3) + 1 = 5; width (5 + 1 - 3) // 2 + 1 = 2
    assert y.shape == (2, 6, 3, 5, 2)
    conv = op_named(graph, "conv2d")
    assert conv.attrs["groups"] == 2 and conv.attrs["padding"] == [1, 0, 0, 1]
    assert conv.input("filter").shape == (6, 3 * 2, 2, 3)


def test_conv_3d_auto_pad_and_a_computed_filter():
    x, w = rand(1, 2, 5, 4, 4), rand(3, 2, 3, 3, 3)
    model = single_node("Conv", ["x", "w"], {"x": x, "w": w}, auto_pad="SAME_UPPER",
                        strides=[2, 2, 2])
    graph, (y,) = check(model, {"x": x, "w": w})
    assert y.shape == (1, 3, 3, 2, 2)
    # two transposes stack the input's depth taps, one the output's depth back; the computed
    # filter's taps are stacked in the graph too (a fourth)
    assert ops_of(graph).count("transpose") == 4
    assert op_named(graph, "conv2d").input("filter").kind == "intermediate"


def test_conv_4d_is_refused_with_the_reason():
    x, w = rand(1, 1, 2, 2, 2, 2), rand(1, 1, 1, 1, 1, 1)
    reason = refused(single_node("Conv", ["x", "w"], {"x": x}, {"w": w}), {"x": x})
    assert "4 spatial dimensions" in reason
    # Conv takes 3-D as a sum over depth, and the reason says so
    assert "1 is handled by adding a unit axis, 3 as a sum over depth" in reason


def test_conv_transpose_3d_spreads_depth_by_the_stride():
    x = np.array([1, 2], np.float32).reshape(1, 1, 2, 1, 1)
    w = np.array([1, 10], np.float32).reshape(1, 1, 2, 1, 1)
    model = single_node("ConvTranspose", ["x", "w"], {"x": x}, {"w": w}, strides=[3, 1, 1])
    graph, (y,) = check(model, {"x": x})
    # x0 lands on depths 0, 1 and x1 on 3, 4 (stride 3); depth 2 gets nothing
    np.testing.assert_array_equal(y.reshape(-1), [1, 10, 0, 2, 20])
    assert ops_of(graph).count("convTranspose2d") == 1


def test_conv_transpose_3d_groups_pads_output_padding_bias_match_onnx_runtime():
    x, w, b = rand(2, 4, 3, 4, 3), rand(4, 3, 3, 2, 3), rand(6)
    model = single_node("ConvTranspose", ["x", "w", "b"], {"x": x}, {"w": w, "b": b},
                        group=2, strides=[2, 2, 1], dilations=[2, 1, 1],
                        pads=[1, 0, 1, 2, 1, 0], output_padding=[1, 1, 0])
    graph, (y,) = check(model, {"x": x})
    # depth 2 * 2 + 1 + 2 * 2 + 1 - 3 = 7; height 2 * 3 + 1 + 1 + 1 - 1 = 8; width 2 + 2 + 1 - 1
    assert y.shape == (2, 6, 7, 8, 4)
    conv = op_named(graph, "convTranspose2d")
    assert conv.attrs["outputPadding"] == [1, 0] and conv.attrs["groups"] == 2


def test_conv_transpose_3d_depth_output_padding_may_reach_the_depth_stride():
    # ONNX allows output_padding below max(stride, dilation); the depth axis is summed by
    # hand, not by convTranspose2d, so only the two planar axes need it below the stride
    x, w = rand(1, 2, 3, 2, 2), rand(2, 1, 2, 2, 2)
    model = single_node("ConvTranspose", ["x", "w"], {"x": x}, {"w": w}, dilations=[2, 1, 1],
                        output_padding=[1, 0, 0])
    _, (y,) = check(model, {"x": x}, ort=False)  # ONNX Runtime wants it below the stride
    # depth (3 - 1) + 1 + (2 - 1) * 2 + 1 = 6: ONNX Runtime's result without the output
    # padding (5 depths), then the one depth of output padding, which no input reaches
    plain = single_node("ConvTranspose", ["x", "w"], {"x": x}, {"w": w}, dilations=[2, 1, 1])
    (want,) = ort_outputs(plain, {"x": x})
    assert y.shape == (1, 1, 6, 3, 3) and want.shape == (1, 1, 5, 3, 3)
    np.testing.assert_allclose(y[:, :, :5], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(y[:, :, 5], np.zeros((1, 1, 3, 3), np.float32))


def test_conv_transpose_3d_height_output_padding_not_below_the_stride_is_refused():
    x, w = rand(1, 1, 2, 2, 2), rand(1, 1, 2, 2, 2)
    model = single_node("ConvTranspose", ["x", "w"], {"x": x}, {"w": w}, strides=[1, 2, 2],
                        dilations=[1, 3, 1], output_padding=[0, 2, 0])
    assert "output padding 2 is not smaller than the stride 2" in refused(model, {"x": x})


def test_conv_transpose_3d_of_one_output_depth_matches_onnx_runtime():
    x, w = rand(1, 2, 1, 2, 2), rand(2, 3, 1, 2, 2)
    model = single_node("ConvTranspose", ["x", "w"], {"x": x}, {"w": w})
    _, (y,) = check(model, {"x": x})
    assert y.shape == (1, 3, 1, 3, 3)


def test_conv_transpose_3d_with_no_output_depth_is_refused():
    # one depth, kernel depth 1, cropped by a depth pad of 1: 1 - 1 = 0 depths left
    x, w = rand(1, 1, 1, 2, 2), rand(1, 1, 1, 2, 2)
    model = single_node("ConvTranspose", ["x", "w"], {"x": x}, {"w": w},
                        pads=[1, 0, 0, 0, 0, 0])
    assert "the output depth 0 is not positive" in refused(model, {"x": x})


def test_conv_transpose_3d_output_shape():
    x, w = rand(1, 2, 3, 3, 3), rand(2, 1, 2, 2, 2)
    model = single_node("ConvTranspose", ["x", "w"], {"x": x}, {"w": w}, strides=[2, 2, 2],
                        output_shape=[5, 6, 7])
    _, (y,) = check(model, {"x": x})
    assert y.shape == (1, 1, 5, 6, 7)


# -- ConvTranspose -----------------------------------------------------------------------
def test_conv_transpose_1d_with_output_padding():
    x = np.array([[[1, 2]]], np.float32)
    w = np.array([[[1, 1]]], np.float32)
    model = single_node("ConvTranspose", ["x", "w"], {"x": x}, {"w": w}, strides=[2],
                        output_padding=[1])
    graph, (y,) = check(model, {"x": x})
    # (2 - 1) * 2 + 2 + 1 = 5 outputs: x0 spreads to 0..1, x1 to 2..3, the padding adds 4
    np.testing.assert_array_equal(y, [[[1, 1, 2, 2, 0]]])
    assert op_named(graph, "convTranspose2d").attrs["outputPadding"] == [1, 0]


@pytest.mark.parametrize("auto_pad, padding", [("SAME_UPPER", [0, 1, 0, 1]),
                                               ("NOTSET", [1, 0, 1, 0])])
def test_conv_transpose_output_shape_sets_the_pads(auto_pad, padding):
    # in 3, kernel 2, stride 2 gives 6 unpadded; output_shape 5 needs a total padding of 1:
    # SAME_UPPER puts the larger half at the end, anything else at the beginning.
    x, w = rand(1, 2, 3, 3), rand(2, 3, 2, 2)
    model = single_node("ConvTranspose", ["x", "w"], {"x": x}, {"w": w}, strides=[2, 2],
                        output_shape=[5, 5], auto_pad=auto_pad)
    graph, (y,) = check(model, {"x": x}, ort=auto_pad == "NOTSET")
    assert op_named(graph, "convTranspose2d").attrs["padding"] == padding
    assert y.shape == (1, 3, 5, 5)


def test_conv_transpose_output_shape_beyond_the_result_becomes_output_padding():
    x, w = rand(1, 1, 3, 3), rand(1, 1, 3, 3)
    # unpadded (3 - 1) * 2 + 3 = 7; asking 8 leaves 1 for WebNN's outputPadding (< stride 2)
    model = single_node("ConvTranspose", ["x", "w"], {"x": x}, {"w": w}, strides=[2, 2],
                        output_shape=[8, 8])
    graph, (y,) = check(model, {"x": x})
    conv = op_named(graph, "convTranspose2d")
    assert conv.attrs["padding"] == [0, 0, 0, 0] and conv.attrs["outputPadding"] == [1, 1]
    assert y.shape == (1, 1, 8, 8)


def test_conv_transpose_output_shape_with_dilation_and_output_padding():
    # height: 2 * (3 - 1) + output_padding 1 + (3 - 1) * dilation 2 + 1 = 10 unpadded, output
    # 5: total padding 5, the larger half (3) at the beginning; width: 3 * (4 - 1) + 2 = 11
    # asked for exactly, no padding
    x, w = rand(1, 2, 3, 4), rand(2, 1, 3, 2)
    model = single_node("ConvTranspose", ["x", "w"], {"x": x}, {"w": w}, strides=[2, 3],
                        dilations=[2, 1], output_padding=[1, 0], output_shape=[5, 11])
    graph, (y,) = check(model, {"x": x})
    assert y.shape == (1, 1, 5, 11)
    conv = op_named(graph, "convTranspose2d")
    assert conv.attrs["padding"] == [3, 2, 0, 0] and conv.attrs["outputPadding"] == [1, 0]


@pytest.mark.parametrize("attrs", [{"auto_pad": "VALID"}, {}])
def test_conv_transpose_valid_or_without_pads_pads_nothing(attrs):
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    w = np.array([[[[1, 10], [100, 1000]]]], np.float32)
    model = single_node("ConvTranspose", ["x", "w"], {"x": x}, {"w": w}, strides=[2, 2],
                        **attrs)
    graph, (y,) = check(model, {"x": x})
    # stride 2 = kernel 2: each input value stamps its own 2x2 copy of the filter
    np.testing.assert_array_equal(y[0, 0], [[1, 10, 2, 20], [100, 1000, 200, 2000],
                                            [3, 30, 4, 40], [300, 3000, 400, 4000]])
    assert op_named(graph, "convTranspose2d").attrs["padding"] == [0, 0, 0, 0]


def test_conv_transpose_groups_dilations_bias_match_onnx_runtime():
    x, w, b = rand(1, 4, 3, 4), rand(4, 3, 2, 3), rand(6)
    model = single_node("ConvTranspose", ["x", "w", "b"], {"x": x}, {"w": w, "b": b}, group=2,
                        dilations=[2, 1], strides=[2, 3], pads=[1, 0, 0, 2])
    _, (y,) = check(model, {"x": x})
    # (3 - 1) * 2 + (2 - 1) * 2 + 1 - 1 = 6; (4 - 1) * 3 + 3 - 2 = 10
    assert y.shape == (1, 6, 6, 10)


# -- ConvInteger -------------------------------------------------------------------------
def test_conv_integer_subtracts_zero_points_and_gives_int32():
    x = np.array([[[[1, 2], [3, 4]]]], np.uint8)
    w = np.array([[[[3]]]], np.uint8)
    model = single_node("ConvInteger", ["x", "w", "xz", "wz"], {"x": x},
                        {"w": w, "xz": np.array(1, np.uint8), "wz": np.array(1, np.uint8)},
                        out_types=[onnx.TensorProto.INT32], opset=10)
    graph, (y,) = check(model, {"x": x})
    # (x - 1) * (3 - 1)
    np.testing.assert_array_equal(y, [[[[0, 2], [4, 6]]]])
    assert y.dtype == np.int32
    assert ops_of(graph) == ["dequantizeLinear", "dequantizeLinear", "conv2d", "cast"]


def test_conv_integer_per_channel_weight_zero_points():
    x = RNG.integers(0, 255, (1, 3, 5, 5), dtype=np.uint8)
    w = RNG.integers(0, 255, (2, 3, 3, 3), dtype=np.uint8)
    wz = np.array([120, 130], np.uint8)
    model = single_node("ConvInteger", ["x", "w", "", "wz"], {"x": x}, {"w": w, "wz": wz},
                        out_types=[onnx.TensorProto.INT32], opset=10, pads=[1, 1, 1, 1])
    _, (y,) = check(model, {"x": x}, ort=False)
    # ONNX Runtime takes only per-tensor zero points: run it once per output channel.
    for m in range(2):
        one = single_node("ConvInteger", ["x", "w", "", "wz"], {"x": x},
                          {"w": w[m:m + 1], "wz": wz[m]}, out_types=[onnx.TensorProto.INT32],
                          opset=10, pads=[1, 1, 1, 1])
        np.testing.assert_array_equal(y[:, m:m + 1], ort_outputs(one, {"x": x})[0])


def test_conv_integer_refuses_sums_float32_cannot_hold_exactly():
    x = np.zeros((1, 300, 1, 1), np.uint8)
    w = np.full((1, 300, 1, 1), 255, np.uint8)
    model = single_node("ConvInteger", ["x", "w"], {"x": x}, {"w": w},
                        out_types=[onnx.TensorProto.INT32], opset=10)
    # 255 * (300 * 255) = 19,507,500 >= 2^24
    assert "19507500" in refused(model, {"x": x})


def test_conv_integer_1d_with_asymmetric_pads_matches_onnx_runtime():
    x = np.array([[[3, 7, 1, 9, 4, 2]]], np.uint8)
    w = np.array([[[2, 0, 1]]], np.uint8)
    model = single_node("ConvInteger", ["x", "w", "xz"], {"x": x},
                        {"w": w, "xz": np.array(1, np.uint8)},
                        out_types=[onnx.TensorProto.INT32], opset=10, pads=[2, 0])
    graph, (y,) = check(model, {"x": x})
    # x - 1 = [2 6 0 8 3 1] padded with two zeros in front (the padding is x's zero point,
    # so 0 after the subtraction): y[i] = 2 * p[i] + p[i + 2]
    np.testing.assert_array_equal(y, [[[2, 6, 4, 20, 3, 17]]])
    assert op_named(graph, "conv2d").attrs["padding"] == [2, 0, 0, 0]


def test_conv_integer_3d_is_refused_with_the_reason():
    x, w = np.zeros((1, 1, 2, 2, 2), np.uint8), np.ones((1, 1, 1, 1, 1), np.uint8)
    model = single_node("ConvInteger", ["x", "w"], {"x": x}, {"w": w},
                        out_types=[onnx.TensorProto.INT32], opset=10)
    reason = refused(model, {"x": x})
    # ConvInteger has no depth sum: only 1-D (a unit axis added) and 2-D
    assert "3 spatial dimensions" in reason and "unit axis" in reason
    assert "sum over depth" not in reason


def test_conv_integer_int8_bound_spans_the_whole_int8_range():
    x = np.zeros((1, 600, 1, 1), np.int8)
    w = np.full((1, 600, 1, 1), 127, np.int8)
    model = single_node("ConvInteger", ["x", "w"], {"x": x}, {"w": w},
                        out_types=[onnx.TensorProto.INT32], opset=10)
    # |x| spans 127 - (-128) = 255, the weights sum to 600 * 127: 255 * 76200 >= 2^24
    assert "19431000" in refused(model, {"x": x})


def test_conv_integer_one_element_zero_point_is_a_scalar():
    x = np.array([[[[1, 2], [3, 4]]]], np.uint8)
    model = single_node("ConvInteger", ["x", "w", "xz"], {"x": x},
                        {"w": np.array([[[[3]]]], np.uint8), "xz": np.array([1], np.uint8)},
                        out_types=[onnx.TensorProto.INT32], opset=10)
    _, (y,) = check(model, {"x": x})
    np.testing.assert_array_equal(y, [[[[0, 3], [6, 9]]]])  # (x - 1) * 3


def test_conv_integer_computed_weights_are_bounded_by_their_type_range():
    # weights only known at run time (or a run-time zero point): each of the 300 terms may be
    # as far as 255 from its zero point, and so may x: 255 * 300 * 255 >= 2^24
    x = np.zeros((1, 300, 1, 1), np.uint8)
    w = np.zeros((1, 300, 1, 1), np.uint8)
    computed = single_node("ConvInteger", ["x", "w"], {"x": x, "w": w},
                           out_types=[onnx.TensorProto.INT32], opset=10)
    assert "19507500" in refused(computed, {"x": x, "w": w})
    wz = np.array(0, np.uint8)
    computed_zp = single_node("ConvInteger", ["x", "w", "", "wz"], {"x": x, "wz": wz}, {"w": w},
                              out_types=[onnx.TensorProto.INT32], opset=10)
    assert "19507500" in refused(computed_zp, {"x": x, "wz": wz})
    # the same known weights with a known zero point are all 0 away from it: accepted
    known = single_node("ConvInteger", ["x", "w", "", "wz"], {"x": x}, {"w": w, "wz": wz},
                        out_types=[onnx.TensorProto.INT32], opset=10)
    _, (y,) = check(known, {"x": x})
    np.testing.assert_array_equal(y, np.zeros((1, 1, 1, 1), np.int32))


def test_conv_integer_known_weights_bound_by_their_distance_to_each_zero_point():
    # channel 0's weights are 10 with zero point 250, channel 1's 250 with zero point 10: 240
    # away each, 300 terms, x spanning 255: 255 * 300 * 240 = 18,360,000 >= 2^24
    x = np.zeros((1, 300, 1, 1), np.uint8)
    w = np.concatenate([np.full((1, 300, 1, 1), 10), np.full((1, 300, 1, 1), 250)]).astype(
        np.uint8)
    model = single_node("ConvInteger", ["x", "w", "", "wz"], {"x": x},
                        {"w": w, "wz": np.array([250, 10], np.uint8)},
                        out_types=[onnx.TensorProto.INT32], opset=10)
    assert "18360000" in refused(model, {"x": x})


def test_conv_integer_known_x_zero_point_bounds_its_span_from_both_ends():
    # int8 x with zero point -100 is at most 127 - (-100) = 227 above it (and 28 below);
    # 600 weights of 127: 227 * 76200 = 17,297,400 >= 2^24
    x = np.zeros((1, 600, 1, 1), np.int8)
    model = single_node("ConvInteger", ["x", "w", "xz"], {"x": x},
                        {"w": np.full((1, 600, 1, 1), 127, np.int8),
                         "xz": np.array(-100, np.int8)},
                        out_types=[onnx.TensorProto.INT32], opset=10)
    assert "17297400" in refused(model, {"x": x})


def test_conv_integer_sums_reaching_exactly_2_to_the_24_are_exact_in_float32():
    # x - (-1) = 128 times weights of -128 over 1024 terms: the sum is -2^24, which float32
    # still holds (every integer up to 2^24 is exact), so the bound admits it
    x = np.full((1, 1024, 1, 1), 127, np.int8)
    model = single_node("ConvInteger", ["x", "w", "xz"], {"x": x},
                        {"w": np.full((1, 1024, 1, 1), -128, np.int8),
                         "xz": np.array(-1, np.int8)},
                        out_types=[onnx.TensorProto.INT32], opset=10)
    _, (y,) = check(model, {"x": x})
    assert y.reshape(-1).tolist() == [-2 ** 24]
    # one more term and the bound is past 2^24
    x = np.full((1, 1025, 1, 1), 127, np.int8)
    model = single_node("ConvInteger", ["x", "w", "xz"], {"x": x},
                        {"w": np.full((1, 1025, 1, 1), -128, np.int8),
                         "xz": np.array(-1, np.int8)},
                        out_types=[onnx.TensorProto.INT32], opset=10)
    assert "16793600" in refused(model, {"x": x})


def test_conv_integer_three_output_channels_without_zero_points():
    x = np.array([[[[1, 2], [3, 4]]]], np.uint8)
    w = np.array([1, 2, 3], np.uint8).reshape(3, 1, 1, 1)
    model = single_node("ConvInteger", ["x", "w"], {"x": x}, {"w": w},
                        out_types=[onnx.TensorProto.INT32], opset=10)
    _, (y,) = check(model, {"x": x})
    np.testing.assert_array_equal(y[0], [[[1, 2], [3, 4]], [[2, 4], [6, 8]], [[3, 6], [9, 12]]])


def test_conv_transpose_output_padding_not_below_the_stride_is_refused():
    # ONNX allows output_padding < max(stride, dilation); WebNN wants it below the stride
    x, w = rand(1, 1, 2, 2), rand(1, 1, 2, 2)
    model = single_node("ConvTranspose", ["x", "w"], {"x": x}, {"w": w}, strides=[2, 2],
                        dilations=[3, 3], output_padding=[2, 0])
    assert "output padding 2 is not smaller than the stride 2" in refused(model, {"x": x})
