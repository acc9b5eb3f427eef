"""converter.verification.parity.compare on random arrays full of the values that break
comparisons: NaN, +-Inf, -0.0, subnormals, the largest finite values, on either side.

The oracle is the policy itself (shared/reference/tolerances.md), written out element by
element in plain Python floats: NaN matches only NaN; an infinity only the same infinity;
finite values by the bound's rule (exact: equal, -0.0 == 0.0; an ULP budget: ULP distance of
the sign-magnitude bit patterns; else |got - want| <= atol + rtol * |want|).
"""
from __future__ import annotations

import math
import struct

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from converter.verification.parity import Bounds, compare

def specials(dtype) -> list[float]:
    info = np.finfo(dtype)
    return [math.nan, math.inf, -math.inf, 0.0, -0.0, float(info.smallest_subnormal),
            -float(info.smallest_subnormal), float(info.tiny), float(info.max), -float(info.max),
            1.0, -1.0]


def values(dtype):
    info = np.finfo(dtype)
    finite = st.floats(-float(info.max), float(info.max), width=np.dtype(dtype).itemsize * 8)
    return st.one_of(st.sampled_from(specials(dtype)), finite)


def ordinal(x: float, dtype) -> int:
    if dtype == np.float32:
        raw = struct.unpack("<I", struct.pack("<f", x))[0]
        sign, magnitude = raw >> 31, raw & 0x7FFF_FFFF
    else:
        raw = struct.unpack("<H", struct.pack("<e", x))[0]
        sign, magnitude = raw >> 15, raw & 0x7FFF
    return -magnitude if sign else magnitude


def element_ok(g: float, w: float, bounds: Bounds, dtype) -> bool:
    if math.isnan(g) or math.isnan(w):
        return math.isnan(g) and math.isnan(w)
    if math.isinf(g) or math.isinf(w):
        return g == w
    if bounds.exact:
        return g == w
    if bounds.ulp is not None:
        return abs(ordinal(g, dtype) - ordinal(w, dtype)) <= bounds.ulp
    return abs(g - w) <= bounds.atol + bounds.rtol * abs(w)


BOUNDS = st.sampled_from([Bounds(exact=True), Bounds(ulp=0), Bounds(ulp=3),
                          Bounds(atol=1e-4, rtol=1e-3), Bounds(atol=1e-2, rtol=1e-2),
                          Bounds(atol=0.0, rtol=0.0)])


@st.composite
def pairs(draw):
    dtype = draw(st.sampled_from([np.float32, np.float16]))
    n = draw(st.integers(1, 6))
    want = [draw(values(dtype)) for _ in range(n)]
    # got: often the same value, a neighbour, or its sign flipped; else anything
    got = []
    for w in want:
        kind = draw(st.sampled_from(["same", "neighbour", "negated", "any"]))
        if kind == "same":
            got.append(w)
        elif kind == "neighbour" and math.isfinite(w):
            step = np.float32 if dtype == np.float32 else np.float16
            with np.errstate(over="ignore"):
                got.append(float(np.nextafter(step(w), step(draw(st.sampled_from([-1, 1]))
                                                         * math.inf))))
        elif kind == "negated":
            got.append(-w)
        else:
            got.append(draw(values(dtype)))
    if draw(st.booleans()):
        got, want = want, got
    return dtype, np.array(got, dtype), np.array(want, dtype)


@given(pairs(), BOUNDS)
def test_compare_follows_the_policy_element_by_element(case, bounds):
    dtype, got, want = case
    gl, wl = [float(v) for v in got], [float(v) for v in want]
    expected_bad = [not element_ok(g, w, bounds, dtype) for g, w in zip(gl, wl)]
    with np.errstate(all="ignore"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            r = compare("y", got, want, bounds)
    assert r.mismatched == sum(expected_bad), (gl, wl, bounds, r)
    assert r.passed == (not any(expected_bad))


@given(pairs())
def test_compare_is_symmetric_in_what_matches_for_exact_and_ulp(case):
    # NaN/Inf/-0.0 handling must not depend on which side a value is on.
    dtype, got, want = case
    for bounds in (Bounds(exact=True), Bounds(ulp=2)):
        with np.errstate(all="ignore"):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                a = compare("y", got, want, bounds)
                b = compare("y", want, got, bounds)
        assert (a.passed, a.mismatched) == (b.passed, b.mismatched)
