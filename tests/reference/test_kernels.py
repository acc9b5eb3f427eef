"""Reference kernels against values derived by hand from the spec's definitions, for the ops
whose details are easy to get wrong (tie-breaking, rounding, padding, layouts, gate orders)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.verification.reference import evaluate

from .helpers import ref1

F32 = np.float32


def test_gelu_elu_hard_swish_by_formula():
    x = np.array([-3.0, -1.0, 0.0, 0.5, 2.0], F32)
    x64 = x.astype(np.float64)
    gelu = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x64]
    np.testing.assert_allclose(ref1("gelu", x), gelu, rtol=1e-15)
    # elu with alpha 0.5: 0.5 * (e^x - 1) below 0; hardSwish: x * clamp(x + 3, 0, 6) / 6.
    np.testing.assert_allclose(ref1("elu", x, alpha=0.5),
                               [0.5 * math.expm1(-3), 0.5 * math.expm1(-1), 0, 0.5, 2.0],
                               rtol=1e-15)
    np.testing.assert_array_equal(ref1("hardSwish", x),
                                  [0, -1 * 2 / 6, 0, 0.5 * 3.5 / 6, 2 * 5 / 6])


def test_scalar_options_are_cast_to_the_input_type_first():
    # hardSigmoid's alpha 0.3 is float16 0.2998046875 in a float16 graph (the spec casts it).
    x = np.array([-1.123], np.float16)
    alpha, beta = float(np.float16(0.3)), float(np.float16(0.4))
    assert ref1("hardSigmoid", x, alpha=0.3, beta=0.4)[0] == alpha * float(x[0]) + beta
    assert ref1("hardSigmoid", x.astype(F32), alpha=0.3, beta=0.4)[0] == \
        float(F32(0.3)) * float(F32(x[0])) + float(F32(0.4))


def test_float_results_are_float64_and_not_rounded_back():
    x = np.array([1.0, 3.0], F32)
    y = ref1("div", x, np.array([3.0, 7.0], F32))
    assert y.dtype == np.float64 and y[0] == 1 / 3 and y[1] == 3 / 7


def test_integer_div_truncates_toward_zero_and_arithmetic_wraps():
    a = np.array([7, -7, 7, -7], np.int32)
    b = np.array([2, 2, -2, -2], np.int32)
    np.testing.assert_array_equal(ref1("div", a, b), [3, -3, -3, 3])
    big = np.array([2**31 - 1], np.int32)
    y = ref1("add", big, np.array([1], np.int32))
    assert y.dtype == np.int32 and y[0] == -(2**31)  # two's complement wrap, as int32 hardware
    assert ref1("neg", np.array([-128], np.int8))[0] == -128
    np.testing.assert_array_equal(ref1("pow", np.array([3, -2, 2], np.int64),
                                       np.array([4, 3, -1], np.int64)), [81, -8, 0])


def test_cast_truncates_and_rounds_to_the_target():
    x = np.array([2.75, -2.75, 300.5, np.nan], F32)
    np.testing.assert_array_equal(ref1("cast", x, dataType="int32"), [2, -2, 300, 0])
    assert ref1("cast", x[:1], dataType="uint8").dtype == np.uint8
    # To float16 the value is rounded: 1/3 in float32 becomes float16's 0.33325195.
    third = np.array([1 / 3], F32)
    assert ref1("cast", third, dataType="float16")[0] == float(np.float16(third[0]))


def test_round_even_and_quantize_round_half_to_even_and_saturate():
    halves = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], F32)
    np.testing.assert_array_equal(ref1("roundEven", halves), [-2, -2, -0, 0, 2, 2])
    b = GraphBuilder("q")
    x = b.input("x", "float32", [1, 6])
    scale = b.constant(np.full((1, 6), 0.5, F32))
    zero = b.constant(np.array([[0, 0, 0, 0, 100, -100]], np.int8))
    g = b.build({"y": b.quantizeLinear(x, scale, zero)})
    x_val = np.array([[0.25, 0.75, -0.25, 1.25, 200.0, -200.0]], F32)  # x / 0.5: ties, then big
    y = evaluate(g, {"x": x_val})["y"]
    assert y.dtype == np.int8
    np.testing.assert_array_equal(y, [[0, 2, 0, 2, 127, -128]])


def test_dequantize_blockwise_scale():
    b = GraphBuilder("dq")
    x = b.input("x", "uint8", [2, 4])
    scale = b.constant(np.array([[0.5, 2.0]], F32))  # each value covers 2 columns
    zero = b.constant(np.array([[1, 3]], np.uint8))
    g = b.build({"y": b.dequantizeLinear(x, scale, zero)})
    y = evaluate(g, {"x": np.array([[1, 3, 5, 7], [0, 2, 4, 6]], np.uint8)})["y"]
    np.testing.assert_array_equal(y, [[0, 1, 4, 8], [-0.5, 0.5, 2, 6]])


def test_arg_max_takes_the_first_of_equal_values_in_the_asked_type():
    x = np.array([[1, 5, 5, 0], [2, 2, 2, 2]], F32)
    y = ref1("argMax", x, 1, outputDataType="int64")
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, [1, 0])
    np.testing.assert_array_equal(ref1("argMin", x, 0, keepDimensions=True), [[0, 1, 1, 0]])


def test_cumulative_sum_exclusive_and_reversed():
    x = np.array([1, 2, 3, 4], np.int32)
    np.testing.assert_array_equal(ref1("cumulativeSum", x, 0), [1, 3, 6, 10])
    np.testing.assert_array_equal(ref1("cumulativeSum", x, 0, exclusive=True), [0, 1, 3, 6])
    np.testing.assert_array_equal(ref1("cumulativeSum", x, 0, reversed=True), [10, 9, 7, 4])
    np.testing.assert_array_equal(ref1("cumulativeSum", x, 0, exclusive=True, reversed=True),
                                  [9, 7, 4, 0])


def test_triangular_upper_and_lower_with_diagonals():
    x = np.arange(1, 13, dtype=F32).reshape(3, 4)
    np.testing.assert_array_equal(ref1("triangular", x),  # upper, diagonal 0
                                  [[1, 2, 3, 4], [0, 6, 7, 8], [0, 0, 11, 12]])
    np.testing.assert_array_equal(ref1("triangular", x, upper=False, diagonal=-1),
                                  [[0, 0, 0, 0], [5, 0, 0, 0], [9, 10, 0, 0]])


def test_where_broadcasts_all_three_operands():
    b = GraphBuilder("w")
    c = b.input("c", "uint8", [2, 1])
    t, f = b.input("t", "int32", [3]), b.input("f", "int32", [])
    g = b.build({"y": b.where(c, t, f)})
    y = evaluate(g, {"c": np.array([[0], [7]], np.uint8), "t": np.array([1, 2, 3], np.int32),
                     "f": np.array(-1, np.int32)})["y"]
    np.testing.assert_array_equal(y, [[-1, -1, -1], [1, 2, 3]])


def test_gather_wraps_negative_and_clamps_out_of_range_indices():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [4])
    idx = b.input("i", "int64", [4])  # given at run time: a constant this far out is invalid
    g = b.build({"y": b.gather(x, idx)})
    y = evaluate(g, {"x": np.array([10, 20, 30, 40], F32),
                     "i": np.array([-1, 0, 9, -9], np.int64)})["y"]
    np.testing.assert_array_equal(y, [40, 10, 40, 10])


def test_gather_nd_and_scatter_nd():
    x = np.arange(12, dtype=F32).reshape(3, 4)
    b = GraphBuilder("nd")
    xi = b.input("x", "float32", [3, 4])
    idx = b.constant(np.array([[2, 1], [0, -1]], np.int32))
    rows = b.constant(np.array([[1]], np.int32))
    upd = b.constant(np.full((1, 4), -5, F32))
    g = b.build({"g": b.gatherND(xi, idx), "s": b.scatterND(xi, rows, upd)})
    out = evaluate(g, {"x": x})
    np.testing.assert_array_equal(out["g"], [9, 3])
    np.testing.assert_array_equal(out["s"][1], [-5] * 4)
    np.testing.assert_array_equal(out["s"][[0, 2]], x[[0, 2]])


def test_layer_normalization_with_unsorted_axes_places_scale_by_axis():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4)).astype(F32)
    scale = rng.uniform(0.5, 2, (4, 3)).astype(F32)  # axes [2, 1]: scale is [4, 3]
    b = GraphBuilder("ln")
    xi = b.input("x", "float32", [2, 3, 4])
    g = b.build({"y": b.layerNormalization(xi, scale=b.constant(scale), axes=[2, 1],
                                           epsilon=1e-3)})
    y = evaluate(g, {"x": x})["y"]
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=(1, 2), keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=(1, 2), keepdims=True)
    eps = float(F32(1e-3))
    want = (x64 - mean) / np.sqrt(var + eps) * scale.T.astype(np.float64)[None]
    np.testing.assert_allclose(y, want, rtol=1e-13)


def test_instance_normalization_nhwc_and_batch_normalization_axis():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 3, 4)).astype(F32)  # nhwc: channels last (4)
    y = ref1("instanceNormalization", x, layout="nhwc", epsilon=0.0)
    x64 = x.astype(np.float64)
    want = (x64 - x64.mean(axis=(1, 2), keepdims=True)) / x64.std(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(y, want, rtol=1e-12)
    b = GraphBuilder("bn")
    xi = b.input("x", "float32", [2, 3])
    mean, var = b.constant(np.array([1, 2, 3], F32)), b.constant(np.array([4, 1, 0.25], F32))
    g = b.build({"y": b.batchNormalization(xi, mean, var, axis=1, epsilon=0.0)})
    y = evaluate(g, {"x": np.array([[3, 2, 4], [1, 0, 2]], F32)})["y"]
    np.testing.assert_array_equal(y, [[1, 0, 2], [0, -2, -2]])


def test_average_pool_excludes_padding_and_ceil_rounding_windows():
    x = np.arange(1, 10, dtype=F32).reshape(1, 1, 3, 3)
    # 2x2 windows at stride 2 with ceil rounding: 2x2 outputs, the last row/column of windows
    # hold 2 or 1 input elements, and only those are averaged.
    y = ref1("averagePool2d", x, windowDimensions=[2, 2], strides=[2, 2],
             outputShapeRounding="ceil")
    np.testing.assert_array_equal(y[0, 0], [[(1 + 2 + 4 + 5) / 4, (3 + 6) / 2],
                                            [(7 + 8) / 2, 9]])
    # Padding 1 all round, 3x3 window, stride 2: the corner window sees 4 elements.
    y = ref1("averagePool2d", x, windowDimensions=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])
    assert y[0, 0, 0, 0] == (1 + 2 + 4 + 5) / 4
    y = ref1("maxPool2d", -x, windowDimensions=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])
    assert y[0, 0, 0, 0] == -1  # padding never wins a max, even of negatives
    y = ref1("l2Pool2d", x, windowDimensions=[2, 2])
    assert y[0, 0, 0, 0] == math.sqrt(1 + 4 + 16 + 25)


def test_resample2d_linear_matches_the_spec_example():
    # The spec's note: a [4, 4] input resampled linearly to [8, 8].
    x = np.array([[0, 1, 2, 3], [0, 1, 2, 3], [12, 13, 14, 15], [12, 13, 14, 15]], F32)
    y = ref1("resample2d", x.reshape(1, 1, 4, 4), mode="linear", sizes=[8, 8])[0, 0]
    row = [0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3]
    np.testing.assert_array_equal(y[0], row)
    np.testing.assert_array_equal(y[:, 0], [0, 0, 0, 3, 9, 12, 12, 12])
    np.testing.assert_array_equal(y[4], np.array(row) + 9)


def test_resample2d_nearest_rounds_halves_down():
    # 4 -> 3: scale 0.75, output 1 maps to (1.5 / 0.75) - 0.5 = 1.5: ceil(1.5 - 0.5) = 1.
    x = np.arange(4, dtype=F32).reshape(1, 1, 1, 4)
    y = ref1("resample2d", x, sizes=[1, 3])
    np.testing.assert_array_equal(y[0, 0, 0], [0, 1, 3])


def test_gru_cell_update_gate_and_reset_after_by_hand():
    # hiddenSize 1, inputSize 1, weights 1 and no recurrence: z = r = sigmoid(x), n = tanh(x).
    b = GraphBuilder("gru")
    x, h = b.input("x", "float32", [1, 1]), b.input("h", "float32", [1, 1])
    w = b.constant(np.array([[1.0], [0.0], [2.0]], F32))  # zrn: z from x, r = 0.5, n from 2x
    rw = b.constant(np.array([[0.0], [0.0], [1.0]], F32))
    g = b.build({"y": b.gruCell(x, w, rw, h, 1)})
    y = evaluate(g, {"x": np.array([[0.5]], F32), "h": np.array([[0.25]], F32)})["y"]
    z = 1 / (1 + math.exp(-0.5))
    n = math.tanh(2 * 0.5 + 0.5 * (0.25 * 1.0))  # resetAfter: r * (h R_n)
    assert y[0, 0] == pytest.approx(z * 0.25 + (1 - z) * n, rel=1e-14)


def test_lstm_cell_gate_order_and_peepholes_read_the_old_cell_state():
    b = GraphBuilder("lstm")
    x, h, c = (b.input(n, "float32", [1, 1]) for n in ("x", "h", "c"))
    w = b.constant(np.array([[1.0], [2.0], [3.0], [4.0]], F32))  # iofg
    rw = b.constant(np.zeros((4, 1), F32))
    p = b.constant(np.array([0.5, 0.25, 0.125], F32))  # i, o, f
    outs = b.lstmCell(x, w, rw, h, c, 1, peepholeWeight=p)
    g = b.build({"h": outs[0], "c": outs[1]})
    got = evaluate(g, {"x": np.array([[0.5]], F32), "h": np.zeros((1, 1), F32),
                       "c": np.array([[2.0]], F32)})
    s = lambda v: 1 / (1 + math.exp(-v))  # noqa: E731
    i, o, f, gg = s(0.5 + 0.5 * 2), s(1.0 + 0.25 * 2), s(1.5 + 0.125 * 2), math.tanh(2.0)
    cell = f * 2 + i * gg
    assert got["c"][0, 0] == pytest.approx(cell, rel=1e-14)
    assert got["h"][0, 0] == pytest.approx(o * math.tanh(cell), rel=1e-14)


def test_gru_backward_sequence_is_in_time_order():
    # hidden 1, weights make h_t = (1 - z) n + z h with z = sigmoid(0) = 0.5 and n = tanh(x_t).
    b = GraphBuilder("gruseq")
    x = b.input("x", "float32", [3, 1, 1])
    w = b.constant(np.array([[[0.0], [0.0], [1.0]]], F32))
    rw = b.constant(np.zeros((1, 3, 1), F32))
    last, seq = b.gru(x, w, rw, 3, 1, direction="backward", returnSequence=True)
    g = b.build({"last": last, "seq": seq})
    xs = np.array([0.1, 0.2, 0.3], F32)
    out = evaluate(g, {"x": xs.reshape(3, 1, 1)})
    h, states = 0.0, {}
    for t in (2, 1, 0):
        h = 0.5 * math.tanh(float(xs[t])) + 0.5 * h
        states[t] = h
    np.testing.assert_allclose(out["seq"][:, 0, 0, 0], [states[0], states[1], states[2]],
                               rtol=1e-12)
    assert out["last"][0, 0, 0] == pytest.approx(states[0], rel=1e-12)


def test_pad_modes_and_slice_strides():
    x = np.array([[1, 2, 3]], np.int32)
    np.testing.assert_array_equal(ref1("pad", x, [0, 2], [0, 1], mode="reflection"),
                                  [[3, 2, 1, 2, 3, 2]])
    np.testing.assert_array_equal(ref1("pad", x, [0, 1], [0, 2], mode="edge"),
                                  [[1, 1, 2, 3, 3, 3]])
    np.testing.assert_array_equal(ref1("pad", x, [1, 0], [0, 0], value=9), [[9, 9, 9], [1, 2, 3]])
    np.testing.assert_array_equal(ref1("slice", np.arange(10, dtype=np.int32), [1], [8],
                                       strides=[3]), [1, 4, 7])


def test_gather_and_gather_elements_match_the_spec_examples():
    x = np.array([[0, 1, 2], [10, 11, 12], [20, 21, 22], [30, 31, 32]], F32)
    b = GraphBuilder("spec")
    xi = b.input("x", "float32", [4, 3])
    i1 = b.constant(np.array([3, 1], np.uint32))
    i3 = b.constant(np.array([[0, 1], [1, 2]], np.uint32))
    ie = b.constant(np.array([[3, 1, 1], [2, 0, 3]], np.int32))
    g = b.build({"g1": b.gather(xi, i1), "g3": b.gather(xi, i3, axis=1),
                 "e": b.gatherElements(xi, ie)})
    out = evaluate(g, {"x": x})
    np.testing.assert_array_equal(out["g1"], [[30, 31, 32], [10, 11, 12]])
    np.testing.assert_array_equal(out["g3"][1], [[10, 11], [11, 12]])
    np.testing.assert_array_equal(out["e"], [[30, 11, 12], [20, 1, 32]])
