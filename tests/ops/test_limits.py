"""Shape rules at the edges of the spec's number ranges: the largest tensor (2^31 - 1
elements), a long's range (triangular's diagonal), the largest index an int32 argMax holds,
the 8192-output split, and operands of two types."""
from __future__ import annotations

from converter.ops.builder import GraphBuilder

from .helpers import fails

BIG = 2**31 - 1  # the most elements a tensor may have


def test_padding_and_tiling_up_to_the_largest_tensor_and_not_past_it():
    b = GraphBuilder()
    x = b.input("x", "float32", [BIG - 2])
    assert b.pad(x, [1], [1]).shape == (BIG,)
    fails(lambda: b.pad(x, [1], [2]), "pad", "endingPadding")
    y = b.input("y", "float32", [BIG // 2])
    assert b.tile(y, [2]).shape == (BIG - 1,)
    fails(lambda: b.tile(y, [3]), "tile", "repetitions")


def test_triangular_diagonal_spans_exactly_a_long():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 2])
    assert b.triangular(x, diagonal=2**31 - 1).shape == (2, 2)
    assert b.triangular(x, diagonal=-(2**31)).shape == (2, 2)
    fails(lambda: b.triangular(x, diagonal=2**31), "triangular", "diagonal", "outside")
    fails(lambda: b.triangular(x, diagonal=-(2**31) - 1), "triangular", "diagonal", "outside")


def test_arg_max_index_types_hold_up_to_their_largest_value():
    b = GraphBuilder()
    fits = b.input("x", "float32", [BIG])  # its last index, 2^31 - 2, fits int32
    assert b.argMax(fits, 0, outputDataType="int32").data_type == "int32"


def test_split_into_8192_outputs_is_the_limit():
    b = GraphBuilder()
    x = b.input("x", "float32", [8193])
    y = b.input("y", "float32", [8192])
    assert len(b.split(y, [1] * 8192, axis=0)) == 8192
    fails(lambda: b.split(x, [1] * 8193, axis=0), "split", "splits", "8192")


def test_binary_operands_of_two_types_are_refused():
    b = GraphBuilder()
    fails(lambda: b.add(b.input("a", "float32", [2]), b.input("b", "int32", [2])), "add", "b")
