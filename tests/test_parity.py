"""The parity policy's arithmetic, checked on values worked out by hand."""
import warnings

import numpy as np
import pytest

from converter.verification.parity import Bounds, compare, ulp_distance


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


# Non-finite values: NaN matches only NaN in the same place, an infinity only the same
# infinity. Each case under every kind of bound the policy has (float32 and float16 defaults,
# an ULP budget, a loose atol, exact), on either side.
BOUND_KINDS = {"default": None, "ulp4": Bounds(ulp=4), "loose": Bounds(atol=1e9, rtol=1e9),
               "exact": Bounds(exact=True), "fp16rule": Bounds(atol=1e-2, rtol=1e-2)}
NONFINITE_MISMATCHES = [
    ("nan", 1.0), ("nan", 0.0), ("nan", "inf"), ("nan", "-inf"),
    ("inf", 1.0), ("-inf", -1.0), ("inf", "max"), ("-inf", "inf"),
]


def _nonfinite_cases():
    for side in ("got", "want"):
        for a, b in NONFINITE_MISMATCHES:
            for dtype in (np.float32, np.float16):
                big = float(np.finfo(dtype).max)
                fa, fb = (big if v == "max" else float(v) for v in (a, b))
                for bound in BOUND_KINDS:
                    yield pytest.param(fa, fb, side, dtype, bound,
                                       id=f"{side}-{a}-vs-{b}-{np.dtype(dtype).name}-{bound}")


@pytest.mark.parametrize("a, b, side, dtype, bound", list(_nonfinite_cases()))
def test_a_non_finite_value_on_one_side_fails(a, b, side, dtype, bound):
    odd = np.array([0.5, a, 2.0], dtype)
    plain = np.array([0.5, b, 2.0], dtype)
    got, want = (odd, plain) if side == "got" else (plain, odd)
    with np.errstate(invalid="ignore", over="ignore"):
        r = compare("y", got, want, BOUND_KINDS[bound])
    assert not r.passed, r
    assert r.mismatched == 1
    assert r.reason == "1 of 3 elements outside the bounds"


@pytest.mark.parametrize("bound", BOUND_KINDS)
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_the_same_non_finite_value_on_both_sides_matches(value, bound):
    got = f32(value, 1.0, -2.0)
    want = f32(value, 1.0, -2.0)
    r = compare("y", got, want, BOUND_KINDS[bound])
    assert r.passed and r.mismatched == 0 and r.max_abs == 0.0


def test_all_nan_output_against_numbers_fails_and_the_reverse():
    with np.errstate(invalid="ignore"):
        r = compare("y", f32(np.nan, np.nan), f32(1.0, 2.0))
        assert not r.passed and r.mismatched == 2 and r.max_abs == np.inf
        r = compare("y", f32(1.0, 2.0), f32(np.nan, np.nan))
        assert not r.passed and r.mismatched == 2 and r.max_abs == np.inf


@pytest.mark.parametrize("side", ["got", "want"])
def test_a_nan_on_one_side_shows_in_the_figures_where_it_is(side):
    """The worst difference is the NaN's: max_abs and max_rel are infinite and the worst index
    names its place, not that of the largest finite difference (0.5 here)."""
    nan_side, other = f32(1.0, 2.5, np.nan, 4.0), f32(1.0, 2.0, 3.0, 4.0)
    got, want = (nan_side, other) if side == "got" else (other, nan_side)
    r = compare("y", got, want)
    assert not r.passed and r.mismatched == 2
    assert r.max_abs == np.inf and r.max_rel == np.inf and r.worst_index == [2]
    assert r.to_json()["maxAbs"] == np.inf


def test_negative_zero_matches_zero_and_denormals_are_compared_by_value():
    assert compare("y", f32(-0.0, 0.0), f32(0.0, -0.0), Bounds(exact=True)).passed
    assert compare("y", f32(-0.0, 0.0), f32(0.0, -0.0), Bounds(ulp=0)).passed
    tiny = np.float32(1e-45)
    # float32 default: 1e-45 apart is far inside atol; one ULP apart under ulp=0 is not.
    assert compare("y", f32(tiny), f32(0.0)).passed
    assert not compare("y", f32(tiny), f32(0.0), Bounds(ulp=0)).passed
    assert compare("y", f32(tiny), f32(0.0), Bounds(ulp=1)).passed
    assert not compare("y", f32(tiny), f32(-tiny), Bounds(ulp=1)).passed


# -- the normwise rule for small outputs (issue 11) ----------------------------------------------
def test_rho_is_the_relative_norm_error_cosine_allows():
    from converter.verification.parity import RHO, cosine_rho

    # 1 - cos ~ e**2 / 2 for an orthogonal error of relative size e: e = sqrt(2 * 1e-4)
    assert RHO == pytest.approx(0.0141421356, rel=1e-8)
    assert cosine_rho(0.99) == pytest.approx(0.1414213562, rel=1e-8)
    # an orthogonal error of exactly rho gives cos = 1 / sqrt(1 + rho**2) = 0.99990001
    want, got = f32(1.0, 0.0), f32(1.0, RHO)
    r = compare("y", got, want, Bounds(atol=1.0, rtol=0.0, cosine=0.9999))
    assert r.cosine == pytest.approx(1 / np.sqrt(1 + 2e-4), rel=1e-7) and r.passed


def test_normwise_replaces_cosine_below_rms_atol_over_rho():
    from converter.verification.parity import default_bounds, uses_normwise

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


# -- the reported figures and the bounds' plumbing (issue 16: mutants that survived) ---------------
def test_bounds_are_immutable_values():
    import dataclasses

    b = Bounds(atol=1e-4, rtol=1e-3)
    assert hash(b) == hash(Bounds(atol=1e-4, rtol=1e-3))  # usable as a key
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.atol = 1.0


def test_user_overrides_replace_their_own_part_of_the_bounds():
    from converter.verification.parity import default_bounds, with_overrides

    f32_policy = default_bounds("float32")
    assert with_overrides(f32_policy) is f32_policy
    assert with_overrides(f32_policy, atol=0.5, rtol=0.5, ulp=3) == Bounds(ulp=3)
    assert with_overrides(f32_policy, atol=0.5) == Bounds(atol=0.5, rtol=1e-3, cosine=0.9999)
    assert with_overrides(f32_policy, rtol=0.5) == Bounds(atol=1e-4, rtol=0.5, cosine=0.9999)
    # an exact (integer) policy has no atol/rtol: the part not given is 0, not None
    assert with_overrides(Bounds(exact=True), atol=2.0) == Bounds(atol=2.0, rtol=0.0)
    assert with_overrides(Bounds(exact=True), rtol=0.1) == Bounds(atol=0.0, rtol=0.1)


def test_report_json_lists_only_the_bounds_that_are_set():
    assert compare("y", f32(1.0), f32(1.0)).to_json()["bounds"] == {
        "atol": 1e-4, "rtol": 1e-3, "cosine": 0.9999}
    ints = np.array([1], np.int32)
    assert compare("i", ints, ints).to_json()["bounds"] == {"exact": True}


def test_ulp_distance_refuses_mixed_or_other_types():
    with pytest.raises(ValueError):
        ulp_distance(f32(1.0), np.array([1.0], np.float16))
    with pytest.raises(ValueError):
        ulp_distance(np.array([1.0]), np.array([1.0]))


def test_the_output_type_defaults_to_the_wanted_arrays_type():
    half = np.array([1.0], np.float16)
    r = compare("y", half + np.float16(0.005), half)  # 0.005 <= 1e-2 + 1e-2: float16 policy
    assert r.data_type == "float16" and r.passed and r.bounds == Bounds(atol=1e-2, rtol=1e-2)
    assert compare("y", f32(1.0), f32(1.0)).data_type == "float32"
    import json  # the report names the type as a string (a numpy dtype would compare equal)
    assert json.loads(json.dumps(r.to_json()))["dataType"] == "float16"


def test_max_abs_max_rel_max_ulp_and_worst_index_worked_by_hand():
    # |3 - 2| = 1 and 1 / 2 = 0.5; |2.5 - 5| = 2.5 and 2.5 / 5 = 0.5; 4 vs 4: 0
    r = compare("y", f32(3.0, 4.0, 2.5), f32(2.0, 4.0, 5.0))
    assert r.max_abs == 2.5 and r.max_rel == 0.5 and r.worst_index == [2]
    r = compare("y", f32(3.0, 4.0), f32(2.0, 4.0))
    assert r.max_rel == 0.5 and r.worst_index == [0]
    one_up = np.nextafter(np.float32(1), np.float32(2))
    r = compare("y", f32(1.0, 2.0), f32(one_up, 2.0))
    assert r.max_ulp == 1 and r.worst_index == [0]
    same = compare("y", f32(1.0, 2.0), f32(1.0, 2.0))
    assert same.max_abs == 0.0 and same.max_rel == 0.0 and same.max_ulp == 0
    assert same.worst_index is None


def test_an_output_that_is_all_nan_or_all_inf_on_both_sides_has_zero_error():
    for value in (np.nan, np.inf):
        r = compare("y", f32(value, value), f32(value, value))
        assert r.passed and r.max_abs == 0.0 and r.max_rel == 0.0 and r.max_ulp == 0
        assert r.worst_index is None


def test_nans_of_either_sign_are_zero_ulp_apart():
    nan, minus_nan = np.array([0x7FC00000, 0xFFC00000], np.uint32).view(np.float32)
    r = compare("y", f32(minus_nan, 1.0), f32(nan, 1.0))
    assert r.passed and r.max_ulp == 0


def test_empty_outputs_compare_equal():
    empty = np.zeros((0, 3), np.float32)
    r = compare("y", empty, empty)
    assert r.passed and (r.max_abs, r.max_rel, r.max_ulp, r.worst_index) == (0.0, 0.0, 0, None)


def test_an_ulp_budget_on_integers_is_exact():
    ints = np.array([1, 2], np.int32)
    assert compare("i", ints, ints, Bounds(ulp=2)).passed
    r = compare("i", np.array([1, 3], np.int32), ints, Bounds(ulp=2))  # 1 apart: not exact
    assert not r.passed and r.mismatched == 1 and r.max_ulp is None


def test_cosine_and_the_norms_use_the_finite_elements_only():
    r = compare("y", f32(1.0, 2.0, np.nan), f32(1.0, 2.0, 3.0))
    assert not r.passed and r.cosine == pytest.approx(1.0, abs=1e-12)
    # a small output (normwise rule): the NaN is left out of both norms
    r = compare("y", f32(1e-5, 3e-5, np.nan), f32(1e-5, 2e-5, 3e-5))
    assert not r.passed and r.rule == "elementwise+normwise"
    assert r.norm_error == pytest.approx(1e-5, rel=1e-5)
    assert r.norm_bound == pytest.approx(1e-4 * np.sqrt(2) + 0.0141421356 * np.sqrt(5) * 1e-5,
                                         rel=1e-6)


def test_cosine_of_a_unit_vector_against_zeros_is_undefined_either_way():
    unit, zeros = f32(1.0, 0.0), f32(0.0, 0.0)
    assert compare("y", unit, zeros, Bounds(atol=2.0, rtol=0.0, cosine=0.9999)).cosine is None
    assert compare("y", zeros, unit, Bounds(atol=2.0, rtol=0.0, cosine=0.9999)).cosine is None
    assert compare("y", f32(0.5, 0.25), zeros, Bounds(atol=1.0, rtol=0.0)).cosine is None
    assert compare("y", zeros, zeros).cosine == 1.0


def test_the_bounds_are_inclusive():
    # cosine exactly at the bound: [1, 1, 1, 1] . [1, 0, 0, 0] / (2 * 1) = 0.5
    at = compare("y", f32(1.0, 1.0, 1.0, 1.0), f32(1.0, 0.0, 0.0, 0.0),
                 Bounds(atol=10.0, rtol=0.0, cosine=0.5))
    assert at.rule == "elementwise+cosine" and at.cosine == 0.5 and at.passed
    # normwise error exactly at the bound: ||[.5, .5, .5, .5]|| = 1 = 0.5 * sqrt(4) + rho * 0
    at = compare("y", f32(0.5, 0.5, 0.5, 0.5), f32(0.0, 0.0, 0.0, 0.0),
                 Bounds(atol=0.5, rtol=0.0, cosine=0.9999))
    assert at.rule == "elementwise+normwise" and at.norm_error == at.norm_bound == 1.0
    assert at.passed


def test_normwise_applies_strictly_below_the_scale_and_to_one_element():
    from converter.verification.parity import default_bounds, uses_normwise

    # cosine 0.5: rho = sqrt(2 * 0.5) = 1, so the scale is min(atol, 1e-4) / 1 = 1e-4
    half = Bounds(atol=1e-4, rtol=0.0, cosine=0.5)
    assert not uses_normwise(np.array([1e-4]), half)
    assert uses_normwise(np.array([0.99e-4]), half)
    assert uses_normwise(np.array([1e-6]), default_bounds("float32"))
    assert not uses_normwise(np.zeros(0), default_bounds("float32"))
