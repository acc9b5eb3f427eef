"""The layout pass's small parts on their own: permutation helpers, which layout an op bears
and how it moves, and the rule table's guards (each case worked out by hand)."""
from __future__ import annotations

import numpy as np
import pytest

import converter
from converter.ops.builder import GraphBuilder
from converter.errors import ConverterError
from converter.passes import layout_rules
from converter.passes.layout_ops import (filter_layout_for, input_perm, is_depthwise, layout_of,
                                         target_attrs)
from converter.passes.layout_perms import (compose, extend, inverse, labels_perm,
                                           letters_perm)
from converter.passes.layout_rules import LayoutRule, OpView, rule_for

from .layout_helpers import check_numbers, types


def view(op_type, attrs, *shapes):
    return OpView(op_type, attrs, list(shapes))


def test_permutation_helpers():
    assert inverse([2, 0, 1]) == [1, 2, 0]
    assert inverse([0, 1]) == [0, 1]
    assert compose([0, 2, 3, 1], [0, 3, 1, 2]) == [0, 1, 2, 3]
    assert extend([1, 0], 4) == [0, 1, 3, 2]
    with pytest.raises(ValueError, match="cannot extend a rank-3 permutation to rank 2"):
        extend([0, 1, 2], 2)
    assert letters_perm("nhwc", "nchw") == [0, 3, 1, 2]
    with pytest.raises(ValueError, match="name different axes"):
        letters_perm("nchw", "nhwd")
    assert labels_perm(["c", "h", "w"], ["h", "w", "c"]) == [2, 0, 1]
    with pytest.raises(ValueError, match="differ"):
        labels_perm(["a", "b"], ["a", "c"])


def test_layout_of_resample_and_batch_normalization():
    assert layout_of(view("resample2d", {"axes": [1, 2]}, (1, 4, 5, 3))) == "nhwc"
    assert layout_of(view("resample2d", {"axes": [2, 3]}, (1, 3, 4, 5))) == "nchw"
    assert layout_of(view("resample2d", {"axes": [1, 3]}, (1, 3, 4, 5))) is None
    assert layout_of(view("batchNormalization", {"axis": 3}, (1, 4, 5, 3))) == "nhwc"
    assert layout_of(view("batchNormalization", {"axis": 1}, (1, 3, 4, 5))) == "nchw"
    assert layout_of(view("batchNormalization", {"axis": 2}, (1, 3, 4, 5))) is None
    assert layout_of(view("batchNormalization", {"axis": 1}, (2, 3, 4))) is None  # rank 3
    assert layout_of(view("relu", {}, (1, 3, 4, 5))) is None


def test_input_perm_and_target_arguments():
    resample = view("resample2d", {"axes": [2, 3]}, (1, 3, 4, 5))
    assert input_perm(resample, "nchw") is None
    assert input_perm(resample, "nhwc") == [0, 2, 3, 1]
    assert target_attrs(resample, "nhwc") == {"axes": [1, 2]}
    odd = view("resample2d", {"axes": [1, 3]}, (1, 3, 4, 5))
    assert input_perm(odd, "nhwc") == [0, 1, 3, 2]  # resized axes to 1, 2; the rest in order
    bn = view("batchNormalization", {"axis": 1}, (1, 3, 4, 5))
    assert input_perm(bn, "nhwc") == [0, 2, 3, 1] and input_perm(bn, "nchw") is None
    assert target_attrs(bn, "nhwc") == {"axis": 3}
    assert input_perm(view("batchNormalization", {"axis": 1}, (2, 3, 4)), "nhwc") is None
    assert input_perm(view("relu", {}, (1, 3, 4, 5)), "nhwc") is None
    with pytest.raises(AssertionError, match="relu bears no layout"):
        target_attrs(view("relu", {}, (1, 3, 4, 5)), "nhwc")


def test_depthwise_needs_more_than_one_group_equal_to_the_channels():
    def conv(groups, channels, filter_shape):
        return view("conv2d", {"groups": groups, "inputLayout": "nchw"}, (1, channels, 5, 5),
                    filter_shape)

    assert is_depthwise(conv(4, 4, (4, 1, 3, 3)))
    assert not is_depthwise(conv(1, 1, (2, 1, 3, 3)))  # one channel, one group: plain
    assert not is_depthwise(conv(2, 4, (4, 2, 3, 3)))
    assert filter_layout_for(conv(1, 1, (2, 1, 3, 3)), "nhwc") == "ohwi"
    assert filter_layout_for(conv(4, 4, (4, 1, 3, 3)), "nhwc") == "ihwo"
    assert filter_layout_for(view("relu", {}, (1, 3, 4, 5)), "nhwc") is None


def test_rule_table_guards():
    with pytest.raises(ConverterError, match="no rule for op 'noSuchOp'"):
        rule_for("noSuchOp")
    with pytest.raises(ValueError, match="registered twice"):
        layout_rules._register(LayoutRule("relu", None, why_opaque="again"))
    with pytest.raises(Exception):
        layout_rules._register(LayoutRule("reluu", None, why_opaque="a typo"))
    assert "reluu" not in layout_rules._RULES
    assert rule_for("conv2d").opaque and not rule_for("relu").opaque
    assert rule_for("add").broadcast and rule_for("where").broadcast
    assert rule_for("prelu").broadcast and not rule_for("relu").broadcast
    assert rule_for("relu").carried_slots(1) == (0,)
    assert rule_for("concat").carried_slots(3) == (0, 1, 2)
    assert rule_for("quantizeLinear").carried_slots(3) == (0, 1, 2)


def test_transpose_without_a_permutation_reverses_the_axes():
    rule = rule_for("transpose")
    answer = rule.remap(view("transpose", {}, (2, 3, 4)), [1, 2, 0])
    # transpose(transpose(x, [1, 2, 0])) with the default [2, 1, 0] is transpose(x, [0, 2, 1])
    assert answer.attrs == {"permutation": [0, 2, 1]} and answer.outputs == (None,)


def test_layer_normalization_default_axes_become_explicit():
    answer = rule_for("layerNormalization").remap(view("layerNormalization", {}, (2, 3, 4)),
                                                  [2, 0, 1])
    assert answer.attrs == {"axes": [0, 1]} and answer.outputs == ([2, 0, 1],)


def test_an_operand_computed_at_run_time_broadcasts_through_the_pass():
    # add(conv output, an input of shape [1, 1, 1, channels]): moved to nchw, the pass
    # transposes that operand with the other one (a size-1 shuffle, so a reshape).
    def build():
        b = GraphBuilder("bias")
        x = b.input("x", "float32", [1, 5, 4, 3])
        bias = b.input("bias", "float32", [1, 1, 1, 2])
        w = b.constant(np.random.default_rng(0).standard_normal((3, 3, 3, 2)).astype(np.float32))
        y = b.conv2d(x, w, inputLayout="nhwc", filterLayout="hwio", padding=[1, 1, 1, 1])
        z = b.add(y, bias)
        w2 = b.constant(np.random.default_rng(1).standard_normal((1, 1, 2, 2)).astype(np.float32))
        return b.build({"y": b.conv2d(z, w2, inputLayout="nhwc", filterLayout="hwio")})

    graph, result = check_numbers(build, "nchw")
    assert result.counts["transposes_after_inside"] == 0, types(graph)
