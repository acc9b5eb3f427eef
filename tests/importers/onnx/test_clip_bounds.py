"""ONNX Clip with absent, infinite and NaN bounds, against ONNX Runtime bit for bit.

ONNX Clip's absent bound is numeric_limits::lowest() / max() (the largest finite value: an
infinite input comes out as +-3.4e38, or +-65504 in float16), and ONNX Runtime ignores a NaN
bound; WebNN's clamp leaves an absent bound alone and gives NaN for a NaN bound. The import
writes those bounds as the finite ends, so the converted graph gives ONNX Runtime's numbers.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from .helpers import imported, ort_outputs, refused, single_node

INF, NAN = math.inf, math.nan
X = np.array([-2, -0.5, 0, 0.5, 2], np.float32)
_KINDS = {
    "absent": None, "-inf": -INF, "+inf": INF, "nan": NAN, "-1": -1.0, "2.5": 2.5,
}
_PAIRS = [(lo, hi) for lo in _KINDS for hi in _KINDS]


def _input(dtype) -> np.ndarray:
    big = float(np.finfo(dtype).max)
    with np.errstate(over="ignore"):
        return np.array([-INF, -big, -1.5, -0.0, 0.0, 2.5, big, INF, NAN, 1e30], dtype)


def _same_as_ort(model, feeds):
    _, (got,) = imported(model, feeds)
    (want,) = ort_outputs(model, feeds)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # NaNs in the same places, every value equal


@pytest.mark.parametrize("lo, hi", _PAIRS, ids=[f"min {a}, max {b}" for a, b in _PAIRS])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_clip_inputs_with_absent_infinite_and_nan_bounds(dtype, lo, hi):
    feeds = {"x": _input(dtype)}
    weights, names = {}, ["x"]
    for name, kind in (("lo", lo), ("hi", hi)):
        if _KINDS[kind] is None:
            names.append("")
        else:
            names.append(name)
            weights[name] = np.array(_KINDS[kind], dtype)
    _same_as_ort(single_node("Clip", names, feeds, weights, opset=13), feeds)


@pytest.mark.parametrize("attrs", [{}, {"min": 0.0}, {"max": 1.0}, {"min": -INF, "max": INF}],
                         ids=["none", "min", "max", "infinite"])
def test_clip_attributes_before_opset_11_with_default_and_infinite_bounds(attrs):
    feeds = {"x": _input(np.float32)}
    _same_as_ort(single_node("Clip", ["x"], feeds, opset=10, **attrs), feeds)


@pytest.mark.parametrize("attrs", [{"min": NAN}, {"min": 2.0, "max": 1.0}], ids=["nan", "min>max"])
def test_clip_attributes_before_opset_11_that_onnx_runtime_refuses_are_refused(attrs):
    model = single_node("Clip", ["x"], {"x": X}, opset=10, **attrs)
    with pytest.raises(Exception, match="min_ <= max_"):
        ort_outputs(model, {"x": X})
    assert "is not <= max" in refused(model, {"x": X})


def test_clip_bound_from_the_graph_with_the_other_absent_keeps_the_finite_end():
    feeds = {"x": _input(np.float32), "lo": np.array(-1, np.float32)}
    _same_as_ort(single_node("Clip", ["x", "lo", ""], feeds, opset=13), feeds)
