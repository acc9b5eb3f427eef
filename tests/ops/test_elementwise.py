"""Shape rules of the element-wise ops the other files leave out: the one-operand predicates
(uint8 results of the operand's shape) and cast (its shape, the asked data type)."""
from __future__ import annotations

import pytest

from converter.ops.builder import GraphBuilder


@pytest.mark.parametrize("op, dtype", [("logicalNot", "uint8"), ("isNaN", "float32"),
                                       ("isInfinite", "float16")])
def test_predicates_give_uint8_of_the_operand_s_shape(op, dtype):
    b = GraphBuilder()
    y = getattr(b, op)(b.input("a", dtype, [2, 1, 3]))
    assert (y.data_type, y.shape) == ("uint8", (2, 1, 3))


@pytest.mark.parametrize("to", ["int32", "float16", "uint8"])
def test_cast_keeps_the_shape_and_takes_the_data_type(to):
    b = GraphBuilder()
    y = b.cast(b.input("x", "float32", [4, 5]), to)
    assert (y.data_type, y.shape) == (to, (4, 5))
