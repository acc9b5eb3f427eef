"""The reference interpreter against the ONNX backend node test cases: the expected outputs
there come from the onnx package's own numpy reference, independent of this project. Every
claimed case our ONNX executor passes is imported to WebNN and run on the float64 reference
instead, judged with the case's own tolerances after rounding to the output's type."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import converter.runtimes.execute
from converter import dtypes
from converter.verification.reference import evaluate
from tests.onnx_backend.cases import all_cases, claimed, run_case

_LISTED = json.loads(
    (Path(__file__).parents[1] / "onnx_backend" / "expected_failures.json").read_text())
CASES = sorted(n for n, c in all_cases().items() if claimed(c) and n not in _LISTED)

# Cases whose expected values are defined by float32 arithmetic feeding a rounding step: the
# exact (float64) value lands on the other side of a .5 tie, one quantization step away. In
# float32 the reference reproduces them exactly.
FLOAT32_DEFINED = {
    "test_dynamicquantizelinear": "y_scale = (max - min) / 255 in float32, then round(x / y_scale)",
    "test_dynamicquantizelinear_expanded": "the same, expanded into ONNX ops",
}


def _reference_runner(dtype):
    def run(graph, feeds, **_):
        out = evaluate(graph, feeds, dtype=dtype)
        return {name: value.astype(dtypes.numpy_dtype(graph.outputs[name].data_type))
                if value.dtype.kind == "f" else value for name, value in out.items()}
    return run


def test_the_sweep_covers_most_node_cases():
    assert len(CASES) >= 1000


@pytest.mark.parametrize("name", CASES)
def test_reference_matches_the_onnx_expected_outputs(name, monkeypatch):
    case = all_cases()[name]
    monkeypatch.setattr(converter.runtimes.execute, "run", _reference_runner(np.float64))
    outcome, detail = run_case(case)
    if name in FLOAT32_DEFINED:
        assert outcome == "fail" and "max abs error 1" in detail, (outcome, detail)
        monkeypatch.setattr(converter.runtimes.execute, "run", _reference_runner(np.float32))
        outcome, detail = run_case(case)
    assert outcome == "pass", f"{outcome}: {detail}"
