"""resample2d exported to TFLite's resizes (or, where RESIZE_NEAREST_NEIGHBOR would pick other
pixels than the spec, a GATHER of the spec's own indices).

Nearest-neighbor is exact. Linear interpolation computes its weights from float32 ratios on
both sides, so on values in [0, 1) it is judged by an absolute bound of 1e-6."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.exporters.tflite.resample import spec_nearest, tflite_nearest

from .helpers import check, ops_of, rand

RNG = np.random.default_rng(20)


def test_spec_and_tflite_nearest_indices_differ_only_on_whole_coordinates():
    # The spec takes ceil(c - 0.5) with c = (o + 0.5) * in / out - 0.5; TFLite takes
    # floor((o + 0.5) * in / out). Downsampling 8 -> 4: (o + 0.5) * 2 is a whole number.
    assert spec_nearest(8, 4) == [0, 2, 4, 6]
    assert tflite_nearest(8, 4) == [1, 3, 5, 7]
    assert spec_nearest(4, 8) == tflite_nearest(4, 8) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert spec_nearest(5, 3) == tflite_nearest(5, 3) == [0, 2, 4]


def test_nearest_downsampling_by_two_takes_the_spec_pixels():
    v = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 4, 4])
    graph = b.build({"y": b.resample2d(x, scales=[0.5, 0.5])})
    y = check(graph, {"x": v})["y"]
    assert y[0, 0].tolist() == [[0, 2], [8, 10]]
    assert "GATHER" in ops_of(graph) and "RESIZE_NEAREST_NEIGHBOR" not in ops_of(graph)


def test_nearest_upsampling_uses_tflites_resize_where_it_picks_the_same_pixels():
    v = np.array([[[[1, 2], [3, 4]]]], np.float32)
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 2, 2])
    graph = b.build({"y": b.resample2d(x, scales=[2.0, 2.0])})
    y = check(graph, {"x": v})["y"]
    assert y[0, 0].tolist() == [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]]
    assert "RESIZE_NEAREST_NEIGHBOR" in ops_of(graph)
    # 2 -> 3 columns: the spec's coordinates -1/6, 1/2, 7/6 pick 0, 0, 1 (halves round down);
    # TFLite's floor((o + 0.5) * 2 / 3) would pick 0, 1, 1.
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 2, 2])
    y = check(b.build({"y": b.resample2d(x, scales=[1.0, 1.5])}), {"x": v})["y"]
    assert y[0, 0].tolist() == [[1, 1, 2], [3, 3, 4]]


def test_linear_hand_values():
    # Doubling [0, 4]: half-pixel coordinates -0.25, 0.25, 0.75, 1.25 clamp to [0, 1].
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 1, 2])
    graph = b.build({"y": b.resample2d(x, mode="linear", sizes=[1, 4])})
    y = check(graph, {"x": np.array([[[[0, 4]]]], np.float32)}, atol=1e-6)["y"]
    assert y[0, 0, 0].tolist() == [0, 1, 3, 4]


@pytest.mark.parametrize("mode", ["nearest-neighbor", "linear"])
@pytest.mark.parametrize("shape,opts", [
    ((1, 2, 4, 5), dict(scales=[2.0, 2.0])), ((1, 2, 8, 6), dict(scales=[0.5, 0.5])),
    ((1, 2, 4, 5), dict(sizes=[7, 3])), ((1, 2, 4, 5), dict(sizes=[6, 11])),
    ((1, 4, 5, 2), dict(sizes=[7, 3], axes=[1, 2])), ((3, 4, 5, 2), dict(sizes=[7, 3],
                                                                          axes=[0, 1])),
    ((1, 2, 5, 5), dict(scales=[1.5, 0.75])),
])
@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_resample_options(mode, shape, opts, dt):
    b = GraphBuilder()
    x = b.input("x", dt, list(shape))
    graph = b.build({"y": b.resample2d(x, mode=mode, **opts)})
    bounds = dict(atol=1e-6 if dt == "float32" else 1e-3) if mode == "linear" else {}
    y = check(graph, {"x": rand(RNG, shape, dt, 0, 1)}, **bounds)["y"]
    assert y.dtype == np.dtype(dt)
    # axes [1, 2] are TFLite's own: nothing to transpose
    assert ("TRANSPOSE" in ops_of(graph)) == (opts.get("axes") != [1, 2])
