"""The chromium runtime's folder in TMPDIR (the runner page and each graph's files it serves):
removed when the session closes, and, when the process was killed outright (SIGKILL: nothing
runs), by the next session. Was: left for good. Playwright's own profile folders its driver
removes itself once our process is gone."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from converter.errors import ConverterError
from converter.runtimes.browser_install import find_chromium

ROOT = Path(__file__).resolve().parents[2]
WAIT = 300  # seconds: a bound on a run that hangs, never a measured time

# Runs tiny_cnn in Chromium; with "stay", says so and waits to be killed, else closes.
_SCRIPT = """
import sys, time
import numpy as np
import converter
from converter.runtimes.chromium import close_browser, run_chromium
graph = converter.load(sys.argv[1])
[(name, spec)] = list(graph.inputs.items())
run_chromium(graph, {name: np.ones(spec.shape, np.float32)})
if sys.argv[2] == "stay":
    print("running", flush=True)
    time.sleep(600)
close_browser()
"""


def _start(tmp: Path, mode: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, str(ROOT / "models" / "tiny_cnn.webnn"), mode],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)})


def test_a_killed_sessions_folder_is_removed_by_the_next_session(tmp_path):
    try:
        find_chromium()
    except ConverterError as e:
        if os.environ.get("CI"):
            pytest.fail(f"the browser must run in CI: {e.line()}")
        pytest.skip(e.line())
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    killed = _start(tmp, "stay")
    try:
        assert killed.stdout.readline().strip() == "running", killed.stderr.read()
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait(timeout=WAIT)
    finally:
        if killed.poll() is None:
            killed.kill()
            killed.wait()
    left = [p.name for p in tmp.iterdir() if p.name.startswith("webnn-chromium")]
    assert len(left) == 1  # the runner's folder: nothing removed it
    second = _start(tmp, "close")
    _, stderr = second.communicate(timeout=WAIT)
    assert second.returncode == 0, stderr
    # Playwright's driver removes its own folders once it sees the killed run gone, in its own
    # time: not ours to check.
    assert [p.name for p in tmp.iterdir() if not p.name.startswith("playwright")] == []
