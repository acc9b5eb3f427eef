"""batchNormalization, instanceNormalization, layerNormalization: signatures, shapes and every
validation step of the spec."""
from __future__ import annotations

import math

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.ops.registry import get_op

from .helpers import const, fails


# -- signatures --------------------------------------------------------------------------------
def test_signatures():
    bn = get_op("batchNormalization")
    assert (bn.operands, bn.operand_options) == (("input", "mean", "variance"), ("scale", "bias"))
    assert [(p.name, p.kind, p.default) for p in bn.options] == [
        ("axis", "uint", 1), ("epsilon", "float", 1e-5)]
    inorm = get_op("instanceNormalization")
    assert (inorm.operands, inorm.operand_options) == (("input",), ("scale", "bias"))
    assert [(p.name, p.default, p.choices) for p in inorm.options] == [
        ("epsilon", 1e-5, ()), ("layout", "nchw", ("nchw", "nhwc"))]
    ln = get_op("layerNormalization")
    assert (ln.operands, ln.operand_options) == (("input",), ("scale", "bias"))
    # axes has no fixed default: absent means every dimension but the first.
    assert [(p.name, p.kind, p.default) for p in ln.options] == [
        ("axes", "uints", None), ("epsilon", "float", 1e-5)]


# -- batchNormalization -------------------------------------------------------------------------
def test_batch_normalization_default_axis_is_1():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4, 5])
    y = b.batchNormalization(x, const(b, 3), const(b, 3), scale=const(b, 3), bias=const(b, 3))
    assert (y.data_type, y.shape) == ("float32", (2, 3, 4, 5))


def test_batch_normalization_other_axes_and_ranks():
    b = GraphBuilder()
    x = b.input("x", "float16", [2, 3, 4, 5])
    m5 = const(b, 5, dtype=np.float16)
    assert b.batchNormalization(x, m5, m5, axis=3).shape == (2, 3, 4, 5)  # shape[3] = 5
    m2 = const(b, 2, dtype=np.float16)
    assert b.batchNormalization(x, m2, m2, axis=0).shape == (2, 3, 4, 5)  # shape[0] = 2
    v = b.input("v", "float32", [7])                                      # rank 1: axis 0
    assert b.batchNormalization(v, const(b, 7), const(b, 7), axis=0).shape == (7,)


def test_batch_normalization_scale_and_bias_take_fixed_slots():
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 3, 2])
    bias = const(b, 3)
    op = b.batchNormalization(x, const(b, 3), const(b, 3), bias=bias).producer
    # A bias without a scale still sits in the bias slot (index 4), never shifted to 3.
    assert op.inputs[3] is None and op.inputs[4] is bias
    assert op.input("bias") is bias and op.input("scale") is None


def test_batch_normalization_axis_must_be_in_range():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4, 5])
    fails(lambda: b.batchNormalization(x, const(b, 3), const(b, 3), axis=4),
          "batchNormalization", "axis", "out of range for rank 4")


@pytest.mark.parametrize("wrong", ["mean", "variance", "scale", "bias"])
def test_batch_normalization_1d_operands_must_match_the_axis_size(wrong):
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4, 5])
    ops = {name: const(b, 4 if name == wrong else 3)
           for name in ("mean", "variance", "scale", "bias")}
    fails(lambda: b.batchNormalization(x, ops["mean"], ops["variance"], scale=ops["scale"],
                                       bias=ops["bias"]),
          "batchNormalization", wrong, "shape [4] must be [3]")


def test_batch_normalization_limits():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    fails(lambda: b.batchNormalization(x, const(b, 1, 3), const(b, 3)), "batchNormalization",
          "mean", "rank 2")
    fails(lambda: b.batchNormalization(x, const(b, 3), const(b, 3, dtype=np.float16)),
          "batchNormalization", "variance", "must match input")
    fails(lambda: b.batchNormalization(x, const(b, 3), const(b, 3), epsilon=math.inf),
          "batchNormalization", "epsilon", "finite")


# -- instanceNormalization ----------------------------------------------------------------------
def test_instance_normalization_channels_follow_the_layout():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4, 5])
    # nchw: channels are dimension 1 (3); nhwc: dimension 3 (5).
    y = b.instanceNormalization(x, scale=const(b, 3), bias=const(b, 3))
    assert (y.data_type, y.shape) == ("float32", (2, 3, 4, 5))
    assert b.instanceNormalization(x, scale=const(b, 5), bias=const(b, 5),
                                   layout="nhwc").shape == (2, 3, 4, 5)
    assert b.instanceNormalization(x).shape == (2, 3, 4, 5)


@pytest.mark.parametrize("wrong", ["scale", "bias"])
def test_instance_normalization_scale_and_bias_are_per_channel(wrong):
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4, 5])
    # For nchw the channels are 3; [5] (the nhwc channel count) is wrong.
    given = {wrong: const(b, 5)}
    fails(lambda: b.instanceNormalization(x, **given), "instanceNormalization", wrong,
          "shape [5] must be [3]", "'nchw'")
    given = {wrong: const(b, 3)}
    fails(lambda: b.instanceNormalization(x, layout="nhwc", **given), "instanceNormalization",
          wrong, "shape [3] must be [5]", "'nhwc'")


def test_instance_normalization_layout_and_rank():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4, 5])
    fails(lambda: b.instanceNormalization(x, layout="nchwc"), "instanceNormalization", "layout",
          "not one of 'nchw', 'nhwc'")
    fails(lambda: b.instanceNormalization(b.input("r3", "float32", [2, 3, 4])),
          "instanceNormalization", "input", "rank 3")


# -- layerNormalization ------------------------------------------------------------------------
def test_layer_normalization_default_axes_are_all_but_the_first():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4, 5])
    # Default axes [1, 2, 3]: scale and bias are [3, 4, 5].
    y = b.layerNormalization(x, scale=const(b, 3, 4, 5), bias=const(b, 3, 4, 5))
    assert (y.data_type, y.shape) == ("float32", (2, 3, 4, 5))
    fails(lambda: b.layerNormalization(x, scale=const(b, 4, 5)), "layerNormalization", "scale",
          "rank 2 must equal the number of axes [1, 2, 3] (3)")


def test_layer_normalization_default_axes_of_rank_0_and_1_are_empty():
    b = GraphBuilder()
    v = b.input("v", "float32", [6])
    # rank 1: axes default to [], so scale must be a scalar.
    assert b.layerNormalization(v, scale=const(b), bias=const(b)).shape == (6,)
    fails(lambda: b.layerNormalization(v, scale=const(b, 6)), "layerNormalization", "scale",
          "rank 1 must equal the number of axes [] (0)")
    assert b.layerNormalization(b.input("s", "float32", [])).shape == ()


def test_layer_normalization_scale_follows_the_axes_order():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4, 5])
    assert b.layerNormalization(x, axes=[2, 3], scale=const(b, 4, 5)).shape == (2, 3, 4, 5)
    # axes [3, 1]: sizes [shape[3], shape[1]] = [5, 3], not the sorted [3, 5].
    assert b.layerNormalization(x, axes=[3, 1], bias=const(b, 5, 3)).shape == (2, 3, 4, 5)
    fails(lambda: b.layerNormalization(x, axes=[3, 1], bias=const(b, 3, 5)),
          "layerNormalization", "bias", "shape [3, 5] must be [5, 3]")
    fails(lambda: b.layerNormalization(x, axes=[3, 1], scale=const(b, 3, 5)),
          "layerNormalization", "scale", "shape [3, 5] must be [5, 3]")


def test_layer_normalization_empty_axes_normalize_nothing():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    assert b.layerNormalization(x, axes=[], scale=const(b)).shape == (2, 3)


def test_layer_normalization_bias_rank_must_match_axes():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4])
    fails(lambda: b.layerNormalization(x, axes=[2], bias=const(b, 3, 4)),
          "layerNormalization", "bias", "rank 2 must equal the number of axes [2] (1)")


def test_layer_normalization_axes_must_be_distinct_and_in_range():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4])
    fails(lambda: b.layerNormalization(x, axes=[1, 1]), "layerNormalization", "axes",
          "repeat an axis")
    fails(lambda: b.layerNormalization(x, axes=[3]), "layerNormalization", "axes",
          "axis 3 is out of range for rank 3")


def test_layer_normalization_data_types():
    b = GraphBuilder()
    x = b.input("x", "float16", [2, 3])
    fails(lambda: b.layerNormalization(x, scale=const(b, 3)), "layerNormalization", "scale",
          "must match input")
    fails(lambda: b.layerNormalization(b.input("i", "int32", [2, 3])), "layerNormalization",
          "input", "not allowed")
