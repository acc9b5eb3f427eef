"""clamp with infinite and NaN bounds through the ONNX lowering on ONNX Runtime, at 0 ULP.

What the spec says (index.bs, clamp() and "cast"): each given bound is cast to the input's data
type (floats keep +-Infinity and NaN; integers clamp +-Infinity to the type's ends and turn NaN
into 0), `minValue > maxValue` throws (false when either is NaN), and the result is
min(max(x, minValue), maxValue) with an absent bound not clamping, so an infinite input passes
an absent or infinite bound unchanged, and a NaN bound makes every element NaN (max and min give
NaN when either side is NaN, as the float64 reference's np.maximum/np.minimum do).

ONNX Clip gets both wrong: its empty bound is the largest finite value (so +-Infinity came out
as +-3.4e38, or +-65504 in float16), and ONNX Runtime's Clip ignores a NaN bound.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from .helpers import assert_exact, run1

INF, NAN = math.inf, math.nan


def _clamp(x: np.ndarray, dtype: str, **options) -> np.ndarray:
    b = GraphBuilder()
    inp = b.input("x", dtype, list(x.shape))
    return run1(b, b.clamp(inp, **options), {"x": x.astype(dtype)})


# WPT-style cases: (name, data type, options, input, expected), the expected values written
# out by hand from the spec's steps above.
_BIG32 = 3.4028234663852886e38  # float32's largest finite value
_BIG16 = 65504.0
_CASES = [
    ("minValue -Infinity", "float32", {"minValue": -INF},
     [-INF, -_BIG32, -1.5, 0.0, 2.5, _BIG32, INF, NAN],
     [-INF, -_BIG32, -1.5, 0.0, 2.5, _BIG32, INF, NAN]),
    ("maxValue +Infinity", "float32", {"maxValue": INF},
     [-INF, -_BIG32, -1.5, 0.0, 2.5, _BIG32, INF, NAN],
     [-INF, -_BIG32, -1.5, 0.0, 2.5, _BIG32, INF, NAN]),
    ("both bounds infinite", "float32", {"minValue": -INF, "maxValue": INF},
     [-INF, -1.5, 0.0, 2.5, INF, NAN],
     [-INF, -1.5, 0.0, 2.5, INF, NAN]),
    ("minValue 0, maxValue +Infinity", "float32", {"minValue": 0, "maxValue": INF},
     [-INF, -1.5, 0.0, 2.5, INF, NAN],
     [0.0, 0.0, 0.0, 2.5, INF, NAN]),
    ("minValue -Infinity, maxValue 1", "float32", {"minValue": -INF, "maxValue": 1},
     [-INF, -1.5, 0.0, 2.5, INF, NAN],
     [-INF, -1.5, 0.0, 1.0, 1.0, NAN]),
    ("minValue +Infinity", "float32", {"minValue": INF},
     [-INF, -1.5, 2.5, INF], [INF, INF, INF, INF]),
    ("maxValue -Infinity", "float32", {"maxValue": -INF},
     [-INF, -1.5, 2.5, INF], [-INF, -INF, -INF, -INF]),
    ("minValue NaN", "float32", {"minValue": NAN},
     [-INF, -1.5, 0.0, 2.5, INF], [NAN] * 5),
    ("maxValue NaN", "float32", {"maxValue": NAN},
     [-INF, -1.5, 0.0, 2.5, INF], [NAN] * 5),
    ("minValue NaN, maxValue 1 (not greater: accepted)", "float32",
     {"minValue": NAN, "maxValue": 1}, [-1.5, 0.0, 2.5], [NAN] * 3),
    ("float16 minValue -Infinity", "float16", {"minValue": -INF},
     [-INF, -_BIG16, -1.5, 2.5, _BIG16, INF, NAN],
     [-INF, -_BIG16, -1.5, 2.5, _BIG16, INF, NAN]),
    ("float16 maxValue +Infinity", "float16", {"maxValue": INF},
     [-INF, -_BIG16, -1.5, 2.5, _BIG16, INF, NAN],
     [-INF, -_BIG16, -1.5, 2.5, _BIG16, INF, NAN]),
    ("float16 both bounds infinite", "float16", {"minValue": -INF, "maxValue": INF},
     [-INF, -1.5, 2.5, INF], [-INF, -1.5, 2.5, INF]),
    # 1e5 is beyond float16's range: the spec's cast makes it +Infinity, so nothing clamps.
    ("float16 maxValue 1e5 casts to +Infinity", "float16", {"maxValue": 1e5},
     [-INF, 2.5, _BIG16, INF], [-INF, 2.5, _BIG16, INF]),
    ("float16 minValue NaN", "float16", {"minValue": NAN}, [-INF, 2.5, INF], [NAN] * 3),
    ("float16 maxValue NaN", "float16", {"maxValue": NAN}, [-INF, 2.5, INF], [NAN] * 3),
    # Integers: +-Infinity cast to the type's ends, NaN to 0.
    ("int8 minValue -Infinity, maxValue +Infinity", "int8", {"minValue": -INF, "maxValue": INF},
     [-128, -1, 0, 127], [-128, -1, 0, 127]),
    ("int32 maxValue NaN is 0", "int32", {"maxValue": NAN},
     [-2**31, -1, 0, 5, 2**31 - 1], [-2**31, -1, 0, 0, 0]),
    ("uint8 minValue -Infinity, maxValue 200", "uint8", {"minValue": -INF, "maxValue": 200},
     [0, 7, 200, 255], [0, 7, 200, 200]),
]


@pytest.mark.parametrize("name, dtype, options, x, want", _CASES, ids=[c[0] for c in _CASES])
def test_clamp_conformance_cases_with_infinite_and_nan_bounds(name, dtype, options, x, want):
    got = _clamp(np.array(x, dtype=np.float64), dtype, **options)
    assert_exact(got, np.array(want, dtype=np.float64).astype(dtype), dtype)


# -- the sweep: every data type the lowering takes x every kind of bound ----------------------
_FLOATS = ("float32", "float16")
_INTS = ("int8", "uint8", "int32", "uint32", "int64", "uint64")
_BOUNDS = {
    "min -inf": (-INF, None), "max +inf": (None, INF), "both infinite": (-INF, INF),
    "min nan": (NAN, None), "max nan": (None, NAN), "both nan": (NAN, NAN),
    "min 0, max +inf": (0, INF), "min -inf, max 0": (-INF, 0),
    "type's ends": ("lowest", "highest"),
}


def _spec_cast(value, dtype: str):
    """The spec's cast of a bound, written out for the test (not the converter's spec_cast)."""
    if dtype in _FLOATS:
        return float(np.array(value, np.float64).astype(dtype))  # NaN and +-inf stay
    info = np.iinfo(dtype)
    if math.isnan(value):
        return 0
    return int(min(max(value, info.min), info.max))


def _spec_clamp(x: np.ndarray, dtype: str, lo, hi) -> np.ndarray:
    out = x.astype(object)
    for bound, pick in ((lo, max), (hi, min)):
        if bound is None:
            continue
        b = _spec_cast(bound, dtype)
        out = np.array([NAN if (isinstance(b, float) and math.isnan(b)) or
                        (isinstance(v, float) and math.isnan(v)) else pick(v, b) for v in out],
                       dtype=object)
    return out.astype(dtype)


def _sweep_input(dtype: str) -> np.ndarray:
    if dtype in _FLOATS:
        big = float(np.finfo(dtype).max)
        return np.array([-INF, -big, -1.5, -0.0, 0.0, 2.5, big, INF, NAN], dtype)
    info = np.iinfo(dtype)
    return np.array([info.min, info.min + 1, 0, 1, info.max - 1, info.max], dtype)


@pytest.mark.parametrize("bounds", list(_BOUNDS), ids=list(_BOUNDS))
@pytest.mark.parametrize("dtype", _FLOATS + _INTS)
def test_clamp_sweep_data_types_by_bound_kinds(dtype, bounds):
    lo, hi = _BOUNDS[bounds]
    if lo == "lowest":
        lim = np.finfo(dtype) if dtype in _FLOATS else np.iinfo(dtype)
        lo, hi = (float(lim.min), float(lim.max)) if dtype in _FLOATS else (int(lim.min),
                                                                             int(lim.max))
    options = {k: v for k, v in (("minValue", lo), ("maxValue", hi)) if v is not None}
    x = _sweep_input(dtype)
    want = _spec_clamp(x, dtype, lo, hi)
    assert_exact(_clamp(x, dtype, **options), want, dtype)
