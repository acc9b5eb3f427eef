"""Corners of the ONNX Resize import the main tests leave open: nearest rounding off the ties,
gather indices that stay inside the axis, when resample2d may not be used (three resized axes,
rank 5), a cropped axis whose size does not change, and the float32 resolution at which two
samplings count as the same. Numbers are checked against ONNX Runtime running the same model
and against values worked out by hand from ONNX's formulas."""
from __future__ import annotations

import numpy as np
import pytest

from onnx.reference import ReferenceEvaluator

from converter.importers.onnx.rules.resize import _same_sampling, _Taps

from .helpers import check, ops_of, rand, refused, single_node


def _resize(x, *, scales=None, sizes=None, roi=None, opset=19, ort=True, **attrs):
    weights, names = {}, ["x", "", "", ""]
    if roi is not None:
        weights["roi"], names[1] = np.array(roi, np.float32), "roi"
    if scales is not None:
        weights["scales"], names[2] = np.array(scales, np.float32), "scales"
    if sizes is not None:
        weights["sizes"], names[3] = np.array(sizes, np.int64), "sizes"
    names = names[:4 if sizes is not None else 3]
    model = single_node("Resize", names, {"x": x}, weights, opset=opset, **attrs)
    graph, got = check(model, {"x": x}, ort=ort)
    if not ort:  # ONNX's reference evaluator instead
        (want,) = ReferenceEvaluator(model).run(None, {"x": x})
        np.testing.assert_allclose(got[0], want, rtol=1e-6)
    return graph, got


@pytest.mark.parametrize("nearest_mode, expected", [
    ("round_prefer_ceil", [0, 0, 1, 1, 2, 2, 2, 3, 3, 3]),
    ("round_prefer_floor", [0, 0, 1, 1, 2, 2, 2, 3, 3, 3]),
    ("floor", [0, 0, 0, 1, 1, 2, 2, 2, 3, 3]),
    ("ceil", [0, 1, 1, 2, 2, 2, 3, 3, 3, 3]),
])
def test_nearest_modes_off_the_ties(nearest_mode, expected):
    # asymmetric 4 -> 10 samples o / 2.5 = 0, .4, .8, 1.2, 1.6, 2, 2.4, 2.8, 3.2, 3.6: no tie,
    # so both round_prefer modes round to the nearest element (4 clamps to 3)
    x = np.array([[0, 1, 2, 3]], np.float32)
    graph, (y,) = _resize(x, scales=[1, 2.5], coordinate_transformation_mode="asymmetric",
                          nearest_mode=nearest_mode)
    np.testing.assert_array_equal(y[0], expected)


def _gather_indices(graph):
    return [op.input("indices").constant.numpy() for op in graph.operations if op.op_type == "gather"]


def test_linear_taps_past_the_last_element_read_the_last_element():
    # asymmetric 4 -> 8: position 3.5 reads elements 3 and 4 half each; 4 is outside the axis,
    # and WebNN leaves an out-of-range gather index to the implementation, so it must be 3
    x = np.array([[1, 2, 4, 8]], np.float32)
    graph, (y,) = _resize(x, scales=[1, 2], mode="linear",
                          coordinate_transformation_mode="asymmetric")
    np.testing.assert_allclose(y[0], [1, 1.5, 2, 3, 4, 6, 8, 8])
    (indices,) = _gather_indices(graph)
    assert indices.min() == 0 and indices.max() == 3


def test_three_resized_axes_are_never_one_resample2d():
    # nearest half_pixel by 2 would be resample2d's own sampling, but resample2d takes two axes
    x = rand(1, 2, 2, 3, 2)
    graph, (y,) = _resize(x, scales=[1, 1, 2, 2, 2])
    assert y.shape == (1, 2, 4, 6, 4)
    assert "resample2d" not in ops_of(graph)


def test_a_rank_5_input_is_never_resample2d():
    # two resized axes with resample2d's sampling, but resample2d's input is 4-D
    x = rand(1, 2, 3, 2, 2)
    graph, (y,) = _resize(x, scales=[1, 1, 1, 2, 2])
    assert y.shape == (1, 2, 3, 4, 4)
    assert "resample2d" not in ops_of(graph)


def test_a_cropped_axis_that_keeps_its_size_is_still_resampled():
    # roi [0.25, 0.75] of 5 elements back to 5 outputs: positions 1 + o * 0.5 (ONNX's
    # reference evaluator agrees; ONNX Runtime skips every axis whose size does not change,
    # cropped or not, and returns the input)
    x = np.array([[10, 20, 30, 40, 50]], np.float32)
    graph, (y,) = _resize(x, sizes=[5], roi=[0.25, 0.75], axes=[1], mode="linear", ort=False,
                          coordinate_transformation_mode="tf_crop_and_resize")
    np.testing.assert_allclose(y[0], [20, 25, 30, 35, 40])
    assert ops_of(graph) != ["identity"]


def test_weights_exactly_at_the_resolution_are_the_same_sampling():
    index = np.array([[0, 1]])
    base = _Taps(index, np.array([[0.25, 0.75]]))
    assert _same_sampling(base, _Taps(index, np.array([[0.25, 0.75 + 2.0 ** -25]])), 2)


def test_samplings_of_different_rows_are_told_apart():
    # row 0 reads element 1 and row 2 element 0 in one sampling, the other way round in the
    # other: each output row is compared on its own
    size = 2
    a = _Taps(np.array([[1, 0], [0, 1], [0, 1]]), np.array([[1.0, 0.0], [1, 0], [0, 1]]))
    b = _Taps(np.array([[0, 1], [0, 1], [0, 1]]), np.array([[0.0, 0.0], [1, 0], [1, 1]]))
    assert not _same_sampling(a, b, size)
    assert _same_sampling(a, a, size)


@pytest.mark.parametrize("op", ["SpaceToDepth", "DepthToSpace"])
def test_blocksize_1_moves_nothing(op):
    x = rand(1, 3, 2, 4)
    model = single_node(op, ["x"], {"x": x}, opset=13, blocksize=1)
    _, (y,) = check(model, {"x": x})
    np.testing.assert_array_equal(y, x)


def test_space_to_depth_refuses_an_unknown_mode():
    x = rand(1, 1, 2, 2)
    model = single_node("SpaceToDepth", ["x"], {"x": x}, opset=28, blocksize=2, mode="XYZ")
    assert "mode 'XYZ' is not DCR or CRD" in refused(model, {"x": x})


@pytest.mark.parametrize("mode", ["CRD", "DCR"])
def test_space_to_depth_has_no_mode_before_opset_28(mode):
    # SpaceToDepth gained `mode` at opset 28: setting it at 13 breaks the schema in force,
    # which ONNX Runtime refuses as well.
    import onnxruntime as ort

    from converter.errors import FormatError

    from .helpers import _import

    x = rand(1, 1, 2, 2)
    model = single_node("SpaceToDepth", ["x"], {"x": x}, opset=13, blocksize=2, mode=mode)
    with pytest.raises(Exception, match="Unrecognized attribute: mode for operator SpaceToDepth"):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(FormatError) as info:
        _import(model, {"x": x})
    assert "attribute 'mode' is not one ONNX's SpaceToDepth (opset 13) has" in str(info.value)


def test_nearest_exclude_outside_ignores_extrapolated_outputs():
    # tf_crop_and_resize positions 2, 4, 6 on 5 elements: 6 is extrapolated, so it reads
    # nothing and exclude_outside has nothing to refuse
    x = np.array([[10, 11, 12, 13, 14]], np.float32)
    _, (y,) = _resize(x, sizes=[3], roi=[0.5, 1.5], axes=[1], ort=False,
                      coordinate_transformation_mode="tf_crop_and_resize",
                      extrapolation_value=-1.0, exclude_outside=1)
    np.testing.assert_array_equal(y, [[12, 14, -1]])



def test_three_resized_axes_of_a_4d_input_are_never_one_resample2d():
    x = rand(1, 2, 2, 3)
    graph, (y,) = _resize(x, scales=[1, 2, 2, 2])
    assert y.shape == (1, 4, 4, 6)
    assert "resample2d" not in ops_of(graph)
