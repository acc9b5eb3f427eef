"""tools/mutation.py stopped by SIGTERM or Ctrl-C (SIGINT) takes its test runs with it: every
fork it made (and their forks) is gone when it exits, none left running the module's tests."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="processes are read from /proc (Linux)")


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, start time) of every live process (zombies are not alive)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:   # it ended while we looked
            continue
        fields = stat[stat.rindex(")") + 2:].split()   # after "pid (comm) "
        if fields[0] != "Z":
            found[int(entry)] = (int(fields[1]), fields[19])
    return found


def _descendants(root: int) -> dict[int, tuple[int, str]]:
    """pid -> (depth below root, start time) of root's live descendants."""
    procs = _processes()
    depth = {root: 0}
    grew = True
    while grew:
        grew = False
        for pid, (ppid, _) in procs.items():
            if ppid in depth and pid not in depth:
                depth[pid] = depth[ppid] + 1
                grew = True
    return {pid: (d, procs[pid][1]) for pid, d in depth.items() if pid != root}


def _left(seen: dict[int, tuple[int, str]]) -> list[int]:
    """The processes of `seen` still alive (the same start time: not a reused pid)."""
    alive = _processes()
    return [pid for pid, (_, start) in seen.items() if alive.get(pid, (0, ""))[1] == start]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_run_leaves_no_child_behind(signum, tmp_path):
    # The smallest module (one file, 21 fast tests); stopped once a mutant's fork runs its
    # tests, two levels down (tool -> the collected session's fork -> the mutant's fork).
    # Its temporary files (the forks' result files) go to tmp_path: none may be left there.
    tool = subprocess.Popen([sys.executable, "tools/mutation.py", "passes.fold_constants"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            env={**os.environ, "TMPDIR": str(tmp_path)})
    seen: dict[int, tuple[int, str]] = {}
    try:
        deadline = time.monotonic() + 300   # a bound on waiting, not a measured time
        while max((d for d, _ in seen.values()), default=0) < 2:
            assert tool.poll() is None, tool.stderr.read()
            assert time.monotonic() < deadline, "no mutant ran within the wait"
            seen.update(_descendants(tool.pid))
            time.sleep(0.02)
        tool.send_signal(signum)
        tool.wait(timeout=120)   # not communicate(): a fork left behind would hold stderr open
        left = _left(seen)
        settle = time.monotonic() + 10   # a SIGKILLed process may take a moment to be gone
        while left and time.monotonic() < settle:
            time.sleep(0.05)
            left = _left(seen)
        assert left == []
        assert tool.returncode == 128 + signum
        assert tool.stderr.read().splitlines() == [
            f"mutation: stopped by {signal.Signals(signum).name}; its test runs were killed"]
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith("webnn-mutation-")] \
            == []
    finally:   # whatever happened, nothing this test started keeps running
        try:   # the tool's own session and group, reserved until it is waited for
            os.killpg(tool.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        tool.wait()
        for pid in _left(seen):
            os.kill(pid, signal.SIGKILL)


def test_a_finished_run_leaves_no_temporary_folder(tmp_path):
    # every pytest run of the tool keeps its temporary folders in the tool's scratch folder,
    # which goes when the tool ends (in the system's temporary folder, pytest's own folders
    # of forks that leave without their cleanup stay for days: 60 GB here after a day's runs)
    # the relative error's line (found by its text: edits above it move it), 2 mutants
    lines = (ROOT / "converter" / "verification" / "parity.py").read_text().splitlines()
    line = 1 + next(i for i, text in enumerate(lines) if "# fmax: NaN as 0" in text)
    tool = subprocess.run([sys.executable, "tools/mutation.py", "parity", "--lines",
                           f"converter/verification/parity.py:{line}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert "== parity: 2 mutants" in tool.stdout, tool.stdout + tool.stderr
    # (.ses is ONNX Runtime's: importing onnxruntime 1.32 writes it to the temporary folder)
    assert [p.name for p in tmp_path.iterdir() if p.name != ".ses"] == []
