"""Corners of the ONNX quantization import rules that the main tests leave open: the opset each
rule starts at (checked against ONNX Runtime running the same opset-10 / opset-11 model), and
per-axis / blocked / output_dtype forms whose numbers differ when a detail is wrong.

Expected values come from ONNX Runtime on the same model, or by hand from ONNX's formulas."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from converter.errors import UnsupportedError
from converter.runtimes.execute import run
from converter.importers.onnx import import_model


def _model(nodes, inputs: dict, outputs: dict, inits: dict | None = None, opset: int = 21):
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in inputs.items()]
    outs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(t)), None)
            for n, t in outputs.items()]
    init = [numpy_helper.from_array(a, n) for n, a in (inits or {}).items()]
    m = helper.make_model(helper.make_graph(nodes, "q", ins, outs, init),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7 if opset < 15 else 10
    return m


def _both(model, feeds):
    """(our outputs, ONNX Runtime's) for the model on `feeds`."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    got = run(import_model(copy), feeds)
    ours = [got[o.name] for o in model.graph.output]
    theirs = ort.InferenceSession(model.SerializeToString(),
                                  providers=["CPUExecutionProvider"]).run(None, feeds)
    return ours, theirs


def _reference(model, feeds):
    """(our output, ONNX's reference evaluator's) for a one-output model."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    got = run(import_model(copy), feeds)
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    return got[model.graph.output[0].name], want


# -- the first opset of each rule --------------------------------------------------------------
def test_quantize_and_dequantize_linear_import_at_opset_10():
    x = np.array([-2.0, -0.3, 0.0, 0.26, 1.0, 7.5], np.float32)
    m = _model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
                helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])],
               {"x": x}, {"y": np.float32},
               {"s": np.array(0.1, np.float32), "z": np.array(20, np.uint8)}, opset=10)
    (ours,), (theirs,) = _both(m, {"x": x})
    # q = clamp(round(x / 0.1) + 20, 0, 255): -20 -> 0, -3 -> 17, 0 -> 20, 3 -> 23, 10 -> 30,
    # 75 -> 95; back: (q - 20) * 0.1
    np.testing.assert_allclose(ours, [-2.0, -0.3, 0.0, 0.3, 1.0, 7.5], rtol=1e-6)
    np.testing.assert_array_equal(ours, theirs)


def test_qlinear_matmul_imports_at_opset_10():
    a = np.array([[130, 120, 7], [128, 140, 255]], np.uint8)
    b = np.array([[3, 0], [1, 5], [2, 2]], np.uint8)
    inits = {"as": np.array(0.5, np.float32), "az": np.array(128, np.uint8),
             "bs": np.array(0.25, np.float32), "bz": np.array(1, np.uint8),
             "ys": np.array(0.125, np.float32), "yz": np.array(100, np.uint8)}
    m = _model([helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"],
                                 ["y"])], {"a": a, "b": b}, {"y": np.uint8}, inits, opset=10)
    (ours,), (theirs,) = _both(m, {"a": a, "b": b})
    # (a - 128) @ (b - 1) * (0.5 * 0.25 / 0.125) + 100, saturated
    want = np.clip((a.astype(np.int64) - 128) @ (b.astype(np.int64) - 1) + 100, 0, 255)
    np.testing.assert_array_equal(ours, want)
    np.testing.assert_array_equal(ours, theirs)


def test_qlinear_conv_imports_at_opset_10():
    x = np.arange(16, dtype=np.uint8).reshape(1, 1, 4, 4) * 9
    w = np.array([[[[1, 2], [3, 4]]], [[[4, 3], [2, 1]]]], np.uint8) + 120
    inits = {"xs": np.array(0.05, np.float32), "xz": np.array(3, np.uint8), "w": w,
             "ws": np.array(0.02, np.float32), "wz": np.array(120, np.uint8),
             "ys": np.array(0.2, np.float32), "yz": np.array(7, np.uint8)}
    m = _model([helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"],
                                 ["y"])], {"x": x}, {"y": np.uint8}, inits, opset=10)
    (ours,), (theirs,) = _both(m, {"x": x})
    assert ours.shape == (1, 2, 3, 3)
    np.testing.assert_array_equal(ours, theirs)


def test_dynamic_quantize_linear_imports_at_opset_11():
    x = np.array([[-1.0, 0.5, 2.0], [3.1, -0.2, 0.0]], np.float32)
    m = _model([helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])], {"x": x},
               {"y": np.uint8, "s": np.float32, "z": np.uint8}, opset=11)
    ours, theirs = _both(m, {"x": x})
    # range [-1, 3.1]: scale 4.1 / 255, zero point round(1 / scale) = round(62.195...) = 62
    np.testing.assert_allclose(ours[1], 4.1 / 255, rtol=1e-6)
    assert int(ours[2]) == 62
    for have, want in zip(ours, theirs):
        np.testing.assert_array_equal(have, want)


# -- per-axis and blocked scales ------------------------------------------------------------
def test_dequantize_per_axis_with_the_lowest_negative_axis():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int8)
    m = _model([helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=-2)],
               {"x": x}, {"y": np.float32},
               {"s": np.array([0.5, 2.0], np.float32), "z": np.array([1, -1], np.int8)},
               opset=13)
    (ours,), (theirs,) = _both(m, {"x": x})
    # row 0: (x - 1) * 0.5, row 1: (x + 1) * 2
    np.testing.assert_array_equal(ours, [[0, 0.5, 1], [10, 12, 14]])
    np.testing.assert_array_equal(ours, theirs)


def test_an_axis_equal_to_the_rank_is_refused():
    x = np.zeros((2, 3), np.int8)
    m = _model([helper.make_node("DequantizeLinear", ["x", "s"], ["y"], axis=2)],
               {"x": x}, {"y": np.float32}, {"s": np.array([0.5, 2.0, 1.0], np.float32)},
               opset=13)
    with pytest.raises(UnsupportedError) as info:
        import_model(m)
    assert "axis 2 is out of range for the input's rank 2" in str(info.value)


def test_dequantize_blocked_along_a_negative_axis():
    x = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.int8)
    m = _model([helper.make_node("DequantizeLinear", ["x", "s"], ["y"], axis=-1, block_size=2)],
               {"x": x}, {"y": np.float32}, {"s": np.array([[1.0, 10.0], [0.5, 2.0]], np.float32)})
    (ours,), (theirs,) = _both(m, {"x": x})
    np.testing.assert_array_equal(ours, [[1, 2, 30, 40], [2.5, 3, 14, 16]])
    np.testing.assert_array_equal(ours, theirs)


def test_dequantize_blocked_with_a_run_time_scale_in_whole_blocks():
    # 4 columns in blocks of 2: the scale passes as it is, no values needed at conversion time
    x = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.int8)
    s = np.array([[1.0, 10.0], [0.5, 2.0]], np.float32)
    m = _model([helper.make_node("DequantizeLinear", ["x", "s"], ["y"], axis=1, block_size=2)],
               {"x": x, "s": s}, {"y": np.float32})
    (ours,), (theirs,) = _both(m, {"x": x, "s": s})
    np.testing.assert_array_equal(ours, [[1, 2, 30, 40], [2.5, 3, 14, 16]])
    np.testing.assert_array_equal(ours, theirs)


def test_dequantize_partial_last_block_along_a_negative_axis():
    x = np.array([[2, 2, 2, 2, 2], [1, 1, 1, 1, 1]], np.int8)  # blocks of 2: 2 + 2 + 1
    s = np.array([[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]], np.float32)
    m = _model([helper.make_node("DequantizeLinear", ["x", "s"], ["y"], axis=-1, block_size=2)],
               {"x": x}, {"y": np.float32}, {"s": s})
    (ours,), (theirs,) = _both(m, {"x": x})
    np.testing.assert_array_equal(ours, [[2, 2, 6, 6, 10], [2, 2, 4, 4, 6]])
    np.testing.assert_array_equal(ours, theirs)


# -- the output type of DequantizeLinear -----------------------------------------------------
def test_dequantize_with_a_float16_scale_gives_float16():
    x = np.array([-3, 0, 7], np.int8)
    m = _model([helper.make_node("DequantizeLinear", ["x", "s"], ["y"])], {"x": x},
               {"y": np.float16}, {"s": np.array(0.25, np.float16)}, opset=21)
    (ours,), (theirs,) = _both(m, {"x": x})
    assert ours.dtype == theirs.dtype == np.float16
    np.testing.assert_array_equal(ours, [-0.75, 0, 1.75])


def test_dequantize_float16_scale_to_float32_output_multiplies_in_float32():
    # 2049 * 0.0999755859375 (the float16 nearest 0.1) is 204.8499755859375: float32 holds it
    # to 204.84998, float16 would round it to 204.875
    x = np.array([2049], np.int32)
    m = _model([helper.make_node("DequantizeLinear", ["x", "s"], ["y"], output_dtype=1)],
               {"x": x}, {"y": np.float32}, {"s": np.array(0.1, np.float16)}, opset=23)
    ours, want = _reference(m, {"x": x})
    assert ours.dtype == np.float32
    np.testing.assert_array_equal(ours, want)
    np.testing.assert_allclose(ours, [2049 * float(np.float16(0.1))], rtol=1e-7)


# -- the type QuantizeLinear divides in -----------------------------------------------------
def test_quantize_float16_divides_in_float16_without_precision():
    # -46.03 / 2.63 (both float16) is -17.4967 in float32 but -17.5 in float16, which rounds
    # half to even to -18
    x = np.array([-46.03, 10.0], np.float16)
    m = _model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])], {"x": x},
               {"y": np.int8}, {"s": np.array(2.63, np.float16), "z": np.array(0, np.int8)})
    ours, want = _reference(m, {"x": x})
    np.testing.assert_array_equal(ours, want)
    np.testing.assert_array_equal(ours, [-18, 4])


# -- QLinearMatMul with batched b -----------------------------------------------------------
def test_qlinear_matmul_batched_b_per_column_with_a_2d_a():
    # a [3, 4] times b [2, 4, 5]: the result [2, 3, 5]; b's scale and zero point per column
    # (b's last axis, 5 values), a's per tensor
    rng = np.random.default_rng(5)
    a = rng.integers(0, 255, (3, 4)).astype(np.uint8)
    b = rng.integers(0, 255, (2, 4, 5)).astype(np.uint8)
    bs = np.array([0.02, 0.03, 0.05, 0.01, 0.04], np.float32)
    bz = np.array([120, 128, 130, 100, 140], np.uint8)
    inits = {"as": np.array(0.05, np.float32), "az": np.array(128, np.uint8), "bs": bs,
             "bz": bz, "ys": np.array(0.5, np.float32), "yz": np.array(100, np.uint8)}
    m = _model([helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"],
                                 ["y"])], {"a": a, "b": b}, {"y": np.uint8}, inits, opset=10)
    copy = onnx.ModelProto()
    copy.CopyFrom(m)
    got = run(import_model(copy), {"a": a, "b": b})["y"]
    # ONNX's definition: integer products, one multiplier per column, round half to even
    acc = (a.astype(np.int64) - 128) @ (b.astype(np.int64) - bz.astype(np.int64))
    multiplier = (np.float32(0.05) * bs / np.float32(0.5)).astype(np.float32)
    want = np.clip(np.rint(acc.astype(np.float32) * multiplier) + 100, 0, 255)
    assert got.shape == (2, 3, 5)
    np.testing.assert_array_equal(got, want)


def test_qlinear_matmul_result_takes_the_type_of_y_zero_point():
    # a and b uint8, y int8: ONNX lets the output type differ from the inputs'
    a = np.array([[130, 120], [128, 140]], np.uint8)
    b = np.array([[3, 0], [1, 5]], np.uint8)
    inits = {"as": np.array(0.5, np.float32), "az": np.array(128, np.uint8),
             "bs": np.array(0.25, np.float32), "bz": np.array(1, np.uint8),
             "ys": np.array(0.125, np.float32), "yz": np.array(-10, np.int8)}
    m = _model([helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"],
                                 ["y"])], {"a": a, "b": b}, {"y": np.int8}, inits, opset=10)
    ours, want = _reference(m, {"a": a, "b": b})  # ONNX Runtime has no mixed-type kernel
    # (a - 128) @ (b - 1) = [[4, -34], [0, 48]], times 1, plus -10, saturated to int8
    assert ours.dtype == want.dtype == np.int8
    np.testing.assert_array_equal(ours, [[-6, -44], [-10, 38]])
    np.testing.assert_array_equal(ours, want)


def test_qlinear_conv_result_takes_the_type_of_y_zero_point():
    x = np.arange(9, dtype=np.uint8).reshape(1, 1, 3, 3) * 20
    w = np.array([[[[1, 0], [0, 1]]]], np.uint8) + 2
    inits = {"xs": np.array(0.1, np.float32), "xz": np.array(60, np.uint8), "w": w,
             "ws": np.array(0.5, np.float32), "wz": np.array(2, np.uint8),
             "ys": np.array(0.25, np.float32), "yz": np.array(-3, np.int8)}
    m = _model([helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"],
                                 ["y"])], {"x": x}, {"y": np.int8}, inits, opset=10)
    ours, want = _reference(m, {"x": x})
    # each output: (x[i, j] - 60) + (x[i + 1, j + 1] - 60), times 0.1 * 0.5 / 0.25, minus 3
    assert ours.dtype == want.dtype == np.int8
    np.testing.assert_array_equal(ours[0, 0], [[-11, -3], [13, 21]])
    np.testing.assert_array_equal(ours, want)


# -- com.microsoft MatMulNBits ---------------------------------------------------------------
def test_matmul_nbits_bits_default_to_4():
    k, n, block = 32, 4, 16
    rng = np.random.default_rng(9)
    q = rng.integers(0, 16, (n, k)).astype(np.uint8)
    packed = (q[:, 0::2] | (q[:, 1::2] << 4)).reshape(n, k // block, block // 2)
    scales = (rng.random(n * (k // block)) * 0.1 + 0.01).astype(np.float32)
    a = rng.standard_normal((2, k)).astype(np.float32)
    node = helper.make_node("MatMulNBits", ["A", "B", "s"], ["y"], domain="com.microsoft",
                            K=k, N=n, block_size=block)  # no bits attribute
    m = _model([node], {"A": a}, {"y": np.float32}, {"B": packed, "s": scales})
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    (ours,), (theirs,) = _both(m, {"A": a})
    # B's default zero point is 8: w[j, c] = (q[j, c] - 8) * scale of c's block
    w = (q.astype(np.float32) - 8) * np.repeat(scales.reshape(n, k // block), block, axis=1)
    np.testing.assert_allclose(ours, a @ w.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)


def test_qlinear_matmul_missing_zero_points_are_zero():
    # empty zero-point names (ONNX's QuantizeLinear default): a's and y's zero points are 0
    a = np.array([[2, 3], [4, 1]], np.uint8)
    b = np.array([[1, 0], [2, 5]], np.uint8)
    inits = {"as": np.array(0.5, np.float32), "bs": np.array(1.0, np.float32),
             "bz": np.array(1, np.uint8), "ys": np.array(0.25, np.float32)}
    m = _model([helper.make_node("QLinearMatMul", ["a", "as", "", "b", "bs", "bz", "ys", ""],
                                 ["y"])], {"a": a, "b": b}, {"y": np.uint8}, inits, opset=10)
    copy = onnx.ModelProto()
    copy.CopyFrom(m)
    y = run(import_model(copy), {"a": a, "b": b})["y"]
    # a @ (b - 1) = [[3, 10], [1, 0]], times 0.5 * 1 / 0.25 = 2
    assert y.dtype == np.uint8
    np.testing.assert_array_equal(y, [[6, 20], [2, 0]])


def _qlinear_conv(y_zp="yz", name="qc", extra=None):
    x = np.arange(9, dtype=np.uint8).reshape(1, 1, 3, 3) * 20
    w = np.array([[[[1, 0], [0, 1]]]], np.uint8) + 2
    inits = {"xs": np.array(0.1, np.float32), "xz": np.array(60, np.uint8), "w": w,
             "ws": np.array(0.5, np.float32), "wz": np.array(2, np.uint8),
             "ys": np.array(0.25, np.float32), "yz": np.array(3, np.uint8), **(extra or {})}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", y_zp],
                            ["y"], name=name)
    m = _model([node], {"x": x}, {"y": np.uint8}, inits, opset=10)
    copy = onnx.ModelProto()
    copy.CopyFrom(m)
    return run(import_model(copy), {"x": x})["y"]


def test_qlinear_conv_without_y_zero_point_takes_0_of_x_type():
    # each output: (x[i, j] - 60) + (x[i + 1, j + 1] - 60) = -40, 0, 80, 120, times 0.2
    y = _qlinear_conv(y_zp="")
    assert y.dtype == np.uint8
    np.testing.assert_array_equal(y[0, 0], [[0, 0], [16, 24]])  # -8 saturates to 0


def test_qlinear_conv_names_its_inner_values_apart_from_existing_ones():
    # an initializer already named like the first inner value ("qc::x_int"): the inner one
    # takes another name, and the numbers are unchanged
    clash = {"qc::x_int": np.zeros(3, np.float32)}
    np.testing.assert_array_equal(_qlinear_conv(extra=clash), _qlinear_conv())
    np.testing.assert_array_equal(_qlinear_conv()[0, 0], [[0, 3], [19, 27]])
