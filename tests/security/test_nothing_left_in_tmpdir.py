"""Nothing left in TMPDIR or the home folder: ONNX Runtime's telemetry wrote TMPDIR/.ses and
~/.cache/Microsoft/DeveloperTools/.onnxruntime (a device id, an event database) on every
command that imported it, and verification's lowered model, saved to a temporary folder when
its constants are big, stayed in TMPDIR when the run was killed."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "models" / "tiny_cnn.onnx"


def _everything(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def sandbox(tmp_path):
    """(run, tmp, home): run(*args) runs `webnn-convert ARGS` with TMPDIR and HOME fresh."""
    tmp, home = tmp_path / "tmp", tmp_path / "home"
    tmp.mkdir()
    home.mkdir()

    def run(*args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp), "HOME": str(home)}
        env.pop("ORT_DISABLE_TELEMETRY", None)  # the converter must turn it off itself
        env.pop("XDG_CACHE_HOME", None)
        return subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True,
                              text=True, env=env, cwd=ROOT, timeout=300)
    return run, tmp, home


@pytest.mark.parametrize("command", ["verify", "run", "convert --verify"])
def test_onnx_runtime_leaves_nothing_in_tmpdir_or_home(sandbox, tmp_path, command):
    run, tmp, home = sandbox
    out = tmp_path / "out"
    args = {"verify": ["verify", str(TINY)],
            "run": ["run", str(TINY), "--output-dir", str(out)],
            "convert --verify": ["convert", str(TINY), "-o", str(out / "t.webnn"), "--verify"]}
    if command == "convert --verify":
        out.mkdir()
    done = run(*args[command])
    assert done.returncode == 0, done.stderr
    assert _everything(tmp) == []  # was: ['.ses']
    assert _everything(home) == []  # was: .cache/Microsoft/DeveloperTools/.onnxruntime/...
