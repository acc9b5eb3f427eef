"""Reductions, argMin/argMax and cumulativeSum: signatures, shapes and every validation step."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.ir.operand import TensorDesc
from converter.ops.reduction import REDUCE_OPS, reduced_shape
from converter.ops.registry import REQUIRED, get_op, infer

from .helpers import fails


def params(name: str, which: str) -> list[tuple]:
    return [(p.name, p.kind, p.default) for p in getattr(get_op(name), which)]


# -- signatures --------------------------------------------------------------------------------
def test_signatures():
    assert len(REDUCE_OPS) == 10
    for name in REDUCE_OPS:
        assert get_op(name).operands == ("input",)
        assert params(name, "arguments") == []
        assert params(name, "options") == [("axes", "uints", None),
                                           ("keepDimensions", "bool", False)]
    for name in ("argMin", "argMax"):
        assert params(name, "arguments") == [("axis", "uint", REQUIRED)]
        assert params(name, "options") == [("keepDimensions", "bool", False),
                                           ("outputDataType", "dtype", "int32")]
    assert params("cumulativeSum", "arguments") == [("axis", "uint", REQUIRED)]
    assert params("cumulativeSum", "options") == [("exclusive", "bool", False),
                                                  ("reversed", "bool", False)]


# -- reduce ops ---------------------------------------------------------------------------------
# (options, expected output shape) for an input of shape [2, 3, 4].
CASES = [
    ({}, ()),                                             # all axes reduced: a scalar
    ({"keepDimensions": True}, (1, 1, 1)),                # all axes kept as 1
    ({"axes": [1]}, (2, 4)),                              # [2, _, 4]
    ({"axes": [1], "keepDimensions": True}, (2, 1, 4)),
    ({"axes": [2, 0]}, (3,)),                             # [_, 3, _]; axes order is irrelevant
    ({"axes": [0, 2], "keepDimensions": True}, (1, 3, 1)),
    ({"axes": [0, 1, 2]}, ()),                            # explicit all axes: a scalar too
    ({"axes": []}, (2, 3, 4)),                            # empty axes reduce nothing
    ({"axes": [], "keepDimensions": True}, (2, 3, 4)),
]


@pytest.mark.parametrize("name", REDUCE_OPS)
@pytest.mark.parametrize("opts,expected", CASES)
def test_reduce_output_shapes(name, opts, expected):
    b = GraphBuilder()
    y = getattr(b, name)(b.input("x", "float32", [2, 3, 4]), **opts)
    assert (y.data_type, y.shape) == ("float32", expected)


@pytest.mark.parametrize("name", REDUCE_OPS)
def test_reducing_a_scalar_gives_a_scalar(name):
    b = GraphBuilder()
    s = b.input("s", "float16", [])
    assert getattr(b, name)(s).shape == ()
    assert getattr(b, name)(s, keepDimensions=True).shape == ()
    assert getattr(b, name)(s, axes=[]).shape == ()


@pytest.mark.parametrize("name", REDUCE_OPS)
def test_reduce_axes_must_be_distinct_and_in_range(name):
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4])
    fails(lambda: getattr(b, name)(x, axes=[1, 1]), name, "axes", "repeat an axis")
    fails(lambda: getattr(b, name)(x, axes=[0, 3]), name, "axes", "axis 3 is out of range")
    fails(lambda: getattr(b, name)(b.input("s", "float32", []), axes=[0]), name, "axes",
          "out of range for rank 0")


def test_reduce_data_types_follow_each_op():
    b = GraphBuilder()
    i32 = b.input("i32", "int32", [2, 3])
    u8 = b.input("u8", "uint8", [2, 3])
    assert b.reduceSum(i32, axes=[0]).desc == TensorDesc("int32", (3,))
    assert b.reduceProduct(i32).desc == TensorDesc("int32", ())
    assert b.reduceMax(u8, axes=[1]).desc == TensorDesc("uint8", (2,))
    fails(lambda: b.reduceMean(i32), "reduceMean", "input", "int32 is not allowed")
    fails(lambda: b.reduceL2(i32), "reduceL2", "input", "not allowed")
    fails(lambda: b.reduceSum(u8), "reduceSum", "input", "uint8 is not allowed")


def test_reduced_shape_helper():
    assert reduced_shape((5, 6, 7), [0, 2], False) == (6,)
    assert reduced_shape((5, 6, 7), [0, 2], True) == (1, 6, 1)
    assert reduced_shape((), [], False) == ()


# -- argMin / argMax ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["argMin", "argMax"])
def test_arg_min_max_shapes_and_type(name):
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4])
    f = getattr(b, name)
    assert f(x, 1).desc == TensorDesc("int32", (2, 4))                         # [2, _, 4]
    assert f(x, 1, keepDimensions=True).desc == TensorDesc("int32", (2, 1, 4))
    assert f(x, 2, outputDataType="int64").desc == TensorDesc("int64", (2, 3))
    assert f(b.input("i", "int8", [3, 2]), 0).desc == TensorDesc("int32", (2,))  # any input type
    # A 1-D input reduced on its only axis gives a rank-0 result.
    assert f(b.input("v", "float32", [5]), 0).desc == TensorDesc("int32", ())
    assert f(b.input("w", "float32", [5]), 0, keepDimensions=True).shape == (1,)


@pytest.mark.parametrize("name", ["argMin", "argMax"])
def test_arg_min_max_validation(name):
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4])
    f = getattr(b, name)
    fails(lambda: f(x, 3), name, "axis", "axis 3 is out of range for rank 3")
    fails(lambda: f(x), name, "axis", "is required")
    fails(lambda: f(x, 0, outputDataType="float32"), name, "outputDataType", "cannot hold indices")
    fails(lambda: f(x, 0, outputDataType="int42"), name, "outputDataType", "not a data type")
    fails(lambda: f(b.input("s", "float32", []), 0), name, "input", "rank 0")


def test_arg_max_dimension_must_fit_the_index_type():
    # A dimension of 2**31 cannot be indexed by int32 (max 2**31 - 1). Such an input is over
    # the element-count limit, so the step is reached through `infer` with a bare descriptor.
    big = [TensorDesc("float32", (2**31,))]
    fails(lambda: infer("argMax", big, {"axis": 0}), "argMax", "outputDataType",
          "2147483648 elements, more than int32 can index")
    assert infer("argMax", big, {"axis": 0, "outputDataType": "int64"}) == [TensorDesc("int64", ())]


# -- cumulativeSum -------------------------------------------------------------------------------
def test_cumulative_sum_keeps_the_input_descriptor():
    b = GraphBuilder()
    x = b.input("x", "int32", [2, 3])
    for axis in (0, 1):
        y = b.cumulativeSum(x, axis, exclusive=True, reversed=True)
        assert y.desc == TensorDesc("int32", (2, 3))
    assert y.producer.attrs == {"axis": 1, "exclusive": True, "reversed": True}


def test_cumulative_sum_validation():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    fails(lambda: b.cumulativeSum(x, 2), "cumulativeSum", "axis", "out of range for rank 2")
    fails(lambda: b.cumulativeSum(x), "cumulativeSum", "axis", "is required")
    fails(lambda: b.cumulativeSum(x, 0, exclusive=1), "cumulativeSum", "exclusive",
          "not a boolean")
    # 8-bit integers were dropped from cumulativeSum (#912).
    fails(lambda: b.cumulativeSum(b.input("i8", "int8", [3]), 0), "cumulativeSum", "input",
          "int8 is not allowed")
    fails(lambda: b.cumulativeSum(b.input("s", "float32", []), 0), "cumulativeSum", "input",
          "rank 0")


def test_reduction_results_feed_further_ops():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    m = b.reduceMean(x, axes=[1], keepDimensions=True)       # [2, 1]
    y = b.sub(x, m)                                            # broadcasts to [2, 3]
    g = b.build({"y": y, "i": b.argMin(x, 1)})
    assert g.outputs["y"].shape == (2, 3) and g.outputs["i"].shape == (2,)
    assert np.dtype(np.int32).name == g.outputs["i"].data_type
