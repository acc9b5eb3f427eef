"""batchNormalization, instanceNormalization and layerNormalization exported to TFLite as the
spec's formula, scale * ((x - mean) / sqrt(variance + epsilon)) + bias.

Budgets: batchNormalization 6 ULP (tolerances.md); the instance and layer forms add two
MEAN reductions of n elements each (2n). A bias of 4 keeps every result away from 0, where a
ULP would be an unfair measure of an absolute rounding of the centred value."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from .helpers import check, ops_of, rand, run_one

RNG = np.random.default_rng(16)


def _params(b, const, feeds, values=None, **shapes):
    """Parameter operands (constants or inputs fed from `feeds`); their values go to
    `values` when given."""
    out = {}
    for name, shape in shapes.items():
        low = 0.5 if name == "variance" else (3.5 if name == "bias" else -1)
        value = rand(RNG, shape, "float32", low, low + 1.5)
        if values is not None:
            values[name] = value
        if const:
            out[name] = b.constant(value)
        else:
            out[name] = b.input(name, "float32", list(shape))
            feeds[name] = value
    return out


def test_batch_normalization_hand_values():
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 2, 1, 2])
    y = b.batchNormalization(x, b.constant(np.array([1, -1], np.float32)),
                             b.constant(np.array([4, 0.25], np.float32)),
                             scale=b.constant(np.array([2, 1], np.float32)),
                             bias=b.constant(np.array([0.5, 0], np.float32)), epsilon=0.0)
    got = run_one(b, y, {"x": np.array([[[[3, 5]], [[0, 1]]]], np.float32)}, ulp=6)
    assert got.tolist() == [[[[2.5, 4.5]], [[2, 4]]]]  # 2 * (3 - 1) / 2 + 0.5 ...


@pytest.mark.parametrize("const", [True, False])
@pytest.mark.parametrize("axis", [1, 3])
def test_batch_normalization(const, axis):
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4, 5])
    feeds = {"x": rand(RNG, (2, 3, 4, 5), "float32", -2, 2)}
    c = [2, 3, 4, 5][axis]
    p = _params(b, const, feeds, mean=(c,), variance=(c,), scale=(c,), bias=(c,))
    y = b.batchNormalization(x, p["mean"], p["variance"], scale=p["scale"], bias=p["bias"],
                             axis=axis, epsilon=1e-3)
    check(b.build({"y": y}), feeds, ulp=6)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("const", [True, False])
def test_instance_normalization(layout, const):
    shape = (2, 3, 4, 5) if layout == "nchw" else (2, 4, 5, 3)
    b = GraphBuilder()
    x = b.input("x", "float32", list(shape))
    feeds = {"x": rand(RNG, shape, "float32", -2, 2)}
    values: dict = {}
    p = _params(b, const, feeds, values, scale=(3,), bias=(3,))
    y = b.instanceNormalization(x, scale=p["scale"], bias=p["bias"], layout=layout)
    graph = b.build({"y": y})
    out = check(graph, feeds, ulp=6 + 2 * 20)["y"]
    # The spec's formula in float64, each (batch, channel) plane on its own.
    axes, along = ((2, 3), (1, 3, 1, 1)) if layout == "nchw" else ((1, 2), (1, 1, 1, 3))
    x64 = feeds["x"].astype(np.float64)
    mean = x64.mean(axis=axes, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=axes, keepdims=True)
    want = values["scale"].reshape(along) * (x64 - mean) / np.sqrt(var + 1e-5) + \
        values["bias"].reshape(along)
    np.testing.assert_allclose(out, want, rtol=1e-5)
    assert ops_of(graph).count("MEAN") == 2


@pytest.mark.parametrize("axes,shape", [(None, (3, 4)), ([2, 0], (4, 2)), ([1], (3,))])
@pytest.mark.parametrize("const", [True, False])
def test_layer_normalization(axes, shape, const):
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4])
    feeds = {"x": rand(RNG, (2, 3, 4), "float32", -2, 2)}
    p = _params(b, const, feeds, scale=shape, bias=shape)
    opts = {} if axes is None else {"axes": axes}
    y = b.layerNormalization(x, scale=p["scale"], bias=p["bias"], **opts)
    n = int(np.prod(shape))
    check(b.build({"y": y}), feeds, ulp=6 + 2 * n)


def test_layer_normalization_over_no_axes_gives_the_bias():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    y = b.layerNormalization(x, axes=[], bias=b.constant(np.array(4.0, np.float32)))
    got = run_one(b, y, {"x": rand(RNG, (2, 3), "float32", -2, 2)}, ulp=0)
    assert (got == 4).all()  # each element is its own mean: (x - x) / sqrt(0 + eps) = 0


@pytest.mark.parametrize("op", ["batchNormalization", "instanceNormalization",
                                "layerNormalization"])
def test_float16(op):
    b = GraphBuilder()
    x = b.input("x", "float16", [1, 2, 3, 4])
    if op == "batchNormalization":
        y = b.batchNormalization(x, b.constant(np.zeros(2, np.float16)),
                                 b.constant(np.ones(2, np.float16)),
                                 bias=b.constant(np.full(2, 4, np.float16)))
    else:
        y = getattr(b, op)(x)
    got = run_one(b, y, {"x": rand(RNG, (1, 2, 3, 4), "float16", -2, 2)}, atol=4e-3)
    assert got.dtype == np.float16
