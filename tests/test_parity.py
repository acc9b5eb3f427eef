"""The parity policy's arithmetic, checked on values worked out by hand."""
import numpy as np
import pytest

from converter.parity import Bounds, compare, ulp_distance


def f32(*v):
    return np.array(v, dtype=np.float32)


def test_ulp_neighbours_zero_signs_and_straddling():
    one = np.float32(1.0)
    assert ulp_distance(f32(one), f32(np.nextafter(one, np.float32(2)))).tolist() == [1]
    assert ulp_distance(f32(0.0), f32(-0.0)).tolist() == [0]
    tiny = np.float32(1e-45)  # the smallest float32 subnormal, bit pattern 1
    assert ulp_distance(f32(-tiny), f32(tiny)).tolist() == [2]
    # 1.0 is 0x3F800000, 2.0 is 0x40000000: 2**23 patterns apart.
    assert ulp_distance(f32(1.0), f32(2.0)).tolist() == [2**23]


def test_ulp_float16():
    a = np.array([1.0], np.float16)
    b = np.array([1.0009765625], np.float16)  # 1 + 2**-10, the next float16 after 1
    assert ulp_distance(a, b).tolist() == [1]


def test_default_float32_bounds_pass_and_fail():
    want = f32(1.0, 100.0)
    ok = compare("y", want + f32(1e-4, 0.05), want)  # 0.05 <= 1e-4 + 1e-3 * 100 = 0.1001
    assert ok.passed and ok.max_abs == pytest.approx(0.05, rel=1e-3)
    bad = compare("y", want + f32(0.0, 0.2), want)
    assert not bad.passed and bad.worst_index == [1] and bad.mismatched == 1


def test_cosine_bound():
    want = f32(1.0, 0.0)
    got = f32(1.0, 0.02)  # |diff| 0.02 fails atol too; take a loose atol to isolate cosine
    r = compare("y", got, want, Bounds(atol=1.0, rtol=0.0, cosine=0.9999))
    # cosine = 1 / sqrt(1 + 0.02**2) = 0.99980...
    assert not r.passed and r.cosine == pytest.approx(0.9998000599, rel=1e-9)


def test_integers_are_exact():
    assert compare("i", np.array([1, 2], np.int32), np.array([1, 2], np.int32)).passed
    r = compare("i", np.array([1, 3], np.int32), np.array([1, 2], np.int32))
    assert not r.passed and r.max_abs == 1.0 and r.bounds.exact


def test_ulp_budget_replaces_float_rule():
    want = f32(1.0)
    got = f32(np.nextafter(np.nextafter(np.float32(1), np.float32(2)), np.float32(2)))
    assert compare("y", got, want, Bounds(ulp=2)).passed
    assert not compare("y", got, want, Bounds(ulp=1)).passed


def test_nans_in_the_same_place_match_and_shapes_must_agree():
    assert compare("y", f32(np.nan, 1.0), f32(np.nan, 1.0)).passed
    assert not compare("y", f32(1.0), f32(1.0, 2.0)).passed


def test_cosine_is_undefined_against_a_zero_vector_and_the_elementwise_bound_decides():
    tiny = f32(1e-9, 2e-9, 0.0)
    ok = compare("y", np.zeros(3, np.float32), tiny)  # |diff| <= 2e-9: within atol 1e-4
    assert ok.passed and ok.cosine is None
    bad = compare("y", np.zeros(3, np.float32), f32(1.0, 2.0, 0.0))
    assert not bad.passed and bad.cosine is None and bad.mismatched == 2


# -- the normwise rule for small outputs (issue 11) ----------------------------------------------
def test_rho_is_the_relative_norm_error_cosine_allows():
    from converter.parity import RHO, cosine_rho

    # 1 - cos ~ e**2 / 2 for an orthogonal error of relative size e: e = sqrt(2 * 1e-4)
    assert RHO == pytest.approx(0.0141421356, rel=1e-8)
    assert cosine_rho(0.99) == pytest.approx(0.1414213562, rel=1e-8)
    # an orthogonal error of exactly rho gives cos = 1 / sqrt(1 + rho**2) = 0.99990001
    want, got = f32(1.0, 0.0), f32(1.0, RHO)
    r = compare("y", got, want, Bounds(atol=1.0, rtol=0.0, cosine=0.9999))
    assert r.cosine == pytest.approx(1 / np.sqrt(1 + 2e-4), rel=1e-7) and r.passed


def test_normwise_replaces_cosine_below_rms_atol_over_rho():
    from converter.parity import default_bounds, uses_normwise

    bounds = default_bounds("float32")
    # atol / rho = 1e-4 / 0.0141421 = 7.0711e-3
    assert uses_normwise(np.full(100, 7.0e-3), bounds)
    assert not uses_normwise(np.full(100, 7.2e-3), bounds)
    # a loosened atol does not switch cosine off (the scale takes min(atol, 1e-4))
    assert not uses_normwise(np.full(100, 0.5), Bounds(atol=1.0, rtol=0.0, cosine=0.9999))
    # float16 and ULP bounds have no cosine, so no normwise rule either
    assert not uses_normwise(np.full(4, 1e-6), default_bounds("float16"))


def test_near_zero_output_passes_where_cosine_fails():
    want, got = f32(1e-4, 0.0), f32(1e-4, 2e-6)
    # cosine = 1 / sqrt(1 + (2e-6 / 1e-4)**2) = 0.99980: below 0.9999, though |diff| 2e-6 is
    # within atol 1e-4. RMS(want) = 7.07e-5 < 7.07e-3: the normwise rule judges instead:
    # ||d|| = 2e-6 <= 1e-4 * sqrt(2) + 0.0141421 * 1e-4 = 1.42836e-4
    r = compare("y", got, want)
    assert r.cosine == pytest.approx(0.99980006, rel=1e-7)
    assert r.passed and r.rule == "elementwise+normwise"
    assert r.norm_error == pytest.approx(2e-6, rel=1e-6)
    assert r.norm_bound == pytest.approx(1.42836e-4, rel=1e-5)
    # a large output keeps cosine
    assert compare("y", f32(1.0, 2.0), f32(1.0, 2.0)).rule == "elementwise+cosine"


def test_normwise_rule_fails_a_large_relative_error_the_elementwise_bound_let_through():
    want = np.full(100, 1e-3, np.float32)
    got = want * np.float32(1.4)  # 40% off everywhere; rtol 0.5 lets each element through
    r = compare("y", got, want, Bounds(atol=1e-4, rtol=0.5, cosine=0.9999))
    # ||d|| = 0.4 * 1e-3 * 10 = 4e-3 > 1e-4 * 10 + 0.0141421 * 1e-2 = 1.14142e-3
    assert r.mismatched == 0 and not r.passed and "normwise error" in r.reason
    assert r.norm_error == pytest.approx(4e-3, rel=1e-5)
    assert r.norm_bound == pytest.approx(1.141421e-3, rel=1e-5)
    assert r.cosine == pytest.approx(1.0)  # cosine alone would have missed it


def test_report_json_names_the_rule():
    j = compare("y", f32(1e-4, 2e-6), f32(1e-4, 0.0)).to_json()
    assert j["rule"] == "elementwise+normwise" and j["normBound"] == pytest.approx(1.42836e-4, rel=1e-5)
    assert compare("i", np.array([1], np.int32), np.array([1], np.int32)).to_json()["rule"] == "exact"
    assert compare("y", f32(1.0), f32(1.0), Bounds(ulp=1)).rule == "ulp"
