"""batchNormalization, instanceNormalization and layerNormalization through the ONNX lowering,
against the spec's formula  scale * (x - mean) / sqrt(variance + epsilon) + bias  in float64.

Normalized values sit near zero, where ULP counts say little, so these compare with an
absolute-plus-relative bound (tolerances.md allows ATOL for such results): 1e-6 + 1e-5 * |want|.
"""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from .helpers import assert_exact, run1

RNG = np.random.default_rng(5)


def _close(got, want):
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _norm(x, mean, var, eps, scale=None, bias=None):
    y = (x - mean) / np.sqrt(var + eps)
    if scale is not None:
        y = scale * y
    if bias is not None:
        y = y + bias
    return y


def test_batch_normalization_hand_values():
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 2, 2])
    y = b.batchNormalization(x, b.constant(np.array([1, 2], np.float32)),
                             b.constant(np.array([4, 0.25], np.float32)),
                             scale=b.constant(np.array([2, 1], np.float32)),
                             bias=b.constant(np.array([0, 10], np.float32)), epsilon=0.0)
    got = run1(b, y, {"x": np.array([[[3, 5], [2, 3]]], np.float32)})
    # channel 0: 2 * (x - 1) / 2 ; channel 1: (x - 2) / 0.5 + 10
    assert_exact(got, [[[2, 4], [10, 12]]], np.float32)


@pytest.mark.parametrize("axis", [0, 1, 2, 3])
@pytest.mark.parametrize("with_scale_bias", [True, False])
def test_batch_normalization_on_any_axis(axis, with_scale_bias):
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    c = x.shape[axis]
    mean, var = RNG.standard_normal(c).astype(np.float32), RNG.random(c).astype(np.float32)
    scale = RNG.standard_normal(c).astype(np.float32)
    bias = RNG.standard_normal(c).astype(np.float32)
    b = GraphBuilder()
    xi = b.input("x", "float32", list(x.shape))
    extra = dict(scale=b.constant(scale), bias=b.constant(bias)) if with_scale_bias else {}
    y = b.batchNormalization(xi, b.constant(mean), b.constant(var), axis=axis, epsilon=1e-3,
                             **extra)
    got = run1(b, y, {"x": x})
    shape = [1] * 4
    shape[axis] = c
    r = lambda v: v.astype(np.float64).reshape(shape)  # noqa: E731
    want = _norm(x.astype(np.float64), r(mean), r(var), 1e-3,
                 r(scale) if with_scale_bias else None, r(bias) if with_scale_bias else None)
    _close(got, want)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_instance_normalization(layout):
    x = RNG.standard_normal((2, 3, 4, 5))
    scale, bias = RNG.standard_normal(3), RNG.standard_normal(3)
    mean = x.mean(axis=(2, 3), keepdims=True)
    var = ((x - mean) ** 2).mean(axis=(2, 3), keepdims=True)
    want = _norm(x, mean, var, 1e-5, scale.reshape(1, 3, 1, 1), bias.reshape(1, 3, 1, 1))
    feed = x if layout == "nchw" else x.transpose(0, 2, 3, 1)
    b = GraphBuilder()
    xi = b.input("x", "float32", list(feed.shape))
    y = b.instanceNormalization(xi, scale=b.constant(scale.astype(np.float32)),
                                bias=b.constant(bias.astype(np.float32)), layout=layout)
    got = run1(b, y, {"x": feed.astype(np.float32)})
    _close(got if layout == "nchw" else got.transpose(0, 3, 1, 2), want)


def test_instance_normalization_without_scale_and_bias():
    x = np.array([[[[1, 3], [5, 7]]]], np.float32)  # mean 4, variance 5
    b = GraphBuilder()
    xi = b.input("x", "float32", [1, 1, 2, 2])
    got = run1(b, b.instanceNormalization(xi, epsilon=0.0), {"x": x})
    _close(got, (x.astype(np.float64) - 4) / np.sqrt(5))


@pytest.mark.parametrize("axes", [None, [2], [1, 2], [2, 1], [0, 2]])
def test_layer_normalization_axes(axes):
    x = RNG.standard_normal((2, 3, 4))
    real_axes = [1, 2] if axes is None else axes
    scale = RNG.standard_normal([x.shape[a] for a in real_axes])
    bias = RNG.standard_normal([x.shape[a] for a in real_axes])
    mean = x.mean(axis=tuple(real_axes), keepdims=True)
    var = ((x - mean) ** 2).mean(axis=tuple(real_axes), keepdims=True)
    # scale/bias dims follow `axes` order; put them in increasing axis order to broadcast
    order = np.argsort(real_axes)
    shape = [x.shape[a] if a in real_axes else 1 for a in range(3)]
    s = scale.transpose(order).reshape(shape)
    bb = bias.transpose(order).reshape(shape)
    want = _norm(x, mean, var, 1e-5, s, bb)
    b = GraphBuilder()
    xi = b.input("x", "float32", [2, 3, 4])
    opts = {} if axes is None else {"axes": axes}
    y = b.layerNormalization(xi, scale=b.constant(scale.astype(np.float32)),
                             bias=b.constant(bias.astype(np.float32)), **opts)
    _close(run1(b, y, {"x": x.astype(np.float32)}), want)


def test_layer_normalization_hand_values_and_empty_axes():
    b = GraphBuilder()
    xi = b.input("x", "float32", [2, 2])
    y = b.layerNormalization(xi, epsilon=0.0)  # axes [1]: each row normalized
    z = b.layerNormalization(xi, axes=[], bias=b.constant(np.array(3, np.float32)))
    from .helpers import execute

    got = execute(b, {"y": y, "z": z}, {"x": np.array([[1, 3], [10, 10.5]], np.float32)})
    assert_exact(got["y"], [[-1, 1], [-1, 1]], np.float32)
    # nothing reduced: every element is its own mean, so the result is the bias
    assert_exact(got["z"], [[3, 3], [3, 3]], np.float32)


def test_float16_layer_normalization():
    x = RNG.standard_normal((2, 8))
    b = GraphBuilder()
    xi = b.input("x", "float16", [2, 8])
    got = run1(b, b.layerNormalization(xi), {"x": x.astype(np.float16)})
    x16 = x.astype(np.float16).astype(np.float64)
    mean = x16.mean(1, keepdims=True)
    want = (x16 - mean) / np.sqrt(((x16 - mean) ** 2).mean(1, keepdims=True) + 1e-5)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


def test_batch_normalization_rank_2_on_axis_0_broadcasts_down_the_rows():
    # axis 0 of a [2, 3] input: mean/variance/scale/bias are per row, reshaped to [2, 1]
    b = GraphBuilder()
    xi = b.input("x", "float32", [2, 3])
    c = lambda v: b.constant(np.array(v, np.float32))  # noqa: E731
    y = b.batchNormalization(xi, c([1, 10]), c([4, 16]), axis=0, epsilon=0.0,
                             scale=c([2, 3]), bias=c([1, -1]))
    got = run1(b, y, {"x": np.array([[1, 3, 5], [10, 14, 2]], np.float32)})
    # row 0: 2 * (x - 1) / 2 + 1; row 1: 3 * (x - 10) / 4 - 1
    assert_exact(got, [[1, 3, 5], [-1, 2, -7]], np.float32)


def test_batch_normalization_on_axis_1_is_one_onnx_batch_normalization_from_rank_2():
    # ONNX Runtime folds BatchNormalization into a preceding Conv; written out it is not, so
    # axis 1 lowers to the ONNX op for every rank from 2 (and its numbers are ONNX's).
    from converter.lowering.onnx import to_onnx
    b = GraphBuilder()
    xi = b.input("x", "float32", [2, 3])
    c = b.constant(np.ones(3, np.float32))
    model = to_onnx(b.build({"y": b.batchNormalization(xi, c, c, axis=1)}))
    assert [n.op_type for n in model.graph.node] == ["BatchNormalization"]


def test_layer_normalization_of_nothing_with_epsilon_0_is_0_over_0():
    # axes []: each element is its own mean with variance 0, so the spec's formula divides
    # 0 by sqrt(0 + 0)
    b = GraphBuilder()
    xi = b.input("x", "float32", [3])
    got = run1(b, b.layerNormalization(xi, axes=[], epsilon=0.0), {"x": np.ones(3, np.float32)})
    assert np.isnan(got).all()
