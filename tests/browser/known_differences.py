"""Where Chromium's WebNN (153, LiteRT/XNNPACK) and our ONNX executor differ on the generated
op cases, what exactly differs, and which side the spec (webmachinelearning/webnn index.bs)
supports.

Each entry's `check` asserts the difference as documented, so an entry fails once either side
changes: a fixed browser or executor shows up as a test to update, not as silence.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from converter.errors import ConverterError
from converter.verification.parity import ulp_distance

from .op_cases import Case

ONNX_EXECUTOR = "our ONNX executor"
CHROMIUM = "Chromium"


@dataclass(frozen=True)
class Difference:
    what: str
    spec: str
    supports: str  # which side the spec supports
    check: Callable[[Case, object, dict], None]  # (case, chromium's result, ours)


def _l2_pool_scales_edge_windows(case: Case, got, want) -> None:
    """Chromium returns sqrt(9 / n) x the L2 norm at windows with n < 9 elements in bounds (it
    averages the squares over the in-bounds elements, then scales by the full window): the
    case pools 5 x 5 with a 3 x 3 window, stride 2, padding 1, so n per axis is 2, 3, 2."""
    per_axis = np.array([2, 3, 2])
    count = per_axis[:, None] * per_axis[None, :]
    nhwc = case.data_type == "float16"
    ratio = np.sqrt(9 / count)[None, :, :, None] if nhwc else np.sqrt(9 / count)[None, None]
    g, w = got["y"].astype(np.float64), want["y"].astype(np.float64)
    np.testing.assert_allclose(g, w * ratio, rtol=2e-3 if nhwc else 1e-5)
    inner = (slice(None), 1, 1, slice(None)) if nhwc else (slice(None), slice(None), 1, 1)
    # The one window fully inside the input agrees, within l2Pool2d's budget (2n + 1 ULP).
    assert ulp_distance(got["y"][inner], want["y"][inner]).max() <= 19


def _quantize_rounds_half_away(case: Case, got, want) -> None:
    """Chromium rounds x / scale = k + 0.5 away from zero (0.25 / 0.5 -> 1, 2.5 / 1 -> 3); the
    spec's roundEven gives 0 and 2. Everything else agrees."""
    x = case.feeds["x"].astype(np.float64)
    scaled = x / np.array([[0.5, 0.25, 1.0, 2.0]])
    zero = np.array([[0, 3, 10, 1]])
    lo, hi = np.iinfo(case.data_type).min, np.iinfo(case.data_type).max  # saturation
    away = np.clip(np.sign(scaled) * np.floor(np.abs(scaled) + 0.5) + zero, lo, hi)
    even = np.clip(np.round(scaled) + zero, lo, hi)  # numpy rounds half to even
    assert (got["y"] == away).all() and (want["y"] == even).all()
    assert (away != even).sum() == 2  # the case's two ties with an even floor: 0.5 and 2.5


def _exact_unary(reference: Callable[[np.ndarray], np.ndarray], budget: int, within: str):
    """`within` side is within `budget` ULP of the spec's formula evaluated in float64, the
    other side is not."""

    def check(case: Case, got, want) -> None:
        exact = reference(case.feeds["x"].astype(np.float64)).astype(np.float32)
        ours = int(ulp_distance(want["y"], exact).max())
        theirs = int(ulp_distance(got["y"], exact).max())
        good, bad = (ours, theirs) if within == ONNX_EXECUTOR else (theirs, ours)
        assert good <= budget < bad, f"ours {ours} ULP, Chromium's {theirs} ULP, budget {budget}"

    return check


def _hard_sigmoid_params_in_float32(case: Case, got, want) -> None:
    """Chromium keeps alpha 0.3 and beta 0.4 in float32 on a float16 input; the spec casts them
    to float16 first (0.2998, 0.4): our executor is within the 2-ULP budget of that, Chromium
    of the float32 form, and the two forms differ by 3 ULP at one element of the case."""
    x = case.feeds["x"].astype(np.float64)
    a16, b16 = (float(np.float16(v)) for v in (0.3, 0.4))
    spec = np.clip(a16 * x + b16, 0, 1).astype(np.float16)
    wide = np.clip(0.3 * x + 0.4, 0, 1).astype(np.float16)
    assert int(ulp_distance(want["y"], spec).max()) <= 2
    assert int(ulp_distance(got["y"], wide).max()) <= 2
    assert int(ulp_distance(got["y"], spec).max()) > 2


def _build_fails(words: str):
    def check(case: Case, got, want) -> None:
        assert isinstance(got, ConverterError) and words in got.what, got
        assert want  # our executor runs it

    return check


_LITERT_LAYOUTS = ("opSupportLimits() lists the type, but LiteRT fails to compile the graph "
                   "('Failed to get output tensor layouts')")
_ANY_TYPE = "The spec allows any data type for this operand; the browser claims it too."

DIFFERENCES: dict[tuple[str, str], Difference] = {
    **{("l2Pool2d", dt): Difference(
        "windows that overlap the padding come out sqrt(window size / in-bounds count) times "
        "too large",
        "index.bs, l2Pool2d: 'The L2 norm is the square root of the sum of the squares of its "
        "elements' - padding adds no element, so the in-bounds elements' norm is the result.",
        ONNX_EXECUTOR, _l2_pool_scales_edge_windows) for dt in ("float32", "float16")},
    **{("quantizeLinear", dt): Difference(
        "halves round away from zero for int8 and uint8 outputs (int32 rounds to even)",
        "index.bs, quantizeLinear emulation: roundEven(input / scale) + zeroPoint, then clamp.",
        ONNX_EXECUTOR, _quantize_rounds_half_away) for dt in ("int8", "uint8")},
    ("hardSigmoid", "float16"): Difference(
        "Chromium keeps alpha and beta in float32 on a float16 input (3 ULP from the spec at "
        "x = -1.123)",
        "index.bs, hardSigmoid: alpha and beta are cast to the input's data type, then "
        "max(0, min(alpha * x + beta, 1)); the budget is 2 ULP.",
        ONNX_EXECUTOR, _hard_sigmoid_params_in_float32),
    ("softplus", "float32"): Difference(
        "Chromium is 90 ULP from exact for negative x (log(1 + exp(x)) with the sum rounded)",
        "index.bs, softplus: ln(1 + exp(x)); the conformance budget is 18 ULP.",
        ONNX_EXECUTOR, _exact_unary(lambda x: np.log1p(np.exp(x)), 18, ONNX_EXECUTOR)),
    ("hardSwish", "float32"): Difference(
        "Chromium is 6 ULP from exact just above x = -3, where x + 3 is small",
        "index.bs, hardSwish: x * max(0, min(6, x + 3)) / 6; the conformance budget is 4 ULP.",
        ONNX_EXECUTOR,
        _exact_unary(lambda x: x * np.clip(x + 3, 0, 6) / 6, 4, ONNX_EXECUTOR)),
    ("concat", "uint64"): Difference(_LITERT_LAYOUTS, _ANY_TYPE, ONNX_EXECUTOR,
                                     _build_fails("Failed to get output tensor layouts")),
    ("scatterElements", "uint32"): Difference(_LITERT_LAYOUTS, _ANY_TYPE, ONNX_EXECUTOR,
                                              _build_fails("Failed to get output tensor layouts")),
    ("scatterND", "uint32"): Difference(_LITERT_LAYOUTS, _ANY_TYPE, ONNX_EXECUTOR,
                                        _build_fails("Failed to get output tensor layouts")),
}

# Types the browser lists that the spec's MLOperandDataType does not have: our catalogue
# follows the spec's tables, so no graph with them can be built here.
BEYOND_THE_SPEC: dict[tuple[str, str], str] = {
    ("concat", "int4"): "int4 is not an MLOperandDataType; Chromium accepts it for concat",
    ("reshape", "int4"): "int4 is not an MLOperandDataType; Chromium accepts it for reshape",
}
