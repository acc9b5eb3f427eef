"""quantizeLinear and dequantizeLinear through the ONNX lowering, per-tensor, per-axis and
blockwise, on hand values (exact: every value here is representable)."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from .helpers import assert_exact, execute, run1


def test_dequantize_per_tensor_uint8():
    b = GraphBuilder()
    x = b.input("x", "uint8", [3])
    y = b.dequantizeLinear(x, b.constant(np.array([0.5], np.float32)),
                           b.constant(np.array([128], np.uint8)))
    got = run1(b, y, {"x": np.array([0, 128, 255], np.uint8)})
    assert_exact(got, [-64, 0, 63.5], np.float32)


def test_dequantize_blockwise_int8():
    # input [2, 4], scale/zeroPoint [2, 2]: each scale covers a 1x2 block.
    b = GraphBuilder()
    x = b.input("x", "int8", [2, 4])
    scale = b.constant(np.array([[1, 2], [0.5, 4]], np.float32))
    zero = b.constant(np.array([[0, 1], [-2, 3]], np.int8))
    got = run1(b, b.dequantizeLinear(x, scale, zero),
               {"x": np.array([[1, 2, 3, 4], [-2, 0, 3, 5]], np.int8)})
    assert_exact(got, [[1, 2, 4, 6], [0, 1, 0, 8]], np.float32)


def test_dequantize_per_axis_and_int32_and_float16_scale():
    b = GraphBuilder()
    x = b.input("x", "int32", [2, 3])
    y = b.dequantizeLinear(x, b.constant(np.array([[2], [0.25]], np.float16)),
                           b.constant(np.array([[1], [-4]], np.int32)))
    got = run1(b, y, {"x": np.array([[1, 2, 3], [0, 4, 8]], np.int32)})
    assert_exact(got, [[0, 2, 4], [1, 2, 3]], np.float16)


@pytest.mark.parametrize("dtype,values,zero,want", [
    ("int4", [-8, -1, 0, 7, 3], -1, [-14, 0, 2, 16, 8]),
    ("uint4", [0, 1, 15, 8, 2], 8, [-16, -14, 14, 0, -12]),
])
def test_dequantize_packed_4bit_constants(dtype, values, zero, want):
    b = GraphBuilder()
    x = b.constant(dtype, [5], values)
    z = b.constant(dtype, [1], [zero])
    s = b.input("s", "float32", [1])
    got = run1(b, b.dequantizeLinear(x, s, z), {"s": np.array([2], np.float32)})
    assert_exact(got, want, np.float32)


def test_quantize_rounds_half_to_even_and_saturates():
    b = GraphBuilder()
    x = b.input("x", "float32", [7])
    s = b.constant(np.array([1], np.float32))
    got = execute(b, {"u8": b.quantizeLinear(x, s, b.constant(np.array([0], np.uint8))),
                      "i8": b.quantizeLinear(x, s, b.constant(np.array([10], np.int8)))},
                  {"x": np.array([-1.5, -0.5, 0.5, 1.5, 2.5, 300, -300], np.float32)})
    assert_exact(got["u8"], [0, 0, 0, 2, 2, 255, 0], np.uint8)
    assert_exact(got["i8"], [8, 10, 10, 12, 12, 127, -128], np.int8)


def test_quantize_blockwise_and_32bit():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 4])
    scale = b.constant(np.array([[0.5, 2]], np.float32))  # [1, 2]: blocks of 2 columns
    got = execute(b, {
        "u8": b.quantizeLinear(x, scale, b.constant(np.array([[1, 2]], np.uint8))),
        "i32": b.quantizeLinear(x, scale, b.constant(np.array([[-2**31, 2**31 - 1]], np.int32))),
        "u32": b.quantizeLinear(x, scale, b.constant(np.array([[2**32 - 2, 0]], np.uint32)))},
        {"x": np.array([[1, 1.25, 3, 5], [-1, 0, -3, 4]], np.float32)})
    # x / scale = [[2, 2.5, 1.5, 2.5], [-2, 0, -1.5, 2]] -> roundEven [[2, 2, 2, 2], [-2, 0, -2, 2]]
    assert_exact(got["u8"], [[3, 3, 4, 4], [0, 1, 0, 4]], np.uint8)
    assert_exact(got["i32"], [[-2**31 + 2, -2**31 + 2, 2**31 - 1, 2**31 - 1],
                              [-2**31, -2**31, 2**31 - 3, 2**31 - 1]], np.int32)
    assert_exact(got["u32"], [[2**32 - 1, 2**32 - 1, 2, 2], [2**32 - 4, 2**32 - 2, 0, 2]],
                 np.uint32)


def test_quantize_then_dequantize_round_trip():
    b = GraphBuilder()
    x = b.input("x", "float16", [4])
    s = b.constant(np.array([0.25], np.float16))
    z = b.constant(np.array([4], np.int8))
    q = b.quantizeLinear(x, s, z)
    got = execute(b, {"q": q, "d": b.dequantizeLinear(q, s, z)},
                  {"x": np.array([-1, 0.3, 0.5, 40], np.float16)})
    assert_exact(got["q"], [0, 5, 6, 127], np.int8)
    assert_exact(got["d"], [-1, 0.25, 0.5, 30.75], np.float16)


@pytest.mark.parametrize("dtype,carrier", [("int4", np.int8), ("uint4", np.uint8)])
def test_4bit_graph_inputs_and_outputs_travel_one_value_per_byte(dtype, carrier):
    b = GraphBuilder()
    x = b.input("x", dtype, [3])
    zero = b.constant(dtype, [1], [1])
    scale = b.constant(np.array([0.5], np.float32))
    d = b.dequantizeLinear(x, scale, zero)
    q = b.quantizeLinear(d, scale, zero)
    got = execute(b, {"d": d, "q": q}, {"x": np.array([1, 3, 7], carrier)})
    assert_exact(got["d"], [0, 1, 3], np.float32)
    assert_exact(got["q"], [1, 3, 7], carrier)


@pytest.mark.parametrize("dtype,carrier,zero,want", [
    # x / 1 + zero, rounded half to even, then clamped to [-8, 7] or [0, 15]
    ("int4", np.int8, -1, [-8, -8, -1, 1, 5, 7]),  # -7.5 -> -8 - 1 = -9 -> -8
    ("uint4", np.uint8, 8, [0, 0, 8, 10, 14, 15]),
])
def test_quantize_to_4bit_saturates_at_both_ends_of_the_range(dtype, carrier, zero, want):
    b = GraphBuilder()
    x = b.input("x", "float32", [6])
    q = b.quantizeLinear(x, b.constant(np.array([1], np.float32)), b.constant(dtype, [1], [zero]))
    got = run1(b, q, {"x": np.array([-100, -7.5, -0.5, 1.5, 6.5, 100], np.float32)})
    assert_exact(got, want, carrier)


def test_blockwise_along_the_first_axis_of_several():
    # input [4, 3], scale/zeroPoint [2, 3]: each scale covers a 2x1 block (two rows, one column)
    b = GraphBuilder()
    x = b.input("x", "int8", [4, 3])
    scale = b.constant(np.array([[1, 2, 0.5], [4, 0.25, 2]], np.float32))
    zero = b.constant(np.array([[0, 1, 2], [3, -1, 0]], np.int8))
    d = b.dequantizeLinear(x, scale, zero)
    got = execute(b, {"d": d, "q": b.quantizeLinear(d, scale, zero)},
                  {"x": np.arange(1, 13, dtype=np.int8).reshape(4, 3)})
    assert_exact(got["d"], [[1, 2, 0.5], [4, 8, 2], [16, 2.25, 18], [28, 3, 24]], np.float32)
    assert_exact(got["q"], np.arange(1, 13).reshape(4, 3), np.int8)
