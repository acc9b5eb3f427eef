"""Corners of the shape rules that the family tests leave open: the bounds of a valid
dimension, which message a refused output size gets, asymmetric pool padding, one-element
sizes and counts, and the unreachable branches that must raise rather than guess."""
from __future__ import annotations

import numpy as np
import pytest

from converter import GraphBuilder
from converter.ops.conv import conv_output_size, is_valid_dimension, layout_shape, spatial_dims

from .helpers import fails


def test_a_valid_dimension_is_1_to_the_largest_unsigned_long():
    # The spec's "valid dimension": an unsigned long (at most 2^32 - 1) greater than 0.
    assert is_valid_dimension(1) and is_valid_dimension(2**32 - 1)
    assert not is_valid_dimension(0) and not is_valid_dimension(2**32)


def test_an_unknown_layout_or_rounding_raises_instead_of_guessing():
    with pytest.raises(AssertionError, match="unknown input layout 'hwnc'"):
        spatial_dims([1, 2, 3, 4], "hwnc")
    with pytest.raises(AssertionError, match="unknown input layout 'hwnc'"):
        layout_shape("hwnc", 1, 2, 3, 4)
    with pytest.raises(AssertionError, match="unknown rounding 'round'"):
        conv_output_size(5, 3, 0, 0, 1, 1, "round")


def _transpose(input_shape, filter_shape, **options):
    b = GraphBuilder()
    x = b.input("x", "float32", input_shape)
    return b.convTranspose2d(x, b.input("w", "float32", filter_shape), **options)


def test_conv_transpose2d_output_size_counts_input_by_stride_and_filter_by_dilation():
    # (3 - 1) * stride 2 + (2 - 1) * dilation 1 + 1 = 6 on each axis.
    assert _transpose([1, 1, 3, 3], [1, 1, 2, 2], strides=[2, 2]).shape == (1, 1, 6, 6)


def test_conv_transpose2d_empty_or_too_large_output_says_why():
    err = fails(lambda: _transpose([1, 1, 1, 1], [1, 1, 1, 1], padding=[0, 0, 1, 0]),
                "convTranspose2d", "output", "output width would be 0")
    assert "the padding removes more than the transposed convolution produces" in err.rule
    # (3 - 1) * 2^31 + 1 = 2^32 + 1 rows: past an unsigned long.
    err = fails(lambda: _transpose([1, 1, 3, 1], [1, 1, 1, 1], strides=[2**31, 1]),
                "convTranspose2d", "output", "output height would be 4294967297")
    assert "it does not fit an unsigned long" in err.rule


def test_conv_transpose2d_output_channels_past_an_unsigned_long_are_refused():
    fails(lambda: _transpose([1, 1, 1, 1], [1, 2, 1, 1], groups=2**31), "convTranspose2d",
          "groups", "output channels 2 * groups 2147483648 = 4294967296 is not a valid "
          "dimension")


def test_conv_transpose2d_filter_error_draws_the_transpose_layout():
    fails(lambda: _transpose([1, 3, 3, 2], [1, 3, 3, 4], inputLayout="nhwc",
                             filterLayout="ohwi"),
          "convTranspose2d", "filter", "layout ohwi [out/groups, h, w, in]")


def test_pool2d_asymmetric_padding_pads_each_end_of_each_axis():
    # padding [top 0, bottom 2, left 1, right 0]: H 4 - 2 + 0 + 2 + 1 = 5, W 4 - 2 + 1 + 1 = 4.
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 4, 4])
    y = b.averagePool2d(x, windowDimensions=[2, 2], padding=[0, 2, 1, 0])
    assert y.shape == (1, 1, 5, 4)


def test_resample2d_to_sizes_of_one():
    b = GraphBuilder()
    assert b.resample2d(b.input("x", "float32", [1, 2, 4, 4]), sizes=[1, 1]).shape == \
        (1, 2, 1, 1)


def test_split_into_one_piece_is_the_whole_input():
    b = GraphBuilder()
    (y,) = b.split(b.input("x", "float32", [3, 4]), 1, axis=1)
    assert y.shape == (3, 4)


@pytest.mark.parametrize("op", ["add", "pow", "greater", "logicalAnd"])
def test_binary_ops_refuse_operands_of_two_data_types(op):
    # The spec's data type limits say b is `sameAs: a` for every binary and comparison op.
    b = GraphBuilder()
    dtype = "uint8" if op == "logicalAnd" else "float32"
    a, c = b.input("a", dtype, [2]), b.input("c", "int32", [2])
    fails(lambda: getattr(b, op)(a, c), op, "b", f"data type int32 must match a's {dtype}")


def _gru(steps: int, hidden: int):
    from converter.ir import TensorDesc
    from converter.ops.registry import infer

    # The shape rule on descriptors alone (no operand of these sizes is ever made).
    return infer("gru", [TensorDesc("float32", (steps, 1, 1)),
                         TensorDesc("float32", (1, 3 * hidden, 1)),
                         TensorDesc("float32", (1, 3 * hidden, hidden)), None, None, None],
                 {"steps": steps, "hiddenSize": hidden})


def test_gru_hidden_size_whose_doubled_gate_rows_just_fit_an_unsigned_long():
    # 6 * 715827882 = 2^32 - 4 fits; 6 * 715827883 = 2^32 + 2 does not.
    assert [d.shape for d in _gru(1, 715827882)] == [(1, 1, 715827882)]
    fails(lambda: _gru(1, 715827883), "gru", "hiddenSize", "715827883 * 6 = 4294967298")


def test_gru_of_one_step():
    assert [d.shape for d in _gru(1, 4)] == [(1, 1, 4)]
    fails(lambda: _gru(0, 4), "gru", "steps", "must be greater than 0")
