"""quantizeLinear and dequantizeLinear: signatures, shapes, output types and every validation step
of the spec, blockwise broadcasting in particular."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.ir.operand import TensorDesc
from converter.ops.quantization import blockwise_broadcastable
from converter.ops.registry import get_op

from .helpers import fails


def const(b: GraphBuilder, *shape: int, dtype=np.float32):
    return b.constant(np.ones(shape, dtype))


def test_signatures():
    for name in ("quantizeLinear", "dequantizeLinear"):
        opdef = get_op(name)
        assert opdef.operands == ("input", "scale", "zeroPoint")
        assert (opdef.operand_options, opdef.arguments, opdef.options) == ((), (), ())


def test_blockwise_broadcastable_is_the_specs_definition():
    # The spec's examples: [4, 5] -> [16, 10] (16 % 4 = 0, 10 % 5 = 0) but not -> [9, 3].
    assert blockwise_broadcastable([4, 5], [16, 10])
    assert not blockwise_broadcastable([4, 5], [9, 3])
    assert blockwise_broadcastable([1, 1], [7, 3])        # per-tensor
    assert blockwise_broadcastable([], [])                 # scalars
    assert not blockwise_broadcastable([2], [2, 2])        # ranks must match
    assert not blockwise_broadcastable([4, 1], [2, 6])     # 2 % 4 = 2: no shrinking


# -- dequantizeLinear --------------------------------------------------------------------------
@pytest.mark.parametrize("scale_shape", [(1, 1), (4, 1), (1, 6), (2, 3), (4, 6)])
def test_dequantize_output_is_input_shape_in_scale_type(scale_shape):
    b = GraphBuilder()
    x = b.input("x", "uint8", [4, 6])
    # Every scale dimension divides the input's: 4 % {1,2,4} = 0 and 6 % {1,3,6} = 0.
    y = b.dequantizeLinear(x, const(b, *scale_shape), const(b, *scale_shape, dtype=np.uint8))
    assert y.desc == TensorDesc("float32", (4, 6))


def test_dequantize_output_type_is_the_scale_type():
    b = GraphBuilder()
    x = b.input("x", "int32", [3])
    y = b.dequantizeLinear(x, const(b, 1, dtype=np.float16), const(b, 1, dtype=np.int32))
    assert y.desc == TensorDesc("float16", (3,))
    s = b.dequantizeLinear(b.input("s", "int8", []), const(b), const(b, dtype=np.int8))
    assert s.desc == TensorDesc("float32", ())


def test_dequantize_blockwise_int4_weights():
    # MatMulNBits-style: 4 rows of 8 int4 weights, one scale and zero point per block of 4.
    b = GraphBuilder()
    w = b.constant("int4", [4, 8], np.zeros(32, np.int8))
    zp = b.constant("int4", [4, 2], np.zeros(8, np.int8))
    y = b.dequantizeLinear(w, const(b, 4, 2), zp)
    assert y.desc == TensorDesc("float32", (4, 8))


def test_dequantize_scale_must_be_blockwise_broadcastable():
    b = GraphBuilder()
    x = b.input("x", "uint8", [4, 6])
    # 4 % 3 = 1: dimension 0 does not split into blocks of scale's size.
    fails(lambda: b.dequantizeLinear(x, const(b, 3, 3), const(b, 3, 3, dtype=np.uint8)),
          "dequantizeLinear", "scale", "[3, 3] is not blockwise broadcastable to input's [4, 6]")
    # A scale larger than the input is not blockwise broadcastable either (4 % 8 = 4).
    fails(lambda: b.dequantizeLinear(x, const(b, 8, 6), const(b, 8, 6, dtype=np.uint8)),
          "dequantizeLinear", "scale")


def test_dequantize_zero_point_has_the_scale_shape():
    b = GraphBuilder()
    x = b.input("x", "uint8", [4, 6])
    fails(lambda: b.dequantizeLinear(x, const(b, 2, 3), const(b, 2, 1, dtype=np.uint8)),
          "dequantizeLinear", "zeroPoint", "shape [2, 1] must equal scale's shape [2, 3]")


def test_dequantize_scale_needs_the_input_rank():
    # The spec has no lower-rank (per-axis, ONNX-style) scale: it must be reshaped first.
    b = GraphBuilder()
    x = b.input("x", "uint8", [4, 6])
    fails(lambda: b.dequantizeLinear(x, const(b, 6), const(b, 6, dtype=np.uint8)),
          "dequantizeLinear", "scale", "rank 1 must match input's rank 2")
    fails(lambda: b.dequantizeLinear(x, const(b, 1, 6), const(b, 6, dtype=np.uint8)),
          "dequantizeLinear", "zeroPoint", "rank 1 must match input's rank 2")


def test_dequantize_data_types():
    b = GraphBuilder()
    x = b.input("x", "uint8", [4])
    fails(lambda: b.dequantizeLinear(x, const(b, 1), const(b, 1, dtype=np.int8)),
          "dequantizeLinear", "zeroPoint", "must match input's uint8")
    fails(lambda: b.dequantizeLinear(x, const(b, 1, dtype=np.int32), const(b, 1, dtype=np.uint8)),
          "dequantizeLinear", "scale", "int32 is not allowed")
    fails(lambda: b.dequantizeLinear(b.input("f", "float32", [4]), const(b, 1), const(b, 1)),
          "dequantizeLinear", "input", "float32 is not allowed")


# -- quantizeLinear ----------------------------------------------------------------------------
def test_quantize_output_is_input_shape_in_zero_point_type():
    b = GraphBuilder()
    x = b.input("x", "float32", [4, 6])
    y = b.quantizeLinear(x, const(b, 1, 3), const(b, 1, 3, dtype=np.int8))  # blocks of [4, 2]
    assert y.desc == TensorDesc("int8", (4, 6))
    z = b.quantizeLinear(x, const(b, 1, 1), const(b, 1, 1, dtype=np.uint32))
    assert z.desc == TensorDesc("uint32", (4, 6))
    h = b.quantizeLinear(b.input("h", "float16", [2]), const(b, 2, dtype=np.float16),
                         const(b, 2, dtype=np.uint8))
    assert h.desc == TensorDesc("uint8", (2,))


def test_quantize_validation():
    b = GraphBuilder()
    x = b.input("x", "float32", [4, 6])
    # 6 % 4 = 2.
    fails(lambda: b.quantizeLinear(x, const(b, 4, 4), const(b, 4, 4, dtype=np.int8)),
          "quantizeLinear", "scale", "not blockwise broadcastable")
    fails(lambda: b.quantizeLinear(x, const(b, 2, 2), const(b, 2, 3, dtype=np.int8)),
          "quantizeLinear", "zeroPoint", "must equal scale's shape [2, 2]")
    fails(lambda: b.quantizeLinear(x, const(b, 1, 1, dtype=np.float16),
                                   const(b, 1, 1, dtype=np.int8)),
          "quantizeLinear", "scale", "must match input's float32")
    fails(lambda: b.quantizeLinear(x, const(b, 1, 1), const(b, 1, 1)),
          "quantizeLinear", "zeroPoint", "float32 is not allowed")
    fails(lambda: b.quantizeLinear(x, const(b, 1, 1, 1), const(b, 1, 1, 1, dtype=np.int8)),
          "quantizeLinear", "scale", "rank 3 must match input's rank 2")
