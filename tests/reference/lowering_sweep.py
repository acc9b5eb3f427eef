"""A pytest plugin (not a test module): while tests/lowering runs, every graph it executes on
ONNX Runtime is also run on the reference interpreter, and each output's comparison is written
to the JSON file named by $REFERENCE_SWEEP_OUT. Used by test_lowering_sweep.py."""
from __future__ import annotations

import json
import os

_RESULTS: list[dict] = []


def pytest_configure(config):
    import tests.lowering.helpers as helpers
    from converter.verification.parity import compare, default_bounds
    from converter.verification.reference import evaluate

    executor = helpers.run

    def run_both(graph, feeds, *args, **kwargs):
        got = executor(graph, feeds, *args, **kwargs)
        ops = sorted(graph.op_histogram())
        want = evaluate(graph, feeds)
        for name, value in got.items():
            ref = want[name]
            if ref.dtype.kind == "f":
                ref = ref.astype(value.dtype)
            data_type = graph.outputs[name].data_type
            parity = compare(name, value, ref, default_bounds(data_type))
            _RESULTS.append({"ops": ops, "output": name, "passed": parity.passed,
                             "maxAbs": parity.max_abs, "maxUlp": parity.max_ulp,
                             "reason": parity.reason})
        return got

    helpers.run = run_both


def pytest_unconfigure(config):
    path = os.environ.get("REFERENCE_SWEEP_OUT")
    if path:
        with open(path, "w") as f:
            json.dump(_RESULTS, f)
