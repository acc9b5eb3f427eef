"""ONNX quantization ops through import and the executor: QuantizeLinear / DequantizeLinear
(per tensor, per axis, blocked, 4-bit, output_dtype), DynamicQuantizeLinear, QLinearMatMul,
QLinearConv and com.microsoft MatMulNBits.

Expected values are hand-computed from ONNX's formulas, or, for MatMulNBits and QLinearConv
(which ONNX Runtime implements), ONNX Runtime's own result on the same model.
"""
from __future__ import annotations

import re

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter.errors import UnsupportedError
from converter.runtimes.execute import run
from converter.importers.onnx import import_model

RNG = np.random.default_rng(7)


def _model(nodes, inputs: dict, outputs: dict, inits: dict | None = None, opset: int = 21):
    """A model whose graph inputs are `inputs` (name -> example array) and whose outputs are
    `outputs` (name -> numpy dtype); `inits` become initializers."""
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in inputs.items()]
    outs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(t)), None)
            for n, t in outputs.items()]
    init = []
    for n, a in (inits or {}).items():
        init.append(a if isinstance(a, onnx.TensorProto) else numpy_helper.from_array(a, n))
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft", 1)]
    m = helper.make_model(helper.make_graph(nodes, "q", ins, outs, init), opset_imports=opsets)
    m.ir_version = 10
    return m


def _webnn(model, feeds):
    """Import a copy (import releases initializer bytes from the proto it reads) and run it."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = import_model(copy)
    got = run(graph, feeds)
    return graph, [got[o.name] for o in model.graph.output]


def _ort(model, feeds):
    return ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)


def _ops(graph) -> list[str]:
    return [op.op_type for op in graph.operations]


# -- QuantizeLinear / DequantizeLinear ----------------------------------------------------------
def test_quantize_per_tensor_rounds_half_to_even_and_saturates():
    x = np.array([-1.0, 0.0, 1.5, 2.5, 3.0, 300.0, -300.0], np.float32)
    m = _model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])], {"x": x},
               {"y": np.uint8}, {"s": np.array(2.0, np.float32), "z": np.array(10, np.uint8)})
    graph, (y,) = _webnn(m, {"x": x})
    # x / 2 = -0.5 0 0.75 1.25 1.5 150 -150; round half to even: -0 0 1 1 2 150 -150; + 10
    np.testing.assert_array_equal(y, [10, 10, 11, 11, 12, 160, 0])
    q = next(op for op in graph.operations if op.op_type == "quantizeLinear")
    assert q.input("scale").shape == (1,) and q.input("zeroPoint").shape == (1,)


def test_quantize_per_axis_scale_takes_the_input_rank():
    x = np.array([[[[1.0]], [[10.0]], [[-4.0]]]], np.float32)  # [1, 3, 1, 1]
    inits = {"s": np.array([0.5, 4.0, 2.0], np.float32), "z": np.array([0, -3, 5], np.int8)}
    m = _model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1)],
               {"x": x}, {"y": np.int8}, inits)
    graph, (y,) = _webnn(m, {"x": x})
    # 1 / 0.5 + 0 = 2; 10 / 4 = 2.5 -> 2, - 3 = -1; -4 / 2 + 5 = 3
    np.testing.assert_array_equal(y.reshape(-1), [2, -1, 3])
    q = next(op for op in graph.operations if op.op_type == "quantizeLinear")
    assert q.input("scale").shape == (1, 3, 1, 1)
    assert "reshape" not in _ops(graph)  # known scales are reshaped as arrays, not as ops


def test_quantize_without_zero_point_uses_output_dtype():
    x = np.array([[-3.0, 7.0]], np.float32)
    m = _model([helper.make_node("QuantizeLinear", ["x", "s"], ["y"],
                                 output_dtype=TensorProto.INT8)],
               {"x": x}, {"y": np.int8}, {"s": np.array(0.5, np.float32)})
    _, (y,) = _webnn(m, {"x": x})
    assert y.dtype == np.int8
    np.testing.assert_array_equal(y, [[-6, 14]])


def test_dequantize_per_axis_with_runtime_scale():
    x = np.array([[10, 20], [30, 40]], np.uint8)
    scale = np.array([0.5, 2.0], np.float32)
    m = _model([helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=0)],
               {"x": x, "s": scale}, {"y": np.float32}, {"z": np.array([10, 20], np.uint8)})
    graph, (y,) = _webnn(m, {"x": x, "s": scale})
    # row 0: (10 - 10) * 0.5, (20 - 10) * 0.5; row 1: (30 - 20) * 2, (40 - 20) * 2
    np.testing.assert_array_equal(y, [[0.0, 5.0], [20.0, 40.0]])
    assert "reshape" in _ops(graph)  # the runtime scale [2] is reshaped to [2, 1]


def test_dequantize_int32_without_zero_point():
    x = np.array([-5, 100, 2**30], np.int32)
    m = _model([helper.make_node("DequantizeLinear", ["x", "s"], ["y"])], {"x": x},
               {"y": np.float32}, {"s": np.array(0.5, np.float32)})
    _, (y,) = _webnn(m, {"x": x})
    np.testing.assert_array_equal(y, [-2.5, 50.0, 2.0**29])


def test_quantize_precision_divides_in_float32():
    # precision=FLOAT: a float16 input and scale are divided in float32; 5 / 2 = 2.5 rounds
    # half to even to 2, 2049 / 2 saturates to 255.
    x = np.array([5.0, 2049.0], np.float16)
    m = _model([helper.make_node("QuantizeLinear", ["x", "s"], ["y"],
                                 precision=TensorProto.FLOAT)],
               {"x": x}, {"y": np.uint8}, {"s": np.array(2.0, np.float16)}, opset=25)
    graph, (y,) = _webnn(m, {"x": x})
    np.testing.assert_array_equal(y, [2, 255])
    q = next(op for op in graph.operations if op.op_type == "quantizeLinear")
    assert q.input("input").data_type == q.input("scale").data_type == "float32"


def test_dequantize_blocked():
    x = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.int8)
    m = _model([helper.make_node("DequantizeLinear", ["x", "s"], ["y"], axis=1, block_size=2)],
               {"x": x}, {"y": np.float32}, {"s": np.array([[1.0, 10.0], [0.5, 2.0]], np.float32)})
    _, (y,) = _webnn(m, {"x": x})
    np.testing.assert_array_equal(y, [[1, 2, 30, 40], [2.5, 3, 14, 16]])


def test_dequantize_blocked_partial_last_block_repeats_known_scales():
    x = np.array([[2, 2, 2, 2, 2]], np.int8)  # 5 columns in blocks of 2: 2 + 2 + 1
    m = _model([helper.make_node("DequantizeLinear", ["x", "s"], ["y"], axis=1, block_size=2)],
               {"x": x}, {"y": np.float32}, {"s": np.array([[1.0, 3.0, 5.0]], np.float32)})
    graph, (y,) = _webnn(m, {"x": x})
    np.testing.assert_array_equal(y, [[2, 2, 6, 6, 10]])
    dq = next(op for op in graph.operations if op.op_type == "dequantizeLinear")
    assert dq.input("scale").shape == (1, 5)


def test_dequantize_blocked_partial_block_with_runtime_scale_is_unsupported():
    x = np.zeros((1, 5), np.int8)
    s = np.ones((1, 3), np.float32)
    m = _model([helper.make_node("DequantizeLinear", ["x", "s"], ["y"], axis=1, block_size=2)],
               {"x": x, "s": s}, {"y": np.float32})
    with pytest.raises(UnsupportedError) as info:
        import_model(m)
    assert "not a multiple of block_size 2" in str(info.value)


def test_dequantize_output_dtype_float16():
    x = np.array([0, 100, 255], np.uint8)
    m = _model([helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"],
                                 output_dtype=TensorProto.FLOAT16)],
               {"x": x}, {"y": np.float16},
               {"s": np.array(0.25, np.float32), "z": np.array(128, np.uint8)}, opset=23)
    _, (y,) = _webnn(m, {"x": x})
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, np.array([-32.0, -7.0, 31.75], np.float16))


def test_int4_fake_quantization_keeps_packed_zero_points():
    x = np.array([[-9.0, 0.4, 3.0], [6.0, 7.0, 100.0]], np.float32)
    zp = numpy_helper.from_array(np.array([1, -2], np.int8), "z")
    zp.data_type, zp.raw_data = TensorProto.INT4, b"\xe1"  # 1 then -2, low nibble first
    inits = {"s": np.array([1.0, 2.0], np.float32), "z": zp}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=0),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=0)]
    graph, (y,) = _webnn(_model(nodes, {"x": x}, {"y": np.float32}, inits), {"x": x})
    # row 0 (scale 1, zp 1): q = clamp(round(x) + 1, -8, 7) = -8, 1, 4 -> (q - 1) = -9, 0, 3
    # row 1 (scale 2, zp -2): q = clamp(3 - 2, 4 - 2 (3.5 rounds to 4), 50 - 2) = 1, 2, 7
    #   -> (q + 2) * 2 = 6, 8, 18
    np.testing.assert_array_equal(y, [[-9, 0, 3], [6, 8, 18]])
    q = next(op for op in graph.operations if op.op_type == "quantizeLinear")
    assert q.outputs[0].data_type == "int4" and q.input("zeroPoint").shape == (2, 1)


def test_runtime_int4_zero_point_that_needs_a_reshape_is_unsupported():
    x = np.zeros((3, 4), np.float32)
    m = _model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=0)],
               {"x": x}, {"y": np.int8}, {"s": np.ones(3, np.float32)})
    zp = helper.make_tensor_value_info("z", TensorProto.INT4, [3])
    m.graph.input.append(zp)
    with pytest.raises(UnsupportedError) as info:
        import_model(m)
    assert "cannot reshape 4-bit operands" in str(info.value)


def test_quantize_to_int16_is_unsupported_with_its_reason():
    x = np.zeros(4, np.float32)
    m = _model([helper.make_node("QuantizeLinear", ["x", "s"], ["y"],
                                 output_dtype=TensorProto.INT16)],
               {"x": x}, {"y": np.int16}, {"s": np.array(1.0, np.float32)})
    with pytest.raises(UnsupportedError) as info:
        import_model(m)
    assert "quantizing to INT16" in str(info.value)


# -- DynamicQuantizeLinear ----------------------------------------------------------------------
def test_dynamic_quantize_linear_hand_computed():
    x = np.array([0.0, 2.0, -1.0, 4.0], np.float32)
    m = _model([helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])], {"x": x},
               {"y": np.uint8, "s": np.float32, "z": np.uint8}, opset=11)
    _, (y, s, z) = _webnn(m, {"x": x})
    # range [-1, 4]: scale 5 / 255; zero point round(1 / scale) = 51;
    # y = round(x / scale) + 51 = 51, round(102) + 51, round(-51) + 51, round(204) + 51
    np.testing.assert_allclose(s, np.float32(5.0) / np.float32(255.0), rtol=1e-7)
    assert s.shape == () and z.shape == () and int(z) == 51
    np.testing.assert_array_equal(y, [51, 153, 0, 255])


def test_dynamic_quantize_linear_of_zeros_has_scale_one_over_255():
    x = np.zeros((2, 2), np.float32)
    m = _model([helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])], {"x": x},
               {"y": np.uint8, "s": np.float32, "z": np.uint8}, opset=11)
    _, (y, s, z) = _webnn(m, {"x": x})
    np.testing.assert_allclose(s, 1 / 255, rtol=1e-6)
    assert int(z) == 0 and not y.any()


# -- QLinearMatMul / QLinearConv ----------------------------------------------------------------
def test_qlinear_matmul_hand_computed():
    a = np.array([[130, 120], [128, 140]], np.uint8)
    b = np.array([[3, 0], [1, 5]], np.int8)
    inits = {"as": np.array(0.5, np.float32), "az": np.array(128, np.uint8),
             "bs": np.array(0.25, np.float32), "bz": np.array(1, np.int8),
             "ys": np.array(0.125, np.float32), "yz": np.array(10, np.uint8)}
    m = _model([helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys",
                                                   "yz"], ["y"])],
               {"a": a, "b": b}, {"y": np.uint8}, inits)
    _, (y,) = _webnn(m, {"a": a, "b": b})
    # (a - 128) = [[2, -8], [0, 12]], (b - 1) = [[2, -1], [0, 4]]
    # product [[4, -34], [0, 48]] * (0.5 * 0.25 / 0.125 = 1) + 10, saturated to uint8
    np.testing.assert_array_equal(y, [[14, 0], [10, 58]])


def _qlinear_conv_model(x, w, w_scale, w_zp, bias, **attrs):
    inits = {"xs": np.array(0.05, np.float32), "xz": np.array(3, np.uint8),
             "w": w, "ws": w_scale, "wz": w_zp,
             "ys": np.array(0.2, np.float32), "yz": np.array(120, np.uint8), "b": bias}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                            ["y"], **attrs)
    return _model([node], {"x": x}, {"y": np.uint8}, inits, opset=13)


def test_qlinear_conv_per_channel_with_bias_matches_onnxruntime():
    x = RNG.integers(0, 255, (1, 3, 6, 5)).astype(np.uint8)
    w = RNG.integers(0, 255, (4, 3, 3, 3)).astype(np.uint8)
    m = _qlinear_conv_model(x, w, np.array([0.01, 0.02, 0.005, 0.03], np.float32),
                            np.array([128, 100, 130, 90], np.uint8),
                            RNG.integers(-500, 500, 4).astype(np.int32),
                            pads=[1, 0, 1, 2], strides=[2, 1])
    graph, (y,) = _webnn(m, {"x": x})
    (want,) = _ort(m, {"x": x})
    assert y.shape == want.shape == (1, 4, 3, 5)  # H: (6 + 2 - 3) // 2 + 1, W: 5 + 2 - 3 + 1
    # The integer arithmetic of ONNX's definition is reproduced, not approximated.
    np.testing.assert_array_equal(y, want)
    assert "conv2d" in _ops(graph)


def test_qlinear_conv_1d_goes_through_the_conv_rule():
    x = RNG.integers(0, 255, (1, 2, 9)).astype(np.uint8)
    w = RNG.integers(0, 255, (3, 2, 3)).astype(np.uint8)
    m = _qlinear_conv_model(x, w, np.array(0.01, np.float32), np.array(128, np.uint8),
                            np.zeros(3, np.int32), dilations=[2])
    _, (y,) = _webnn(m, {"x": x})
    (want,) = _ort(m, {"x": x})
    assert y.shape == want.shape == (1, 3, 5)
    np.testing.assert_array_equal(y, want)


# -- com.microsoft MatMulNBits ------------------------------------------------------------------
def _nbits_model(k, n, block, bits=4, zero_points="packed", bias=False, a_shape=(3,),
                 dtype=np.float32, g_idx=False):
    blocks = -(-k // block)
    q = RNG.integers(0, 2 ** bits, (n, blocks * block)).astype(np.uint8)
    packed = (q[:, 0::2] | (q[:, 1::2] << 4)) if bits == 4 else q
    inits = {"B": packed.reshape(n, blocks, block * bits // 8).astype(np.uint8),
             "s": (RNG.random(n * blocks) * 0.1 + 0.01).astype(dtype)}
    names = ["A", "B", "s", "", "", ""]
    if zero_points == "packed":
        z = RNG.integers(0, 2 ** bits, (n, blocks)).astype(np.uint8)
        if bits == 4:
            padded = np.zeros((n, -(-blocks // 2) * 2), np.uint8)
            padded[:, :blocks] = z
            z = padded[:, 0::2] | (padded[:, 1::2] << 4)
        inits["z"], names[3] = z.reshape(-1), "z"
    elif zero_points == "float":
        inits["z"], names[3] = (RNG.random(n * blocks) * 2 ** bits).astype(dtype), "z"
    if g_idx:
        inits["g"], names[4] = (np.arange(k) // block).astype(np.int32), "g"
    if bias:
        inits["bias"], names[5] = RNG.standard_normal(n).astype(dtype), "bias"
    a = RNG.standard_normal((*a_shape, k)).astype(dtype)
    node = helper.make_node("MatMulNBits", names, ["y"], domain="com.microsoft", K=k, N=n,
                            bits=bits, block_size=block)
    return _model([node], {"A": a}, {"y": dtype}, inits), {"A": a}


@pytest.mark.parametrize("case", [
    dict(k=32, n=8, block=16),
    dict(k=48, n=8, block=16),                    # an odd number of blocks: padded zero points
    dict(k=40, n=5, block=16, bias=True),         # K not a multiple of the block
    dict(k=32, n=8, block=16, zero_points=None),  # default zero point 8
    dict(k=32, n=8, block=16, zero_points="float"),
    dict(k=32, n=8, block=32, a_shape=(2, 3)),
    dict(k=32, n=8, block=16, bits=8),
    dict(k=32, n=8, block=16, bits=8, zero_points=None),
    dict(k=32, n=8, block=16, zero_points=None, g_idx=True),
    dict(k=64, n=8, block=32, dtype=np.float16),
])
def test_matmul_nbits_matches_onnxruntime(case):
    model, feeds = _nbits_model(**case)
    graph, (y,) = _webnn(model, feeds)
    (want,) = _ort(model, feeds)
    tol = 1e-2 if case.get("dtype") == np.float16 else 1e-4
    np.testing.assert_allclose(y.astype(np.float64), want.astype(np.float64), atol=tol,
                               rtol=max(tol, 1e-3))
    # The weights stay quantized: one [N, blocks * block] constant of the quantized type.
    bits = case.get("bits", 4)
    weights = [c for c in graph.constants.values() if c.shape[0] == case["n"]
               and c.data_type == ("uint4" if bits == 4 else "uint8") and c.rank == 2
               and c.shape[1] % case["block"] == 0]
    assert weights and "dequantizeLinear" in _ops(graph)


def test_matmul_nbits_g_idx_with_zero_points_is_unsupported():
    model, _ = _nbits_model(32, 8, 16, g_idx=True)
    with pytest.raises(UnsupportedError) as info:
        import_model(model)
    assert "g_idx together with zero_points" in str(info.value)


def test_matmul_nbits_2_bits_is_unsupported():
    model, _ = _nbits_model(32, 8, 16, zero_points=None)
    (bits,) = [a for a in model.graph.node[0].attribute if a.name == "bits"]
    bits.i = 2
    with pytest.raises(UnsupportedError) as info:
        import_model(model)
    assert "bits=2" in str(info.value)


@pytest.mark.parametrize("bits, size, need", [(4, 24, 16), (4, 8, 16), (8, 32, 24),
                                               (8, 23, 24)])
def test_matmul_nbits_zero_points_of_the_wrong_size_are_refused(bits, size, need):
    # N=8, K=48, block 16: 3 blocks a row, packed two a byte at 4 bits (2 bytes a row)
    model, feeds = _nbits_model(48, 8, 16, bits=bits)
    (z,) = [t for t in model.graph.initializer if t.name == "z"]
    z.CopyFrom(numpy_helper.from_array(np.arange(size, dtype=np.uint8) % 3, "z"))
    said = f"zero_points initializer shape {{{size}}} does not match attribute-derived shape " \
        f"[{need}]"
    with pytest.raises(Exception, match=re.escape(said)):
        _ort(model, feeds)
    with pytest.raises(UnsupportedError) as info:
        import_model(model)
    assert f"zero_points has {size} bytes; N=8 rows of 3 blocks at {bits} bits need {need}" \
        in str(info.value)


def test_qlinear_matmul_per_row_a_and_per_column_b_by_the_spec_formula():
    # ONNX: a's scale/zero point may be per row (its axis -2), b's per column (axis -1);
    # y = saturate(round((a - az) @ (b - bz) * as * bs / ys) + yz), worked out here in float64.
    a = np.array([[130, 120, 128], [100, 140, 90]], np.uint8)
    b = np.array([[3, 0, -2, 7], [1, 5, 4, -1], [0, 2, 6, 3]], np.int8)
    inits = {"as": np.array([0.5, 0.25], np.float32), "az": np.array([128, 100], np.uint8),
             "bs": np.array([0.25, 1, 0.5, 2], np.float32), "bz": np.array([1, 0, -1, 2], np.int8),
             "ys": np.array(0.5, np.float32), "yz": np.array(100, np.uint8)}
    m = _model([helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys",
                                                   "yz"], ["y"])],
               {"a": a, "b": b}, {"y": np.uint8}, inits)
    _, (y,) = _webnn(m, {"a": a, "b": b})
    acc = (a.astype(np.float64) - inits["az"][:, None]) @ (b.astype(np.float64) - inits["bz"])
    want = np.clip(np.round(acc * inits["as"][:, None] * inits["bs"] / 0.5) + 100, 0, 255)
    np.testing.assert_array_equal(y, want.astype(np.uint8))
