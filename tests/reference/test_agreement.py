"""The float64 reference interpreter agrees with the ONNX lowering (on ONNX Runtime) on every
generated op case: one graph per (op, data type) from tests/browser/op_cases*.py, each output
held to the case's own parity bounds (shared/reference/tolerances.md).

The reference result is rounded to the output's data type first; the lowering's result may then
deviate by the op's budget. Where the two disagree and the spec sides with the reference, the
case is listed in KNOWN_LOWERING_BUGS with the reason, and the test checks that the
disagreement is still there (so a fixed lowering shows up as an entry to remove).
"""
from __future__ import annotations

import numpy as np
import pytest

import converter
from converter.dtypes import DATA_TYPES
from converter.errors import OpValidationError, UnsupportedError
from converter.verification.parity import Bounds, compare
from converter.verification.reference import KERNELS, evaluate
from converter.ops.registry import all_ops
from tests.browser.op_cases import case_ops, make_case

# (op, data type) -> why the lowering, not the reference, is wrong there (by the spec).
KNOWN_LOWERING_BUGS: dict[tuple[str, str], str] = {}

# Cases the ONNX lowering refuses, by graph name, with the words of its reason.
LOWERING_REFUSES: dict[str, str] = {
    "pow_uint64": "ONNX Runtime has no CPU kernel for Pow on uint64",
}

# (op, data type) -> (why the case's bound does not apply against the exact value, the bound
# that does). A ULP budget of K x 2 for a sum of K products assumes no cancellation: a result
# near zero of terms near 1 has ULPs far smaller than the terms' rounding errors. The float32
# error of such a sum is bounded in ULPs of its terms (here |a||b| <= 1): the same K x 2
# budget, measured at the terms' scale, as an absolute bound.
CANCELLING_SUMS: dict[tuple[str, str], tuple[str, Bounds]] = {
    ("matmul", "float32"): ("a [2,3,4] x b [4,5] of values in [-1, 1]: y[0,1,2] = 0.0109 is a "
                            "sum of 4 products of size ~0.5",
                            Bounds(atol=4 * 2 * float(np.spacing(np.float32(1))), rtol=0.0)),
}


def _case_ids() -> list[tuple[str, str]]:
    """Every (op, data type) for which op_cases builds a valid graph."""
    ids = []
    for op in case_ops():
        for dt in DATA_TYPES:
            try:
                make_case(op, dt)
            except OpValidationError:
                continue  # the op does not take this data type
            except (KeyError, ValueError, TypeError):
                # The case builder has no values for this type (packed 4-bit data for ops
                # that read graph inputs, uint64 in cast's chain): no graph to compare.
                continue
            ids.append((op, dt))
    return ids


CASE_IDS = _case_ids()


def test_every_op_has_a_kernel():
    assert sorted(KERNELS) == sorted(all_ops())


def test_the_cases_cover_every_op_and_many_types():
    assert {op for op, _ in CASE_IDS} == set(all_ops())
    assert len(CASE_IDS) >= 300


def _disagreements(case, bounds: Bounds | None = None) -> list[str]:
    want = evaluate(case.graph, case.feeds)
    try:
        got = converter.run(case.graph, case.feeds)
    except UnsupportedError as e:
        # Only where the lowering says why it cannot: then the reference alone computes it.
        assert (case.graph.name in LOWERING_REFUSES), e.line()
        assert LOWERING_REFUSES[case.graph.name] in e.line()
        return []
    problems = []
    for name, operand in case.graph.outputs.items():
        ref = want[name]
        if ref.dtype.kind == "f":
            ref = ref.astype(got[name].dtype)
        assert ref.dtype == got[name].dtype, (name, ref.dtype, got[name].dtype)
        parity = compare(name, got[name], ref, bounds or case.bounds)
        if not parity.passed:
            problems.append(f"{name}: {parity.reason}, max {parity.max_ulp} ULP / "
                            f"{parity.max_abs:.3g} abs at {parity.worst_index}")
    return problems


@pytest.mark.parametrize("op,data_type", CASE_IDS, ids=[f"{o}-{d}" for o, d in CASE_IDS])
def test_reference_agrees_with_the_onnx_lowering(op, data_type):
    case = make_case(op, data_type)
    cancelling = CANCELLING_SUMS.get((op, data_type))
    if cancelling is not None:
        assert _disagreements(case), "the case no longer cancels: drop its CANCELLING_SUMS entry"
    problems = _disagreements(case, cancelling[1] if cancelling else None)
    known = KNOWN_LOWERING_BUGS.get((op, data_type))
    if known is not None:
        assert problems, f"listed as a lowering bug ({known}) but now agrees: remove the entry"
        return
    assert not problems, problems


def test_float32_mode_agrees_with_the_lowering_too():
    """evaluate(..., dtype=float32) runs the same kernels in float32: on every case it agrees
    with the lowering within the case's bounds, apart from the listed lowering bugs."""
    disagreeing = set()
    for op, data_type in CASE_IDS:
        case = make_case(op, data_type)
        try:
            got = converter.run(case.graph, case.feeds)
        except UnsupportedError:
            continue
        want = evaluate(case.graph, case.feeds, dtype=np.float32)
        for name, value in want.items():
            if value.dtype.kind == "f":
                assert value.dtype == np.float32
                value = value.astype(got[name].dtype)
            if not compare(name, got[name], value, case.bounds).passed:
                disagreeing.add((op, data_type))
    assert disagreeing <= set(KNOWN_LOWERING_BUGS), sorted(disagreeing - set(KNOWN_LOWERING_BUGS))
