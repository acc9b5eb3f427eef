"""The mutation tool's child processes: each fork leads a process group, killed with the tool.

tools/mutation.py runs pytest in forks of itself (the baseline, fresh-import mutants, the
collected session). A fork's own forks and whatever its tests start stay in its group, so
killing the group stops the whole tree: at a mutant's timeout (`wait_child`) and when the tool
is stopped (`stop`, the SIGTERM/SIGINT handler), so no pytest is left running. The files
through which forks report back (`result_file`) and the scratch folder the forks' pytest runs
keep their temporary folders in (`scratch`) are removed then too.
"""
from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["fork_group", "reaped", "stop", "silence", "wait_child", "result_file",
           "read_result", "scratch", "remove_scratch"]

_CHILDREN: set[int] = set()   # pids (= process group ids) of this process's live forks
_RESULT_FILES: set[str] = set()   # files forks report through, removed when read or stopped


def result_file() -> str:
    """A new empty file a fork writes its result to (JSON); read and removed by read_result,
    or removed by `stop`."""
    handle = tempfile.NamedTemporaryFile(prefix="webnn-mutation-", suffix=".json",
                                         delete=False)
    handle.close()
    _RESULT_FILES.add(handle.name)
    return handle.name


_SCRATCH: list[str] = []   # the run's scratch folder, once made


def scratch() -> str:
    """The run's scratch folder, made on first use (by the tool itself, before any fork, so
    that the forks share it and the tool removes it): each pytest run gets its basetemp in it,
    so no run's temporary folders outlive the tool (pytest's own, under the system temporary
    folder, are kept for days when a fork leaves without its cleanup)."""
    if not _SCRATCH:
        _SCRATCH.append(tempfile.mkdtemp(prefix="webnn-mutation-"))
    return _SCRATCH[0]


def remove_scratch() -> None:
    while _SCRATCH:
        shutil.rmtree(_SCRATCH.pop(), ignore_errors=True)


def read_result(name: str) -> str:
    """The text a fork wrote to `name` (result_file's), and the file gone."""
    try:
        return Path(name).read_text()
    finally:
        os.unlink(name)
        _RESULT_FILES.discard(name)


def fork_group() -> int:
    """os.fork, the child in a process group of its own (its pytest forks and their
    subprocesses join it), so that a stopped run can kill the whole tree: see stop. Only
    this process forks this way; a fork's own forks stay in its group."""
    stops = {signal.SIGTERM, signal.SIGINT}
    # held over the fork: a stop between fork and bookkeeping would miss the new child
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        pid = os.fork()
        if pid == 0:
            os.setpgid(0, 0)
            _CHILDREN.clear()
            _RESULT_FILES.clear()   # the parent's to remove, not the fork's
            for signum in stops:
                signal.signal(signum, signal.SIG_DFL)
            return 0
        try:
            os.setpgid(pid, pid)   # also here, so the group exists before any kill
        except OSError:            # the child made it first, or has already exited
            pass
        _CHILDREN.add(pid)
        return pid
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)


def reaped(pid: int) -> None:
    _CHILDREN.discard(pid)


def stop(signum: int, frame) -> None:
    """SIGTERM or SIGINT: kill every child's process group, reap them, exit as stopped.
    (The children lead their own groups, so a Ctrl-C reaches this process alone.)"""
    for pid in list(_CHILDREN):
        try:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    _CHILDREN.clear()
    for name in list(_RESULT_FILES):
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass
    remove_scratch()
    print(f"mutation: stopped by {signal.Signals(signum).name}; its test runs were killed",
          file=sys.stderr, flush=True)
    os._exit(128 + signum)


def silence() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)


def wait_child(pid: int, timeout: float) -> tuple[int, bool]:
    """Exit code of child `pid`, killing it past `timeout` seconds (then (-9, True))."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            reaped(pid)
            return (os.waitstatus_to_exitcode(status), False)
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)   # its group: what its tests started goes too
            os.waitpid(pid, 0)
            reaped(pid)
            return (-9, True)
        time.sleep(0.02)
