"""Padding and output sizes of convolutions, pools and resize on random small cases, against
the source runtime: ONNX models built with onnx.helper run on ONNX Runtime, TFLite models from
converter.testing.tflite_fixtures run on LiteRT; each is imported and run through our executor
and must give the same shape and (within the parity policy's bounds) the same numbers.

Every auto_pad mode, explicit asymmetric pads, strides and dilations different per axis, ceil
mode, count_include_pad, and non-square inputs and windows: the corners where a swapped axis or
an off-by-one in the padding hides when the tests use square, equal-stride cases.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from hypothesis import assume, given, note
from hypothesis import strategies as st
from onnx import helper, numpy_helper

from converter.runtimes.execute import run
from converter.importers.onnx import import_model
from converter.importers.tflite import import_tflite
from converter.verification.parity import Bounds, compare
from converter.runtimes.litert import run_litert
from converter.testing.tflite_fixtures import SAME, VALID, Const, Input, Output, one_op

AUTO_PADS = ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]
pair = st.tuples(st.integers(1, 3), st.integers(1, 3))


def _ort(model: onnx.ModelProto, feeds):
    try:
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        return session.run(None, feeds)[0]
    except Exception as e:  # ORT refuses the case (window larger than the padded input ...)
        note(f"ONNX Runtime refuses: {e}")
        return None


def _ours(model: onnx.ModelProto, feeds):
    copy = onnx.ModelProto()
    copy.CopyFrom(model)  # the importer releases initializer bytes as it reads them
    graph = import_model(copy, input_shapes={k: v.shape for k, v in feeds.items()})
    return run(graph, feeds)[model.graph.output[0].name]


def _model(node, feeds, weights=None, opset=19):
    inputs = [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, a.shape)
              for n, a in feeds.items()]
    out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    graph = helper.make_graph([node], "g", inputs, [out],
                              [numpy_helper.from_array(a, n) for n, a in (weights or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def _same(got, want, bounds):
    assert got.shape == want.shape, (got.shape, want.shape)
    r = compare("y", got, want, bounds)
    assert r.passed, (r.reason, r.max_abs, r.worst_index)


def _spatial(draw, kernel):
    """auto_pad and its attributes: explicit pads (possibly asymmetric) only with NOTSET."""
    auto_pad = draw(st.sampled_from(AUTO_PADS))
    attrs = {"auto_pad": auto_pad}
    if auto_pad == "NOTSET":
        # [h_begin, w_begin, h_end, w_end], each smaller than the window (ONNX pools ask it)
        attrs["pads"] = [draw(st.integers(0, k - 1)) for k in kernel + kernel]
    return attrs


def window_fits(hw, kernel, dilations, attrs) -> bool:
    """The dilated window fits the (explicitly) padded input: outside that, ONNX Runtime's
    answers are artefacts of its integer division, and the importer refuses the node."""
    if attrs["auto_pad"] in ("SAME_UPPER", "SAME_LOWER"):
        return True
    pads = attrs.get("pads", [0, 0, 0, 0])
    return all((kernel[i] - 1) * dilations[i] + 1 <= hw[i] + pads[i] + pads[i + 2]
               for i in range(2))


def negative_same_padding(hw, kernel, attrs) -> bool:
    """SAME_* with a stride larger than the window can ask for a negative total padding. For
    pools ONNX's reference crops (negative pads), ONNX Runtime crops for SAME_UPPER only and
    refuses MaxPool, and the importer pads 0: left out here, reported to the lead."""
    if attrs["auto_pad"] not in ("SAME_UPPER", "SAME_LOWER"):
        return False
    dil = attrs.get("dilations", [1, 1])
    if dil != [1, 1]:
        # ONNX Runtime sizes a dilated MaxPool's SAME padding from the undilated window (the
        # spec's formula dilates it): its output is not ceil(input / stride). Reported.
        return True
    return any((-(-hw[i] // attrs["strides"][i]) - 1) * attrs["strides"][i]
               + (kernel[i] - 1) * dil[i] + 1 < hw[i] for i in range(2))


@st.composite
def conv_cases(draw):
    c = draw(st.integers(1, 3))
    groups = draw(st.sampled_from([1, c]))
    out_c = groups * draw(st.integers(1, 2))
    hw = [draw(st.integers(1, 9)), draw(st.integers(1, 9))]
    kernel = [draw(st.integers(1, 4)), draw(st.integers(1, 4))]
    attrs = dict(strides=list(draw(pair)), dilations=list(draw(pair)), group=groups,
                 kernel_shape=kernel, **_spatial(draw, kernel))
    bias = draw(st.booleans())
    assume(window_fits(hw, kernel, attrs["dilations"], attrs))
    return c, out_c, hw, kernel, attrs, bias


@given(conv_cases(), st.integers(0, 2**16))
def test_onnx_conv_padding_strides_dilations_match_onnx_runtime(case, seed):
    c, out_c, hw, kernel, attrs, bias = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, c, *hw)).astype(np.float32)
    weights = {"w": rng.standard_normal((out_c, c // attrs["group"], *kernel)).astype(np.float32)}
    inputs = ["x", "w"]
    if bias:
        weights["b"] = rng.standard_normal(out_c).astype(np.float32)
        inputs.append("b")
    model = _model(helper.make_node("Conv", inputs, ["y"], **attrs), {"x": x}, weights)
    want = _ort(model, {"x": x})
    assume(want is not None)
    _same(_ours(model, {"x": x}), want, Bounds(atol=1e-5, rtol=1e-4))


@st.composite
def pool_cases(draw):
    op = draw(st.sampled_from(["MaxPool", "AveragePool", "LpPool"]))
    hw = [draw(st.integers(1, 9)), draw(st.integers(1, 9))]
    kernel = [draw(st.integers(1, 4)), draw(st.integers(1, 4))]
    attrs = dict(kernel_shape=kernel, strides=list(draw(pair)), **_spatial(draw, kernel))
    if op != "LpPool":
        attrs["ceil_mode"] = draw(st.integers(0, 1))
    if op == "MaxPool":
        attrs["dilations"] = list(draw(pair))
    if op == "AveragePool":
        attrs["count_include_pad"] = draw(st.integers(0, 1))
    if op == "LpPool":
        attrs["p"] = draw(st.sampled_from([1, 2]))
    assume(window_fits(hw, kernel, attrs.get("dilations", [1, 1]), attrs))
    assume(not negative_same_padding(hw, kernel, attrs))
    return op, hw, attrs


@given(pool_cases(), st.integers(0, 2**16))
def test_onnx_pools_padding_strides_ceil_mode_match_onnx_runtime(case, seed):
    op, hw, attrs = case
    x = np.random.default_rng(seed).standard_normal((1, 2, *hw)).astype(np.float32)
    model = _model(helper.make_node(op, ["x"], ["y"], **attrs), {"x": x})
    want = _ort(model, {"x": x})
    assume(want is not None and want.size > 0)
    _same(_ours(model, {"x": x}), want, Bounds(atol=1e-5, rtol=1e-4))


@st.composite
def resize_cases(draw):
    hw = [draw(st.integers(1, 6)), draw(st.integers(1, 6))]
    mode = draw(st.sampled_from(["nearest", "linear"]))
    transform = draw(st.sampled_from(["half_pixel", "asymmetric", "align_corners",
                                      "pytorch_half_pixel"]))
    by_scales = draw(st.booleans())
    if by_scales:
        scales = [draw(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0])) for _ in range(2)]
        target = None
    else:
        scales = None
        target = [draw(st.integers(1, 12)), draw(st.integers(1, 12))]
    nearest = draw(st.sampled_from(["round_prefer_floor", "round_prefer_ceil", "floor",
                                    "ceil"]))
    return hw, mode, transform, scales, target, nearest


@given(resize_cases(), st.integers(0, 2**16))
def test_onnx_resize_output_size_and_values_match_onnx_runtime(case, seed):
    hw, mode, transform, scales, target, nearest = case
    x = np.random.default_rng(seed).standard_normal((1, 2, *hw)).astype(np.float32)
    weights = {"roi": np.zeros(0, np.float32)}
    if scales is not None:
        weights["scales"] = np.array([1, 1, *scales], np.float32)
        inputs = ["x", "roi", "scales"]
    else:
        weights["sizes"] = np.array([1, 2, *target], np.int64)
        inputs = ["x", "roi", "", "sizes"]
    attrs = dict(mode=mode, coordinate_transformation_mode=transform)
    if mode == "nearest":
        attrs["nearest_mode"] = nearest
    model = _model(helper.make_node("Resize", inputs, ["y"], **attrs), {"x": x}, weights)
    want = _ort(model, {"x": x})
    assume(want is not None and want.size > 0)
    try:
        got = _ours(model, {"x": x})
    except Exception as e:  # an honest refusal is allowed; a wrong answer is not
        from converter.errors import UnsupportedError
        assert isinstance(e, UnsupportedError), e
        return
    _same(got, want, Bounds(atol=1e-5, rtol=1e-4))


# -- TFLite against LiteRT -------------------------------------------------------------------
def _out_size(n, k, s, d, padding):
    eff = (k - 1) * d + 1
    return -(-n // s) if padding == SAME else (n - eff) // s + 1


@st.composite
def tflite_conv_cases(draw):
    op = draw(st.sampled_from(["CONV_2D", "DEPTHWISE_CONV_2D"]))
    hw = [draw(st.integers(1, 9)), draw(st.integers(1, 9))]
    kernel = [draw(st.integers(1, 4)), draw(st.integers(1, 4))]
    strides, dilations = list(draw(pair)), list(draw(pair))
    padding = draw(st.sampled_from([SAME, VALID]))
    c = draw(st.integers(1, 3))
    mult = draw(st.integers(1, 2))
    return op, hw, kernel, strides, dilations, padding, c, mult


@given(tflite_conv_cases(), st.integers(0, 2**16))
def test_tflite_convolutions_match_litert(case, seed):
    op, hw, kernel, strides, dilations, padding, c, mult = case
    out_hw = [_out_size(hw[i], kernel[i], strides[i], dilations[i], padding) for i in range(2)]
    assume(min(out_hw) >= 1)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, *hw, c)).astype(np.float32)
    if op == "CONV_2D":
        out_c = mult
        w = rng.standard_normal((out_c, *kernel, c)).astype(np.float32)
        extra = {}
    else:
        out_c = c * mult
        w = rng.standard_normal((1, *kernel, out_c)).astype(np.float32)
        extra = {"depthMultiplier": mult}
    model = one_op(op, [Input("x", x.shape), Const(w), Const(rng.standard_normal(out_c)
                                                          .astype(np.float32))],
                   [Output("y", [1, *out_hw, out_c])], padding=padding, strideH=strides[0],
                   strideW=strides[1], dilationHFactor=dilations[0],
                   dilationWFactor=dilations[1], **extra)
    want = run_litert(model, {"x": x})["y"]
    got = run(import_tflite(model), {"x": x})["y"]
    _same(got, want, Bounds(atol=1e-5, rtol=1e-4))


@st.composite
def tflite_pool_cases(draw):
    op = draw(st.sampled_from(["MAX_POOL_2D", "AVERAGE_POOL_2D", "L2_POOL_2D"]))
    hw = [draw(st.integers(1, 9)), draw(st.integers(1, 9))]
    window = [draw(st.integers(1, 4)), draw(st.integers(1, 4))]
    strides = list(draw(pair))
    padding = draw(st.sampled_from([SAME, VALID]))
    return op, hw, window, strides, padding


@given(tflite_pool_cases(), st.integers(0, 2**16))
def test_tflite_pools_match_litert(case, seed):
    op, hw, window, strides, padding = case
    out_hw = [_out_size(hw[i], window[i], strides[i], 1, padding) for i in range(2)]
    assume(min(out_hw) >= 1)
    x = np.random.default_rng(seed).standard_normal((1, *hw, 2)).astype(np.float32)
    if op == "L2_POOL_2D":
        x = np.abs(x)
    model = one_op(op, [Input("x", x.shape)], [Output("y", [1, *out_hw, 2])], padding=padding,
                   strideH=strides[0], strideW=strides[1], filterHeight=window[0],
                   filterWidth=window[1])
    want = run_litert(model, {"x": x})["y"]
    got = run(import_tflite(model), {"x": x})["y"]
    _same(got, want, Bounds(atol=1e-5, rtol=1e-4))
