"""A stop (SIGTERM, Ctrl-C) that lands while the importer forks a child is not lost.

The importer forks for ONNX's shape inference (inference.py) and for a fold of unknown size
(capped_fold.py). A stop handled inside os.fork's after-fork hooks (logging registers one in
every process) raised its exception there, where Python prints and drops it: the stop was lost,
and the capped fold's parent then waited forever on a child that never writes (its test,
test_a_stop_while_the_child_computes_ends_the_child, hung in about 3 of 25 runs). Each case here
puts the signal in that window every time: an after-fork hook of the test's own sends it.

Each case runs in a subprocess (an after-fork hook cannot be removed again), in its own session
so that a hung run and its child can both be ended; the timeout is a bound on a hang, not a
measured time.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from converter.importers.onnx import capped_fold

from .onnx_cases import model, vi

ROOT = Path(__file__).resolve().parents[2]
HANG = 120  # seconds: far past what a run takes; reaching it means the run hung

pytestmark = pytest.mark.skipif(not capped_fold.can_cap(), reason="forks and /proc: Linux")

# Arms an after-fork hook when the function under test (FORKER in MODULE) starts: the parent
# then sends itself SIGTERM right after its next fork, before fork() has returned. Prints what
# happened; the exit code says whether a child was left behind.
_SCRIPT = """
import os, signal, sys
import converter
from converter.importers.onnx import folding, inference

class Stop(KeyboardInterrupt):
    pass

def stop(signum, frame):
    raise Stop(signum)

def never_answers(*args):
    while True:
        signal.pause()

armed = []
os.register_at_fork(after_in_parent=lambda: armed and (
    armed.clear(), os.kill(os.getpid(), signal.SIGTERM)))
module = {"inference": inference, "capped_fold": folding}[sys.argv[2]]
name = {"inference": "_isolated_answer", "capped_fold": "fold_capped"}[sys.argv[2]]
real = getattr(module, name)

def arming(*args, **kw):
    armed.append(True)
    return real(*args, **kw)

setattr(module, name, arming)
folding._evaluate = never_answers  # the capped fold's child never writes
signal.signal(signal.SIGTERM, stop)
try:
    converter.load(sys.argv[1])
    print("loaded: the stop was lost")
except Stop:
    print("stopped")
try:
    left = os.waitpid(-1, os.WNOHANG)[0] != 0 or "a child still running"
except ChildProcessError:
    left = None
sys.exit(1 if left else 0)
"""


def _run(src: Path, where: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", _SCRIPT, str(src), where],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             cwd=ROOT, start_new_session=True)
    try:
        stdout, stderr = child.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)  # the run and the child it waits on
        child.communicate()
        pytest.fail(f"the run hung: the stop was lost and it waited on its child ({where})")
    return subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr)


def _roi_align(tmp_path: Path) -> Path:
    """A RoiAlign of rank-5 X: folded in a capped child (see test_onnx_unsized_folds.py)."""
    inits = [numpy_helper.from_array(np.ones((1, 1, 2, 2, 1), np.float32), "x"),
             numpy_helper.from_array(np.array([[0, 0, 1, 1]], np.float32), "r"),
             numpy_helper.from_array(np.array([0], np.int64), "b")]
    m = model([helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], output_height=4,
                                output_width=4)], [], [vi("y")], inits, opset=16)
    path = tmp_path / "roi.onnx"
    onnx.save(m, path)
    return path


@pytest.mark.parametrize("where", ["capped_fold", "inference"])
def test_a_stop_as_the_importer_forks_stops_it_and_ends_the_child(tmp_path, where):
    done = _run(_roi_align(tmp_path), where)
    assert done.stdout.strip() == "stopped", done.stderr
    assert "Exception ignored" not in done.stderr  # was: the Stop, printed and dropped
    assert done.returncode == 0, "a child was left running"
