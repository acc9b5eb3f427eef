"""TFLite resizes against LiteRT: resample2d where its half-pixel mapping is TFLite's, exact
gathers (and blends) for the legacy and align_corners mappings."""
from __future__ import annotations

import numpy as np
import pytest

from converter.importers.tflite.rules.resize import tflite_nearest_taps, webnn_nearest_taps
from converter.testing.tflite_fixtures import Const, Input, Output, TfliteBuilder, one_op

from .helpers import EXACT, atol, check, op_named, ops_of, rand, refused

ROW = np.array([0, 10, 20, 30], np.float32).reshape(1, 1, 4, 1)


def _resize(op, shape, size, **options):
    return one_op(op, [Input("x", shape), Const(np.array(size, np.int32))],
                  [Output("y", [shape[0], *size, shape[3]])], **options)


@pytest.mark.parametrize("options, expect, native", [
    # half-pixel: c = (o + 0.5) / 2 - 0.5 -> [0 (clamped), 0.25, 0.75, 1.25, ...]
    ({"halfPixelCenters": True}, [0, 2.5, 7.5, 12.5, 17.5, 22.5, 27.5, 30], True),
    # legacy: c = o / 2 -> [0, 0.5, 1, ..., 3.5 (upper tap clamped to 3)]
    ({}, [0, 5, 10, 15, 20, 25, 30, 30], False),
    # align_corners: c = o * 3 / 7
    ({"alignCorners": True}, [30 * o / 7 for o in range(8)], False),
])
def test_resize_bilinear_mappings(options, expect, native):
    model = _resize("RESIZE_BILINEAR", [1, 1, 4, 1], [1, 8], **options)
    graph, got = check(model, {"x": ROW}, atol(2e-6))
    np.testing.assert_allclose(got["y"].reshape(-1), expect, rtol=1e-6, atol=1e-5)
    if native:
        resample = op_named(graph, "resample2d")
        assert resample.attrs["axes"] == [1, 2] and resample.attrs["mode"] == "linear"
    else:
        assert "resample2d" not in ops_of(graph) and "gather" in ops_of(graph)


@pytest.mark.parametrize("options", [{}, {"halfPixelCenters": True}, {"alignCorners": True}])
@pytest.mark.parametrize("size", [(9, 7), (3, 2)])
def test_resize_bilinear_2d_matches_litert(options, size):
    x = rand(2, 5, 4, 3)
    check(_resize("RESIZE_BILINEAR", [2, 5, 4, 3], list(size), **options), {"x": x},
          atol(2e-6))


@pytest.mark.parametrize("options, expect", [
    ({}, [0, 0, 10, 10, 20, 20, 30, 30]),  # floor(o / 2)
    ({"halfPixelCenters": True}, [0, 0, 10, 10, 20, 20, 30, 30]),
    ({"alignCorners": True}, [0, 0, 10, 10, 20, 20, 30, 30]),  # round(o * 3 / 7)
])
def test_resize_nearest_mappings(options, expect):
    model = _resize("RESIZE_NEAREST_NEIGHBOR", [1, 1, 4, 1], [1, 8], **options)
    _, got = check(model, {"x": ROW}, EXACT)
    np.testing.assert_array_equal(got["y"].reshape(-1), expect)


def test_nearest_taps_decide_between_resample2d_and_gather():
    # upsampling by 2: TFLite's floor(o / 2) equals resample2d's half-pixel choice
    assert np.array_equal(tflite_nearest_taps(4, 8, False, False), webnn_nearest_taps(4, 8))
    # 4 -> 3 (legacy): floor(o * 4 / 3) = [0, 1, 2]; half-pixel: c = (o + 0.5) * 4 / 3 - 0.5
    # = [0.17, 1.5, 2.83], rounded halves down: [0, 1, 3]
    assert tflite_nearest_taps(4, 3, False, False).tolist() == [0, 1, 2]
    assert webnn_nearest_taps(4, 3).tolist() == [0, 1, 3]


@pytest.mark.parametrize("options", [{}, {"halfPixelCenters": True}, {"alignCorners": True}])
@pytest.mark.parametrize("size", [(10, 8), (3, 3), (7, 5)])
def test_resize_nearest_2d_matches_litert(options, size):
    x = rand(1, 5, 4, 2)
    check(_resize("RESIZE_NEAREST_NEIGHBOR", [1, 5, 4, 2], list(size), **options), {"x": x},
          EXACT)


def test_legacy_bilinear_gathers_only_the_resized_axis_with_taps_inside_the_input():
    # 4 x 4 -> 4 x 8, legacy mapping c = o / 2: rows keep their values (no op on axis 1);
    # columns blend taps floor(c) and ceil(c), the last ceil (4) held at 3 as TFLite does.
    x = rand(1, 4, 4, 2)
    graph, got = check(_resize("RESIZE_BILINEAR", [1, 4, 4, 2], [4, 8]), {"x": x}, atol(2e-6))
    gathers = [op for op in graph.operations if op.op_type == "gather"]
    assert [g.attrs["axis"] for g in gathers] == [2, 2]
    taps = [graph.constants[g.inputs[1].name].constant.numpy().tolist() for g in gathers]
    assert taps == [[0, 0, 1, 1, 2, 2, 3, 3], [0, 1, 1, 2, 2, 3, 3, 3]]
    c = np.arange(8) / 2
    low, high, w = np.floor(c).astype(int), np.minimum(np.ceil(c), 3).astype(int), c % 1
    np.testing.assert_allclose(got["y"], x[:, :, low] * (1 - w)[:, None]
                               + x[:, :, high] * w[:, None], atol=1e-6)


def test_legacy_bilinear_on_whole_taps_is_one_gather():
    # 4 x 8 -> 4 x 4: c = 2 o lands on input columns, so no blend (and no upper taps)
    x = rand(1, 4, 8, 1)
    graph, got = check(_resize("RESIZE_BILINEAR", [1, 4, 8, 1], [4, 4]), {"x": x}, EXACT)
    np.testing.assert_array_equal(got["y"], x[:, :, ::2])
    assert ops_of(graph) == ["gather"]


def test_a_legacy_bilinear_resize_to_the_same_size_is_an_identity():
    x = rand(1, 3, 4, 2)
    graph, got = check(_resize("RESIZE_BILINEAR", [1, 3, 4, 2], [3, 4]), {"x": x}, EXACT)
    np.testing.assert_array_equal(got["y"], x)
    assert ops_of(graph) == ["identity"]


def test_a_real_resize_ends_in_its_own_result_not_an_identity():
    graph, _ = check(_resize("RESIZE_NEAREST_NEIGHBOR", [1, 3, 4, 1], [2, 4]),
                     {"x": rand(1, 3, 4, 1)}, EXACT)
    assert ops_of(graph) == ["gather"]  # rows [0, 1] (floor(o * 1.5)); columns kept


def test_nearest_picks_resample2d_per_axis_from_each_axis_own_size():
    # 4 -> 8 rows and 6 -> 12 columns: TFLite's floor(o / 2) is resample2d's choice on both
    graph, got = check(_resize("RESIZE_NEAREST_NEIGHBOR", [1, 4, 6, 1], [8, 12]),
                       {"x": rand(1, 4, 6, 1)}, EXACT)
    assert ops_of(graph) == ["resample2d"]


def test_nearest_gathers_only_the_axis_whose_taps_move():
    # 3 -> 2 rows (legacy [0, 1], resample2d [0, 2]: gathered), 4 columns kept
    x = rand(1, 3, 4, 1)
    graph, got = check(_resize("RESIZE_NEAREST_NEIGHBOR", [1, 3, 4, 1], [2, 4]), {"x": x},
                       EXACT)
    np.testing.assert_array_equal(got["y"], x[:, [0, 1]])
    assert [op.attrs["axis"] for op in graph.operations] == [1]


def test_resize_without_an_options_table_uses_the_legacy_mapping():
    b = TfliteBuilder()
    y = b.tensor("y", [1, 1, 8, 1])
    b.op("RESIZE_BILINEAR", [b.input("x", [1, 1, 4, 1]),
                             b.constant("size", np.array([1, 8], np.int32))], [y])
    b.current.operators[-1].builtinOptionsType = 0
    b.current.operators[-1].builtinOptions = None
    _, got = check(b.build([y]), {"x": ROW}, atol(2e-6))
    np.testing.assert_allclose(got["y"].reshape(-1), [0, 5, 10, 15, 20, 25, 30, 30], atol=1e-5)


@pytest.mark.parametrize("shape, size, options, reason", [
    ([4, 4, 1], [8, 8], {}, "its input has rank 3"),
    ([1, 4, 4, 1], [8, 0], {}, "its size [8, 0] is not two positive numbers"),
    ([1, 4, 4, 1], [0, 8], {}, "its size [0, 8] is not two positive numbers"),
    ([1, 4, 4, 1], [8, 8, 1], {}, "its size [8, 8, 1] is not two positive numbers"),
    ([1, 4, 4, 1], [8, 8], {"alignCorners": True, "halfPixelCenters": True},
     "align_corners and half_pixel_centers are both set"),
])
@pytest.mark.parametrize("op", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
def test_resizes_of_the_wrong_form_are_refused(op, shape, size, options, reason):
    model = one_op(op, [Input("x", shape), Const(np.array(size, np.int32))],
                   [Output("y", [1, 8, 8, 1])], **options)
    assert reason in refused(model).line()
