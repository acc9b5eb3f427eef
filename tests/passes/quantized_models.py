"""Small weight-only quantized ONNX models built with onnx.helper, for the quantized_weights
pass and the target pipeline: a decoder-style MLP block on com.microsoft MatMulNBits (uint4
weights, blockwise scales, packed zero points or the default one) and a DequantizeLinear of
per-axis int8 weights feeding a MatMul. Each weight has more elements than fold_constants
folds (4,096), so it reaches the pass quantized, as a real model's weights do."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN, INNER, BLOCK = 64, 128, 16


def _model(nodes, inputs, outputs, inits) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "quantized", inputs, outputs,
                              [numpy_helper.from_array(a, n) for n, a in inits.items()])
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10
    return model


def _pack_rows(q: np.ndarray) -> np.ndarray:
    """uint4 values [rows, cols] two a byte, low nibble first (cols padded to even)."""
    if q.shape[1] % 2:
        q = np.concatenate([q, np.zeros((q.shape[0], 1), np.uint8)], axis=1)
    return (q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8)


def nbits_weights(rng, k: int, n: int, name: str, zero_points: bool, bits: int = 4) -> dict:
    """MatMulNBits initializers for B [N, K]: packed weights, scales, packed zero points."""
    blocks = k // BLOCK
    q = rng.integers(0, 2 ** bits, (n, k)).astype(np.uint8)
    packed = _pack_rows(q) if bits == 4 else q
    inits = {f"{name}_B": packed.reshape(n, blocks, BLOCK * bits // 8),
             f"{name}_s": (rng.random(n * blocks) * 0.05 + 0.01).astype(np.float32)}
    if zero_points:
        z = rng.integers(0, 2 ** bits, (n, blocks)).astype(np.uint8)
        inits[f"{name}_z"] = (_pack_rows(z) if bits == 4 else z).reshape(-1)
    return inits


def decoder_block(seed: int = 0, bits: int = 4, hidden: int = HIDDEN,
                  inner: int = INNER) -> tuple[onnx.ModelProto, dict]:
    """y = x + down(silu(up(x))): up is MatMulNBits [K=hidden -> N=inner] with zero points,
    down [K=inner -> N=hidden] with the default zero point (2^(bits-1)); block 16. Smaller
    sizes than the defaults give weights fold_constants would fold by size alone."""
    rng = np.random.default_rng(seed)
    inits = {**nbits_weights(rng, hidden, inner, "up", True, bits),
             **nbits_weights(rng, inner, hidden, "down", False, bits)}
    attrs = dict(domain="com.microsoft", bits=bits, block_size=BLOCK)
    nodes = [
        helper.make_node("MatMulNBits", ["x", "up_B", "up_s", "up_z"], ["h"], name="up",
                         K=hidden, N=inner, **attrs),
        helper.make_node("Sigmoid", ["h"], ["gate"], name="gate"),
        helper.make_node("Mul", ["h", "gate"], ["act"], name="silu"),
        helper.make_node("MatMulNBits", ["act", "down_B", "down_s"], ["d"], name="down",
                         K=inner, N=hidden, **attrs),
        helper.make_node("Add", ["x", "d"], ["y"], name="residual"),
    ]
    x = rng.standard_normal((1, 4, hidden)).astype(np.float32)
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)], inits)
    return model, {"x": x}


def dequantize_matmul(seed: int = 1) -> tuple[onnx.ModelProto, dict]:
    """y = x @ DequantizeLinear(W int8 [64, 96], per-axis scale and zero point on axis 1)."""
    rng = np.random.default_rng(seed)
    n = 96
    inits = {"W": rng.integers(-128, 128, (HIDDEN, n)).astype(np.int8),
             "W_scale": (rng.random(n) * 0.02 + 0.005).astype(np.float32),
             "W_zero": rng.integers(-10, 10, n).astype(np.int8)}
    nodes = [helper.make_node("DequantizeLinear", ["W", "W_scale", "W_zero"], ["Wf"],
                              name="weights", axis=1),
             helper.make_node("MatMul", ["x", "Wf"], ["y"], name="matmul")]
    x = rng.standard_normal((2, HIDDEN)).astype(np.float32)
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, (2, n))], inits)
    return model, {"x": x}
