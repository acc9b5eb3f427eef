"""Every graph the lowering tests (tests/lowering) run on ONNX Runtime, hundreds of op and
option combinations beyond the generated op cases, agrees with the reference interpreter within
the whole-model bounds (float32 1e-4 + 1e-3 |want|, float16 1e-2, integers exact): a semantic
cross-check (layouts, padding sides, gate orders ...), the ULP budgets being those tests' own."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_every_lowering_test_graph_agrees_with_the_reference(tmp_path):
    out = tmp_path / "sweep.json"
    env = {**os.environ, "REFERENCE_SWEEP_OUT": str(out),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
         "tests.reference.lowering_sweep", str(ROOT / "tests" / "lowering")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert len(results) >= 400  # outputs compared (483 when written)
    disagreements = [r for r in results if not r["passed"]]
    assert not disagreements, disagreements[:10]
