"""What the ONNX Resize, Upsample, SpaceToDepth and DepthToSpace rules refuse, each with its
reason, and the smaller corners next to those checks (no-op resizes, tf_half_pixel_for_nn,
Upsample's older spellings), against ONNX Runtime where it runs them."""
from __future__ import annotations

import numpy as np
import pytest

from .helpers import check, ops_of, rand, refused, single_node

X = rand(1, 1, 2, 2)
F, I64 = np.float32, np.int64


def _resize(inputs, weights, x=X, opset=19, **attrs):
    return single_node("Resize", inputs, {"x": x}, weights, opset=opset, **attrs)


SCALES = {"s": np.array([1, 1, 2, 2], F)}


@pytest.mark.parametrize("model, x, reason", [
    (_resize(["x", "", "s"], SCALES, mode="area"), X, "mode 'area' is not an ONNX Resize mode"),
    (_resize(["x", "", "s"], SCALES, coordinate_transformation_mode="centre"), X,
     "coordinate_transformation_mode 'centre' is unknown"),
    (_resize(["x", "", "s"], SCALES, coordinate_transformation_mode="tf_half_pixel_for_nn",
             exclude_outside=1), X,
     "exclude_outside=1: nearest output 3 of an axis of 2 reads input index 2"),
    (_resize(["x", "", "s"], SCALES, x=np.zeros((1, 1, 2, 2), np.int32), mode="linear"),
     np.zeros((1, 1, 2, 2), np.int32), "input is int32: its interpolated values would be"),
    (_resize(["x", "", "", "z"], {"z": np.array([1, 1, 0, 2], I64)}), X,
     "output shape [1, 1, 0, 2] has a 0 dimension"),
    (_resize(["x", "", "s"], {"s": np.array([1, 2, 2], F)}), X, "scales has 3 values for 4 axes"),
    (_resize(["x", "", "s"], {"s": np.array([1, 1, 0, 2], F)}), X, "scale 0.0 is not positive"),
    (_resize(["x"], {}), X, "neither scales nor sizes is given"),
    (_resize(["x", "", "", "z"], {"z": np.array([4, 4], I64)}), X,
     "sizes has 2 values for 4 axes"),
    (_resize(["x", "", "", "z"], {"z": np.array([1, 1, 4, 4], I64)},
             keep_aspect_ratio_policy="fit"), X, "keep_aspect_ratio_policy 'fit' is unknown"),
    (_resize(["x", "", "s"], SCALES, coordinate_transformation_mode="tf_crop_and_resize"), X,
     "coordinate_transformation_mode 'tf_crop_and_resize' needs roi"),
    (_resize(["x", "r", "s"], {**SCALES, "r": np.array([0, 0, 1, 1], F)},
             coordinate_transformation_mode="tf_crop_and_resize"), X,
     "roi has 4 values for 4 axes (starts, then ends)"),
    (single_node("Upsample", ["x", "s"], {"x": X}, SCALES, opset=9, mode="cubic"), X,
     "mode 'cubic' is not an Upsample mode"),
    (single_node("SpaceToDepth", ["x"], {"x": rand(1, 4, 2)}, blocksize=2), rand(1, 4, 2),
     "input rank 3: ONNX defines it for [N, C, H, W]"),
    (single_node("SpaceToDepth", ["x"], {"x": X}, blocksize=0), X, "blocksize 0 is not positive"),
    (single_node("SpaceToDepth", ["x"], {"x": rand(1, 1, 2, 3)}, blocksize=2), rand(1, 1, 2, 3),
     "height 2 and width 3 must be multiples of blocksize 2"),
    (single_node("DepthToSpace", ["x"], {"x": rand(1, 6, 1, 1)}, blocksize=2),
     rand(1, 6, 1, 1), "6 channels are not a multiple of blocksize^2 = 4"),
    (single_node("DepthToSpace", ["x"], {"x": rand(1, 4, 1, 1)}, blocksize=2, mode="RCD"),
     rand(1, 4, 1, 1), "mode 'RCD' is not DCR or CRD"),
])
def test_resize_and_block_refusals(model, x, reason):
    assert reason in refused(model, {"x": x})


def test_a_resize_by_one_everywhere_is_an_identity():
    graph, (y,) = check(_resize(["x", "", "s"], {"s": np.ones(4, F)}, mode="linear"), {"x": X})
    np.testing.assert_array_equal(y, X)
    assert ops_of(graph) == ["identity"]


def test_tf_half_pixel_for_nn_matches_onnx_runtime():
    x = np.arange(6, dtype=F).reshape(1, 1, 2, 3)
    model = _resize(["x", "", "s"], {"s": np.array([1, 1, 2, 1.5], F)}, x=x,
                    coordinate_transformation_mode="tf_half_pixel_for_nn")
    _, (y,) = check(model, {"x": x})
    # width positions (o + 0.5) / 1.5 = 1/3, 1, 5/3, 7/3 round to 0, 1, 2, 2
    np.testing.assert_array_equal(y[0, 0, 0], [0, 1, 2, 2])


def test_upsample_opset_7_scales_attribute_and_the_bilinear_spelling():
    x = np.array([[[[0, 4], [8, 12]]]], F)
    seven = single_node("Upsample", ["x"], {"x": x}, opset=7, scales=[1.0, 1.0, 2.0, 2.0],
                        mode="linear")
    _, (want,) = check(seven, {"x": x})
    # asymmetric linear: column positions 0, 0.5, 1, 1.5 (clamped to 1)
    np.testing.assert_array_equal(want[0, 0, 0], [0, 2, 4, 4])
    bilinear = single_node("Upsample", ["x"], {"x": x}, opset=7, scales=[1.0, 1.0, 2.0, 2.0],
                           mode="bilinear")
    _, (y,) = check(bilinear, {"x": x}, ort=False)  # the opset-1 name of linear
    np.testing.assert_array_equal(y, want)
