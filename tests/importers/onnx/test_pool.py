"""ONNX MaxPool, AveragePool, LpPool and the global poolings: hand-computed values, the WebNN
ops and options chosen, and agreement with ONNX Runtime."""
from __future__ import annotations

import numpy as np
import pytest

from .helpers import check, op_named, ops_of, ort_outputs, rand, refused, single_node


def test_max_pool_1d_ceil_mode_keeps_the_partial_window():
    x = np.array([[[1, 3, 2, 5, 4]]], np.float32)
    model = single_node("MaxPool", ["x"], {"x": x}, kernel_shape=[2], strides=[2], ceil_mode=1)
    graph, (y,) = check(model, {"x": x})
    # windows [1 3] [2 5] [4]
    np.testing.assert_array_equal(y, [[[3, 5, 4]]])
    assert ops_of(graph) == ["reshape", "maxPool2d", "reshape"]
    # floor rounding with the end padding widened by 1 gives the third window
    pool = op_named(graph, "maxPool2d")
    assert pool.attrs["padding"] == [0, 1, 0, 0] and pool.attrs["outputShapeRounding"] == "floor"
    # the added unit width axis: a window of one element, stepping by 1
    assert pool.attrs["windowDimensions"] == [2, 1] and pool.attrs["strides"] == [2, 1]
    assert pool.attrs["dilations"] == [1, 1]


def test_ceil_mode_keeps_a_window_starting_in_the_beginning_padding_s_reach():
    # 6 + 2 begin padding, kernel 3, stride 2: floor gives 3, ceil 4; the 4th window starts
    # at padded index 6, before the end padding (which would start at 2 + 6 = 8), so ONNX
    # keeps it
    x = np.array([[[1, 7, 2, 8, 3, 9]]], np.float32)
    model = single_node("MaxPool", ["x"], {"x": x}, kernel_shape=[3], strides=[2], pads=[2, 0],
                        ceil_mode=1)
    _, (y,) = check(model, {"x": x})
    # windows over [-inf -inf 1 7 2 8 3 9]: [-,-,1] [1,7,2] [2,8,3] [3,9]
    np.testing.assert_array_equal(y, [[[1, 7, 8, 9]]])


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool"])
def test_ceil_mode_dropping_one_axis_and_keeping_the_other(op_type):
    # height: 4 + 1 padding, kernel 2, stride 2 -> ceil gives 3, but the 3rd window would start
    # in the padding (at 4), so ONNX drops it: 2. width: 5 -> ceil gives 3, the 3rd window
    # starts at 4 < 5: kept. No single WebNN rounding gives (2, 3).
    x = rand(1, 2, 4, 5)
    model = single_node(op_type, ["x"], {"x": x}, kernel_shape=[2, 2], strides=[2, 2],
                        pads=[0, 0, 1, 0], ceil_mode=1)
    _, (y,) = check(model, {"x": x})
    assert y.shape == (1, 2, 2, 3)


def test_average_pool_count_include_pad_pads_with_zeros_first():
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    attrs = dict(kernel_shape=[2, 2], pads=[1, 1, 1, 1])
    include = single_node("AveragePool", ["x"], {"x": x}, count_include_pad=1, **attrs)
    graph, (y,) = check(include, {"x": x})
    # every 2x2 window counts 4 elements: corner 1 / 4, edge (1 + 2) / 4, centre 10 / 4
    np.testing.assert_allclose(y[0, 0], [[0.25, 0.75, 0.5], [1.0, 2.5, 1.5], [0.75, 1.75, 1.0]])
    assert ops_of(graph) == ["pad", "averagePool2d"]
    exclude = single_node("AveragePool", ["x"], {"x": x}, **attrs)
    graph, (y,) = check(exclude, {"x": x})
    # only input elements count: corner 1 / 1, edge (1 + 2) / 2
    np.testing.assert_allclose(y[0, 0], [[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]])
    assert ops_of(graph) == ["averagePool2d"]


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
def test_pool_auto_pad_matches_onnx_runtime(auto_pad):
    x = rand(1, 3, 6, 5)
    model = single_node("AveragePool", ["x"], {"x": x}, kernel_shape=[3, 2], strides=[2, 2],
                        auto_pad=auto_pad)
    _, (y,) = check(model, {"x": x})
    assert y.shape == ((1, 3, 3, 3) if auto_pad != "VALID" else (1, 3, 2, 2))


def test_max_pool_dilations_and_uint8():
    x = np.arange(25, dtype=np.uint8).reshape(1, 1, 5, 5)
    model = single_node("MaxPool", ["x"], {"x": x}, kernel_shape=[2, 2], dilations=[2, 2])
    _, (y,) = check(model, {"x": x})
    # the window of output (i, j) is rows i, i + 2 and columns j, j + 2: its max is (i+2, j+2)
    np.testing.assert_array_equal(y[0, 0], [[12, 13, 14], [17, 18, 19], [22, 23, 24]])


def test_max_pool_indices_output_of_1d_pooling_is_refused():
    # 2-D pooling's Indices are imported (test_pool_indices.py); other ranks say so
    x = rand(1, 1, 4)
    model = single_node("MaxPool", ["x"], {"x": x}, outputs=("y", "i"),
                        out_types=[1, 7], kernel_shape=[2])
    assert "Indices output is imported for 2-D pooling" in refused(model, {"x": x})


def test_lp_pool_p2_is_l2_pool():
    x = np.array([[[[3, 4]]]], np.float32)
    model = single_node("LpPool", ["x"], {"x": x}, kernel_shape=[1, 2], p=2)
    graph, (y,) = check(model, {"x": x})
    np.testing.assert_allclose(y, [[[[5.0]]]])  # sqrt(9 + 16)
    assert ops_of(graph) == ["l2Pool2d"]


def test_lp_pool_without_p_is_l2_pool():
    x = np.array([[[[3, 4]]]], np.float32)
    model = single_node("LpPool", ["x"], {"x": x}, kernel_shape=[1, 2])  # p defaults to 2
    graph, (y,) = check(model, {"x": x})
    np.testing.assert_allclose(y, [[[[5.0]]]])
    assert ops_of(graph) == ["l2Pool2d"]


@pytest.mark.parametrize("p", [0, -1])
def test_lp_pool_p_not_positive_is_refused(p):
    x = np.array([[[[3, 4]]]], np.float32)
    model = single_node("LpPool", ["x"], {"x": x}, kernel_shape=[1, 2], p=p)
    assert f"p={float(p)} is not a norm order" in refused(model, {"x": x})


def test_4d_max_pool_pools_each_leading_axis_in_turn():
    # four spatial axes: the last two in one maxPool2d, then axes 1 and 0 one at a time
    x = np.random.default_rng(5).permutation(2 * 3 * 4 * 3 * 3).astype(np.float32).reshape(
        1, 2, 3, 4, 3, 3)  # distinct values
    model = single_node("MaxPool", ["x"], {"x": x}, kernel_shape=[2, 2, 2, 2],
                        strides=[1, 2, 1, 1])
    graph, (y,) = check(model, {"x": x}, ort=False)
    windows = np.lib.stride_tricks.sliding_window_view(x, (2, 2, 2, 2), axis=(2, 3, 4, 5))
    want = windows[:, :, :, ::2].max(axis=(-4, -3, -2, -1))
    np.testing.assert_array_equal(y, want)
    assert ops_of(graph).count("maxPool2d") == 3


def test_lp_pool_other_p_pools_a_power_of_the_input():
    x = np.array([[[[1, -2]]]], np.float32)
    model = single_node("LpPool", ["x"], {"x": x}, kernel_shape=[1, 2], p=3)
    graph, (y,) = check(model, {"x": x})
    np.testing.assert_allclose(y, [[[[9 ** (1 / 3)]]]], rtol=1e-6)  # (1 + 8)^(1/3)
    assert ops_of(graph) == ["abs", "pow", "l2Pool2d", "pow"]


def test_lp_pool_p3_with_padding_and_strides_matches_onnx_runtime():
    x = rand(1, 2, 5, 6)
    model = single_node("LpPool", ["x"], {"x": x}, kernel_shape=[3, 3], strides=[2, 2],
                        pads=[1, 0, 1, 2], p=3, opset=18)
    _, (y,) = check(model, {"x": x})
    assert y.shape == (1, 2, 3, 3)


def test_global_average_pool_any_rank():
    x = np.arange(16, dtype=np.float32).reshape(1, 2, 2, 2, 2)
    model = single_node("GlobalAveragePool", ["x"], {"x": x})
    graph, (y,) = check(model, {"x": x})
    np.testing.assert_allclose(y.reshape(-1), [3.5, 11.5])  # means of 0..7 and 8..15
    assert y.shape == (1, 2, 1, 1, 1)
    assert op_named(graph, "reduceMean").attrs["axes"] == [2, 3, 4]


def test_global_max_pool_1d():
    x = np.array([[[1, 5, 2], [7, 0, 3]]], np.float32)
    _, (y,) = check(single_node("GlobalMaxPool", ["x"], {"x": x}), {"x": x})
    np.testing.assert_array_equal(y, [[[5], [7]]])


@pytest.mark.parametrize("p, ops", [(1, ["reduceL1"]), (2, ["reduceL2"]),
                                    (3, ["abs", "pow", "reduceSum", "pow"])])
def test_global_lp_pool(p, ops):
    x = np.array([[[[1, -2], [2, 0]]]], np.float32)
    graph, (y,) = check(single_node("GlobalLpPool", ["x"], {"x": x}, p=p), {"x": x})
    np.testing.assert_allclose(y.reshape(-1), [(1 + 2 ** p + 2 ** p) ** (1 / p)], rtol=1e-6)
    assert ops_of(graph) == ops


@pytest.mark.parametrize("op_type, attrs", [
    ("MaxPool", dict(kernel_shape=[2, 2, 2], strides=[2, 1, 2], dilations=[1, 2, 1])),
    ("AveragePool", dict(kernel_shape=[3, 2, 2], pads=[1, 0, 1, 1, 1, 0], ceil_mode=1,
                         strides=[2, 2, 2])),
    ("AveragePool", dict(kernel_shape=[3, 2, 2], pads=[1, 0, 1, 1, 1, 0],
                         count_include_pad=1)),
    ("LpPool", dict(kernel_shape=[2, 2, 2], p=2, pads=[0, 1, 0, 1, 0, 1])),
])
def test_3d_pools_run_one_axis_group_at_a_time(op_type, attrs):
    x = rand(1, 2, 5, 4, 5)
    graph, _ = check(single_node(op_type, ["x"], {"x": x}, opset=19, **attrs), {"x": x})
    # the last two axes in one 2-D pool, then the first one with a [k, 1] window
    pools = [op for op in graph.operations if op.op_type.endswith("Pool2d")]
    assert len(pools) == 2 and pools[1].attrs["windowDimensions"] == [attrs["kernel_shape"][0], 1]


def test_3d_max_pool_by_hand():
    x = np.arange(8, dtype=np.float32).reshape(1, 1, 2, 2, 2)
    x[0, 0, 0, 1, 1] = 100
    _, (y,) = check(single_node("MaxPool", ["x"], {"x": x}, kernel_shape=[2, 1, 2]), {"x": x})
    # windows over (depth, width) for each row: row 0 max(0, 1, 4, 5), row 1 max(2, 100, 6, 7)
    np.testing.assert_array_equal(y.reshape(-1), [5, 100])


@pytest.mark.parametrize("auto_pad, windows", [
    # 9 wide, kernel 2, stride 5: output ceil(9 / 5) = 2, ONNX's pad_shape = 5 + 2 - 9 = -2.
    # SAME_UPPER begins at -2 / 2 = -1 (one column cropped): windows [1, 2] and [6, 7].
    ("SAME_UPPER", [[1, 2], [6, 7]]),
    # SAME_LOWER begins at (-2 + 1) / 2 = 0 toward zero (ends at -2): windows [0, 1], [5, 6].
    ("SAME_LOWER", [[0, 1], [5, 6]]),
])
@pytest.mark.parametrize("op_type, opset", [("AveragePool", 19), ("LpPool", 18)])
def test_same_pads_with_a_stride_beyond_the_window_crop_the_input(op_type, opset, auto_pad,
                                                                  windows):
    x = np.arange(1, 19, dtype=np.float32).reshape(1, 1, 2, 9)
    model = single_node(op_type, ["x"], {"x": x}, kernel_shape=[1, 2], strides=[1, 5],
                        auto_pad=auto_pad, opset=opset)
    graph, (y,) = check(model, {"x": x})
    taps = x[0, 0][:, windows]  # [row, window, tap]
    want = taps.mean(-1) if op_type == "AveragePool" else np.sqrt((taps ** 2).sum(-1))
    np.testing.assert_allclose(y[0, 0], want, rtol=1e-6)
    assert ops_of(graph)[0] == "slice"  # the negative pads (the end's too) crop first


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_same_pads_crop_on_3d_and_1d_pools_match_onnx_runtime(auto_pad):
    # pad_shape -3 on the first axis (begin -1 either way), -1 on the second, +1 on the third
    x = rand(1, 2, 8, 6, 5)
    model = single_node("AveragePool", ["x"], {"x": x}, kernel_shape=[2, 2, 2],
                        strides=[5, 3, 2], auto_pad=auto_pad, opset=19, count_include_pad=1)
    _, (y,) = check(model, {"x": x})
    assert y.shape == (1, 2, 2, 2, 3)
    x1 = rand(1, 3, 8)
    model = single_node("LpPool", ["x"], {"x": x1}, kernel_shape=[1], strides=[3],
                        auto_pad=auto_pad, p=3)
    _, (y,) = check(model, {"x": x1})
    assert y.shape == (1, 3, 3)


def test_max_pool_with_negative_same_pads_is_refused_as_onnx_runtime_does():
    x = rand(1, 1, 9)
    model = single_node("MaxPool", ["x"], {"x": x}, kernel_shape=[2], strides=[5],
                        auto_pad="SAME_UPPER")
    assert "negative pads" in refused(model, {"x": x})


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool"])
def test_explicit_negative_pads_are_refused_as_onnx_runtime_does(op_type):
    """Only auto_pad SAME_* may give a pool negative pads (cropped first); negative `pads`
    given explicitly are invalid, and ONNX Runtime refuses them too."""
    x = rand(1, 1, 6, 6)
    model = single_node(op_type, ["x"], {"x": x}, kernel_shape=[2, 2], pads=[-1, 0, 0, 0])
    assert "padding: -1 is not an unsigned long" in refused(model, {"x": x})
    with pytest.raises(Exception, match="pads must not contain negative values"):
        ort_outputs(model, {"x": x})
