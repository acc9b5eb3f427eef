"""What the ONNX quantization rules refuse, each with its reason: scales and zero points of
the wrong shape or type, and inputs WebNN cannot quantize or dequantize."""
from __future__ import annotations

import numpy as np
import pytest

from .helpers import refused, single_node

X8 = np.zeros((2, 3), np.int8)
XF = np.zeros((2, 4), np.float32)


def _dq(x, scale, zp=None, opset=21, **attrs):
    weights = {"s": scale} if zp is None else {"s": scale, "z": zp}
    return single_node("DequantizeLinear", ["x", "s"] + (["z"] if zp is not None else []),
                       {"x": x}, weights, opset=opset, **attrs)


def _q(x, scale, zp=None, opset=21, **attrs):
    weights = {"s": scale} if zp is None else {"s": scale, "z": zp}
    return single_node("QuantizeLinear", ["x", "s"] + (["z"] if zp is not None else []),
                       {"x": x}, weights, opset=opset, out_types=[3], **attrs)


F = np.float32


@pytest.mark.parametrize("model, x, reason", [
    (_dq(X8, np.ones(3, F), axis=5), X8, "axis 5 is out of range for the input's rank 2"),
    (_dq(X8, np.ones(3, F), axis=-3), X8, "axis -3 is out of range for the input's rank 2"),
    (_dq(X8, np.ones(4, F), axis=1), X8,
     "scale has shape [4]; per-axis quantization needs [3] (input dimension 1)"),
    (_dq(X8, np.ones(3, F), np.zeros(2, np.int8), axis=1), X8,
     "zero point has shape [2]; per-axis quantization needs [3]"),
    (_dq(np.zeros((2, 4), np.int8), np.ones((2, 3), F), axis=1, block_size=2),
     np.zeros((2, 4), np.int8),
     "scale has shape [2, 3]; blocked quantization with block_size 2 on axis 1 needs [2, 2]"),
    (_dq(np.zeros((2, 3), F), np.ones(1, F)), np.zeros((2, 3), F),
     "WebNN dequantizes int8, uint8, int32, int4 and uint4 only"),
    (_dq(X8, np.ones(1, np.int32)), X8, "WebNN scales are float32 or float16"),
    (_q(np.zeros((2, 3), np.int32), np.ones(1, F)), np.zeros((2, 3), np.int32),
     "input type int32: WebNN quantizes float32 or float16"),
    (_q(XF, np.ones(1, F), np.zeros(1, np.int32)), XF,
     "WebNN quantizes to int8, uint8, int4 and uint4 only"),
    (_dq(X8, np.ones(1, F), opset=23, output_dtype=6), X8,
     "output_dtype INT32: WebNN dequantizes to float32 or float16"),
    (_q(XF, np.ones(1, F), np.zeros(1, np.int8), opset=23, precision=6), XF,
     "precision INT32: WebNN divides in float32 or float16 only"),
    (_q(XF, np.ones(1, F), output_dtype=6), XF,
     "quantizing to INT32: WebNN quantizes to int8, uint8, int4 and uint4 only"),
])
def test_quantization_refusals(model, x, reason):
    assert reason in refused(model, {"x": x})


def test_dynamic_quantize_linear_takes_float32_only():
    x = np.zeros((2, 3), np.float16)
    model = single_node("DynamicQuantizeLinear", ["x"], {"x": x}, outputs=("y", "s", "z"),
                        out_types=[2, 1, 2], opset=11)
    assert "input type float16: DynamicQuantizeLinear takes float32" in refused(model, {"x": x})


# -- QLinearMatMul / QLinearConv / MatMulNBits ---------------------------------------------------
U8 = np.uint8


def _qmatmul(a, b, **over):
    """QLinearMatMul of graph inputs a and b; the six scale/zero-point initializers are
    per-tensor unless `over` replaces one (None leaves that optional slot empty)."""
    params = {"as": np.array(0.5, F), "az": np.array(1, a.dtype), "bs": np.array(0.25, F),
              "bz": np.array(2, b.dtype), "ys": np.array(0.125, F), "yz": np.array(3, U8)}
    params.update(over)
    names = ["a", "as", "az", "b", "bs", "bz", "ys", "yz"]
    node_inputs = [n if n in ("a", "b") or params[n] is not None else "" for n in names]
    weights = {n: v for n, v in params.items() if v is not None}
    return single_node("QLinearMatMul", node_inputs, {"a": a, "b": b}, weights,
                       out_types=[2], opset=13)


A8 = np.zeros((2, 3), U8)
B8 = np.zeros((3, 4), U8)


@pytest.mark.parametrize("a, b, over, reason", [
    (np.zeros(3, U8), B8, {}, "1-D operands: WebNN's matmul takes matrices"),
    (A8, np.zeros(3, U8), {}, "1-D operands: WebNN's matmul takes matrices"),
    (np.zeros((2, 3), np.int32), B8, {"az": np.array(1, np.int32)},
     "quantized input 'a' is int32; QLinear ops take int8 or uint8"),
    (A8, B8, {"bz": np.array(2, np.int8)}, "zero point 'bz' is int8, its input 'b' is uint8"),
    (A8, B8, {"as": np.ones(3, F)}, "a_scale has shape [3]; it must be one value or 2 values"),
    (A8, B8, {"as": np.ones((2, 1), F)},
     "a_scale has shape [2, 1]; it must be one value or 2 values"),
    (A8, B8, {"bs": np.ones(3, F)}, "b_scale has shape [3]; it must be one value or 4 values"),
    (A8, B8, {"az": np.ones(3, U8)},
     "a_zero_point has shape [3]; it must be one value or 2 values"),
    (A8, B8, {"bz": np.ones(2, U8)},
     "b_zero_point has shape [2]; it must be one value or 4 values"),
    (A8, B8, {"ys": np.ones(2, F)}, "y_scale must be one value (per-tensor)"),
    (A8, B8, {"yz": np.ones(2, U8)}, "y_zero_point must be one value (per-tensor)"),
    (A8, B8, {"bs": np.array(0.25, np.float16)}, "the three scales must share one float type"),
    (A8, B8, {"ys": np.array(0.25, np.float16)}, "the three scales must share one float type"),
    (A8, B8, {"as": np.array(1, np.int32), "bs": np.array(1, np.int32),
              "ys": np.array(1, np.int32)}, "the three scales must share one float type"),
])
def test_qlinear_matmul_refusals(a, b, over, reason):
    assert reason in refused(_qmatmul(a, b, **over), {"a": a, "b": b})


def test_qlinear_conv_bias_must_be_int32():
    x = np.zeros((1, 2, 4, 4), U8)
    weights = {"xs": np.array(0.5, F), "xz": np.array(1, U8), "w": np.ones((3, 2, 1, 1), U8),
               "ws": np.array(0.5, F), "wz": np.array(0, U8), "ys": np.array(1, F),
               "yz": np.array(0, U8), "bias": np.zeros(3, np.int64)}
    model = single_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"],
                        {"x": x}, weights, out_types=[2], opset=13)
    assert "bias is int64; QLinearConv's bias is int32" in refused(model, {"x": x})


def _nbits(k=32, n=2, block=16, bits=4, a_type=F, b_bytes=None, scales=None, zp=None,
           g_idx=None):
    blocks = -(-k // block)
    weights = {"B": np.zeros(b_bytes if b_bytes is not None else (n, blocks, block * bits // 8),
                             U8),
               "s": scales if scales is not None else np.ones(n * blocks, a_type)}
    names = ["A", "B", "s", "", ""]
    if zp is not None:
        weights["z"], names[3] = zp, "z"
    if g_idx is not None:
        weights["g"], names[4] = g_idx, "g"
    a = np.zeros((3, k), a_type)
    return single_node("MatMulNBits", names, {"A": a}, weights, domain="com.microsoft",
                       opset=21, K=k, N=n, bits=bits, block_size=block), {"A": a}


@pytest.mark.parametrize("kwargs, reason", [
    (dict(bits=3), "bits=3: WebNN holds 4- and 8-bit weights only"),
    (dict(b_bytes=(2, 2, 7)), "B has 28 bytes; N=2, K=32, block_size=16 and bits=4 need 32"),
    (dict(k=40, b_bytes=(2, 2, 8)), "B has 32 bytes; N=2, K=40, block_size=16 and bits=4 need 48"),
    (dict(bits=8, b_bytes=(2, 2, 8)), "B has 32 bytes; N=2, K=32, block_size=16 and bits=8 "
                                      "need 64"),
    (dict(scales=np.ones(4, np.float16)), "scales are float16, A is float32"),
    (dict(zp=np.zeros(2, np.int32)), "zero_points of type int32: packed uint8 or A's float type"),
    (dict(g_idx=(np.arange(32)[::-1] // 16).astype(np.int32)),
     "g_idx reorders the weight blocks (act-order)"),
    (dict(g_idx=(np.arange(32) // 8).astype(np.int32)),
     "g_idx reorders the weight blocks (act-order)"),
])
def test_matmul_nbits_refusals(kwargs, reason):
    model, feeds = _nbits(**kwargs)
    assert reason in refused(model, feeds)
