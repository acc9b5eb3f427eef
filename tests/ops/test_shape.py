"""Shape ops: signatures, hand-computed output shapes, and one test per validation step.

Shapes are checked against arithmetic written next to each case (spec formulas), never against
the implementation's own helpers.
"""
from __future__ import annotations


from converter.ops.builder import GraphBuilder
from converter.ops.registry import REQUIRED, get_op

from .helpers import fails


def f32(b: GraphBuilder, shape, name=None):
    return b.input(name or b.graph.fresh_name("x"), "float32", list(shape))


# -- signatures --------------------------------------------------------------------------------
def _sig(name):
    d = get_op(name)
    return (d.operands, d.operand_options, [(p.name, p.kind, p.default) for p in d.arguments],
            [(p.name, p.kind, p.default) for p in d.options], d.variadic)


def test_signatures_match_the_spec():
    assert _sig("concat") == (("inputs",), (), [("axis", "uint", REQUIRED)], [], True)
    assert _sig("expand") == (("input",), (), [("newShape", "uints", REQUIRED)], [], False)
    assert _sig("pad") == (("input",), (), [("beginningPadding", "uints", REQUIRED),
                                            ("endingPadding", "uints", REQUIRED)],
                           [("mode", "enum", "constant"), ("value", "number", 0)], False)
    assert get_op("pad").options[0].choices == ("constant", "edge", "reflection")
    assert _sig("reshape") == (("input",), (), [("newShape", "uints", REQUIRED)], [], False)
    assert _sig("reverse") == (("input",), (), [], [("axes", "uints", None)], False)
    assert _sig("slice") == (("input",), (), [("starts", "uints", REQUIRED),
                                              ("sizes", "uints", REQUIRED)],
                             [("strides", "uints", None)], False)
    assert _sig("split") == (("input",), (), [("splits", "uint_or_uints", REQUIRED)],
                             [("axis", "uint", 0)], False)
    assert _sig("tile") == (("input",), (), [("repetitions", "uints", REQUIRED)], [], False)
    assert _sig("transpose") == (("input",), (), [], [("permutation", "uints", None)], False)
    assert _sig("triangular") == (("input",), (), [],
                                  [("upper", "bool", True), ("diagonal", "number", 0)], False)


def test_required_argument_missing():
    b = GraphBuilder()
    fails(lambda: b.reshape(f32(b, [2, 3])), "reshape", "newShape", "is required")


# -- concat ------------------------------------------------------------------------------------
def test_concat_sums_the_axis():
    b = GraphBuilder()
    # [2,3] ++ [2,5] on axis 1: 3 + 5 = 8 -> [2, 8]
    assert b.concat([f32(b, [2, 3]), f32(b, [2, 5])], 1).shape == (2, 8)
    # [1,4] ++ [2,4] ++ [3,4] on axis 0: 1 + 2 + 3 = 6 -> [6, 4]
    y = b.concat([f32(b, [1, 4]), f32(b, [2, 4]), f32(b, [3, 4])], 0)
    assert (y.shape, y.data_type) == ((6, 4), "float32")


def test_concat_keeps_the_data_type():
    b = GraphBuilder()
    a = b.input("a", "int8", [2, 2])
    # [2,2] ++ [2,2] on axis 0 -> [4, 2], int8
    assert b.concat([a, a], 0).desc == ("int8", (4, 2))


def test_concat_single_input_and_the_8192_limit():
    b = GraphBuilder()
    x = f32(b, [1])
    assert b.concat([x], 0).shape == (1,)
    # 8192 inputs of [1] -> [8192]; 8193 is one past the valid tensor count
    assert b.concat([x] * 8192, 0).shape == (8192,)
    fails(lambda: b.concat([x] * 8193, 0), "concat", "inputs", "8193 operands")


def test_concat_errors():
    b = GraphBuilder()
    x = f32(b, [2, 3])
    fails(lambda: b.concat([], 0), "concat", "inputs", "at least one operand")
    fails(lambda: b.concat([x, x], 2), "concat", "axis", "out of range for rank 2")
    fails(lambda: b.concat([x, b.input("i", "int32", [2, 3])], 0),
          "concat", "inputs", "inputs[1] is int32")
    fails(lambda: b.concat([x, f32(b, [2, 3, 1])], 0), "concat", "inputs", "inputs[1] has rank 3")
    # axis 1 may differ, dimension 0 (2 vs 4) may not
    fails(lambda: b.concat([x, f32(b, [4, 5])], 1), "concat", "inputs", "in dimension 0")


def test_concat_sum_must_stay_a_valid_shape():
    b = GraphBuilder()
    big = b.input("big", "uint8", [2**31 - 1])
    # (2^31 - 1) * 2 elements exceed the spec's element-count limit 2^31 - 1
    fails(lambda: b.concat([big, big], 0), "concat", "inputs", "elements")


# -- expand ------------------------------------------------------------------------------------
def test_expand_broadcasts_to_new_shape():
    b = GraphBuilder()
    # [3,1] right-aligned to [2,3,4]: (pad 1)->2, 3==3, 1->4 -> [2, 3, 4]
    assert b.expand(f32(b, [3, 1]), [2, 3, 4]).shape == (2, 3, 4)
    # a scalar broadcasts to anything
    assert b.expand(b.constant("float32", 1.0), [2, 2]).shape == (2, 2)


def test_expand_errors():
    b = GraphBuilder()
    fails(lambda: b.expand(f32(b, [3, 2]), [3, 4]), "expand", "newShape", "does not broadcast")
    # unidirectional: the input may not be the larger side ([3,1] -> [1,4] would be [3,4] in
    # bidirectional broadcasting, which expand does not do)
    fails(lambda: b.expand(f32(b, [3, 1]), [1, 4]), "expand", "newShape", "does not broadcast")
    fails(lambda: b.expand(f32(b, [2, 3]), [3]), "expand", "newShape", "does not broadcast")
    fails(lambda: b.expand(f32(b, [1]), [0, 2]), "expand", "newShape", "must be greater than 0")


# -- pad ---------------------------------------------------------------------------------------
def test_pad_each_mode():
    b = GraphBuilder()
    x = f32(b, [2, 3])
    # output = begin + size + end: 1 + 2 + 1 = 4, 2 + 3 + 2 = 7 (the spec's example)
    for mode in ("constant", "edge", "reflection"):
        assert b.pad(x, [1, 2], [1, 2], mode=mode).shape == (4, 7), mode
    # constant and edge padding may exceed the dimension: 0 + 2 + 0 = 2, 5 + 3 + 5 = 13
    assert b.pad(x, [0, 5], [0, 5], mode="edge").shape == (2, 13)
    assert b.pad(x, [5, 0], [0, 0], value=-1.5).shape == (7, 3)


def test_pad_defaults_and_scalar():
    b = GraphBuilder()
    y = b.pad(f32(b, [2]), [1], [0])
    assert y.shape == (3,)  # 1 + 2 + 0
    assert (y.producer.attr("mode"), y.producer.attr("value")) == ("constant", 0)
    # a scalar pads with empty lists to itself (spec #894 removed the rank-0 rejection)
    assert b.pad(b.constant("float32", 2.0), [], []).shape == ()


def test_pad_reflection_limit():
    b = GraphBuilder()
    x = f32(b, [2, 3])
    # reflection needs padding < dim: 1 < 2 and 2 < 3 pass; 2 < 2 and 3 < 3 fail
    assert b.pad(x, [1, 2], [1, 2], mode="reflection").shape == (4, 7)
    fails(lambda: b.pad(x, [2, 0], [0, 0], mode="reflection"),
          "pad", "beginningPadding", "2 in dimension 0 must be less than its size 2")
    fails(lambda: b.pad(x, [0, 0], [0, 3], mode="reflection"),
          "pad", "endingPadding", "3 in dimension 1 must be less than its size 3")


def test_pad_errors():
    b = GraphBuilder()
    x = f32(b, [2, 3])
    fails(lambda: b.pad(x, [1], [1, 1]), "pad", "beginningPadding", "has 1 values")
    fails(lambda: b.pad(x, [1, 1], [1, 1, 1]), "pad", "endingPadding", "has 3 values")
    fails(lambda: b.pad(x, [1, 1], [1, 1], mode="symmetric"), "pad", "mode", "not one of")
    fails(lambda: b.pad(x, [1, 1], [1, 1], value="0"), "pad", "value", "not a number")


# -- reshape -----------------------------------------------------------------------------------
def test_reshape_shapes():
    b = GraphBuilder()
    # 2*3*4 = 24 = 6*4
    assert b.reshape(f32(b, [2, 3, 4]), [6, 4]).shape == (6, 4)
    # one element to a scalar and back
    s = b.reshape(f32(b, [1, 1]), [])
    assert s.shape == ()
    assert b.reshape(s, [1, 1, 1]).shape == (1, 1, 1)


def test_reshape_errors():
    b = GraphBuilder()
    x = f32(b, [2, 3])
    # 4*2 = 8 != 2*3 = 6
    fails(lambda: b.reshape(x, [4, 2]), "reshape", "newShape", "holds 8 elements")
    fails(lambda: b.reshape(x, [0, 6]), "reshape", "newShape", "must be greater than 0")


# -- reverse -----------------------------------------------------------------------------------
def test_reverse_keeps_the_shape():
    b = GraphBuilder()
    x = f32(b, [2, 3, 4])
    assert b.reverse(x).shape == (2, 3, 4)
    assert b.reverse(x, axes=[0, 2]).shape == (2, 3, 4)
    assert b.reverse(x, axes=[]).shape == (2, 3, 4)


def test_reverse_errors():
    b = GraphBuilder()
    x = f32(b, [2, 3, 4])
    fails(lambda: b.reverse(x, axes=[3]), "reverse", "axes", "axis 3 is out of range for rank 3")
    fails(lambda: b.reverse(x, axes=[1, 1]), "reverse", "axes", "repeat an axis")


# -- slice -------------------------------------------------------------------------------------
def test_slice_with_strides():
    b = GraphBuilder()
    x = f32(b, [4, 10])
    # sizes [3, 7], strides [2, 3]: ceil(3/2) = 2, ceil(7/3) = 3
    assert b.slice(x, [1, 2], [3, 7], strides=[2, 3]).shape == (2, 3)
    # exact division: ceil(4/2) = 2, ceil(6/3) = 2
    assert b.slice(x, [0, 4], [4, 6], strides=[2, 3]).shape == (2, 2)
    # stride larger than the size still takes one element: ceil(1/4) = 1
    assert b.slice(x, [3, 9], [1, 1], strides=[4, 4]).shape == (1, 1)


def test_slice_without_strides():
    b = GraphBuilder()
    # start + size <= dim: 0 + 4 <= 4, 5 + 5 <= 10 -> [4, 5]
    assert b.slice(f32(b, [4, 10]), [0, 5], [4, 5]).shape == (4, 5)


def test_slice_errors():
    b = GraphBuilder()
    x = f32(b, [4, 10])
    fails(lambda: b.slice(x, [0, 0], [0, 1]), "slice", "sizes", "size in dimension 0 is 0")
    fails(lambda: b.slice(x, [4, 0], [1, 1]), "slice", "starts",
          "start 4 in dimension 0 must be less than its size 4")
    # 3 + 2 = 5 > 4
    fails(lambda: b.slice(x, [3, 0], [2, 1]), "slice", "sizes", "start 3 + size 2")
    fails(lambda: b.slice(x, [0, 0], [1, 1], strides=[1, 0]), "slice", "strides",
          "stride in dimension 1 is 0")
    fails(lambda: b.slice(x, [0], [1, 1]), "slice", "starts", "has 1 values")
    fails(lambda: b.slice(x, [0, 0], [1, 1, 1]), "slice", "sizes", "has 3 values")
    fails(lambda: b.slice(x, [0, 0], [1, 1], strides=[1]), "slice", "strides", "has 1 values")


# -- split -------------------------------------------------------------------------------------
def test_split_by_count():
    b = GraphBuilder()
    x = f32(b, [2, 6, 4])
    # 6 / 3 = 2 along axis 1
    assert [y.shape for y in b.split(x, 3, axis=1)] == [(2, 2, 4)] * 3
    # 4 / 2 = 2 along axis 2
    assert [y.shape for y in b.split(x, 2, axis=2)] == [(2, 6, 2)] * 2
    # default axis 0: 2 / 2 = 1
    assert [y.shape for y in b.split(x, 2)] == [(1, 6, 4)] * 2


def test_split_by_sizes():
    b = GraphBuilder()
    x = f32(b, [2, 6, 4])
    # 1 + 2 + 3 = 6 along axis 1
    outs = b.split(x, [1, 2, 3], axis=1)
    assert [y.shape for y in outs] == [(2, 1, 4), (2, 2, 4), (2, 3, 4)]
    assert {y.data_type for y in outs} == {"float32"}


def test_split_errors():
    b = GraphBuilder()
    x = f32(b, [2, 6, 4])
    fails(lambda: b.split(x, 4, axis=1), "split", "splits", "4 does not divide the size 6")
    fails(lambda: b.split(x, 0, axis=1), "split", "splits", "is 0")
    fails(lambda: b.split(x, [1, 4], axis=1), "split", "splits", "sum to 5, not the size 6")
    fails(lambda: b.split(x, [0, 6], axis=1), "split", "splits", "splits[0] is 0")
    fails(lambda: b.split(x, 2, axis=3), "split", "axis", "out of range for rank 3")
    fails(lambda: b.split(x, -1), "split", "splits", "not an unsigned long")


def test_split_output_count_limit():
    b = GraphBuilder()
    # 16384 / 16384 = 1 divides evenly but makes 16384 > 8192 outputs
    fails(lambda: b.split(f32(b, [16384]), 16384), "split", "splits", "makes 16384 outputs")
    # 8193 sizes of 1 sum to the axis but are one past the limit
    fails(lambda: b.split(f32(b, [8193]), [1] * 8193), "split", "splits", "makes 8193 outputs")


# -- tile --------------------------------------------------------------------------------------
def test_tile_shapes():
    b = GraphBuilder()
    # [2*3, 3*2] = [6, 6]
    assert b.tile(f32(b, [2, 3]), [3, 2]).shape == (6, 6)
    assert b.tile(f32(b, [2, 3]), [1, 1]).shape == (2, 3)
    assert b.tile(b.constant("float32", 1.0), []).shape == ()


def test_tile_errors():
    b = GraphBuilder()
    x = f32(b, [2, 3])
    fails(lambda: b.tile(x, [2]), "tile", "repetitions", "has 1 values")
    fails(lambda: b.tile(x, [2, 0]), "tile", "repetitions", "dimension 1 is 0")


# -- transpose ---------------------------------------------------------------------------------
def test_transpose_default_reverses_axes():
    b = GraphBuilder()
    # permutation [2, 1, 0]: [4, 3, 2]
    assert b.transpose(f32(b, [2, 3, 4])).shape == (4, 3, 2)
    assert b.transpose(f32(b, [5])).shape == (5,)


def test_transpose_with_permutation():
    b = GraphBuilder()
    x = f32(b, [2, 3, 4])
    # out[i] = in[perm[i]]: [in[1], in[2], in[0]] = [3, 4, 2]
    assert b.transpose(x, permutation=[1, 2, 0]).shape == (3, 4, 2)
    assert b.transpose(x, permutation=[0, 2, 1]).shape == (2, 4, 3)


def test_transpose_errors():
    b = GraphBuilder()
    x = f32(b, [2, 3, 4])
    fails(lambda: b.transpose(x, permutation=[1, 0]), "transpose", "permutation", "has 2 values")
    fails(lambda: b.transpose(x, permutation=[0, 1, 3]), "transpose", "permutation",
          "axis 3 is out of range")
    fails(lambda: b.transpose(x, permutation=[0, 0, 1]), "transpose", "permutation",
          "repeat an axis")


# -- triangular --------------------------------------------------------------------------------
def test_triangular_keeps_the_descriptor():
    b = GraphBuilder()
    y = b.triangular(f32(b, [3, 3]))
    assert y.desc == ("float32", (3, 3))
    assert (y.producer.attr("upper"), y.producer.attr("diagonal")) == (True, 0)
    z = b.triangular(f32(b, [2, 3, 4]), upper=False, diagonal=-2)
    assert z.shape == (2, 3, 4)


def test_triangular_diagonal_is_a_long():
    b = GraphBuilder()
    x = f32(b, [3, 3])
    # a whole float is the same long, stored as an int
    y = b.triangular(x, diagonal=2.0)
    assert y.producer.attrs["diagonal"] == 2 and isinstance(y.producer.attrs["diagonal"], int)
    assert b.triangular(x, diagonal=-(2**31)).shape == (3, 3)
    fails(lambda: b.triangular(x, diagonal=1.5), "triangular", "diagonal", "not an integer")
    fails(lambda: b.triangular(x, diagonal=2**31), "triangular", "diagonal", "outside the range")
    fails(lambda: b.triangular(x, upper="yes"), "triangular", "upper", "not a boolean")


def test_triangular_needs_rank_2():
    b = GraphBuilder()
    fails(lambda: b.triangular(f32(b, [3])), "triangular", "input", "rank 1 is not allowed")
