"""GridSample and AffineGrid (gathers at computed coordinates), Col2Im and CenterCropPad
(slices, pads and sums), each compared with ONNX Runtime on the same model, plus values
worked out by hand."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from .helpers import check, imported, ops_of, rand

F32 = onnx.TensorProto.FLOAT


def _model(node, inputs: dict, inits: dict, opset: int):
    vis = [helper.make_tensor_value_info(n, F32, a.shape) for n, a in inputs.items()]
    graph = helper.make_graph([node], "s", vis, [helper.make_tensor_value_info("y", F32, None)],
                              [numpy_helper.from_array(a, n) for n, a in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=9)


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_2d_matches_onnx_runtime(mode, padding, align):
    x = rand(2, 3, 4, 5)
    # coordinates past [-1, 1] exercise the padding modes
    grid = (np.random.default_rng(5).uniform(-1.6, 1.6, (2, 3, 6, 2))).astype(np.float32)
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=padding,
                            align_corners=align)
    graph, _ = check(_model(node, {"x": x, "g": grid}, {}, 20), {"x": x, "g": grid},
                     atol=1e-5, rtol=1e-5)
    assert "gatherElements" in ops_of(graph)


def test_grid_sample_bilinear_by_hand():
    x = np.array([[[[0, 10], [20, 30]]]], np.float32)
    # the image centre, and the centre of the top-right pixel (align_corners=0)
    grid = np.array([[[[0, 0], [0.5, -0.5]]]], np.float32)
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode="bilinear")
    _, (y,) = imported(_model(node, {"x": x, "g": grid}, {}, 16), {"x": x, "g": grid})
    np.testing.assert_allclose(y, [[[[15, 10]]]], rtol=1e-6)


def test_grid_sample_3d_trilinear_matches_onnx_runtime():
    x = rand(1, 2, 3, 4, 5)
    grid = np.random.default_rng(6).uniform(-1, 1, (1, 2, 3, 4, 3)).astype(np.float32)
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode="linear", align_corners=1)
    check(_model(node, {"x": x, "g": grid}, {}, 20), {"x": x, "g": grid}, atol=1e-5)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("size", [[2, 3, 4, 5], [2, 3, 2, 4, 5]])
def test_affine_grid_matches_onnx_runtime(align, size):
    spatial = len(size) - 2
    theta = rand(2, spatial, spatial + 1)
    node = helper.make_node("AffineGrid", ["t", "s"], ["y"], align_corners=align)
    model = _model(node, {"t": theta}, {"s": np.array(size, np.int64)}, 20)
    _, (y,) = check(model, {"t": theta}, atol=1e-6)
    assert y.shape == (2, *size[2:], spatial)


def test_affine_grid_identity_gives_pixel_centres():
    theta = np.array([[[1, 0, 0], [0, 1, 0]]], np.float32)
    node = helper.make_node("AffineGrid", ["t", "s"], ["y"])
    model = _model(node, {"t": theta}, {"s": np.array([1, 1, 2, 2], np.int64)}, 20)
    _, (y,) = imported(model, {"t": theta})
    np.testing.assert_allclose(y[0, 0], [[-0.5, -0.5], [0.5, -0.5]])  # (x, y) of row 0


@pytest.mark.parametrize("attrs", [{}, {"strides": [2, 2]}, {"dilations": [2, 1]},
                                   {"pads": [1, 0, 1, 2], "strides": [1, 2]}])
def test_col2im_matches_onnx_runtime(attrs):
    image, block = [6, 7], [2, 3]
    strides = attrs.get("strides", [1, 1])
    dilations = attrs.get("dilations", [1, 1])
    pads = attrs.get("pads", [0, 0, 0, 0])
    grid = [(image[i] + pads[i] + pads[i + 2] - dilations[i] * (block[i] - 1) - 1)
            // strides[i] + 1 for i in range(2)]
    x = rand(2, 3 * 6, grid[0] * grid[1])
    node = helper.make_node("Col2Im", ["x", "i", "b"], ["y"], **attrs)
    inits = {"i": np.array(image, np.int64), "b": np.array(block, np.int64)}
    _, (y,) = check(_model(node, {"x": x}, inits, 18), {"x": x}, atol=1e-5)
    assert y.shape == (2, 3, 6, 7)


def test_col2im_overlapping_blocks_add_by_hand():
    # one channel, 1-D image of 3 from blocks of 2 with stride 1: [a0 b0] at 0, [a1 b1] at 1
    x = np.array([[[1, 2], [10, 20]]], np.float32)  # rows: offset 0, offset 1; columns: l
    node = helper.make_node("Col2Im", ["x", "i", "b"], ["y"])
    inits = {"i": np.array([1, 3], np.int64), "b": np.array([1, 2], np.int64)}
    _, (y,) = imported(_model(node, {"x": x}, inits, 18), {"x": x})
    np.testing.assert_array_equal(y.reshape(-1), [1, 2 + 10, 20])


@pytest.mark.parametrize("shape, axes", [([3, 4, 5], None), ([5, 2, 7], None),
                                         ([2, 6], [-2, -1]), ([4], [0])])
def test_center_crop_pad_matches_onnx_runtime(shape, axes):
    x = rand(4, 5, 3)
    node = helper.make_node("CenterCropPad", ["x", "s"], ["y"],
                            **({"axes": axes} if axes else {}))
    _, (y,) = check(_model(node, {"x": x}, {"s": np.array(shape, np.int64)}, 18), {"x": x})
    if shape == [5, 2, 7]:  # pad 1 row at the end, crop 5 -> 2 from 1, pad 2 + 2 channels
        np.testing.assert_array_equal(y[:4, :, 2:5], x[:, 1:3, :])
        assert not y[4].any() and not y[:, :, :2].any()
