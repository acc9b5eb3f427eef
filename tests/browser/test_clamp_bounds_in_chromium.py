"""clamp with infinite bounds in Chromium's WebNN at 0 ULP (issue 31's "Done when"): the
WPT-style cases of tests/lowering/test_lower_clamp_bounds.py, expected values written by hand
from the spec, run through the emitted graph in the browser. A lowering or emitter that turns
an infinite bound into the largest finite float (ONNX Clip's empty bound) gives +-3.4e38 or
+-65504 where these want +-Infinity.

NaN bounds are left out: the browser ignores a NaN bound (as ONNX Runtime's Clip does), where
the spec's max/min steps, which our executor follows, make every element NaN."""
from __future__ import annotations

import math

import numpy as np

from converter.ops.builder import GraphBuilder
from converter.runtimes.chromium import run_chromium_many

from ..lowering.test_lower_clamp_bounds import _CASES


def _infinite_float_cases():
    """The float cases with a bound that is infinite once cast to the input's type."""
    for name, dtype, options, x, want in _CASES:
        bounds = list(options.values())
        if dtype not in ("float32", "float16") or any(math.isnan(v) for v in bounds):
            continue
        with np.errstate(over="ignore"):  # float16's 1e5 is +Infinity, as the spec casts it
            if any(math.isinf(float(np.array(v, dtype))) for v in bounds):
                yield name, dtype, options, x, want


CASES = list(_infinite_float_cases())


def test_the_cases_cover_both_types_and_both_ends():
    assert {c[1] for c in CASES} == {"float32", "float16"}
    assert len(CASES) >= 8  # -inf, +inf, both, mixed with finite, float16's 1e5 -> +inf


def test_infinite_clamp_bounds_are_exact_in_chromium(browser_limits):
    graphs = []
    for name, dtype, options, x, _ in CASES:
        b = GraphBuilder(name.replace(" ", "_"))
        inp = b.input("x", dtype, [len(x)])
        graphs.append((b.build({"y": b.clamp(inp, **options)}),
                       {"x": np.array(x, np.float64).astype(dtype)}))
    results = run_chromium_many(graphs)
    wrong = []
    for (name, dtype, _, _, want), got in zip(CASES, results):
        if isinstance(got, Exception):
            wrong.append(f"{name}: {got}")
            continue
        want = np.array(want, np.float64).astype(dtype)
        if got["y"].dtype != want.dtype or not np.array_equal(got["y"], want, equal_nan=True):
            wrong.append(f"{name}: {got['y'].tolist()} (want {want.tolist()})")
    assert not wrong, "\n".join(wrong)

