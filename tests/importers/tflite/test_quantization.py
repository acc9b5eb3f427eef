"""Quantized and compressed TFLite tensors: float16 weights through DEQUANTIZE (a cast, the
weights kept float16), sparse weights through DENSIFY, int8/uint8 tensors per-tensor and
per-channel through dequantizeLinear/quantizeLinear; quantized results within one
quantization step of LiteRT."""
from __future__ import annotations

import numpy as np
import pytest

from converter.importers.tflite import import_tflite
from converter.verification.parity import Bounds
from converter.testing.tflite_fixtures import RELU, SAME, VALID, Const, Input, Output, Quant, \
    TfliteBuilder, one_op, sparse_parameters

from .helpers import EXACT, QSTEP, atol, check, op_named, ops_of, rand, refused


def quantize(x, scale, zero_point, dtype=np.int8, axis=None):
    scale, zero_point = np.asarray(scale, np.float64), np.asarray(zero_point)
    if axis is not None:
        shape = [1] * np.ndim(x)
        shape[axis] = -1
        scale, zero_point = scale.reshape(shape), zero_point.reshape(shape)
    info = np.iinfo(dtype)
    return np.clip(np.round(x / scale) + zero_point, info.min, info.max).astype(dtype)


def test_float16_weights_dequantize_as_a_cast_and_stay_float16():
    b = TfliteBuilder()
    x = b.input("x", [1, 4, 4, 2])
    w16 = rand(3, 3, 3, 2).astype(np.float16)
    w = b.tensor("w", [3, 3, 3, 2])
    y = b.tensor("y", [1, 4, 4, 3])
    b.op("DEQUANTIZE", [b.constant("w16", w16)], [w])
    b.op("CONV_2D", [x, w, b.constant("b", rand(3))], [y], padding=SAME, strideW=1, strideH=1)
    graph, _ = check(b.build([y]), {"x": rand(1, 4, 4, 2)}, atol(1e-6))
    assert ops_of(graph) == ["cast", "conv2d"]
    cast = op_named(graph, "cast")
    assert cast.input("input").kind == "constant" and cast.input("input").data_type == "float16"
    np.testing.assert_array_equal(cast.input("input").constant.numpy(), w16)


@pytest.mark.parametrize("dtype, zero_point", [(np.int8, [0, 0, 0]), (np.uint8, [128, 120, 3])])
def test_per_channel_weights_dequantize_with_scales_at_the_channel_axis(dtype, zero_point):
    scales = np.array([0.5, 0.25, 0.125], np.float32)
    q = np.array([[2, -4], [8, 0], [1, 3]]) + np.array(zero_point)[:, None]
    q = q.astype(dtype)
    # (a model of constants alone trips LiteRT's XNNPACK setup: the weights feed an ADD)
    b = TfliteBuilder()
    x = b.input("x", [3, 2])
    w, y = b.tensor("w", [3, 2]), b.tensor("y", [3, 2])
    b.op("DEQUANTIZE", [b.constant("q", q, quant=Quant(scales, zero_point, axis=0))], [w])
    b.op("ADD", [x, w], [y])
    graph, got = check(b.build([y]), {"x": np.zeros((3, 2), np.float32)}, EXACT)
    np.testing.assert_array_equal(got["y"], [[1, -2], [2, 0], [0.125, 0.375]])
    dq = op_named(graph, "dequantizeLinear")
    assert dq.input("scale").shape == (3, 1) and dq.input("zeroPoint").data_type == \
        {np.int8: "int8", np.uint8: "uint8"}[dtype]


def test_quantize_float_to_int8_within_one_step():
    x = rand(2, 50, low=-3, high=3)
    model = one_op("QUANTIZE", [Input("x", [2, 50])],
                   [Output("y", [2, 50], "int8", Quant([0.02], [-5]))])
    graph, got = check(model, {"x": x}, QSTEP)
    assert ops_of(graph) == ["quantizeLinear"]
    assert graph.outputs["y"].data_type == "int8"
    np.testing.assert_array_equal(got["y"][0, :3], quantize(x[0, :3], 0.02, -5))


def test_requantize_uint8_to_int8():
    x = np.arange(0, 256, 5, dtype=np.uint8).reshape(1, -1)
    model = one_op("QUANTIZE", [Input("x", x.shape, "uint8", Quant([0.1], [128]))],
                   [Output("y", x.shape, "int8", Quant([0.05], [0]))])
    graph, got = check(model, {"x": x}, QSTEP)
    assert ops_of(graph) == ["dequantizeLinear", "quantizeLinear"]
    # uint8 130 is (130 - 128) * 0.1 = 0.2, which is 4 steps of 0.05
    assert got["y"][0, 26] == 4


def test_int8_conv_per_channel_within_one_step():
    rng = np.random.default_rng(3)
    s_in, z_in, s_out, z_out = 0.05, -3, 0.1, 2
    w_scales = np.array([0.01, 0.02, 0.015, 0.03], np.float32)
    w = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    bias = rng.integers(-500, 500, 4).astype(np.int32)
    x = rng.integers(-128, 128, (1, 6, 6, 3)).astype(np.int8)
    model = one_op("CONV_2D", [
        Input("x", x.shape, "int8", Quant([s_in], [z_in])),
        Const(w, quant=Quant(w_scales, [0] * 4, axis=0)),
        Const(bias, quant=Quant(w_scales * s_in, [0] * 4, axis=0))],
        [Output("y", [1, 6, 6, 4], "int8", Quant([s_out], [z_out]))],
        padding=SAME, strideW=1, strideH=1, fusedActivationFunction=RELU)
    graph, got = check(model, {"x": x}, QSTEP)
    assert ops_of(graph).count("dequantizeLinear") == 3  # input, weights, bias
    assert ops_of(graph)[-1] == "quantizeLinear"
    weights_dq = [op for op in graph.operations if op.op_type == "dequantizeLinear"
                  and op.input("input").data_type == "int8" and op.input("input").kind
                  == "constant"][0]
    assert weights_dq.input("scale").shape == (4, 1, 1, 1)  # per output channel, rank 4


def _small_int8_cnn() -> tuple[bytes, float]:
    """float input -> QUANTIZE -> CONV_2D (per-channel, RELU) -> DEPTHWISE_CONV_2D
    (per-channel) -> MAX_POOL_2D -> RESHAPE -> FULLY_CONNECTED (per-tensor) -> DEQUANTIZE."""
    rng = np.random.default_rng(5)
    b = TfliteBuilder()
    s_x, s_a, s_b, s_c = 1 / 128, 0.03, 0.05, 0.08
    x = b.input("x", [1, 8, 8, 2])
    xq = b.tensor("xq", [1, 8, 8, 2], "int8", Quant([s_x], [0]))
    b.op("QUANTIZE", [x], [xq])
    w1s = rng.uniform(0.005, 0.02, 4).astype(np.float32)
    w1 = b.constant("w1", rng.integers(-127, 128, (4, 3, 3, 2)).astype(np.int8), "int8",
                    Quant(w1s, [0] * 4, 0))
    b1 = b.constant("b1", rng.integers(-200, 200, 4).astype(np.int32), "int32",
                    Quant(w1s * s_x, [0] * 4, 0))
    a = b.tensor("a", [1, 8, 8, 4], "int8", Quant([s_a], [-128]))
    b.op("CONV_2D", [xq, w1, b1], [a], padding=SAME, strideW=1, strideH=1,
         fusedActivationFunction=RELU)
    w2s = rng.uniform(0.005, 0.02, 4).astype(np.float32)
    w2 = b.constant("w2", rng.integers(-127, 128, (1, 3, 3, 4)).astype(np.int8), "int8",
                    Quant(w2s, [0] * 4, 3))
    b2 = b.constant("b2", rng.integers(-200, 200, 4).astype(np.int32), "int32",
                    Quant(w2s * s_a, [0] * 4, 0))
    c = b.tensor("c", [1, 4, 4, 4], "int8", Quant([s_b], [1]))
    b.op("DEPTHWISE_CONV_2D", [a, w2, b2], [c], padding=SAME, strideW=2, strideH=2,
         depthMultiplier=1)
    p = b.tensor("p", [1, 2, 2, 4], "int8", Quant([s_b], [1]))
    b.op("MAX_POOL_2D", [c], [p], padding=VALID, strideW=2, strideH=2, filterWidth=2,
         filterHeight=2)
    flat = b.tensor("flat", [1, 16], "int8", Quant([s_b], [1]))
    b.op("RESHAPE", [p, b.constant("shape", np.array([1, 16], np.int32))], [flat])
    w3s = 0.01
    w3 = b.constant("w3", rng.integers(-127, 128, (5, 16)).astype(np.int8), "int8",
                    Quant([w3s], [0]))
    b3 = b.constant("b3", rng.integers(-100, 100, 5).astype(np.int32), "int32",
                    Quant([w3s * s_b], [0]))
    logits = b.tensor("logits", [1, 5], "int8", Quant([s_c], [-10]))
    b.op("FULLY_CONNECTED", [flat, w3, b3], [logits])
    y = b.tensor("y", [1, 5])
    b.op("DEQUANTIZE", [logits], [y])
    return b.build([y]), s_c


def test_small_int8_cnn_within_one_output_step():
    model, step = _small_int8_cnn()
    x = np.random.default_rng(9).uniform(0, 1, (1, 8, 8, 2)).astype(np.float32)
    # the output is dequantized: one step of its int8 scale, plus float rounding
    # (every quantized tensor of this model matches LiteRT's exactly, as measured)
    graph, got = check(model, {"x": x}, Bounds(atol=step * 1.001, rtol=0))
    counts = graph.op_histogram()
    # every conv reads dequantize(quantize(...)), never the float value before rounding
    assert all(op.input("input").producer.op_type == "dequantizeLinear"
               for op in graph.operations if op.op_type == "conv2d")
    assert counts["conv2d"] == 2 and counts["gemm"] == 1 and "transpose" not in counts
    # max pool and reshape move int8 values as stored: no dequantize / quantize around them
    assert op_named(graph, "maxPool2d").input("input").data_type == "int8"
    assert op_named(graph, "reshape").input("input").data_type == "int8"
    assert np.abs(got["y"]).max() > step  # not a trivially zero result


def test_uint8_add_of_differently_scaled_inputs():
    a = np.arange(0, 250, 10, dtype=np.uint8).reshape(1, -1)
    c = np.arange(250, 0, -10, dtype=np.uint8).reshape(1, -1)
    model = one_op("ADD", [Input("a", a.shape, "uint8", Quant([0.02], [100])),
                           Input("c", c.shape, "uint8", Quant([0.05], [10]))],
                   [Output("y", a.shape, "uint8", Quant([0.1], [50]))])
    _, got = check(model, {"a": a, "c": c}, QSTEP)
    # element 0: (0 - 100) * 0.02 + (250 - 10) * 0.05 = -2 + 12 = 10 -> 10 / 0.1 + 50 = 150
    assert got["y"][0, 0] == 150


def test_densify_a_csr_constant():
    dense = np.array([[0, 1.5, 0, 0], [0, 0, 0, 0], [2, 0, 0, -3]], np.float32)
    sparsity, stored = sparse_parameters(dense)
    b = TfliteBuilder()
    x = b.input("x", [3, 4])
    w = b.constant("w_sparse", dense, sparsity=sparsity, stored=stored)
    wd = b.tensor("w", [3, 4])
    y = b.tensor("y", [3, 4])
    b.op("DENSIFY", [w], [wd])
    b.op("ADD", [x, wd], [y])
    graph, got = check(b.build([y]), {"x": np.zeros((3, 4), np.float32)}, EXACT)
    np.testing.assert_array_equal(got["y"], dense)
    assert ops_of(graph) == ["add"]  # densified at conversion time


def test_densify_block_sparse_float16_then_dequantize():
    rng = np.random.default_rng(2)
    dense = rng.uniform(-1, 1, (4, 1, 1, 8)).astype(np.float16)
    dense[..., 0:4] *= rng.integers(0, 2, (4, 1, 1, 1)).astype(np.float16)  # some empty blocks
    sparsity, stored = sparse_parameters(dense, block=4)
    b = TfliteBuilder()
    x = b.input("x", [1, 3, 3, 8])
    w16 = b.tensor("w16", [4, 1, 1, 8], "float16")
    w = b.tensor("w", [4, 1, 1, 8])
    y = b.tensor("y", [1, 3, 3, 4])
    b.op("DENSIFY", [b.constant("w_sparse", dense, "float16", sparsity=sparsity, stored=stored)],
         [w16])
    b.op("DEQUANTIZE", [w16], [w])
    b.op("CONV_2D", [x, w, b.constant("b", np.zeros(4, np.float32))], [y], padding=SAME,
         strideW=1, strideH=1)
    graph, _ = check(b.build([y]), {"x": rand(1, 3, 3, 8)}, atol(1e-6))
    cast = op_named(graph, "cast")
    np.testing.assert_array_equal(cast.input("input").constant.numpy(), dense)


@pytest.mark.parametrize("src, dst, x, expect", [
    ("float32", "int32", [-1.7, 2.9, 0.4], [-1, 2, 0]),  # toward zero
    ("int32", "float32", [-3, 7, 0], [-3, 7, 0]),
    ("float32", "bool", [0, -0.5, 2], [0, 1, 1]),  # x != 0
    ("bool", "float32", [True, False, True], [1, 0, 1]),
    ("int32", "int64", [5, -6, 7], [5, -6, 7]),
])
def test_cast(src, dst, x, expect):
    x = np.array(x, {"float32": np.float32, "int32": np.int32, "bool": np.bool_}[src])
    model = one_op("CAST", [Input("x", [3], src)], [Output("y", [3], dst)])
    _, got = check(model, {"x": x})
    np.testing.assert_array_equal(got["y"], expect)


def test_quantized_weights_are_never_copied():
    w = np.arange(-12, 12, dtype=np.int8).reshape(4, 6)
    data = one_op("DEQUANTIZE", [Const(w, quant=Quant([0.1], [0]))], [Output("y", [4, 6])])
    graph = import_tflite(data)
    const = graph.constants["const0"]
    assert const.constant.numpy().base is not None  # a view into the model's bytes
    np.testing.assert_array_equal(const.constant.numpy(), w)


INT8 = Quant([0.04], [-3])


@pytest.mark.parametrize("op, inputs, out_shape, out_quant, options", [
    ("AVERAGE_POOL_2D", [], [1, 2, 2, 3], Quant([0.05], [2]),
     dict(padding=SAME, strideW=2, strideH=2, filterWidth=3, filterHeight=3)),
    ("MEAN", [Const(np.array([1, 2], np.int32))], [1, 3], Quant([0.02], [5]), {}),
    ("LOGISTIC", [], [1, 4, 4, 3], Quant([1 / 256], [-128]), {}),
    ("SOFTMAX", [], [1, 4, 4, 3], Quant([1 / 256], [-128]), dict(beta=1.0)),
    ("RESHAPE", [Const(np.array([4, 12], np.int32))], [4, 12], Quant([0.05], [2]), {}),
    ("PAD", [Const(np.array([[0, 0], [1, 1], [0, 2], [0, 0]], np.int32))], [1, 6, 6, 3],
     Quant([0.05], [2]), {}),
    ("RESIZE_BILINEAR", [Const(np.array([7, 5], np.int32))], [1, 7, 5, 3], Quant([0.05], [2]),
     dict(halfPixelCenters=True)),
    ("HARD_SWISH", [], [1, 4, 4, 3], Quant([0.03], [-20]), {}),
])
def test_int8_ops_within_one_step(op, inputs, out_shape, out_quant, options):
    x = np.random.default_rng(4).integers(-128, 128, (1, 4, 4, 3)).astype(np.int8)
    model = one_op(op, [Input("x", [1, 4, 4, 3], "int8", Quant([0.05], [2])), *inputs],
                   [Output("y", out_shape, "int8", out_quant)], **options)
    graph, got = check(model, {"x": x}, QSTEP)
    assert graph.outputs["y"].data_type == "int8"


def test_int8_pad_as_stored_pads_with_the_zero_point():
    x = np.full((1, 1, 2, 1), 9, np.int8)
    model = one_op("PAD", [Input("x", [1, 1, 2, 1], "int8", Quant([0.5], [-7])),
                           Const(np.array([[0, 0], [0, 0], [1, 0], [0, 0]], np.int32))],
                   [Output("y", [1, 1, 3, 1], "int8", Quant([0.5], [-7]))])
    graph, got = check(model, {"x": x})
    np.testing.assert_array_equal(got["y"].reshape(-1), [-7, 9, 9])  # real 0 is stored -7
    assert ops_of(graph) == ["pad"]


def test_int8_average_pool_with_other_output_parameters_is_refused():
    # LiteRT averages the stored values and ignores the output's scale and zero point.
    model = one_op("AVERAGE_POOL_2D", [Input("x", [1, 4, 4, 3], "int8", Quant([0.05], [2]))],
                   [Output("y", [1, 2, 2, 3], "int8", INT8)], padding=VALID, strideW=2,
                   strideH=2, filterWidth=2, filterHeight=2)
    assert "averages the stored values" in refused(model).line()


def test_int8_reshape_copies_stored_values_as_litert_does():
    x = np.array([[-128, 0, 5, 127]], np.int8)
    model = one_op("RESHAPE", [Input("x", [1, 4], "int8", Quant([0.05], [2])),
                               Const(np.array([2, 2], np.int32))],
                   [Output("y", [2, 2], "int8", Quant([0.1], [0]))])
    graph, got = check(model, {"x": x})
    np.testing.assert_array_equal(got["y"], [[-128, 0], [5, 127]])
    assert ops_of(graph) == ["reshape"]


def test_hybrid_fully_connected_keeps_its_weights_int8():
    """int8 weights, float activations (dynamic-range quantization): the weights stay int8 in
    the graph, dequantized there; the input's run-time quantization, which LiteRT's kernel
    does, is emulated (test_hybrid.py), so the result is within the whole-model bounds."""
    rng = np.random.default_rng(8)
    w = rng.integers(-127, 128, (8, 16)).astype(np.int8)
    x = rng.uniform(-1, 1, (2, 16)).astype(np.float32)
    model = one_op("FULLY_CONNECTED", [Input("x", [2, 16]), Const(w, quant=Quant([0.01], [0])),
                                       Const(np.zeros(8, np.float32))], [Output("y", [2, 8])])
    graph, got = check(model, {"x": x}, Bounds(atol=1e-4, rtol=1e-3))
    weights = [op for op in graph.operations if op.op_type == "dequantizeLinear"
               and op.input("input").kind == "constant"]
    assert [op.input("input").data_type for op in weights] == ["int8"]


@pytest.mark.parametrize("src", ["float32", "int8", "int32"])
def test_dequantize_without_parameters_is_refused(src):
    # float32: LiteRT's kernel will not prepare it; int8 / int32: no scale to apply
    model = one_op("DEQUANTIZE", [Input("x", [2], src)], [Output("y", [2])])
    assert "without quantization parameters" in refused(model).line()


def test_quantize_to_an_unquantized_output_is_refused():
    model = one_op("QUANTIZE", [Input("x", [2])], [Output("y", [2], "int8")])
    assert "has no quantization parameters" in refused(model).line()


def test_quantize_of_an_integer_input_without_parameters_is_refused():
    model = one_op("QUANTIZE", [Input("x", [2], "int32")], [Output("y", [2], "int8", INT8)])
    assert "is neither float nor quantized" in refused(model).line()


def test_cast_to_a_type_webnn_lacks_is_refused():
    model = one_op("CAST", [Input("x", [2])], [Output("y", [2], "complex64")])
    assert "which WebNN does not have" in refused(model).line()


def test_cast_to_the_same_type_is_an_identity():
    x = np.array([1.5, -2, 0], np.float32)
    graph, got = check(one_op("CAST", [Input("x", [3])], [Output("y", [3])]), {"x": x}, EXACT)
    np.testing.assert_array_equal(got["y"], x)
    assert ops_of(graph) == ["identity"]


def test_cast_of_an_integer_constant_is_folded():
    model = one_op("CAST", [Const(np.array([300, -5, 7], np.int32))], [Output("y", [3], "int64")])
    graph, got = check(model, {}, EXACT)
    np.testing.assert_array_equal(got["y"], [300, -5, 7])
    assert "cast" not in ops_of(graph)


def test_cast_of_an_integer_constant_to_bool_compares_with_zero():
    model = one_op("CAST", [Const(np.array([3, 0, -1], np.int32))], [Output("y", [3], "bool")])
    _, got = check(model, {}, EXACT)
    np.testing.assert_array_equal(got["y"], [1, 0, 1])


def test_cast_of_a_float_constant_rounds_toward_zero():
    model = one_op("CAST", [Const(np.array([2.7, -2.7], np.float32))], [Output("y", [2], "int32")])
    _, got = check(model, {}, EXACT)
    np.testing.assert_array_equal(got["y"], [2, -2])


def test_densify_of_a_dense_constant_is_refused():
    b = TfliteBuilder()
    wd = b.tensor("w", [2, 2])
    b.op("DENSIFY", [b.constant("w_dense", np.eye(2, dtype=np.float32))], [wd])
    assert "is not a sparse constant" in refused(b.build([wd])).line()


def _densify_model(dense, sparsity, stored):
    b = TfliteBuilder()
    x = b.input("x", list(dense.shape))
    wd = b.tensor("w", list(dense.shape))
    y = b.tensor("y", list(dense.shape))
    b.op("DENSIFY", [b.constant("w_sparse", dense, sparsity=sparsity, stored=stored)], [wd])
    b.op("ADD", [x, wd], [y])
    return b.build([y])


def test_densify_of_a_sparse_format_with_only_dense_levels():
    # every level DENSE: the stored values are the whole tensor in traversal order
    dense = np.arange(6, dtype=np.float32).reshape(2, 3)
    sparsity, _ = sparse_parameters(dense)
    csr = sparsity.dimMetadata[-1]
    csr.format, csr.denseSize = 0, 3
    csr.arraySegments = csr.arrayIndices = None
    csr.arraySegmentsType = csr.arrayIndicesType = 0
    graph, got = check(_densify_model(dense, sparsity, dense.reshape(-1)),
                       {"x": np.zeros((2, 3), np.float32)}, EXACT)
    np.testing.assert_array_equal(got["y"], dense)


@pytest.mark.parametrize("damage, reason", [
    ("levels", "levels for rank 2"),
    ("blocks", "levels for rank 2 and 1 blocks"),
    ("format", "unknown sparse dimension format 7"),
    ("segments", "its sparse segments do not cover level 1"),
    ("last_segment", "its sparse segments do not cover level 1"),
    ("values", "its sparsity lists 3 values, its buffer holds 2"),
])
def test_densify_of_inconsistent_sparsity_is_refused(damage, reason):
    dense = np.array([[0, 1.5, 0, 0], [0, 0, 0, 0], [2, 0, 0, -3]], np.float32)
    sparsity, stored = sparse_parameters(dense)
    csr = sparsity.dimMetadata[-1]
    if damage == "levels":
        sparsity.traversalOrder = [0, 1, 2]
    elif damage == "blocks":  # as many levels as the order, but a block the order lacks
        sparsity.blockMap = [1]
    elif damage == "format":
        csr.format = 7
    elif damage == "segments":
        csr.arraySegments.values = csr.arraySegments.values[:3]  # 3 rows need 4 entries
    elif damage == "last_segment":
        csr.arraySegments.values = [0, 1, 1, 4]  # the last row ends past the 3 indices
    else:
        stored = stored[:2]
    assert reason in refused(_densify_model(dense, sparsity, stored)).line()


def test_cast_of_an_int8_constant_casts_the_stored_values_as_litert_does():
    model = one_op("CAST", [Const(np.array([3, -4, 5], np.int8), quant=Quant([0.5], [2]))],
                   [Output("y", [3], "int32")])
    _, got = check(model, {}, EXACT)
    np.testing.assert_array_equal(got["y"], [3, -4, 5])  # not the real values 0.5, -3, 1.5
