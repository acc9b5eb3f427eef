"""Comparing two runs' outputs under the parity policy (shared/reference/tolerances.md).

Each output gets max absolute error, max relative error, max ULP distance, cosine similarity and
the index of the worst element, and passes or fails by the bounds it states:
  * float32: |got - want| <= atol + rtol * |want| everywhere (atol 1e-4, rtol 1e-3) and
    cosine >= 0.9999 -- or, for an output too small for cosine to mean anything (see
    `uses_normwise`), the normwise rule ||got - want||2 <= atol * sqrt(N) + RHO * ||want||2;
  * float16 (or a float32 model computed in float16): atol = rtol = 1e-2;
  * integers: exact;
  * an explicit ULP budget (`ulp=`) replaces the float rule: max ULP distance <= budget.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

__all__ = ["Bounds", "OutputParity", "compare", "ulp_distance", "default_bounds", "with_overrides",
           "RHO", "cosine_rho", "uses_normwise", "judge", "NOISE_FACTOR"]


def cosine_rho(cosine: float) -> float:
    """The relative norm error a cosine bound allows: for got = want + d with d orthogonal to
    want (the worst case), cos = 1 / sqrt(1 + e**2) with e = ||d|| / ||want||, so
    1 - cos ~ e**2 / 2 and e = sqrt(2 * (1 - cos)). Cosine 0.9999 allows e = 0.014142."""
    return float(np.sqrt(2.0 * (1.0 - cosine)))


RHO = cosine_rho(0.9999)


@dataclass(frozen=True)
class Bounds:
    atol: float | None = None
    rtol: float | None = None
    cosine: float | None = None
    ulp: int | None = None
    exact: bool = False


def with_overrides(bounds: Bounds, atol: float | None = None, rtol: float | None = None,
                   ulp: int | None = None) -> Bounds:
    """`bounds` with the user's `--atol`/`--rtol` (each replaces its own part) and `--ulp` (an
    ULP budget replaces the float rule)."""
    if ulp is not None:
        return Bounds(ulp=ulp)
    if atol is None and rtol is None:
        return bounds
    return Bounds(atol=atol if atol is not None else bounds.atol or 0.0,
                  rtol=rtol if rtol is not None else bounds.rtol or 0.0, cosine=bounds.cosine)


def default_bounds(data_type: str) -> Bounds:
    if data_type == "float32":
        return Bounds(atol=_POLICY_ATOL, rtol=1e-3, cosine=0.9999)
    if data_type == "float16":
        return Bounds(atol=1e-2, rtol=1e-2)
    return Bounds(exact=True)


@dataclass
class OutputParity:
    name: str
    passed: bool
    shape: list[int]
    data_type: str
    max_abs: float
    max_rel: float
    max_ulp: int | None
    cosine: float | None
    worst_index: list[int] | None
    mismatched: int
    bounds: Bounds
    reason: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # Which rule judged the values: "exact", "ulp", "elementwise+cosine" or
    # "elementwise+normwise" (cosine replaced for a small output; see uses_normwise).
    rule: str = ""
    norm_error: float | None = None  # ||got - want||2, when the normwise rule applied
    norm_bound: float | None = None  # atol * sqrt(N) + RHO * ||want||2

    def to_json(self) -> dict:
        return {
            "name": self.name, "passed": self.passed, "shape": self.shape,
            "dataType": self.data_type, "maxAbs": self.max_abs, "maxRel": self.max_rel,
            "maxUlp": self.max_ulp, "cosine": self.cosine, "worstIndex": self.worst_index,
            "mismatched": self.mismatched, "reason": self.reason,
            # ulp 0 is a bound (0 == False: compared by identity, not equality)
            "bounds": {k: v for k, v in asdict(self.bounds).items()
                       if v is not None and v is not False},
            "rule": self.rule, "normError": self.norm_error, "normBound": self.norm_bound,
            **self.extra,
        }


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ULP distance of two float arrays: the difference of their bit patterns read as
    sign-magnitude integers (so +0 and -0 are 0 apart, and values straddling zero add up)."""
    if a.dtype != b.dtype or a.dtype not in (np.float32, np.float16):
        raise ValueError("ulp_distance takes two float32 or two float16 arrays")
    bits, sign = (np.int64, 0x8000_0000) if a.dtype == np.float32 else (np.int64, 0x8000)
    view = np.uint32 if a.dtype == np.float32 else np.uint16

    def ordinal(x):
        raw = x.view(view).astype(bits)
        magnitude = raw & (sign - 1)
        return np.where(raw & sign, -magnitude, magnitude)

    return np.abs(ordinal(a) - ordinal(b))


def compare(name: str, got: np.ndarray, want: np.ndarray, bounds: Bounds | None = None,
            data_type: str | None = None) -> OutputParity:
    """Compare one output; `data_type` is the WebNN type of the output (default: want's)."""
    got, want = np.asarray(got), np.asarray(want)
    if data_type is None:
        data_type = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16"}.get(
            want.dtype, str(want.dtype))
    bounds = bounds or default_bounds(data_type)
    if got.shape != want.shape:
        return OutputParity(name, False, list(want.shape), data_type, float("inf"), float("inf"),
                            None, None, None, int(want.size), bounds,
                            reason=f"shape {list(got.shape)} differs from {list(want.shape)}")
    g64, w64 = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf is NaN: the non-finite rule below decides
        diff = np.abs(g64 - w64)
    both_nan = np.isnan(g64) & np.isnan(w64)
    diff = np.where(both_nan, 0.0, diff)
    same_inf = np.isinf(g64) & (g64 == w64)
    diff = np.where(same_inf, 0.0, diff)
    # What is NaN now is a NaN on one side only: as far from the other as an infinity, so
    # max_abs, max_rel and the worst index show it rather than skip it.
    diff = np.where(np.isnan(diff), np.inf, diff)
    # inf / inf: an infinite difference is infinitely far; a difference over `tiny` (want 0)
    # may overflow to inf, which says the same
    with np.errstate(invalid="ignore", over="ignore"):
        rel = np.where(np.isinf(diff), np.inf,
                       diff / np.fmax(np.abs(w64), np.finfo(np.float64).tiny))  # fmax: NaN as 0
    # (No NaN is left in either: a one-sided NaN is inf, and |want| is at least `tiny`.)
    max_abs = float(diff.max()) if diff.size else 0.0
    max_rel = float(rel.max()) if diff.size else 0.0
    worst = [int(i) for i in np.unravel_index(int(diff.argmax()), diff.shape)] \
        if diff.size and max_abs > 0 else None
    max_ulp = None
    if got.dtype == want.dtype and got.dtype in (np.float32, np.float16):
        u = ulp_distance(got, want)
        u = np.where(both_nan, 0, u)
        max_ulp = int(u.max()) if u.size else 0
    cosine = _cosine(g64, w64) if want.dtype.kind == "f" else None
    if bounds.exact:
        bad, rule = diff != 0, "exact"
    elif bounds.ulp is not None:
        # (NaN against NaN is cleared below with every other rule's)
        bad = ulp_distance(got, want) > bounds.ulp if max_ulp is not None else diff != 0
        rule = "ulp"
    else:
        bad, rule = ~(diff <= bounds.atol + bounds.rtol * np.abs(w64)), "elementwise"
    # A NaN or an infinity matches only the same value in the same place: no bound may pass a
    # non-finite value against another (atol + rtol*inf is inf; inf is one ULP from max).
    odd = ~(np.isfinite(g64) & np.isfinite(w64))
    bad = (bad | odd) & ~both_nan & ~same_inf
    mismatched = int(np.count_nonzero(bad))
    passed = mismatched == 0
    reason = "" if passed else f"{mismatched} of {want.size} elements outside the bounds"
    norm_error = norm_bound = None
    if bounds.cosine is not None and want.dtype.kind == "f":
        finite = np.isfinite(g64) & np.isfinite(w64)
        if uses_normwise(w64[finite], bounds):
            rule += "+normwise"
            rho = cosine_rho(bounds.cosine)
            norm_error = float(np.linalg.norm((g64 - w64)[finite]))
            norm_bound = float(bounds.atol * np.sqrt(np.count_nonzero(finite))
                               + rho * np.linalg.norm(w64[finite]))
            if passed and not norm_error <= norm_bound:
                passed, reason = False, (f"normwise error {norm_error:.3g} above "
                                         f"{norm_bound:.3g} (atol*sqrt(N) + {rho:.5f}*||want||)")
        else:
            rule += "+cosine"
            if passed and cosine is not None and cosine < bounds.cosine:
                passed, reason = False, f"cosine {cosine:.6f} below {bounds.cosine}"
    return OutputParity(name, passed, list(want.shape), data_type, max_abs, max_rel, max_ulp,
                        cosine, worst, mismatched, bounds, reason, rule=rule,
                        norm_error=norm_error, norm_bound=norm_bound)


def uses_normwise(want: np.ndarray, bounds: Bounds) -> bool:
    """Whether an output is too small for cosine to mean anything, so the normwise rule
    ||got - want||2 <= atol * sqrt(N) + rho * ||want||2 judges it instead.

    Cosine bounds the relative norm error by rho (cosine_rho). An error of atol on every
    element, which the elementwise rule accepts, has norm atol * sqrt(N); cosine would refuse it
    whenever that exceeds rho * ||want||, i.e. when the output's root mean square is below
    atol / rho (7.07e-3 for the policy's atol 1e-4 and cosine 0.9999). Below that scale the
    two rules contradict each other and the absolute tolerance is the one that states the
    policy; above it cosine is kept. The scale uses the smaller of the given atol and the
    float32 policy's 1e-4, so loosening atol never switches cosine off. Like cosine, the
    normwise rule is checked on top of the elementwise rule, never instead of it.
    """
    if bounds.cosine is None or bounds.atol is None or want.size == 0:
        return False
    rms = float(np.sqrt(np.mean(np.square(want, dtype=np.float64))))
    return rms < min(bounds.atol, _POLICY_ATOL) / cosine_rho(bounds.cosine)


_POLICY_ATOL = 1e-4


def _cosine(a: np.ndarray, b: np.ndarray) -> float | None:
    a, b = a.reshape(-1), b.reshape(-1)
    finite = np.isfinite(a) & np.isfinite(b)
    a, b = a[finite], b[finite]
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 and nb == 0:
        return 1.0
    if na == 0 or nb == 0:
        # Undefined: a zero vector has no direction. Whether the values agree is then the
        # element-wise bound's call alone (an all-zero output next to values ~1e-9 passes it;
        # next to real values it fails it).
        return None
    return float(np.dot(a, b) / (na * nb))


# How much further from the float64 truth our graph may be than the source runtime is: we never
# need to be closer to the source than the source is to the truth; 2x leaves room for a second,
# independent float32 evaluation order.
NOISE_FACTOR = 2.0


def _infinity_apart(got, want) -> bool:
    """An infinity against a number or the other infinity: judged as it is, the float64
    analysis has nothing to add (a NaN on one side goes through it, and is never noise)."""
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return bool(np.any((np.isinf(g) | np.isinf(w)) & (g != w) & ~np.isnan(g) & ~np.isnan(w)))


def _stray_nonfinite(got: np.ndarray, truth: np.ndarray) -> int:
    """How many elements are NaN or infinite in one array and not the same in the other."""
    g, t = np.asarray(got, np.float64), np.asarray(truth, np.float64)
    if g.shape != t.shape:
        return 0
    odd = (np.isnan(g) != np.isnan(t)) | ((np.isinf(g) | np.isinf(t)) & (g != t))
    return int(np.count_nonzero(odd))


def judge(name: str, got: np.ndarray, want: np.ndarray, oracle: np.ndarray | None,
          bounds: Bounds | None = None, data_type: str | None = None, *,
          source_f64: np.ndarray | None = None,
          alternates: dict[str, np.ndarray] | None = None) -> OutputParity:
    """The verdict on one output: `got` (our graph), `want` (the source runtime), `oracle` (the
    graph evaluated in float64), `source_f64` (the source model run in float64, if its runtime
    could), `alternates` (the source runtime run other ways: other kernels, other optimisation
    levels, a 1-ULP change of the input; their spread is the source's own noise).

    Pass when webnn vs source is within the budget (the plain rule). Otherwise two things
    must hold, each by the budget or by the noise rule:
      * the executor: webnn vs f64 within the budget, or within NOISE_FACTOR x source vs f64,
        or, for a quantized output (integers within a step), within NOISE_FACTOR x the
        source's own spread;
      * the conversion (the f64 value is what the source computes): source-in-f64 vs f64
        within the budget when the source ran in float64; else source vs f64 within the
        budget, or within NOISE_FACTOR x the source's own spread (max over alternates).
    The returned OutputParity keeps webnn vs source figures in its usual fields and adds the
    float64 figures and the deciding rule in `extra`.
    """
    direct = compare(name, got, want, bounds, data_type)
    want = np.asarray(want)
    # A quantized output (integers judged within a step, not exactly) carries the rounding of
    # every requantization before it: the same noise rules apply, in steps.
    quantized = want.dtype.kind in "iu" and not direct.bounds.exact
    if oracle is None or (want.dtype.kind != "f" and not quantized) \
            or np.shape(got) != want.shape or _infinity_apart(got, want):
        direct.extra["decidedBy"] = "webnn vs source" + (
            "" if oracle is not None or want.dtype.kind != "f" else " (no float64 oracle)")
        return direct
    truth = np.asarray(oracle).astype(want.dtype)  # the f64 value as the output type holds it
    ours = compare(name, got, truth, direct.bounds, direct.data_type)
    theirs = compare(name, want, truth, direct.bounds, direct.data_type)
    extra = direct.extra
    extra.update(sourceVsF64=theirs.max_abs, webnnVsF64=ours.max_abs)
    spread, spread_from = 0.0, None
    for label, other in (alternates or {}).items():
        d = compare(name, other, want, direct.bounds, direct.data_type).max_abs
        if d >= spread:
            spread, spread_from = d, label
    if spread_from is not None:
        extra.update(sourceNoise=spread, sourceNoiseFrom=spread_from)
    if direct.passed:
        extra["decidedBy"] = "webnn vs source within the budget"
        return direct
    # the conversion: is the graph's f64 value what the source computes?
    if source_f64 is not None:
        src64 = compare(name, np.asarray(source_f64, np.float64), np.asarray(oracle, np.float64),
                        direct.bounds, direct.data_type)
        extra["sourceF64VsF64"] = src64.max_abs
        conversion_ok = src64.passed
        conversion = ("source run in float64 agrees with the f64 oracle" if conversion_ok else
                      f"the source run in float64 differs from the graph's float64 value by "
                      f"{src64.max_abs:.3g} ({src64.reason})")
    elif theirs.passed:
        conversion_ok, conversion = True, "source vs f64 within the budget"
    elif spread_from is not None and not _stray_nonfinite(want, truth) \
            and theirs.max_abs <= NOISE_FACTOR * spread:
        conversion_ok = True
        conversion = (f"source vs f64 within {NOISE_FACTOR:g}x the source's own spread "
                      f"({spread_from} {spread:.3g})")
    else:
        conversion_ok = False
        conversion = (f"the graph computes something other than the source: source vs f64 "
                      f"{theirs.max_abs:.3g} is beyond the budget ({theirs.reason})"
                      + (f" and {NOISE_FACTOR:g}x the source's own spread ({spread_from} "
                         f"{spread:.3g})" if spread_from is not None else ""))
    # the executor: is our float32 run as close to the f64 value as the source's run is?
    # (A NaN or infinity where the truth has none is never noise, whatever the figures say.)
    stray = _stray_nonfinite(got, truth)
    if ours.passed:
        executor_ok, executor = True, "webnn vs f64 within the budget"
    elif stray:
        executor_ok = False
        executor = f"webnn has {stray} NaN or infinite values where the f64 value has none"
    elif ours.max_abs <= NOISE_FACTOR * theirs.max_abs:
        executor_ok = True
        executor = f"webnn vs f64 within {NOISE_FACTOR:g}x source vs f64"
    elif quantized and spread_from is not None and ours.max_abs <= NOISE_FACTOR * spread:
        # Integer kernels can match the float64 value exactly (source vs f64 0) while the
        # graph's float32 dequantize-op-quantize form flips roundings at near-ties; the
        # source's own kernel sets differ by steps too, and we need not agree more closely.
        executor_ok = True
        executor = (f"webnn vs f64 within {NOISE_FACTOR:g}x the source's own spread "
                    f"({spread_from} {spread:.3g})")
    else:
        executor_ok = False
        executor = (f"webnn vs f64 {ours.max_abs:.3g} is beyond the budget ({ours.reason}) and "
                    f"{NOISE_FACTOR:g}x source vs f64 {theirs.max_abs:.3g}")
    direct.passed = conversion_ok and executor_ok
    extra["decidedBy"] = f"{executor}; {conversion}"
    failed = [r for ok, r in ((executor_ok, executor), (conversion_ok, conversion)) if not ok]
    direct.reason = "; ".join(failed)
    return direct
