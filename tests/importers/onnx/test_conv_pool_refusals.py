"""What the ONNX conv and pool rules refuse, each with its reason; and the attribute defaults
the refusals sit next to (GlobalLpPool's p, ConvTranspose's SAME_* output size)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from converter.errors import FormatError

from .helpers import _import, check, ops_of, rand, refused, single_node

I32 = [onnx.TensorProto.INT32]
U8 = np.uint8


def _conv(x, w, **attrs):
    return single_node("Conv", ["x", "w"], {"x": x}, {"w": w}, **attrs)


def _conv_transpose(x, w, **attrs):
    return single_node("ConvTranspose", ["x", "w"], {"x": x}, {"w": w}, **attrs)


def _conv_integer(x, weights, inputs=("x", "w"), **attrs):
    return single_node("ConvInteger", list(inputs), {"x": x}, weights, out_types=I32,
                       opset=10, **attrs)


X4, W4 = rand(1, 2, 4, 4), rand(1, 2, 2, 2)
XU8 = np.zeros((1, 2, 3, 3), U8)


@pytest.mark.parametrize("model, x, reason", [
    (_conv(X4, W4, pads=[1, 1]), X4, "pads [1, 1] must have 4 values"),
    (_conv(X4, W4, auto_pad="SAME"), X4, "auto_pad 'SAME' is not an ONNX auto_pad value"),
    (_conv(rand(1, 3, 2, 2, 2), rand(2, 1, 1, 1, 1), group=2), None,
     "3 input channels are not a multiple of group 2"),
    (_conv_transpose(X4, rand(2, 1, 2, 2), auto_pad="SAME"), X4,
     "auto_pad 'SAME' is not an ONNX auto_pad value"),
    (_conv_integer(XU8, {"w": np.ones((1, 2, 1, 1), np.int32)}), XU8,
     "input 'w' is int32; integer convolution and matmul take uint8 or int8"),
    (_conv_integer(XU8, {"w": np.ones((1, 2, 1, 1), U8), "xz": np.array(1, np.int8)},
                   ("x", "w", "xz")), XU8, "zero point 'xz' is int8 but its input is uint8"),
    (_conv_integer(XU8, {"w": np.ones((1, 2, 1, 1), U8), "xz": np.array([1, 2], U8)},
                   ("x", "w", "xz")), XU8, "zero point 'xz' is per-axis where ONNX allows"),
    (_conv_integer(XU8, {"w": np.ones((2, 2, 1, 1), U8), "wz": np.array([1, 2, 3], U8)},
                   ("x", "w", "", "wz")), XU8, "zero point 'wz' has 3 values for an axis of 2"),
    (_conv_integer(XU8, {"w": np.ones((2, 2, 1, 1), U8), "wz": np.ones((2, 1), U8)},
                   ("x", "w", "", "wz")), XU8,
     "zero point 'wz' shape [2, 1] is neither a scalar nor per-axis"),
])
def test_conv_refusals(model, x, reason):
    feeds = {"x": x if x is not None else rand(1, 3, 2, 2, 2)}
    assert reason in refused(model, feeds)


def test_conv_integer_of_a_float_input_is_refused():
    x = rand(1, 2, 3, 3)
    model = single_node("ConvInteger", ["x", "w"], {"x": x}, {"w": np.ones((1, 2, 1, 1), U8)},
                        out_types=I32, opset=10)
    assert "an input is float32; integer convolution and matmul take uint8 or int8" in \
        refused(model, {"x": x})


@pytest.mark.parametrize("auto_pad, pads", [("SAME_UPPER", [0, 1, 1, 1]),
                                            ("SAME_LOWER", [1, 0, 1, 1])])
def test_conv_transpose_same_output_is_input_times_stride(auto_pad, pads):
    # height 3 * 2 = 6 from (3 - 1) * 2 + 3 = 7 unpadded: total padding 1, the odd one at the
    # end (UPPER) or the beginning (LOWER); width 4 * 3 = 12 from 9 + 5 = 14: 1 at each end
    x, w = rand(1, 1, 3, 4), rand(1, 2, 3, 5)
    model = _conv_transpose(x, w, strides=[2, 3], auto_pad=auto_pad)
    graph, (y,) = check(model, {"x": x}, ort=auto_pad == "SAME_UPPER")
    assert y.shape == (1, 2, 6, 12)
    conv = next(op for op in graph.operations if op.op_type == "convTranspose2d")
    assert conv.attrs["padding"] == pads


@pytest.mark.parametrize("op_type, x, attrs, reason", [
    ("MaxPool", rand(1, 1, 2, 2), {"kernel_shape": [3, 3]},
     "the window (3 with dilation) is larger than the padded input (2)"),
    ("MaxPool", rand(1, 2), {"kernel_shape": [2]}, "input rank 2 has no spatial axes"),
    ("AveragePool", rand(1, 1, 4, 4), {"kernel_shape": [2]},
     "kernel_shape [2] must have one value per spatial axis (2)"),
    ("GlobalAveragePool", rand(1, 2), {}, "input rank 2 has no spatial axes (global pooling"),
    ("GlobalLpPool", rand(1, 1, 2, 2), {"p": 0}, "p=0.0 is not a norm order"),
    ("GlobalLpPool", rand(1, 1, 2, 2), {"p": -2}, "p=-2.0 is not a norm order"),
])
def test_pool_refusals(op_type, x, attrs, reason):
    assert reason in refused(single_node(op_type, ["x"], {"x": x}, **attrs), {"x": x})


@pytest.mark.parametrize("op_type, attrs", [("GlobalLpPool", {}),
                                             ("LpPool", {"kernel_shape": [2, 2]})])
@pytest.mark.parametrize("p", [3.0, 2.0, 2.5])
def test_lp_pool_p_stored_as_a_float_breaks_an_onnx_rule_as_onnx_runtime_says(op_type, attrs, p):
    """p is an INT in the schema: ONNX Runtime refuses a FLOAT p even when it is whole, and so
    does the import (a whole float is not read as the int it spells)."""
    x = rand(1, 1, 2, 2)
    model = single_node(op_type, ["x"], {"x": x}, p=p, **attrs)
    assert {a.name: a.type for a in model.graph.node[0].attribute}["p"] == \
        onnx.AttributeProto.FLOAT
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.InvalidGraph,
                       match="Mismatched attribute type in ' : p'. Expected: 'INT', actual: "
                             "'FLOAT'"):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(FormatError) as info:
        _import(model, {"x": x})
    assert f"{op_type} '{op_type}_0': attribute 'p' has type FLOAT, but ONNX's {op_type} " \
        f"(opset 17) declares INT; the model breaks an ONNX rule" in str(info.value)


def test_global_lp_pool_without_p_is_the_l2_norm():
    x = np.array([[[[3, 0], [0, -4]]]], np.float32)
    graph, (y,) = check(single_node("GlobalLpPool", ["x"], {"x": x}), {"x": x})
    np.testing.assert_allclose(y.reshape(-1), [5.0])
    assert ops_of(graph) == ["reduceL2"]


@pytest.mark.parametrize("model, x, reason", [
    (_conv_transpose(X4, rand(2, 1, 2, 2), output_shape=[5]), X4,
     "output_shape [5] has fewer than 2 values"),
    (_conv_transpose(X4, rand(2, 1, 2, 2), pads=[1, 1, 1]), X4, "pads [1, 1, 1] must have 4"),
    (single_node("MaxPool", ["x"], {"x": X4}, kernel_shape=[0, 2]), X4,
     "kernel_shape [0, 2] must hold positive values"),
    # one value too few (all positive) and the right count with a 0
    (_conv(X4, W4, strides=[2]), X4, "strides [2] must hold 2 positive values"),
    (_conv(X4, W4, dilations=[1, 0]), X4, "dilations [1, 0] must hold 2 positive values"),
    (_conv_transpose(X4, rand(2, 1, 2, 2), output_padding=[1]), X4,
     "output_padding [1] must hold 2 non-negative values"),
    (_conv_transpose(X4, rand(2, 1, 2, 2), output_padding=[0, -1]), X4,
     "output_padding [0, -1] must hold 2 non-negative values"),
])
def test_rules_of_onnx_itself_broken(model, x, reason):
    with pytest.raises(FormatError) as info:
        _import(model, {"x": x})
    assert reason in str(info.value) and "breaks an ONNX rule" in str(info.value)


def test_conv_integer_computed_weights_with_a_zero_point_per_wrong_axis_size():
    # the weights are a graph input: the zero point's length is checked as it is reshaped
    x, w = XU8, np.ones((2, 2, 1, 1), U8)
    model = single_node("ConvInteger", ["x", "w", "", "wz"], {"x": x, "w": w},
                        {"wz": np.array([1, 2, 3], U8)}, out_types=I32, opset=10)
    assert "zero point 'wz' has 3 values for an axis of 2" in refused(model, {"x": x, "w": w})


def test_conv_filter_of_another_rank_is_refused():
    x = rand(1, 2, 4, 4)
    model = single_node("Conv", ["x", "w"], {"x": x, "w": rand(1, 2, 2)})
    assert "filter rank 3 differs from input rank 4" in refused(model, {"x": x, "w": rand(1, 2, 2)})


def test_conv_integer_computed_int8_weights_are_bounded_by_int8_s_whole_range():
    # int8 weights known only at run time: each may be 127 - (-128) = 255 from its zero point
    x, w = np.zeros((1, 300, 1, 1), U8), np.zeros((1, 300, 1, 1), np.int8)
    model = single_node("ConvInteger", ["x", "w"], {"x": x, "w": w}, out_types=I32, opset=10)
    assert "19507500" in refused(model, {"x": x, "w": w})


def test_max_unpool_indices_of_another_shape_than_x_are_refused():
    x, i = rand(1, 1, 2, 2), np.zeros((1, 1, 2, 1), np.int64)
    model = single_node("MaxUnpool", ["x", "i"], {"x": x, "i": i}, opset=11,
                        kernel_shape=[2, 2], strides=[2, 2])
    assert "I [1, 1, 2, 1] does not match X [1, 1, 2, 2]" in refused(model, {"x": x, "i": i})
