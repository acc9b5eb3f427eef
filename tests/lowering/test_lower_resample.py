"""resample2d through the ONNX lowering: the spec's worked example, tie-breaking of nearest
neighbor, scales vs sizes, and every pair of axes, against the spec's coordinate formulas.
resample2d has no budget in tolerances.md. Nearest neighbor is exact. For linear, ONNX Runtime
computes each input coordinate and weight in float32 (scale = out / in is itself rounded, e.g.
11/5), and two lerps follow, so results drift a few ULP from the float64 reference: 16 ULP."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from . import references as ref
from .helpers import assert_exact, assert_ulp, run1

RNG = np.random.default_rng(9)
LINEAR_ULP = 16


def _resample(x, dtype="float32", **options):
    b = GraphBuilder()
    xi = b.input("x", dtype, list(x.shape))
    return run1(b, b.resample2d(xi, **options), {"x": x.astype(dtype)})


def test_linear_spec_example_4x4_to_8x8():
    x = np.array([[0, 1, 2, 3], [0, 1, 2, 3], [12, 13, 14, 15], [12, 13, 14, 15]],
                 np.float32).reshape(1, 1, 4, 4)
    got = _resample(x, mode="linear", sizes=[8, 8])
    row = [0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3]
    want = [row, row, row, [v + 3 for v in row], [v + 9 for v in row], [v + 12 for v in row],
            [v + 12 for v in row], [v + 12 for v in row]]
    assert_exact(got[0, 0], want, np.float32)


def test_nearest_upsample_and_ties_round_down():
    x = np.array([[1, 2], [3, 4]], np.float32).reshape(1, 1, 2, 2)
    got = _resample(x, sizes=[4, 4])
    assert_exact(got[0, 0], [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]], np.float32)
    # 2 -> 1: the coordinate is exactly 0.5, and ceil(0.5 - 0.5) = 0 picks the first element
    got = _resample(x, sizes=[1, 1])
    assert_exact(got, [[[[1]]]], np.float32)


def test_scales_give_floor_sizes_and_the_scale_comes_from_them():
    x = RNG.random((1, 1, 2, 5)).astype(np.float32)
    got = _resample(x, mode="linear", scales=[2.0, 1.5])  # sizes floor(4), floor(7.5) = 7
    assert got.shape == (1, 1, 4, 7)
    assert_ulp(got, ref.resample2d(x, [4, 7], [2, 3], "linear"), LINEAR_ULP)


@pytest.mark.parametrize("mode", ["nearest-neighbor", "linear"])
@pytest.mark.parametrize("axes", [[2, 3], [1, 2], [0, 1], [3, 1], [0, 3]])
def test_any_two_axes(mode, axes):
    x = RNG.random((2, 3, 4, 5)).astype(np.float32)
    sizes = [x.shape[axes[0]] * 2 + 1, max(1, x.shape[axes[1]] - 2)]
    got = _resample(x, mode=mode, sizes=sizes, axes=axes)
    want = ref.resample2d(x, sizes, axes, mode)
    assert_ulp(got, want, 0 if mode == "nearest-neighbor" else LINEAR_ULP)


def test_downsample_linear():
    x = RNG.random((1, 2, 7, 6)).astype(np.float32)
    got = _resample(x, mode="linear", sizes=[3, 4])
    assert_ulp(got, ref.resample2d(x, [3, 4], [2, 3], "linear"), LINEAR_ULP)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "float16"])
def test_nearest_on_other_types(dtype):
    x = np.array([[1, 2], [3, 4]]).reshape(1, 1, 2, 2)
    got = _resample(x, dtype, sizes=[3, 4])
    assert_exact(got, ref.resample2d(x, [3, 4], [2, 3], "nearest-neighbor"), dtype)
