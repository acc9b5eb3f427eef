"""A zoo run under a hard memory limit lower than its `--memory` (a shell's `ulimit -d`, a CI
runner's cgroup-less cap, the fuzz harness): each job keeps the lower limit. Raising a hard
limit is refused, and every job used to end `exited with code 1 before writing a result:
ValueError: not allowed to raise maximum limit`, recorded as a crash."""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
from pathlib import Path

from .conftest import ROOT, cli_command

CAP = 2 << 30  # under the default --memory of 4096 MB, above what a small model's job needs


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_DATA, (CAP, CAP))


def test_a_lower_hard_limit_stays_and_the_model_verifies(tmp_path: Path):
    shutil.copy(ROOT / "models" / "tiny_cnn.onnx", tmp_path / "m.onnx")
    (tmp_path / "z.json").write_text(json.dumps({"models": [{"id": "m", "path": "m.onnx"}]}))
    proc = subprocess.run(cli_command("z.json", "--report", "r.json", "--results", "r.jsonl"),
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=600, preexec_fn=_capped)
    report = json.loads((tmp_path / "r.json").read_text())
    assert [m["status"] for m in report["models"]] == ["verified"], report["models"][0]
    assert proc.returncode == 0, proc.stderr
