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
])
def test_quantization_refusals(model, x, reason):
    assert reason in refused(model, {"x": x})


def test_dynamic_quantize_linear_takes_float32_only():
    x = np.zeros((2, 3), np.float16)
    model = single_node("DynamicQuantizeLinear", ["x"], {"x": x}, outputs=("y", "s", "z"),
                        out_types=[2, 1, 2], opset=11)
    assert "input type float16: DynamicQuantizeLinear takes float32" in refused(model, {"x": x})
