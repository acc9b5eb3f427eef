"""ONNX Resize, Upsample, SpaceToDepth and DepthToSpace: hand-computed samples from ONNX's
formulas, which cases become one resample2d and which per-axis gathers and weighted sums,
agreement with ONNX Runtime, what is refused (and why), and the ONNX backend Resize cases
re-run with their scales / sizes as constants, judged by their expected outputs."""
from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest

from .helpers import check, imported, op_named, ops_of, rand, refused, single_node

X = np.array([[[[1, 2], [3, 4]]]], np.float32)


def _resize(x, *, scales=None, sizes=None, opset=19, ort=True, **attrs):
    weights = {}
    names = ["x", "", "", ""]
    if scales is not None:
        weights["scales"] = np.array(scales, np.float32)
        names[2] = "scales"
    if sizes is not None:
        weights["sizes"] = np.array(sizes, np.int64)
        names[3] = "sizes"
    names = names[:4 if sizes is not None else 3]
    model = single_node("Resize", names, {"x": x}, weights, opset=opset, **attrs)
    return model, (lambda: check(model, {"x": x}, ort=ort))


def test_nearest_upsample_by_two():
    _, run = _resize(X, scales=[1, 1, 2, 2])
    graph, (y,) = run()
    np.testing.assert_array_equal(y[0, 0], [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4],
                                            [3, 3, 4, 4]])
    resample = op_named(graph, "resample2d")
    assert resample.attrs == {"mode": "nearest-neighbor", "sizes": [4, 4], "axes": [2, 3]}


def test_linear_half_pixel_clamps_at_the_edges():
    x = np.array([[[[1, 3]]]], np.float32)
    _, run = _resize(x, scales=[1, 1, 1, 2], mode="linear")
    graph, (y,) = run()
    # positions (o + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25, clamped to 0 .. 1
    np.testing.assert_allclose(y[0, 0, 0], [1, 1.5, 2.5, 3])
    # one resized axis: resample2d is given an unchanged partner axis
    assert op_named(graph, "resample2d").attrs["axes"] == [2, 3]


def test_pytorch_half_pixel_matches_when_the_output_has_several_elements():
    x = rand(1, 2, 4, 6)
    _, run = _resize(x, sizes=[1, 2, 6, 4], mode="linear",
                     coordinate_transformation_mode="pytorch_half_pixel")
    graph, _ = run()
    assert ops_of(graph) == ["resample2d"]


def test_asymmetric_nearest_matches_integer_upsampling():
    x = rand(1, 1, 3, 3)
    _, run = _resize(x, scales=[1, 1, 3, 2], coordinate_transformation_mode="asymmetric",
                     nearest_mode="floor")
    graph, (y,) = run()
    np.testing.assert_array_equal(y[0, 0], np.repeat(np.repeat(x[0, 0], 3, 0), 2, 1))


def test_sizes_with_axes_and_keep_aspect_ratio():
    x = rand(1, 1, 4, 6)
    # not_larger: scale min(8 / 4, 9 / 6) = 1.5 for both axes: 4 -> 6, 6 -> 9
    _, run = _resize(x, sizes=[8, 9], axes=[2, 3], keep_aspect_ratio_policy="not_larger")
    _, (y,) = run()
    assert y.shape == (1, 1, 6, 9)


def test_rank_3_input_is_resized_as_4d():
    x = rand(2, 3, 5)
    _, run = _resize(x, scales=[1, 1, 2], mode="linear")
    graph, (y,) = run()
    assert y.shape == (2, 3, 10)
    assert ops_of(graph) == ["reshape", "resample2d", "reshape"]


# -- what resample2d does not sample as ONNX does: gathers and weighted sums -----------------
def test_align_corners_linear_is_one_weighted_sum_per_axis():
    x = np.array([[1, 3, 5]], np.float32)
    _, run = _resize(x, sizes=[1, 5], mode="linear", coordinate_transformation_mode="align_corners")
    graph, (y,) = run()
    # positions o * (3 - 1) / (5 - 1) = 0, 0.5, 1, 1.5, 2
    np.testing.assert_allclose(y, [[1, 2, 3, 4, 5]])
    assert ops_of(graph) == ["gather", "mul", "reduceSum"]
    gather = op_named(graph, "gather")
    assert gather.attrs["axis"] == 1 and gather.input("indices").shape == (5, 2)


def test_nearest_asymmetric_round_prefer_ceil_is_a_gather():
    x = np.array([[10, 11, 12, 13], [20, 21, 22, 23]], np.float32)
    _, run = _resize(x, scales=[1, 2], coordinate_transformation_mode="asymmetric",
                     nearest_mode="round_prefer_ceil")
    graph, (y,) = run()
    # positions o / 2 = 0, .5, 1, 1.5, 2, 2.5, 3, 3.5: halves round up, 4 clamps to 3
    np.testing.assert_array_equal(y[0], [10, 11, 11, 12, 12, 13, 13, 13])
    assert ops_of(graph) == ["gather"]
    indices = op_named(graph, "gather").input("indices")
    assert indices.kind == "constant" and indices.data_type == "int32"


@pytest.mark.parametrize("nearest_mode, expected", [
    ("round_prefer_floor", [0, 0, 0, 1, 1, 1, 1, 2, 2]),
    ("round_prefer_ceil", [0, 0, 1, 1, 1, 1, 2, 2, 2]),
    ("floor", [0, 0, 0, 0, 1, 1, 1, 1, 2]),
    ("ceil", [0, 1, 1, 1, 1, 2, 2, 2, 2]),
])
def test_nearest_modes_round_exact_positions(nearest_mode, expected):
    # align_corners 3 -> 9 samples o * 2 / 8 = 0, 0.25, 0.5, .., 2: ties at 0.5 and 1.5
    x = np.array([[0, 1, 2]], np.float32)
    _, run = _resize(x, sizes=[1, 9], coordinate_transformation_mode="align_corners",
                     nearest_mode=nearest_mode)
    graph, (y,) = run()
    np.testing.assert_array_equal(y[0], expected)
    assert ops_of(graph) == ["gather"]


def test_cubic_upsampling_weights():
    x = np.array([[[[1, 2, 4, 8]]]], np.float32)
    _, run = _resize(x, scales=[1, 1, 1, 2], mode="cubic")
    graph, (y,) = run()
    # output 0 samples -0.25: taps -2 .. 1 (the first three clamp to element 0) at distances
    # 1.75, 0.75, 0.25, 1.25; Keys' kernel with a = -0.75 weighs them -0.03515625,
    # 0.26171875, 0.87890625, -0.10546875
    assert y[0, 0, 0, 0] == pytest.approx(1.10546875 * 1 - 0.10546875 * 2, abs=1e-6)
    assert y.shape == (1, 1, 1, 8)
    assert ops_of(graph) == ["gather", "mul", "reduceSum"]


def test_cubic_exclude_outside_renormalizes_the_inside_taps():
    x = np.array([[[[1, 2, 4, 8]]]], np.float32)
    _, run = _resize(x, scales=[1, 1, 1, 2], mode="cubic", cubic_coeff_a=-0.5,
                     exclude_outside=1)
    _, (y,) = run()
    # output 0: taps -2 and -1 are outside; a = -0.5 weighs distances 0.25 and 1.25 as
    # 0.8671875 and -0.0703125, which renormalize by their sum 0.796875
    expected = (0.8671875 * 1 - 0.0703125 * 2) / 0.796875
    assert y[0, 0, 0, 0] == pytest.approx(expected, abs=1e-6)


def test_linear_antialias_widens_the_filter_when_downsampling():
    x = np.array([[[[1, 2, 4, 8]]]], np.float32)
    _, run = _resize(x, scales=[1, 1, 1, 0.5], mode="linear", antialias=1)
    _, (y,) = run()
    # scale 1/2 stretches the triangle to 4 taps weighing 1/8, 3/8, 3/8, 1/8 around positions
    # 0.5 and 2.5; the outer taps -1 and 4 clamp to the edge elements
    np.testing.assert_allclose(y[0, 0, 0], [(1 + 3) / 8 + 3 * 2 / 8 + 4 / 8,
                                            2 / 8 + 3 * 4 / 8 + 3 * 8 / 8 + 8 / 8], rtol=1e-6)


def test_tf_crop_and_resize_extrapolates_outside_the_region():
    x = np.array([[10, 11, 12, 13, 14]], np.float32)
    roi = np.array([0.5, 1.5], np.float32)  # along axis 1 only
    model = single_node("Resize", ["x", "roi", "", "sizes"], {"x": x},
                        {"roi": roi, "sizes": np.array([3], np.int64)}, opset=19, axes=[1],
                        mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
                        extrapolation_value=-1.0)
    graph, (y,) = check(model, {"x": x})
    # positions 0.5 * 4 + o * (1.5 - 0.5) * 4 / 2 = 2, 4, 6: the last is beyond 4
    np.testing.assert_array_equal(y, [[12, 14, -1]])
    assert ops_of(graph) == ["gather", "where"]


def test_tf_crop_and_resize_exclude_outside_skips_extrapolated_outputs():
    # position 6 lies past the input (size 5): extrapolated, so its cubic taps (all outside)
    # need no renormalizing; the other outputs land on input elements
    x = np.array([[10, 11, 12, 13, 14]], np.float32)
    model = single_node("Resize", ["x", "roi", "", "sizes"], {"x": x},
                        {"roi": np.array([0.5, 1.5], np.float32),
                         "sizes": np.array([3], np.int64)}, opset=19, axes=[1], mode="cubic",
                        coordinate_transformation_mode="tf_crop_and_resize",
                        extrapolation_value=-1.0, exclude_outside=1)
    _, (y,) = check(model, {"x": x})
    np.testing.assert_array_equal(y, [[12, 14, -1]])


def test_tf_crop_and_resize_leaves_uncropped_unscaled_axes_alone():
    # roi [0, 1] on every axis: no cropping; only the width is scaled (by 2), so only the
    # width gets taps: one gather and one weighted sum
    x = np.arange(8, dtype=np.float32).reshape(1, 1, 2, 4)
    roi = np.array([0, 0, 0, 0, 1, 1, 1, 1], np.float32)
    model = single_node("Resize", ["x", "roi", "scales"], {"x": x},
                        {"roi": roi, "scales": np.array([1, 1, 1, 2], np.float32)}, opset=19,
                        mode="linear", coordinate_transformation_mode="tf_crop_and_resize")
    graph, (y,) = check(model, {"x": x})
    # positions o * 3 / 7 along the width, the rows as they are
    np.testing.assert_allclose(y[0, 0, 1], 4 + np.arange(8) * 3 / 7, rtol=1e-6)
    assert ops_of(graph) == ["gather", "mul", "reduceSum"]
    assert op_named(graph, "gather").attrs["axis"] == 3


def test_half_pixel_symmetric_centres_the_rounded_output():
    x = np.arange(7, dtype=np.float32).reshape(1, 7)
    _, run = _resize(x, scales=[1, 0.5], mode="linear",
                     coordinate_transformation_mode="half_pixel_symmetric")
    _, (y,) = run()
    # 7 * 0.5 = 3.5 gives 3 outputs; offset 3.5 * (1 - 3 / 3.5) = 0.5 puts them at
    # 0.5 + (o + 0.5) * 2 - 0.5 = 1, 3, 5 exactly
    np.testing.assert_allclose(y, [[1, 3, 5]], atol=1e-6)


def test_three_axes_of_a_5d_input_fold_to_stay_within_rank_5():
    x = rand(1, 2, 3, 4, 5)
    _, run = _resize(x, scales=[1, 1, 2, 0.5, 1.5], mode="linear")
    graph, (y,) = run()
    assert y.shape == (1, 2, 6, 2, 7)
    assert ops_of(graph).count("reduceSum") == 3
    assert max(op.outputs[0].rank for op in graph.operations) <= 5


def test_uint8_linear_rounds_half_to_even_and_saturates():
    x = np.array([[[[0, 10, 20, 255]]]], np.uint8)
    _, run = _resize(x, scales=[1, 1, 1, 2], mode="linear", ort=False)
    graph, (y,) = run()
    # positions -0.25, 0.25, .. 3.25: 0, 2.5, 7.5, 12.5, 17.5, 78.75, 196.25, 255
    np.testing.assert_array_equal(y[0, 0, 0], [0, 2, 8, 12, 18, 79, 196, 255])
    assert y.dtype == np.uint8
    assert ops_of(graph)[-3:] == ["roundEven", "clamp", "cast"]


@pytest.mark.parametrize("dtype, low, high", [(np.int8, -128, 127), (np.uint8, 0, 255)])
def test_8_bit_cubic_overshoot_saturates_at_both_ends(dtype, low, high):
    # Keys' cubic overshoots past a step: ONNX's reference on the same values in float32 goes
    # about 27 beyond the type's range at both ends; ONNX rounds half to even and saturates
    from onnx.reference import ReferenceEvaluator

    x = np.array([[[[low, high, high, low, low, high]]]], dtype)
    _, run = _resize(x, scales=[1, 1, 1, 2], mode="cubic", ort=False)
    graph, (y,) = run()
    as_float, _ = _resize(x.astype(np.float32), scales=[1, 1, 1, 2], mode="cubic")
    (want,) = ReferenceEvaluator(as_float).run(None, {"x": x.astype(np.float32)})
    assert want.min() < low - 20 and want.max() > high + 20
    np.testing.assert_array_equal(y, np.clip(np.round(want), low, high).astype(dtype))
    assert y.dtype == dtype
    assert op_named(graph, "clamp").attrs == {"minValue": low, "maxValue": high}


def test_weights_closer_than_float32_resolves_are_the_same_sampling():
    # resample2d is chosen when its weights equal ONNX's as float32 holds them: 2^-25 is half
    # of float32's step just below 1, the most two weights may differ by and still round alike
    from converter.importers.onnx.rules.resize import _same_sampling, _Taps

    index = np.array([[0, 1]])
    base = _Taps(index, np.array([[0.25, 0.75]]))
    assert _same_sampling(base, _Taps(index, np.array([[0.25, 0.75 + 2.0 ** -25.5]])), 2)
    assert not _same_sampling(base, _Taps(index, np.array([[0.25, 0.75 + 2.0 ** -24]])), 2)
    # the same weights on other taps are another sampling
    assert not _same_sampling(base, _Taps(np.array([[1, 0]]), np.array([[0.25, 0.75]])), 2)


def test_int32_nearest_gathers_where_resample2d_takes_no_int32():
    x = np.arange(8, dtype=np.int32).reshape(1, 2, 4)
    _, run = _resize(x, scales=[1, 1, 2])
    graph, (y,) = run()
    np.testing.assert_array_equal(y[0, 1], [4, 4, 5, 5, 6, 6, 7, 7])
    assert ops_of(graph) == ["gather"]


def test_float16_cubic_is_computed_in_float32():
    x = np.array([[[[1, 2, 4, 8]]]], np.float16)
    _, run = _resize(x, scales=[1, 1, 1, 2], mode="cubic", ort=False)
    graph, (y,) = run()
    assert y.dtype == np.float16 and y[0, 0, 0, 0] == np.float16(0.89453125)  # as above
    assert ops_of(graph)[0] == "cast" and ops_of(graph)[-1] == "cast"


@pytest.mark.parametrize("shape, kind, values, attrs", [
    ((1, 2, 5, 7), "sizes", [1, 2, 3, 12], {"mode": "linear",
                                            "coordinate_transformation_mode": "align_corners"}),
    ((1, 2, 5, 7), "scales", [1, 1, 1.5, 0.5], {"mode": "cubic"}),
    ((1, 1, 4, 6), "sizes", [1, 1, 3, 3], {"mode": "cubic", "antialias": 1}),
    ((1, 1, 4, 6), "scales", [1, 1, 0.7, 2.5], {"mode": "linear", "antialias": 1,
                                                "coordinate_transformation_mode": "asymmetric"}),
    ((1, 2, 5, 7), "scales", [1, 1, 2, 3], {"mode": "nearest", "nearest_mode": "ceil",
                                            "coordinate_transformation_mode": "half_pixel"}),
    ((2, 3, 6), "sizes", [2, 3, 1], {"mode": "linear",
                                     "coordinate_transformation_mode": "pytorch_half_pixel"}),
    ((1, 2, 5, 7), "scales", [1, 1, 1.5, 0.5], {"mode": "linear",
                                                "coordinate_transformation_mode":
                                                    "half_pixel_symmetric"}),
])
def test_general_resizes_match_onnx_runtime(shape, kind, values, attrs):
    x = rand(*shape)
    _, run = _resize(x, **{kind: values}, **attrs)
    graph, (y,) = run()
    assert "resample2d" not in ops_of(graph)


@pytest.mark.parametrize("dtype, attrs, reason", [
    (np.int32, {"mode": "linear"}, "float32, which does not hold every int32 value"),
    (np.float32, {"nearest_mode": "ceil", "exclude_outside": 1},
     "exclude_outside=1: nearest output 7 of an axis of 4 reads input index 4"),
])
def test_what_has_no_exact_form_is_refused(dtype, attrs, reason):
    # half_pixel 4 -> 8: output 7 samples 3.25, which ceil reads at 4, outside the axis
    x = np.arange(8).astype(dtype).reshape(1, 2, 4)
    model, _ = _resize(x, scales=[1, 1, 2], **attrs)
    assert reason in refused(model, {"x": x})


def test_upsample_linear_is_asymmetric():
    x = np.array([[[[1, 3]]]], np.float32)
    model = single_node("Upsample", ["x", "s"], {"x": x},
                        {"s": np.array([1, 1, 1, 2], np.float32)}, opset=9, mode="linear")
    graph, (y,) = check(model, {"x": x})
    # positions o / 2 = 0, 0.5, 1, 1.5 (the last clamps to the edge)
    np.testing.assert_allclose(y[0, 0, 0], [1, 2, 3, 3])
    assert "resample2d" not in ops_of(graph)


def test_upsample_opset_9_is_asymmetric_floor():
    x = np.array([[[[1, 2]]]], np.float32)
    model = single_node("Upsample", ["x", "s"], {"x": x},
                        {"s": np.array([1, 1, 2, 3], np.float32)}, opset=9)
    _, (y,) = check(model, {"x": x})
    np.testing.assert_array_equal(y[0, 0], [[1, 1, 1, 2, 2, 2], [1, 1, 1, 2, 2, 2]])


def test_resize_opset_10_upsampling():
    x = rand(1, 1, 2, 3)
    model = single_node("Resize", ["x", "s"], {"x": x},
                        {"s": np.array([1, 1, 2, 2], np.float32)}, opset=10)
    _, (y,) = check(model, {"x": x})
    assert y.shape == (1, 1, 4, 6)


def test_nearest_mode_is_checked_only_for_nearest_resizes():
    x = rand(1, 1, 2, 3)
    model, _ = _resize(x, scales=[1, 1, 2, 2], mode="nearest", nearest_mode="halfway")
    assert "nearest_mode 'halfway' is unknown" in refused(model, {"x": x})
    # a linear resize never rounds to a neighbour, so the attribute is not read
    _, run = _resize(x, scales=[1, 1, 2, 2], mode="linear", nearest_mode="halfway", ort=False)
    _, (y,) = run()
    _, plain = _resize(x, scales=[1, 1, 2, 2], mode="linear")
    np.testing.assert_array_equal(y, plain()[1][0])


@pytest.mark.parametrize("transform, out", [
    ("pytorch_half_pixel", 1), ("pytorch_half_pixel", 2), ("align_corners", 1),
    ("align_corners", 2), ("tf_crop_and_resize", 1), ("tf_crop_and_resize", 2)])
def test_transforms_on_one_and_two_outputs_match_onnx_runtime(transform, out):
    # one output is each transform's special case (pytorch: position 0; align_corners: 0;
    # tf_crop_and_resize: the roi's middle); two outputs take the general formula
    x = np.array([[[[1, 5, 2, 9, 4]]]], np.float32)
    names = ["x", "roi", "", "sizes"] if transform == "tf_crop_and_resize" else \
        ["x", "", "", "sizes"]
    weights = {"sizes": np.array([1, 1, 1, out], np.int64)}
    if transform == "tf_crop_and_resize":
        weights["roi"] = np.array([0, 0, 0, 0.25, 1, 1, 1, 0.75], np.float32)
    model = single_node("Resize", names, {"x": x}, weights, opset=19, mode="linear",
                        coordinate_transformation_mode=transform)
    _, (y,) = check(model, {"x": x})
    assert y.shape == (1, 1, 1, out)


def test_resize_opset_10_has_no_cubic_mode():
    x = rand(1, 1, 2, 3)
    model = single_node("Resize", ["x", "s"], {"x": x},
                        {"s": np.array([1, 1, 2, 2], np.float32)}, opset=10, mode="cubic")
    assert "mode 'cubic' is not a Resize-10 mode" in refused(model, {"x": x})


# -- SpaceToDepth, DepthToSpace --------------------------------------------------------------
@pytest.mark.parametrize("mode, expected", [
    ("DCR", [[[0, 2], [4, 6]], [[1, 3], [5, 7]]]),  # reads channel (row * 2 + col) * 2 + d
    ("CRD", [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]),  # reads channel d * 4 + row * 2 + col
])
def test_depth_to_space(mode, expected):
    x = np.arange(8, dtype=np.float32).reshape(1, 8, 1, 1)
    graph, (y,) = check(single_node("DepthToSpace", ["x"], {"x": x}, blocksize=2, mode=mode),
                        {"x": x})
    np.testing.assert_array_equal(y[0], expected)
    assert ops_of(graph) == ["reshape", "transpose", "reshape"]


def test_space_to_depth_undoes_depth_to_space_dcr():
    x = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    _, (y,) = check(single_node("SpaceToDepth", ["x"], {"x": x}, blocksize=2), {"x": x})
    # output channel (row * 2 + col) * 2 + c holds x[c, row, col]
    np.testing.assert_array_equal(y.reshape(-1), [0, 4, 1, 5, 2, 6, 3, 7])


def test_space_to_depth_larger_matches_onnx_runtime():
    x = rand(2, 3, 6, 4)
    _, (y,) = check(single_node("SpaceToDepth", ["x"], {"x": x}, blocksize=2), {"x": x})
    assert y.shape == (2, 12, 3, 2)


# -- the ONNX backend cases, with scales / sizes given as constants ----------------------------
def _backend_resize_cases():
    from tests.onnx_backend.cases import all_cases

    return {name: case for name, case in sorted(all_cases().items())
            if {n.op_type for n in case.model.graph.node} & {"Resize", "Upsample"}
            and case.model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT}


def test_backend_resize_cases_with_constant_scales():
    from tests.onnx_backend.cases import _array

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = _backend_resize_cases()
    assert len(cases) >= 35
    for name, case in cases.items():
        model = onnx.ModelProto()
        model.CopyFrom(case.model)
        inputs, expected = case.data_sets[0]
        graph_inputs = list(model.graph.input)
        x_name = graph_inputs[0].name
        for vi, value in zip(graph_inputs[1:], inputs[1:]):
            model.graph.initializer.append(onnx.numpy_helper.from_array(_array(value), vi.name))
        del model.graph.input[1:]
        feeds = {x_name: _array(inputs[0])}
        _, (y,) = imported(model, feeds)
        np.testing.assert_allclose(y, _array(expected[0]), rtol=1e-3, atol=1e-4, err_msg=name)


# -- Resize-10: scales only, asymmetric coordinates --------------------------------------------
def _resize_10(x, scales, **attrs):
    model = single_node("Resize", ["x", "scales"], {"x": x},
                        {"scales": np.array(scales, np.float32)}, opset=10, **attrs)
    return model


@pytest.mark.parametrize("scales, attrs", [
    ([1, 1, 2, 3], {}),                       # nearest upsampling: floor of the asymmetric x
    ([1, 1, 0.5, 0.5], {}),                   # nearest downsampling
    ([1, 1, 2, 1.5], {"mode": "linear"}),
    ([1, 1, 0.5, 0.5], {"mode": "linear"}),   # no antialias in opset 10: two taps, not four
])
def test_resize_10_matches_onnx_runtime(scales, attrs):
    x = np.arange(1, 1 + 4 * 6, dtype=np.float32).reshape(1, 1, 4, 6)
    check(_resize_10(x, scales, **attrs), {"x": x}, atol=1e-5, rtol=1e-5)


def test_resize_10_linear_downsampling_by_two_takes_every_other_element():
    # asymmetric: output i reads input 2i exactly, so no blend (an antialias filter would blend)
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    _, (y,) = check(_resize_10(x, [1, 1, 0.5, 0.5], mode="linear"), {"x": x})
    np.testing.assert_array_equal(y[0, 0], [[0, 2], [8, 10]])


def test_resize_10_refuses_cubic_which_came_in_opset_11():
    x = np.zeros((1, 1, 2, 2), np.float32)
    assert "mode 'cubic' is not a Resize-10 mode" in refused(
        _resize_10(x, [1, 1, 2, 2], mode="cubic"), {"x": x})


def test_resize_11_takes_cubic():
    # opset 11 is the first of the general rule: cubic with half_pixel, as ONNX Runtime does
    # (roi is a required input until opset 13: an empty one)
    model = single_node("Resize", ["x", "roi", "scales"], {"x": X},
                        {"roi": np.zeros(0, np.float32),
                         "scales": np.array([1, 1, 2, 2], np.float32)}, opset=11, mode="cubic")
    _, (y,) = check(model, {"x": X}, atol=1e-5, rtol=1e-5)
    assert y.shape == (1, 1, 4, 4) and not np.isin(y, X).all()  # blended, not nearest
