"""Activation ops: signatures, shape inference and every validation step of the spec."""
from __future__ import annotations

import math

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.errors import ConverterError
from converter.ops.activation import cast_number
from converter.ops.registry import REQUIRED, get_op

from .helpers import fails

SAME_AS_INPUT = ("elu", "gelu", "hardSigmoid", "hardSwish", "leakyRelu", "linear", "relu",
                 "sigmoid", "softplus", "softsign", "tanh", "clamp")


def options(name: str) -> dict:
    return {p.name: p.default for p in get_op(name).options}


# -- signatures --------------------------------------------------------------------------------
def test_option_defaults_are_the_specs():
    assert options("elu") == {"alpha": 1.0}
    assert options("hardSigmoid") == {"alpha": 0.2, "beta": 0.5}
    assert options("leakyRelu") == {"alpha": 0.01}
    assert options("linear") == {"alpha": 1.0, "beta": 0.0}
    # clamp's bounds have no default: absent means "do not clamp on that side".
    assert options("clamp") == {"minValue": None, "maxValue": None}
    for name in ("gelu", "hardSwish", "relu", "sigmoid", "softplus", "softsign", "tanh",
                 "prelu", "softmax"):
        assert options(name) == {}, name


def test_operands_and_positional_arguments():
    assert get_op("prelu").operands == ("input", "slope")
    softmax = get_op("softmax")
    assert softmax.operands == ("input",)
    assert [(p.name, p.kind, p.default) for p in softmax.arguments] == [("axis", "uint", REQUIRED)]
    for name in SAME_AS_INPUT:
        opdef = get_op(name)
        assert (opdef.operands, opdef.operand_options, opdef.arguments) == (("input",), (), ())
        assert opdef.family == "activation"


# -- ops that keep their input's descriptor ---------------------------------------------------
@pytest.mark.parametrize("name", SAME_AS_INPUT)
def test_result_is_the_input_descriptor(name):
    b = GraphBuilder()
    x = b.input("x", "float16", [2, 3, 5])
    y = getattr(b, name)(x)
    assert (y.data_type, y.shape) == ("float16", (2, 3, 5))
    s = getattr(b, name)(b.input("s", "float32", []))  # rank 0 is allowed (ranks "N")
    assert (s.data_type, s.shape) == ("float32", ())


def test_float_options_are_stored_as_given():
    b = GraphBuilder()
    x = b.input("x", "float32", [4])
    y = b.hardSigmoid(x, alpha=1, beta=0.25)
    assert y.producer.attrs == {"alpha": 1.0, "beta": 0.25}
    assert y.producer.attr("alpha") == 1.0 and isinstance(y.producer.attr("alpha"), float)
    assert b.leakyRelu(x).producer.attr("alpha") == 0.01  # default supplied, not stored
    assert b.leakyRelu(x).producer.attrs == {}


def test_double_options_must_be_finite():
    b = GraphBuilder()
    x = b.input("x", "float32", [4])
    fails(lambda: b.elu(x, alpha=math.inf), "elu", "alpha", "finite")
    fails(lambda: b.linear(x, beta=math.nan), "linear", "beta", "finite")
    fails(lambda: b.leakyRelu(x, alpha="0.1"), "leakyRelu", "alpha", "not a number")


def test_data_types_follow_the_limits_tables():
    b = GraphBuilder()
    i8 = b.input("i8", "int8", [3])
    assert b.relu(i8).data_type == "int8"  # relu takes int8/int32/int64 (#848)
    assert b.clamp(b.input("u8", "uint8", [3]), minValue=1).data_type == "uint8"
    fails(lambda: b.sigmoid(i8), "sigmoid", "input", "int8 is not allowed")
    fails(lambda: b.gelu(b.input("i32", "int32", [3])), "gelu", "input", "not allowed")


# -- clamp --------------------------------------------------------------------------------------
def test_clamp_accepts_ordered_or_one_sided_bounds():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 2])
    assert b.clamp(x, minValue=0, maxValue=6).shape == (2, 2)
    assert b.clamp(x, minValue=3, maxValue=3).shape == (2, 2)  # equal bounds are allowed
    assert b.clamp(x, minValue=1e30).shape == (2, 2)            # no max: nothing to conflict
    assert b.clamp(x, maxValue=-1e30).shape == (2, 2)


def test_clamp_min_greater_than_max_fails():
    b = GraphBuilder()
    x = b.input("x", "float32", [2])
    fails(lambda: b.clamp(x, minValue=6, maxValue=0), "clamp", "minValue",
          "minValue 6.0 is greater than maxValue 0.0")


def test_clamp_compares_the_bounds_after_casting_to_the_input_type():
    b = GraphBuilder()
    # uint8 saturates: minValue -3 > maxValue -5 as numbers, but both cast to 0, and 0 > 0 is
    # false, so the call is valid.
    assert b.clamp(b.input("u", "uint8", [2]), minValue=-3, maxValue=-5).shape == (2,)
    # int32 rounds half to even: 2.6 -> 3 and 2.4 -> 2, so min 3 > max 2.
    fails(lambda: b.clamp(b.input("i", "int32", [2]), minValue=2.6, maxValue=2.4),
          "clamp", "minValue", "minValue 3 is greater than maxValue 2")
    # float16 tops out at 65504: 1e6 and 7e4 both become +Infinity, and inf > inf is false.
    assert b.clamp(b.input("h", "float16", [2]), minValue=1e6, maxValue=7e4).shape == (2,)
    # In float32 the same bounds stay 1e6 > 70000.
    fails(lambda: b.clamp(b.input("f", "float32", [2]), minValue=1e6, maxValue=7e4),
          "clamp", "minValue")


def test_cast_number_follows_the_spec_casting_algorithm():
    assert cast_number(2.5, "int32") == 2 and cast_number(3.5, "int32") == 4  # half to even
    assert cast_number(-2.5, "int8") == -2
    assert cast_number(300, "uint8") == 255 and cast_number(-1, "uint8") == 0
    assert cast_number(-1000, "int8") == -128
    assert cast_number(math.nan, "int64") == 0
    assert cast_number(math.inf, "int32") == 2**31 - 1
    assert cast_number(4_000_000_000, "uint32") == 4_000_000_000  # unsigned range
    assert cast_number(2**70, "uint64") == 2**64 - 1
    assert cast_number(65504, "float16") == 65504.0       # float16's largest finite value
    assert cast_number(1e6, "float16") == math.inf
    assert cast_number(-1e6, "float16") == -math.inf
    assert cast_number(0.1, "float32") == float(np.float32(0.1)) != 0.1
    assert cast_number(2**200, "float32") == math.inf
    assert math.isnan(cast_number(math.nan, "float32"))
    # integers beyond float64's range (float(x) overflows): infinities of their sign
    assert cast_number(2**2000, "float32") == math.inf
    assert cast_number(-(2**2000), "float16") == -math.inf
    with pytest.raises(ConverterError, match="unknown data type 'int2'"):
        cast_number(1, "int2")


# -- prelu ------------------------------------------------------------------------------------
def test_prelu_broadcasts_slope_and_input():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4])
    # [4] -> [1, 1, 4] against [2, 3, 4]: result [2, 3, 4].
    assert b.prelu(x, b.constant(np.zeros(4, np.float32))).shape == (2, 3, 4)
    # [3, 1] -> [1, 3, 1]: result [2, 3, 4].
    assert b.prelu(x, b.constant(np.zeros((3, 1), np.float32))).shape == (2, 3, 4)
    # The spec broadcasts bidirectionally: input [1, 4] with slope [3, 1] gives [3, 4].
    y = b.prelu(b.input("r", "float32", [1, 4]), b.constant(np.zeros((3, 1), np.float32)))
    assert (y.data_type, y.shape) == ("float32", (3, 4))
    # A higher-rank slope raises the rank: input [4], slope [2, 1] gives [2, 4].
    assert b.prelu(b.input("v", "float32", [4]),
                   b.constant(np.zeros((2, 1), np.float32))).shape == (2, 4)


def test_prelu_slope_must_broadcast():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4])
    # [5] against the last dimension 4: neither is 1.
    fails(lambda: b.prelu(x, b.constant(np.zeros(5, np.float32))), "prelu", "slope",
          "not broadcastable")


def test_prelu_slope_has_input_data_type():
    b = GraphBuilder()
    x = b.input("x", "float32", [2])
    fails(lambda: b.prelu(x, b.constant(np.zeros(2, np.float16))), "prelu", "slope",
          "must match input")


# -- softmax ----------------------------------------------------------------------------------
def test_softmax_keeps_shape_for_every_valid_axis():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    for axis in (0, 1):
        y = b.softmax(x, axis)
        assert (y.shape, y.producer.attrs) == ((2, 3), {"axis": axis})


def test_softmax_axis_must_be_in_range():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    fails(lambda: b.softmax(x, 2), "softmax", "axis", "out of range for rank 2")


def test_softmax_axis_is_required():
    b = GraphBuilder()
    fails(lambda: b.softmax(b.input("x", "float32", [2])), "softmax", "axis", "is required")


def test_softmax_needs_rank_1():
    b = GraphBuilder()
    fails(lambda: b.softmax(b.input("x", "float32", []), 0), "softmax", "input", "rank 0")


@pytest.mark.parametrize("data_type, low, high", [
    ("int8", -128, 127), ("uint8", 0, 255), ("int32", -2**31, 2**31 - 1),
    ("uint32", 0, 2**32 - 1), ("int64", -2**63, 2**63 - 1), ("uint64", 0, 2**64 - 1),
    ("int4", -8, 7), ("uint4", 0, 15),
])
def test_cast_number_saturates_at_both_ends_of_every_integer_type(data_type, low, high):
    # the bounds themselves pass through; one past either end (as an integer or a float)
    # saturates to it
    assert cast_number(low, data_type) == low and cast_number(high, data_type) == high
    assert cast_number(low - 1, data_type) == low and cast_number(high + 1, data_type) == high
    assert cast_number(float(low) - 1.5, data_type) == low
    assert cast_number(float(high) + 1.5, data_type) == high
