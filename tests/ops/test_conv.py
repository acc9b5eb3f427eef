"""conv2d and convTranspose2d: signatures, output shapes (hand-computed) and validation steps."""
import numpy as np
import pytest

from converter import GraphBuilder, OpValidationError
from converter.ops import get_op


def _conv(op, input_shape, filter_shape, *, dtype="float32", bias=None, **options):
    b = GraphBuilder()
    x = b.input("x", dtype, input_shape)
    w = b.constant(np.zeros(filter_shape, dtype))
    bias_operand = b.constant(np.zeros(bias, dtype)) if bias is not None else None
    return getattr(b, op)(x, w, bias=bias_operand, **options)


def _shape(op, input_shape, filter_shape, **options):
    return _conv(op, input_shape, filter_shape, **options).shape


def _error(op, argument, fragment, input_shape, filter_shape, **options):
    with pytest.raises(OpValidationError) as info:
        _conv(op, input_shape, filter_shape, **options)
    err = info.value
    assert (err.op, err.argument) == (op, argument), err.line()
    assert fragment in err.rule, err.rule
    return err


# -- signatures --------------------------------------------------------------------------------
def test_conv2d_signature_matches_the_spec():
    d = get_op("conv2d")
    assert d.operands == ("input", "filter") and d.operand_options == ("bias",)
    assert d.arguments == ()
    defaults = {p.name: p.default for p in d.options}
    assert defaults == {"padding": [0, 0, 0, 0], "strides": [1, 1], "dilations": [1, 1],
                        "groups": 1, "inputLayout": "nchw", "filterLayout": "oihw"}
    layouts = {p.name: p.choices for p in d.options if p.kind == "enum"}
    assert layouts == {"inputLayout": ("nchw", "nhwc"),
                       "filterLayout": ("oihw", "hwio", "ohwi", "ihwo")}


def test_conv_transpose2d_signature_matches_the_spec():
    d = get_op("convTranspose2d")
    assert d.operands == ("input", "filter") and d.operand_options == ("bias",)
    assert [p.name for p in d.options] == ["padding", "strides", "dilations", "outputPadding",
                                           "outputSizes", "groups", "inputLayout",
                                           "filterLayout"]
    defaults = {p.name: p.default for p in d.options}
    assert defaults["outputPadding"] == [0, 0] and defaults["outputSizes"] is None
    assert defaults["filterLayout"] == "iohw"
    assert dict((p.name, p.choices) for p in d.options)["filterLayout"] == ("iohw", "hwoi", "ohwi")


# -- conv2d shapes -----------------------------------------------------------------------------
# Logical input N=2, C=4, H=9, W=7; filter O=6, I=4, kH=3, kW=2; strides [2, 1],
# padding [1, 0, 0, 1]:
#   outH = floor((9 - 3 + 1 + 0) / 2) + 1 = floor(7 / 2) + 1 = 4
#   outW = floor((7 - 2 + 0 + 1) / 1) + 1 = 7
CONV2D_FILTERS = {"oihw": [6, 4, 3, 2], "hwio": [3, 2, 4, 6], "ohwi": [6, 3, 2, 4],
                  "ihwo": [4, 3, 2, 6]}
CONV2D_INPUTS = {"nchw": ([2, 4, 9, 7], (2, 6, 4, 7)), "nhwc": ([2, 9, 7, 4], (2, 4, 7, 6))}


@pytest.mark.parametrize("filter_layout", sorted(CONV2D_FILTERS))
@pytest.mark.parametrize("input_layout", sorted(CONV2D_INPUTS))
def test_conv2d_every_input_and_filter_layout(input_layout, filter_layout):
    input_shape, expected = CONV2D_INPUTS[input_layout]
    out = _shape("conv2d", input_shape, CONV2D_FILTERS[filter_layout], strides=[2, 1],
                 padding=[1, 0, 0, 1], inputLayout=input_layout, filterLayout=filter_layout,
                 bias=[6])
    assert out == expected


def test_conv2d_defaults_are_a_valid_convolution():
    # 8x8 input, 3x3 filter, no padding, stride 1: 8 - 3 + 1 = 6.
    assert _shape("conv2d", [1, 3, 8, 8], [5, 3, 3, 3]) == (1, 5, 6, 6)


def test_conv2d_groups():
    # C=6 in 3 groups: each filter sees 6 / 3 = 2 channels; O=9 = 3 per group.
    # 5 - 3 + 1 = 3 per spatial axis.
    assert _shape("conv2d", [1, 6, 5, 5], [9, 2, 3, 3], groups=3) == (1, 9, 3, 3)


@pytest.mark.parametrize("filter_layout, filter_shape", [
    ("oihw", [4, 1, 3, 3]), ("hwio", [3, 3, 1, 4]), ("ohwi", [4, 3, 3, 1]), ("ihwo", [1, 3, 3, 4]),
])
def test_conv2d_depthwise_in_every_filter_layout(filter_layout, filter_shape):
    # groups = C = O = 4, padding 1 keeps 6x6 ("same"): 6 - 3 + 2 + 1 = 6. nhwc out [1, 6, 6, 4].
    out = _shape("conv2d", [1, 6, 6, 4], filter_shape, groups=4, padding=[1, 1, 1, 1],
                 inputLayout="nhwc", filterLayout=filter_layout, bias=[4])
    assert out == (1, 6, 6, 4)


def test_conv2d_depthwise_with_channel_multiplier():
    # groups = C = 4, O = 8 (2 per group), filter [8, 1, 3, 3]; 7 - 3 + 1 = 5.
    assert _shape("conv2d", [1, 4, 7, 7], [8, 1, 3, 3], groups=4) == (1, 8, 5, 5)


def test_conv2d_dilations():
    # effective kernel: (3 - 1) * 2 + 1 = 5 rows, (3 - 1) * 3 + 1 = 7 columns;
    # outH = 10 - 5 + 1 = 6, outW = 10 - 7 + 1 = 4.
    assert _shape("conv2d", [1, 1, 10, 10], [1, 1, 3, 3], dilations=[2, 3]) == (1, 1, 6, 4)


def test_conv2d_asymmetric_padding_and_strides():
    # padding [top 0, bottom 1, left 2, right 0], strides [1, 2]:
    #   outH = (5 - 3 + 0 + 1) / 1 + 1 = 4;  outW = floor((5 - 3 + 2 + 0) / 2) + 1 = 3.
    out = _shape("conv2d", [1, 1, 5, 5], [1, 1, 3, 3], padding=[0, 1, 2, 0], strides=[1, 2])
    assert out == (1, 1, 4, 3)


def test_conv2d_keeps_float16():
    out = _conv("conv2d", [1, 2, 4, 4], [3, 2, 1, 1], dtype="float16", bias=[3])
    assert out.data_type == "float16" and out.shape == (1, 3, 4, 4)


# -- conv2d validation -------------------------------------------------------------------------
def test_conv2d_rejects_zero_strides_and_dilations_and_groups():
    _error("conv2d", "strides", "greater than 0", [1, 1, 4, 4], [1, 1, 1, 1], strides=[1, 0])
    _error("conv2d", "dilations", "greater than 0", [1, 1, 4, 4], [1, 1, 1, 1], dilations=[0, 1])
    _error("conv2d", "groups", "greater than 0", [1, 1, 4, 4], [1, 1, 1, 1], groups=0)


def test_conv2d_rejects_wrong_list_lengths():
    _error("conv2d", "padding", "must have 4 values", [1, 1, 4, 4], [1, 1, 1, 1], padding=[1, 1])
    _error("conv2d", "strides", "must have 2 values", [1, 1, 4, 4], [1, 1, 1, 1], strides=[1])


def test_conv2d_input_channels_must_divide_into_groups():
    # 5 channels cannot be split into 2 groups.
    _error("conv2d", "groups", "input channels 5 are not divisible by groups 2",
           [1, 5, 4, 4], [4, 2, 1, 1], groups=2)


def test_conv2d_filter_input_channels_must_be_input_channels_over_groups():
    # 6 / 2 = 3 channels per group, but the oihw filter has 2.
    err = _error("conv2d", "filter", "must be input channels 6 / groups 2 = 3",
                 [1, 6, 4, 4], [4, 2, 1, 1], groups=2)
    assert "filter input channels 2" in err.rule
    # hwio puts input channels third: [1, 1, 3, 4] has 3, the nhwc input has 4.
    _error("conv2d", "filter", "filter input channels 3", [1, 4, 4, 4], [1, 1, 3, 4],
           inputLayout="nhwc", filterLayout="hwio")


def test_conv2d_output_channels_must_divide_into_groups():
    # C=4, groups=2 fits the filter's 2 channels per group, but 3 outputs don't split in 2.
    _error("conv2d", "groups", "output channels 3 are not divisible by groups 2",
           [1, 4, 4, 4], [3, 2, 1, 1], groups=2)


def test_conv2d_bias_must_have_output_channels():
    _error("conv2d", "bias", "shape [4] must be [6]", [1, 3, 4, 4], [6, 3, 1, 1], bias=[4])
    _error("conv2d", "bias", "rank 2 is not allowed", [1, 3, 4, 4], [6, 3, 1, 1], bias=[1, 6])


def test_conv2d_output_size_must_be_a_valid_dimension():
    # 3 - 5 + 0 + 1 = -1 rows: a 5x5 filter does not fit a 3x3 input.
    _error("conv2d", "output", "output height would be -1", [1, 1, 3, 3], [1, 1, 5, 5])
    # dilation 2 makes a 3-wide filter 5 wide: 4 - 5 + 1 = 0 columns.
    _error("conv2d", "output", "output width would be 0", [1, 1, 8, 4], [1, 1, 3, 3],
           dilations=[1, 2])


def test_conv2d_checks_data_types_ranks_and_enums():
    _error("conv2d", "input", "rank 3 is not allowed", [1, 4, 4], [1, 1, 1, 1])
    _error("conv2d", "input", "data type int32 is not allowed", [1, 1, 4, 4], [1, 1, 1, 1],
           dtype="int32")
    _error("conv2d", "filterLayout", "'iohw' is not one of", [1, 1, 4, 4], [1, 1, 1, 1],
           filterLayout="iohw")
    _error("conv2d", "inputLayout", "'nwhc' is not one of", [1, 1, 4, 4], [1, 1, 1, 1],
           inputLayout="nwhc")
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 4, 4])
    w = b.constant(np.zeros((1, 1, 1, 1), np.float16))
    with pytest.raises(OpValidationError) as info:
        b.conv2d(x, w)
    assert info.value.argument == "filter" and "must match input's float32" in info.value.rule


# -- convTranspose2d shapes --------------------------------------------------------------------
# Logical input N=1, C=4, H=3, W=5; filter in=4, out/groups=2, kH=3, kW=2; strides [2, 3],
# padding [1, 1, 0, 1], outputPadding [1, 2]:
#   outH = (3 - 1) * 2 + (3 - 1) * 1 + 1 - 1 - 1 + 1 = 4 + 3 - 2 + 1 = 6
#   outW = (5 - 1) * 3 + (2 - 1) * 1 + 1 - 0 - 1 + 2 = 12 + 2 - 1 + 2 = 15
TRANSPOSE_FILTERS = {"iohw": [4, 2, 3, 2], "hwoi": [3, 2, 2, 4], "ohwi": [2, 3, 2, 4]}
TRANSPOSE_INPUTS = {"nchw": ([1, 4, 3, 5], (1, 2, 6, 15)), "nhwc": ([1, 3, 5, 4], (1, 6, 15, 2))}


@pytest.mark.parametrize("filter_layout", sorted(TRANSPOSE_FILTERS))
@pytest.mark.parametrize("input_layout", sorted(TRANSPOSE_INPUTS))
def test_conv_transpose2d_every_layout_with_output_padding(input_layout, filter_layout):
    input_shape, expected = TRANSPOSE_INPUTS[input_layout]
    out = _shape("convTranspose2d", input_shape, TRANSPOSE_FILTERS[filter_layout],
                 strides=[2, 3], padding=[1, 1, 0, 1], outputPadding=[1, 2],
                 inputLayout=input_layout, filterLayout=filter_layout, bias=[2])
    assert out == expected


def test_conv_transpose2d_hwoi_filter_reads_each_axis_from_its_own_place():
    # hwoi [kH 3, kW 1, out 2, in 4]: every size differs from its neighbours' so a swapped
    # axis shows; (3 - 1) + 3 = 5 rows, (5 - 1) + 1 = 5 columns, 2 channels
    assert _shape("convTranspose2d", [1, 4, 3, 5], [3, 1, 2, 4], filterLayout="hwoi") == \
        (1, 2, 5, 5)


def test_conv_transpose2d_defaults():
    # (3 - 1) * 1 + 3 = 5 per spatial axis; output channels = filter's 2 * groups 1.
    assert _shape("convTranspose2d", [1, 1, 3, 3], [1, 2, 3, 3]) == (1, 2, 5, 5)


def test_conv_transpose2d_groups_multiply_output_channels():
    # iohw filter [4, 3, 3, 3]: 3 outputs per group * 2 groups = 6 channels; 3x3 -> 5x5.
    assert _shape("convTranspose2d", [1, 4, 3, 3], [4, 3, 3, 3], groups=2, bias=[6]) == \
        (1, 6, 5, 5)


def test_conv_transpose2d_dilations():
    # (3 - 1) * 1 + (3 - 1) * 2 + 1 = 2 + 5 = 7; columns: 2 + (3 - 1) * 3 + 1 = 9.
    assert _shape("convTranspose2d", [1, 1, 3, 3], [1, 1, 3, 3], dilations=[2, 3]) == \
        (1, 1, 7, 9)


def test_conv_transpose2d_output_sizes():
    # strides [3, 2]: computed rows (3 - 1) * 3 + 3 = 9, columns (3 - 1) * 2 + 3 = 7.
    # Allowed: rows 9..11, columns 7..8. [10, 8] is what outputPadding [1, 1] would give.
    assert _shape("convTranspose2d", [1, 1, 3, 3], [1, 2, 3, 3], strides=[3, 2],
                  outputSizes=[10, 8]) == (1, 2, 10, 8)
    assert _shape("convTranspose2d", [1, 1, 3, 3], [1, 2, 3, 3], strides=[3, 2],
                  outputSizes=[11, 7]) == (1, 2, 11, 7)


def test_conv_transpose2d_output_sizes_ignore_output_padding():
    # outputPadding [5, 5] is not smaller than the strides, but outputSizes makes it unused.
    assert _shape("convTranspose2d", [1, 1, 3, 3], [1, 2, 3, 3], strides=[3, 2],
                  outputPadding=[5, 5], outputSizes=[9, 7]) == (1, 2, 9, 7)


# -- convTranspose2d validation ----------------------------------------------------------------
def test_conv_transpose2d_output_sizes_must_be_within_one_stride_of_computed():
    # computed rows 9, stride 3: 12 = 9 + 3 is one too many; 8 is below the computed size.
    _error("convTranspose2d", "outputSizes", "output height 12 must be in [9, 11]",
           [1, 1, 3, 3], [1, 2, 3, 3], strides=[3, 2], outputSizes=[12, 8])
    _error("convTranspose2d", "outputSizes", "output height 8 must be in [9, 11]",
           [1, 1, 3, 3], [1, 2, 3, 3], strides=[3, 2], outputSizes=[8, 8])
    # columns: computed 7, stride 2 -> 7..8.
    _error("convTranspose2d", "outputSizes", "output width 9 must be in [7, 8]",
           [1, 1, 3, 3], [1, 2, 3, 3], strides=[3, 2], outputSizes=[10, 9])
    _error("convTranspose2d", "outputSizes", "must have 2 values",
           [1, 1, 3, 3], [1, 2, 3, 3], outputSizes=[10])


def test_conv_transpose2d_output_padding_must_be_smaller_than_stride():
    _error("convTranspose2d", "outputPadding",
           "width output padding 2 must be smaller than the width stride 2",
           [1, 1, 3, 3], [1, 1, 3, 3], strides=[3, 2], outputPadding=[2, 2])
    _error("convTranspose2d", "outputPadding", "height output padding 1 must be smaller",
           [1, 1, 3, 3], [1, 1, 3, 3], outputPadding=[1, 0])


def test_conv_transpose2d_input_channels_must_match_filter():
    _error("convTranspose2d", "filter", "filter input channels 3", [1, 4, 3, 3], [3, 1, 3, 3])
    # ohwi: input channels are last.
    _error("convTranspose2d", "filter", "must equal input channels 2", [1, 3, 3, 2],
           [1, 3, 3, 4], inputLayout="nhwc", filterLayout="ohwi")


def test_conv_transpose2d_bias_has_filter_outputs_times_groups():
    # 3 outputs per group * 2 groups = 6, not 3.
    _error("convTranspose2d", "bias", "shape [3] must be [6]", [1, 4, 3, 3], [4, 3, 3, 3],
           groups=2, bias=[3])


def test_conv_transpose2d_rejects_zero_parameters():
    _error("convTranspose2d", "strides", "greater than 0", [1, 1, 3, 3], [1, 1, 3, 3],
           strides=[0, 1])
    _error("convTranspose2d", "dilations", "greater than 0", [1, 1, 3, 3], [1, 1, 3, 3],
           dilations=[1, 0])
    _error("convTranspose2d", "groups", "greater than 0", [1, 1, 3, 3], [1, 1, 3, 3], groups=0)


def test_conv_transpose2d_output_size_must_be_a_valid_dimension():
    # (1 - 1) * 1 + 1 - 1 - 0 = 0 rows once the padding takes one away.
    _error("convTranspose2d", "output", "output height would be 0", [1, 1, 1, 1],
           [1, 1, 1, 1], padding=[1, 0, 0, 0])


def test_conv_transpose2d_rejects_conv2d_only_filter_layout():
    _error("convTranspose2d", "filterLayout", "'oihw' is not one of", [1, 1, 3, 3],
           [1, 1, 3, 3], filterLayout="oihw")
