"""Activation ops: clamp, elu, gelu, hardSigmoid, hardSwish, leakyRelu, linear, prelu, relu,
sigmoid, softmax, softplus, softsign and tanh.

All but prelu keep their input's descriptor. Their scalar options (alpha, beta, minValue ...)
are cast to the input's data type by the spec; only clamp has a validation step that depends
on the cast values (minValue must not exceed maxValue), so the cast is implemented here.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ConverterError
from ..ir.operand import TensorDesc
from .registry import REQUIRED, Param, ShapeContext, op

__all__ = ["cast_number"]

# Ops whose only operand is `input` and whose result has the input's descriptor, with their
# options as the spec's dictionaries declare them (double members, spec defaults).
_SAME_AS_INPUT: dict[str, tuple[Param, ...]] = {
    "elu": (Param("alpha", "float", 1.0),),
    "gelu": (),
    "hardSigmoid": (Param("alpha", "float", 0.2), Param("beta", "float", 0.5)),
    "hardSwish": (),
    "leakyRelu": (Param("alpha", "float", 0.01),),
    "linear": (Param("alpha", "float", 1.0), Param("beta", "float", 0.0)),
    "relu": (),
    "sigmoid": (),
    "softplus": (),
    "softsign": (),
    "tanh": (),
}

# (lowest, highest) value of each integer data type, for the spec's ConvertToInt.
_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "uint8": (0, 2**8 - 1),
    "int32": (-(2**31), 2**31 - 1),
    # The spec's cast table says ConvertToInt(x, 32, "signed") for uint32, an evident typo for
    # "unsigned" (every other unsigned type is cast unsigned); the unsigned range is used.
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
    "int4": (-(2**3), 2**3 - 1),
    "uint4": (0, 2**4 - 1),
}


def cast_number(x: int | float, data_type: str) -> int | float:
    """The spec's `cast` of an MLNumber to `data_type` (Algorithms > Casting).

    Floats round to the nearest representable value (out of range gives +/-Infinity); integers
    saturate to the type's range and round half to even; NaN becomes 0 for integer types.
    """
    if data_type in ("float32", "float16"):
        try:
            value = float(x)
        except OverflowError:  # a bigint beyond double range is beyond any float's range
            return math.inf if x > 0 else -math.inf  # (copysign would convert x to float)
        with np.errstate(over="ignore"):
            return float(np.float32(value) if data_type == "float32" else np.float16(value))
    if data_type not in _INT_RANGES:
        raise ConverterError(f"cannot cast a number to unknown data type {data_type!r}")
    lo, hi = _INT_RANGES[data_type]
    if isinstance(x, float):
        if math.isnan(x):
            return 0
        x = min(max(x, lo), hi)
        return int(round(x))  # Python's round() is round-half-to-even, as the spec asks
    return min(max(int(x), lo), hi)


def _same_as_input(c: ShapeContext) -> TensorDesc:
    """The result has the input's data type and shape."""
    return c["input"]


for _name, _options in _SAME_AS_INPUT.items():
    op(_name, options=_options)(_same_as_input)


@op("clamp", options=(Param("minValue", "number"), Param("maxValue", "number")))
def clamp(c: ShapeContext) -> TensorDesc:
    """Same descriptor as input; minValue must not exceed maxValue once both are cast to the
    input's data type (an absent bound does not clamp, so it never conflicts)."""
    x = c["input"]
    lo = cast_number(c.attr("minValue"), x.data_type) if c.given("minValue") else -math.inf
    hi = cast_number(c.attr("maxValue"), x.data_type) if c.given("maxValue") else math.inf
    # Compared as the spec does: `minValue > maxValue` is false when either is NaN.
    c.check(not lo > hi, "minValue",
            f"minValue {lo} is greater than maxValue {hi} (as {x.data_type})")
    return x


@op("prelu", operands=("input", "slope"))
def prelu(c: ShapeContext) -> TensorDesc:
    """slope and input broadcast bidirectionally; the result has input's data type and the
    broadcast shape (the spec's prelu steps use bidirectional, not unidirectional, broadcasting)."""
    x, slope = c["input"], c["slope"]
    return TensorDesc(x.data_type, c.broadcast("slope", slope.shape, x.shape))


@op("softmax", arguments=(Param("axis", "uint", default=REQUIRED),))
def softmax(c: ShapeContext) -> TensorDesc:
    """Same descriptor as input; axis must be one of input's dimensions."""
    x = c["input"]
    c.axis_in_range("axis", c.attr("axis"), x.rank)
    return x
