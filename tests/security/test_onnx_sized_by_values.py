"""Tiny ONNX files whose attribute or constant *values* size an allocation or a loop (a 300-byte
file asking for 2**31 of something): each is refused with one clear line before anything
allocates by that value, neither ONNX's own shape inference nor a rule of ours.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import converter
import converter.importers.onnx as onnx_importer
from converter import errors
from converter.errors import ConverterError, FormatError, UnsupportedError

from .onnx_cases import convert_refused, model, vi, write

from .bounded import address_space_bounded  # noqa: F401  (the fixture, used by every test)

pytestmark = pytest.mark.usefixtures("address_space_bounded")

BIG = 2 ** 31


def _no_inference(monkeypatch) -> list:
    """Make ONNX's whole-model inference record that it was started (it never should be)."""
    started = []
    monkeypatch.setattr(onnx_importer, "start_inference",
                        lambda *args, **kwargs: started.append(args) or None)
    return started


def _split(num_outputs: int):
    return helper.make_node("Split", ["x"], ["a", "b"], axis=0, num_outputs=num_outputs)


def test_split_num_outputs_is_checked_before_onnx_inference(tmp_path, monkeypatch):
    src = write(model([_split(BIG), helper.make_node("Relu", ["x"], ["y"])],
                      [vi("x", shape=[4, 3])], [vi("y", shape=[4, 3])], opset=18), tmp_path)
    started = _no_inference(monkeypatch)
    with pytest.raises(FormatError) as e:
        converter.load(src)
    assert started == []
    assert "Split 'Split_0': num_outputs is 2147483648 but the node has 2 outputs" in str(e.value)
    assert e.value.fix == "the model breaks an ONNX rule; fix or re-export it"


def test_split_num_outputs_in_a_branch_is_checked_before_onnx_inference(tmp_path, monkeypatch):
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["t"]), _split(-3)], "then", [],
                             [vi("t", shape=[4, 3])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                              [vi("e", shape=[4, 3])])
    cond = numpy_helper.from_array(np.array(True), "cond")
    src = write(model([helper.make_node("If", ["cond"], ["y"], then_branch=then,
                                        else_branch=other)],
                      [vi("x", shape=[4, 3])], [vi("y", shape=[4, 3])], [cond], opset=18),
                tmp_path)
    started = _no_inference(monkeypatch)
    with pytest.raises(FormatError, match="Split 'Split_1': num_outputs is -3 but the node "
                                          "has 2 outputs"):
        converter.load(src)
    assert started == []


def test_num_outputs_on_another_op_is_left_to_the_schema_check(tmp_path):
    src = write(model([helper.make_node("Relu", ["x"], ["y"], num_outputs=5)],
                      [vi("x", shape=[4])], [vi("y", shape=[4])], opset=18), tmp_path)
    with pytest.raises(FormatError, match="Relu 'Relu_0': attribute 'num_outputs' is not one "
                                          r"ONNX's Relu \(opset 18\) has"):
        converter.load(src)


def test_split_num_outputs_equal_to_the_outputs_converts(tmp_path):
    src = write(model([_split(2), helper.make_node("Concat", ["b", "a"], ["y"], axis=0)],
                      [vi("x", shape=[4, 3])], [vi("y", shape=[4, 3])], opset=18), tmp_path)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = converter.run(converter.load(src), {"x": x})["y"]
    np.testing.assert_array_equal(y, np.concatenate([x[2:], x[:2]]))


# -- our own rules: a value that sizes a table or a loop is bounded before it is used ---------
def _load(tmp_path, nodes, inputs, outputs, inits=(), opset=18, **limits):
    return converter.load(write(model(nodes, inputs, outputs, list(inits), opset=opset),
                                tmp_path), **limits)


def _const(name, value, dtype=np.int64):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def _resize_to(sizes):
    return ([helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode="nearest")],
            [vi("x", shape=[1, 1, 4, 3])], [vi("y")], [_const("s", sizes)])


def test_a_resize_to_billions_of_positions_is_refused_before_its_taps(tmp_path):
    # Was: an hour-long loop of exact fractions, one per output position.
    with pytest.raises(UnsupportedError) as e:
        _load(tmp_path, *_resize_to([1, 1, BIG, BIG]))
    assert ("Resize 'Resize_0': it resizes to 4294967296 positions along its resized axes "
            "(output shape [1, 1, 2147483648, 2147483648]); the converter computes at most "
            "65536") in str(e.value)


@pytest.mark.parametrize("cap, refused", [(12, False), (11, True)])
def test_the_resize_position_bound_counts_every_resized_axis(tmp_path, monkeypatch, cap,
                                                             refused):
    from converter.importers.onnx.rules import resize

    monkeypatch.setattr(resize, "_MAX_POSITIONS", cap)
    nodes, inputs, outputs, inits = _resize_to([1, 1, 8, 4])  # 8 + 4 positions; axes 0, 1 kept
    if refused:
        with pytest.raises(UnsupportedError, match="it resizes to 12 positions"):
            _load(tmp_path, nodes, inputs, outputs, inits)
        return
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 4, 3)
    y = converter.run(_load(tmp_path, nodes, inputs, outputs, inits), {"x": x})["y"]
    # half_pixel, round_prefer_floor: output row r reads row floor((r + 0.5) / 2 - 0.5 + 0.5)
    rows, cols = [0, 0, 1, 1, 2, 2, 3, 3], [0, 1, 1, 2]
    np.testing.assert_array_equal(y, x[:, :, rows][:, :, :, cols])


@pytest.mark.parametrize("scales, roi, message", [
    ([1, 1, np.inf, 2], None, "scale inf is not a finite number"),
    ([1, 1, np.nan, 2], None, "scale nan is not a finite number"),
    ([1, 1, 2, 2], [0, 0, 0, 0, 1, 1, np.inf, 1],
     "roi [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, inf, 1.0] holds a value that is not finite"),
])
def test_a_resize_scale_or_roi_that_is_not_finite_is_refused(tmp_path, scales, roi, message):
    # Was: internal error: OverflowError: cannot convert Infinity to integer ratio.
    mode = {} if roi is None else {"coordinate_transformation_mode": "tf_crop_and_resize"}
    inits = [_const("sc", scales, np.float32), _const("r", roi or [], np.float32)]
    with pytest.raises(UnsupportedError) as e:
        _load(tmp_path, [helper.make_node("Resize", ["x", "r", "sc"], ["y"], **mode)],
              [vi("x", shape=[1, 1, 4, 3])], [vi("y")], inits)
    assert message in str(e.value)


def test_upsample_7_scales_attribute_is_bounded_too(tmp_path):
    src = write(model([helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 1e9, 1e9])],
                      [vi("x", shape=[1, 1, 4, 3])], [vi("y")], opset=7), tmp_path)
    line = convert_refused(src, tmp_path / "out")
    assert "Upsample 'Upsample_0': it resizes to 7000000000 positions" in line


def _window(size):
    return [helper.make_node("HannWindow", ["n"], ["y"])], [], [vi("y")], [_const("n", size)]


def test_a_window_of_billions_of_samples_is_refused_before_it_is_computed(tmp_path):
    with pytest.raises(ConverterError) as e:
        _load(tmp_path, *_window(BIG), opset=17)
    assert ("computing HannWindow 'HannWindow_0' at conversion time would allocate 16.0 GiB, "
            "over the per-tensor limit of 1.0 GiB") in str(e.value)


def test_mel_weight_matrix_sizes_are_bounded_before_it_is_computed(tmp_path):
    inits = [_const("b", BIG), _const("l", BIG), _const("r", 16000),
             _const("lo", 0.0, np.float32), _const("hi", 8000.0, np.float32)]
    with pytest.raises(ConverterError, match="computing MelWeightMatrix 'MelWeightMatrix_0' at "
                                             "conversion time would allocate 16777216.0 TiB"):
        _load(tmp_path, [helper.make_node("MelWeightMatrix", ["b", "l", "r", "lo", "hi"],
                                          ["y"])], [], [vi("y")], inits, opset=17)


def test_a_top_k_axis_out_of_range_is_left_to_the_rule(tmp_path):
    nodes, inputs, outputs, inits, _ = _top_k(5, False)
    nodes[0].attribute.append(helper.make_attribute("axis", 1))
    with pytest.raises(UnsupportedError, match="axis 1 is out of range for rank 1"):
        _load(tmp_path, nodes, inputs, outputs, inits)


@pytest.mark.parametrize("limit, fits", [(15, False), (None, True)])
def test_mel_weight_matrix_past_the_budget_is_refused_by_its_rule(tmp_path, limit, fits):
    # 2 bins of a length-2 transform: 2 x 2 float32 results (16 bytes) fold within a default
    # budget; under 16 bytes the rule refuses, counting what ONNX's implementation holds.
    inits = [_const("b", 2), _const("l", 2), _const("r", 8000),
             _const("lo", 0.0, np.float32), _const("hi", 4000.0, np.float32)]
    nodes = [helper.make_node("MelWeightMatrix", ["b", "l", "r", "lo", "hi"], ["y"])]
    if not fits:
        with pytest.raises(ConverterError, match="MelWeightMatrix_0' at conversion time would "
                                                 "allocate 64 bytes"):
            _load(tmp_path, nodes, [], [vi("y")], inits, opset=17, max_tensor_bytes=limit)
        return
    y = converter.run(_load(tmp_path, nodes, [], [vi("y")], inits, opset=17), {})["y"]
    assert y.shape == (2, 2)


def test_scan_8_num_scan_inputs_is_checked_too(tmp_path):
    body = helper.make_graph([helper.make_node("Add", ["s", "e"], ["s2"])], "body",
                             [vi("s", shape=[3]), vi("e", shape=[3])], [vi("s2", shape=[3])])
    src = write(model([helper.make_node("Scan", ["", "s0", "x"], ["y"], body=body,
                                        num_scan_inputs=BIG)],
                      [vi("s0", shape=[1, 3]), vi("x", shape=[1, 4, 3])], [vi("y")], opset=8),
                tmp_path)
    line = convert_refused(src, tmp_path / "out")
    assert "Scan 'Scan_0': num_scan_inputs is 2147483648, but the node has 2 inputs to scan" \
        in line


def _one_hot(depth):
    return ([helper.make_node("OneHot", ["i", "d", "v"], ["y"])], [vi("i", T.INT64, [3])],
            [vi("y")], [_const("d", depth), _const("v", [0.0, 1.0], np.float32)])


def test_one_hot_depth_is_bounded_before_its_positions_are_made(tmp_path):
    with pytest.raises(ConverterError, match="computing OneHot 'OneHot_0' at conversion time "
                                             "would allocate 32.0 GiB"):
        _load(tmp_path, *_one_hot(BIG))


@pytest.mark.parametrize("limit, fits", [(2 * 5 * 8, True), (2 * 5 * 8 - 1, False)])
def test_one_hot_claims_its_two_position_tables(tmp_path, limit, fits):
    if not fits:
        with pytest.raises(ConverterError, match="would allocate 80 bytes"):
            _load(tmp_path, *_one_hot(5), max_tensor_bytes=limit)
        return
    graph = _load(tmp_path, *_one_hot(5), max_tensor_bytes=limit)
    i = np.array([0, 4, -1], np.int64)
    np.testing.assert_array_equal(converter.run(graph, {"i": i})["y"], np.eye(5)[[0, 4, 4]])


def _affine_grid(size):
    return ([helper.make_node("AffineGrid", ["t", "s"], ["y"])], [vi("t", shape=[1, 2, 3])],
            [vi("y")], [_const("s", size)])


@pytest.mark.parametrize("size, error, message", [
    ([1, 1, BIG, BIG], ConverterError, "computing AffineGrid 'AffineGrid_0' at conversion time "
                                       "would allocate 167772160.0 TiB"),
    ([1, 1, 0, 4], UnsupportedError, "size [1, 1, 0, 4] has a dimension below 1"),
    ([1, 1, -BIG, 4], UnsupportedError, "has a dimension below 1"),
])
def test_affine_grid_size_is_bounded_before_its_mesh_is_made(tmp_path, size, error, message):
    with pytest.raises(error) as e:
        _load(tmp_path, *_affine_grid(size), opset=20)
    assert message in str(e.value)


@pytest.mark.parametrize("limit, fits", [(2 * 3 * 5 * 8, True), (2 * 3 * 5 * 8 - 1, False)])
def test_affine_grid_claims_its_mesh_and_base(tmp_path, limit, fits):
    if not fits:
        with pytest.raises(ConverterError, match="would allocate 240 bytes"):
            _load(tmp_path, *_affine_grid([1, 1, 2, 3]), opset=20, max_tensor_bytes=limit)
        return
    graph = _load(tmp_path, *_affine_grid([1, 1, 2, 3]), opset=20, max_tensor_bytes=limit)
    identity = np.array([[[1, 0, 0], [0, 1, 0]]], np.float32)
    grid = converter.run(graph, {"t": identity})["y"]
    # align_corners=0: pixel centres (2i + 1) / n - 1; x along width first
    xs, ys = np.array([-2, 0, 2]) / 3, np.array([-0.5, 0.5])
    np.testing.assert_allclose(grid[0, :, :, 0], np.tile(xs, (2, 1)), atol=1e-6)
    np.testing.assert_allclose(grid[0, :, :, 1], np.tile(ys[:, None], (1, 3)), atol=1e-6)


@pytest.mark.parametrize("count", [BIG, 0, 2])
def test_scan_num_scan_inputs_is_checked_before_lists_are_sized_by_it(tmp_path, count):
    # Was: MemoryError from [0] * num_scan_inputs.
    body = helper.make_graph([helper.make_node("Add", ["s", "e"], ["s2"])], "body",
                             [vi("s", shape=[3]), vi("e", shape=[3])], [vi("s2", shape=[3])])
    src = write(model([helper.make_node("Scan", ["s0", "x"], ["y"], body=body,
                                        num_scan_inputs=count)],
                      [vi("s0", shape=[3]), vi("x", shape=[4, 3])], [vi("y", shape=[3])]),
                tmp_path)
    line = convert_refused(src, tmp_path / "out")
    assert (f"Scan 'Scan_0': num_scan_inputs is {count}, but the node has 2 inputs to scan"
            in line) == (count != 2)
    if count == 2:  # both inputs scanned: the check lets it through to the rule's own reason
        assert "Scan 'Scan_0': its scan inputs have different lengths [3, 4]" in line


def test_scan_with_one_scan_input_sums_its_rows(tmp_path):
    body = helper.make_graph([helper.make_node("Add", ["s", "e"], ["s2"])], "body",
                             [vi("s", shape=[3]), vi("e", shape=[3])], [vi("s2", shape=[3])])
    graph = _load(tmp_path, [helper.make_node("Scan", ["s0", "x"], ["y"], body=body,
                                              num_scan_inputs=1)],
                  [vi("s0", shape=[3]), vi("x", shape=[4, 3])], [vi("y", shape=[3])])
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    s0 = np.ones(3, np.float32)
    np.testing.assert_array_equal(converter.run(graph, {"s0": s0, "x": x})["y"], 1 + x.sum(0))


@pytest.mark.parametrize("count, refused", [(100000, True), (31, True), (30, False)])
def test_unsqueeze_axes_past_the_rank_limit_are_refused_before_they_are_compared(
        tmp_path, count, refused):
    # Was: 100,000 axes took 33 s (each output axis looked up in a list of them).
    nodes = [helper.make_node("Unsqueeze", ["x", "a"], ["y"])]
    inits = [_const("a", np.arange(count))]
    if refused:
        with pytest.raises(UnsupportedError) as e:
            _load(tmp_path, nodes, [vi("x", shape=[4, 3])], [vi("y")], inits)
        assert (f"{count} axes make a rank-{count + 2} result; the converter handles at most 32 "
                f"axes") in str(e.value)
        return
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = converter.run(_load(tmp_path, nodes, [vi("x", shape=[4, 3])], [vi("y")], inits),
                      {"x": x})["y"]
    assert y.shape == (1,) * 30 + (4, 3)
    np.testing.assert_array_equal(y.reshape(4, 3), x)


def _top_k(k, known_data, opset=18):
    data = _const("x", [3.0, 1.0, 4.0, 1.5], np.float32)
    if opset < 10:
        node = helper.make_node("TopK", ["x"], ["v", "i"], k=k)
        inits = [data] if known_data else []
    else:
        node = helper.make_node("TopK", ["x", "k"], ["v", "i"])
        inits = ([data] if known_data else []) + [_const("k", [k])]
    inputs = [] if known_data else [vi("x", shape=[4])]
    return [node], inputs, [vi("v"), vi("i", T.INT64)], inits, opset


@pytest.mark.parametrize("known_data", [True, False])
@pytest.mark.parametrize("k, opset", [(BIG, 18), (5, 18), (-1, 18), (5, 10), (5, 1)])
def test_top_k_past_its_axis_breaks_an_onnx_rule(tmp_path, k, opset, known_data):
    # Was (data known, so the node is folded): ONNX's reference TopK asked for 16 GiB.
    with pytest.raises(FormatError) as e:
        _load(tmp_path, *_top_k(k, known_data, opset)[:4], opset=opset)
    assert f"TopK 'TopK_0': k {k} is outside 0..4, the length of axis -1" in str(e.value)


@pytest.mark.parametrize("known_data", [True, False])
def test_top_k_of_the_whole_axis_converts(tmp_path, known_data):
    nodes, inputs, outputs, inits, _ = _top_k(4, known_data)
    graph = _load(tmp_path, nodes, inputs, outputs, inits)
    feeds = {} if known_data else {"x": np.array([3.0, 1.0, 4.0, 1.5], np.float32)}
    result = converter.run(graph, feeds)
    np.testing.assert_array_equal(result["v"], [4.0, 3.0, 1.5, 1.0])
    np.testing.assert_array_equal(result["i"], [2, 0, 3, 1])


@pytest.mark.parametrize("known_data", [True, False])
def test_a_quantization_block_longer_than_its_axis_is_one_block(tmp_path, known_data):
    # Was: the scale repeated block_size = 2**31 times (32 GiB), by ONNX's reference
    # implementation when folding and by our rule otherwise.
    q = np.array([[1, -2, 3, 4], [5, 6, -7, 8], [0, 1, 2, 3], [9, -9, 1, 1]], np.int8)
    scale = np.array([[0.5, 2.0, 0.25, 1.0]], np.float32)
    inits = [_const("s", scale, np.float32)] + ([_const("q", q, np.int8)] if known_data else [])
    inputs = [] if known_data else [vi("q", T.INT8, [4, 4])]
    graph = _load(tmp_path, [helper.make_node("DequantizeLinear", ["q", "s"], ["y"], axis=0,
                                              block_size=BIG)],
                  inputs, [vi("y", shape=[4, 4])], inits, opset=21)
    y = converter.run(graph, {} if known_data else {"q": q})["y"]
    np.testing.assert_array_equal(y, q.astype(np.float32) * scale)
    # not folded: the rule, which repeats the scale no further than the axis, computes it
    assert "dequantizeLinear" in [op.op_type for op in graph.operations]


def test_a_blocked_dequantize_without_inputs_is_refused_cleanly(tmp_path):
    with pytest.raises(UnsupportedError, match="DequantizeLinear 'DequantizeLinear_0': "
                                               "computing it at conversion time failed"):
        _load(tmp_path, [helper.make_node("DequantizeLinear", [], ["y"], block_size=4)], [],
              [vi("y")], opset=21)


def test_a_quantization_block_as_long_as_an_axis_is_folded(tmp_path):
    q = (np.arange(32) - 16).astype(np.int8).reshape(4, 8)
    scale = np.array([[0.5], [2.0], [0.25], [1.0]], np.float32)  # one block of 8 per row
    graph = _load(tmp_path, [helper.make_node("DequantizeLinear", ["q", "s"], ["y"], axis=1,
                                              block_size=8)],
                  [], [vi("y", shape=[4, 8])], [_const("q", q, np.int8), _const("s", scale,
                                                                               np.float32)],
                  opset=21)
    assert "dequantizeLinear" not in [op.op_type for op in graph.operations]
    np.testing.assert_array_equal(converter.run(graph, {})["y"], q * scale)


# -- a message listing a value from the file stays one readable line ----------------------------
def test_a_line_listing_200000_axes_keeps_its_start_and_its_fix(tmp_path):
    # Was: a 600 kB line (each axis listed), 1.5 MB for a 200,000-entry Transpose perm.
    src = write(model([helper.make_node("ReduceSum", ["x", "a"], ["y"])], [vi("x", shape=[4])],
                      [vi("y")], [_const("a", np.zeros(200_000))]), tmp_path)
    line = convert_refused(src, tmp_path / "out")
    assert line.startswith(f"error: {src}: 1 unsupported: ReduceSum 'ReduceSum_0': axes [0, 0")
    assert re.search(r" \.\.\. \[\d+ characters left out\] \.\.\. ", line)
    assert line.endswith("`webnn-convert ops` lists the WebNN ops with the data types and "
                         "ranks each takes")
    assert len(line) < errors.MAX_LINE + 100


def test_a_line_is_shortened_only_past_8000_characters():
    assert str(ConverterError("x" * 8000)) == "x" * 8000
    text = "a" * 6500 + "bc" + "z" * 1500
    assert str(ConverterError(text)) == "a" * 6500 + " ... [2 characters left out] ... " + \
        "z" * 1500
