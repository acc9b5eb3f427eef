"""conv2d and convTranspose2d exported to TFLite's NHWC convolutions.

Budgets: kernelHeight x kernelWidth x (inputChannels / groups) x 2 ULP (tolerances.md), +1 for
a bias add; inputs and filters are non-negative so no sum cancels. The layout checks: filters
are permuted at export time (no TRANSPOSE ever reads a constant), nhwc graphs have no
TRANSPOSE at all, and an nchw chain transposes once in and once out.
"""
from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as fb

from converter.ops.builder import GraphBuilder
from converter.errors import OpValidationError
from converter.exporters.tflite import to_tflite

from .helpers import assert_declared_shapes_hold, check, operator_codes, ops_of, rand, run_one

RNG = np.random.default_rng(13)


def _conv(x_shape, w_shape, *, transpose=False, dt="float32", const_w=True, bias=True, **opts):
    b = GraphBuilder()
    x = b.input("x", dt, list(x_shape))
    feeds = {"x": rand(RNG, x_shape, dt, 0, 1)}
    if const_w:
        w = b.constant(rand(RNG, w_shape, dt, 0, 1))
    else:
        w = b.input("w", dt, list(w_shape))
        feeds["w"] = rand(RNG, w_shape, dt, 0, 1)
    layout = opts.get("filterLayout", "iohw" if transpose else "oihw")
    if bias:
        out_c = w_shape[layout.index("o")] * (opts.get("groups", 1) if transpose else 1)
        opts["bias"] = b.constant(rand(RNG, [out_c], dt, 0, 1))
    in_c = x_shape[3 if opts.get("inputLayout") == "nhwc" else 1]
    groups = opts.get("groups", 1)
    k = w_shape[layout.index("h")] * w_shape[layout.index("w")] * in_c // groups
    y = (b.convTranspose2d if transpose else b.conv2d)(x, w, **opts)
    graph = b.build({"y": y})
    return graph, check(graph, feeds, ulp=2 * k + 1)["y"]


def test_conv2d_hand_values_with_end_padding_and_bias():
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 3, 3])
    y = b.conv2d(x, b.constant(np.ones((1, 1, 2, 2), np.float32)), padding=[0, 1, 0, 1],
                 bias=b.constant(np.array([10], np.float32)))
    got = run_one(b, y, {"x": np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)})
    assert got.tolist() == [[[[22, 26, 19], [34, 38, 25], [25, 27, 19]]]]


@pytest.mark.parametrize("opts", [
    dict(), dict(padding=[1, 1, 1, 1]), dict(padding=[1, 0, 2, 1], strides=[2, 1]),
    dict(padding=[1, 1, 1, 1], strides=[2, 2]),  # TFLite's SAME
    dict(padding=[0, 1, 0, 1], strides=[2, 2]),
    dict(dilations=[2, 1], padding=[2, 2, 1, 1]),
])
def test_conv2d_options(opts):
    _conv((2, 3, 8, 7), (4, 3, 3, 2), **opts)


@pytest.mark.parametrize("w_shape,groups,op", [((4, 1, 3, 3), 4, "DEPTHWISE_CONV_2D"),
                                               ((8, 1, 3, 3), 4, "DEPTHWISE_CONV_2D"),
                                               ((6, 2, 3, 3), 2, "CONV_2D")])
def test_grouped_and_depthwise_conv2d(w_shape, groups, op):
    graph, _ = _conv((1, 4, 6, 6), w_shape, groups=groups, padding=[1, 1, 1, 1])
    assert op in ops_of(graph)


@pytest.mark.parametrize("opts", [
    dict(strides=[2, 1], padding=[1, 1, 1, 1]), dict(strides=[1, 3], padding=[0, 0, 1, 1]),
    dict(strides=[3, 2], dilations=[1, 2], padding=[2, 1, 0, 2]),
    dict(dilations=[2, 1], padding=[2, 2, 1, 1]), dict(strides=[2, 1], dilations=[1, 3]),
])
@pytest.mark.parametrize("input_layout", ["nchw", "nhwc"])
def test_depthwise_conv2d_unequal_strides_and_dilations(opts, input_layout):
    # DEPTHWISE_CONV_2D keeps stride and dilation per axis: a 9x7 input makes a swapped
    # height/width change the output's size or values.
    x_shape = (1, 4, 9, 7) if input_layout == "nchw" else (1, 9, 7, 4)
    w_shape = (8, 1, 3, 3) if input_layout == "nchw" else (8, 3, 3, 1)
    layout = {} if input_layout == "nchw" else dict(inputLayout="nhwc", filterLayout="ohwi")
    graph, got = _conv(x_shape, w_shape, groups=4, **layout, **opts)
    assert "DEPTHWISE_CONV_2D" in ops_of(graph)
    assert "CONV_2D" not in ops_of(graph)


@pytest.mark.parametrize("layout,perm", [("oihw", (0, 1, 2, 3)), ("hwio", (2, 3, 1, 0)),
                                         ("ohwi", (0, 2, 3, 1)), ("ihwo", (1, 2, 3, 0))])
@pytest.mark.parametrize("input_layout", ["nchw", "nhwc"])
def test_conv2d_every_filter_and_input_layout(layout, perm, input_layout):
    w = rand(RNG, (4, 1, 3, 3), "float32", 0, 1)  # groups=2 over 2 input channels
    x = rand(RNG, (1, 2, 5, 5), "float32", 0, 1)
    feed = x if input_layout == "nchw" else x.transpose(0, 2, 3, 1)
    results = []
    for filt, lay, in_lay, fed in ((w, "oihw", "nchw", x),
                                   (np.ascontiguousarray(w.transpose(perm)), layout,
                                    input_layout, feed)):
        b = GraphBuilder()
        xi = b.input("x", "float32", list(fed.shape))
        y = b.conv2d(xi, b.constant(filt), padding=[1, 0, 0, 1], groups=2, inputLayout=in_lay,
                     filterLayout=lay)
        got = run_one(b, y, {"x": fed}, ulp=3 * 3 * 1 * 2)
        results.append(got if in_lay == "nchw" else got.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(results[0], results[1])


def test_conv2d_with_a_computed_filter_and_float16():
    _conv((1, 3, 6, 6), (4, 3, 3, 3), const_w=False)
    _conv((1, 3, 6, 6), (4, 3, 3, 3), dt="float16", bias=False)


def _tensor_is_constant(model, index: int) -> bool:
    buffer = model.subgraphs[0].tensors[index].buffer
    return buffer != 0 and model.buffers[buffer].data is not None


def test_constant_filters_are_permuted_at_export_time():
    graph, _ = _conv((1, 3, 6, 6), (4, 3, 3, 3), padding=[1, 1, 1, 1])
    model = fb.ModelT.InitFromPackedBuf(to_tflite(graph), 0)
    codes = [model.operatorCodes[op.opcodeIndex].builtinCode
             for op in model.subgraphs[0].operators]
    transposes = [op for op, c in zip(model.subgraphs[0].operators, codes)
                  if c == fb.BuiltinOperator.TRANSPOSE]
    assert len(transposes) == 2  # the input in, the result out
    assert not any(_tensor_is_constant(model, op.inputs[0]) for op in transposes)
    conv = next(op for op, c in zip(model.subgraphs[0].operators, codes)
                if c == fb.BuiltinOperator.CONV_2D)
    assert model.subgraphs[0].tensors[conv.inputs[1]].shape.tolist() == [4, 3, 3, 3]  # OHWI


def test_nhwc_graph_has_no_transpose_and_nchw_chain_transposes_once_each_way():
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 6, 6, 3])
    w = b.constant(rand(RNG, (4, 3, 3, 3), "float32", 0, 1))
    y = b.relu(b.conv2d(x, w, padding=[1, 1, 1, 1], inputLayout="nhwc", filterLayout="ohwi"))
    graph = b.build({"y": y})
    assert "TRANSPOSE" not in ops_of(graph)

    b = GraphBuilder()
    x = b.input("x", "float32", [1, 3, 6, 6])
    w1 = b.constant(rand(RNG, (4, 3, 3, 3), "float32", 0, 0.3))
    w2 = b.constant(rand(RNG, (4, 4, 1, 1), "float32", 0, 0.3))
    h = b.relu(b.conv2d(x, w1, padding=[1, 1, 1, 1]))
    h2 = b.clamp(b.add(b.conv2d(h, w2), h), minValue=0, maxValue=6)
    pooled = b.maxPool2d(h2, windowDimensions=[2, 2], strides=[2, 2])
    graph = b.build({"y": b.sigmoid(pooled)})
    check(graph, {"x": rand(RNG, (1, 3, 6, 6), "float32", 0, 1)}, atol=1e-6)
    assert ops_of(graph).count("TRANSPOSE") == 2


def test_conv_transpose2d_hand_values():
    # Stride 2 with a 2x2 filter of ones spreads each input value over its own 2x2 block;
    # padding 1 on every side crops the outer ring.
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 2, 2])
    w = b.constant(np.ones((1, 1, 2, 2), np.float32))
    graph = b.build({"full": b.convTranspose2d(x, w, strides=[2, 2]),
                     "cropped": b.convTranspose2d(x, w, strides=[2, 2], padding=[1, 1, 1, 1])})
    got = check(graph, {"x": np.array([[[[1, 2], [3, 4]]]], np.float32)}, ulp=0)
    assert got["full"][0, 0].tolist() == [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4],
                                          [3, 3, 4, 4]]
    assert got["cropped"][0, 0].tolist() == [[1, 2], [3, 4]]


@pytest.mark.parametrize("opts", [
    dict(), dict(strides=[2, 2], padding=[1, 1, 1, 1]),
    dict(strides=[2, 2], padding=[1, 1, 1, 1], outputPadding=[1, 1]),
    dict(strides=[2, 3], outputPadding=[1, 2]),
    dict(dilations=[2, 2], padding=[1, 0, 0, 1]),
    dict(strides=[2, 2], outputSizes=[10, 12]),
])
def test_conv_transpose2d_options(opts):
    _conv((1, 3, 4, 5), (3, 2, 3, 3), transpose=True, **opts)


def test_conv_transpose2d_groups_computed_filter_float16_and_layouts():
    _conv((1, 4, 4, 5), (4, 2, 3, 2), transpose=True, groups=2, strides=[2, 2])
    _conv((1, 3, 4, 5), (3, 2, 3, 3), transpose=True, const_w=False, strides=[2, 2])
    _conv((1, 3, 4, 4), (3, 2, 3, 3), transpose=True, dt="float16")
    _conv((1, 4, 5, 3), (2, 3, 3, 3), transpose=True, inputLayout="nhwc", filterLayout="ohwi",
          strides=[2, 2])
    _conv((1, 3, 4, 5), (3, 3, 2, 3), transpose=True, filterLayout="hwoi")


@pytest.mark.parametrize("in_hw, window, strides, dilations, padding, mode", [
    ((8, 7), (3, 3), (1, 1), (1, 1), [0, 0, 0, 0], "VALID"),
    ((8, 7), (3, 3), (1, 1), (1, 1), [1, 1, 1, 1], "SAME"),
    ((8, 7), (3, 3), (2, 2), (1, 1), [0, 1, 1, 1], "SAME"),   # 8 -> 4 (total 1), 7 -> 4 (2)
    ((8, 7), (2, 3), (2, 3), (1, 1), [0, 0, 1, 1], "SAME"),   # total 0 on H, 2 on W
    ((8, 7), (3, 2), (1, 1), (2, 3), [2, 2, 1, 2], "SAME"),   # dilated windows 5 and 4
    ((8, 7), (3, 3), (1, 1), (1, 1), [1, 1, 0, 2], None),     # not TFLite's split
    ((8, 7), (3, 3), (2, 1), (1, 1), [1, 1, 1, 1], None),     # SAME splits H as [0, 1]
    ((8, 7), (1, 1), (3, 3), (1, 1), [0, 0, 0, 1], None),     # output 3 x 3 is not SAME's
])
def test_padding_mode_is_tflites_own_padding_exactly(in_hw, window, strides, dilations,
                                                     padding, mode):
    from converter.exporters.tflite.conv import padding_mode

    out_hw = [(in_hw[i] + padding[2 * i] + padding[2 * i + 1] - (window[i] - 1) * dilations[i]
               - 1) // strides[i] + 1 for i in range(2)]
    assert padding_mode(in_hw, out_hw, window, strides, dilations, padding) == mode


def test_same_padding_exports_without_a_pad_op_and_other_padding_with_one():
    graph, _ = _conv((1, 2, 8, 7), (3, 2, 3, 3), padding=[0, 1, 1, 1], strides=[2, 2])
    assert "PAD" not in ops_of(graph) and "CONV_2D" in ops_of(graph)
    graph, _ = _conv((1, 2, 8, 7), (3, 2, 3, 3), padding=[1, 1, 0, 2])
    assert "PAD" in ops_of(graph)


def _tflite(graph):
    data = to_tflite(graph)
    assert_declared_shapes_hold(data)
    return data, operator_codes(data)


@pytest.mark.parametrize("x_shape, w_shape, groups, code, multiplier", [
    ((1, 2, 5, 5), (4, 1, 3, 3), 2, "DEPTHWISE_CONV_2D", 2),
    ((1, 2, 5, 5), (2, 1, 3, 3), 2, "DEPTHWISE_CONV_2D", 1),
    ((1, 1, 5, 5), (3, 1, 3, 3), 1, "CONV_2D", None),  # one channel, not grouped
])
def test_depthwise_is_chosen_by_groups_and_its_multiplier_is_out_over_in(x_shape, w_shape,
                                                                         groups, code,
                                                                         multiplier):
    graph, _ = _conv(x_shape, w_shape, groups=groups)
    data, codes = _tflite(graph)
    assert code in codes and ({"CONV_2D", "DEPTHWISE_CONV_2D"} - {code}).isdisjoint(codes)
    if multiplier is not None:
        model = fb.ModelT.InitFromPackedBuf(data, 0)
        conv = [op for op in model.subgraphs[0].operators
                if op.builtinOptionsType == fb.BuiltinOptions.DepthwiseConv2DOptions]
        assert conv[0].builtinOptions.depthMultiplier == multiplier


@pytest.mark.parametrize("groups, w_shape", [(1, (4, 3, 3, 3)), (2, (4, 2, 3, 3))])
def test_conv_transpose2d_with_a_computed_filter_per_group(groups, w_shape):
    graph, _ = _conv((1, 4, 4, 5), w_shape, transpose=True, const_w=False, groups=groups,
                     strides=[2, 2])
    _, codes = _tflite(graph)
    assert codes.count("TRANSPOSE_CONV") == groups
    assert ("SPLIT" in codes) == (groups > 1) and ("CONCATENATION" in codes) == (groups > 1)


@pytest.mark.parametrize("opts, slices, pads", [
    (dict(strides=[2, 2]), False, False),                     # the whole VALID result
    (dict(strides=[2, 2], padding=[1, 0, 0, 1]), True, False),  # cropped
    (dict(strides=[2, 2], padding=[0, 1, 0, 0]), True, False),  # cropped at the end only
    (dict(strides=[2, 2], outputPadding=[1, 1]), False, True),  # zeros appended at the end
    (dict(strides=[2, 2], padding=[1, 0, 0, 0], outputPadding=[1, 0]), True, True),
])
def test_conv_transpose2d_crops_and_appends_only_what_it_must(opts, slices, pads):
    # a 1x1 filter at stride 2 leaves the full result one short of outputPadding's size
    graph, _ = _conv((1, 2, 3, 4), (2, 3, 1, 1), transpose=True, **opts)
    _, codes = _tflite(graph)
    assert ("SLICE" in codes) == slices and ("PAD" in codes) == pads


def test_conv_transpose2d_whose_crop_starts_past_the_full_result():
    # in 1 row, 1x1 filter, stride 3: the full result is 1 row; padding 1 at the top crops it
    # all away and outputPadding 2 appends two rows, which hold only the bias
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 1, 2])
    y = b.convTranspose2d(x, b.constant(np.full((1, 1, 1, 1), 3, np.float32)), strides=[3, 1],
                          padding=[1, 0, 0, 0], outputPadding=[2, 0],
                          bias=b.constant(np.array([5], np.float32)))
    got = check(b.build({"y": y}), {"x": np.array([[[[1, 2]]]], np.float32)}, ulp=0)
    assert got["y"].tolist() == [[[[5, 5], [5, 5]]]]


def test_conv2d_explicit_padding_declares_the_padded_shape():
    graph, _ = _conv((1, 2, 6, 5), (3, 2, 3, 3), padding=[2, 0, 1, 0])
    _, codes = _tflite(graph)
    assert codes.count("PAD") == 1


@pytest.mark.parametrize("transpose", [False, True])
def test_a_bias_of_another_type_never_reaches_the_exporter(transpose):
    # the spec's limits (bias sameAs input) refuse it when the graph is built, which is why the
    # exporter has no bias type check of its own
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 3, 3])
    conv = b.convTranspose2d if transpose else b.conv2d
    with pytest.raises(OpValidationError, match="bias: data type float16 must match input's"):
        conv(x, b.constant(np.ones((1, 1, 2, 2), np.float32)),
             bias=b.constant(np.ones(1, np.float16)))
