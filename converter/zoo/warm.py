"""Warm workers: a process that imports the converter and its runtimes once, then forks a child
for each model.

    worker = WarmWorker(env)      # starts `python -m converter.zoo.warm`, which imports all
    code = worker.run({"spec": ..., "out": ..., "err": ..., "memory": 4096, "hook": None},
                      timeout=600)  # the child's exit code; None when it was killed at timeout
    worker.close()

A fresh interpreter per model spends most of its time importing numpy, onnx and onnxruntime
(63% of the children's time on the public zoo). A warm worker pays that once. Its children
are forks, so each model still runs in a process of its own: its own session (the timeout
kills its whole group, a browser included), its own memory cap, its own crash. A segfault,
hang or memory cap ends the child, never the worker.

Protocol, one JSON object a line: the worker says {"ready": true} once it has imported
everything; then for each request {"spec", "out", "err", "memory", "hook"} it answers
{"pid"} when the child starts and {"pid", "code"} when it ends (`code` as subprocess reports
it: negative for a signal). The child's stderr goes to the file `err`.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

__all__ = ["WarmWorker", "WorkerLost", "kill_children"]

_READY_SECONDS = 300.0  # a worker that has not imported everything by then is broken
_CHILDREN: set[int] = set()  # pids (= process groups) of the models running now


class WorkerLost(RuntimeError):
    """The worker process itself went away (killed from outside): start another."""


def kill_children() -> None:
    """Kill every model process still running (an interrupted run leaves none behind)."""
    for pid in list(_CHILDREN):
        _kill_group(pid)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class WarmWorker:
    def __init__(self, env: dict[str, str]):
        self._proc = subprocess.Popen([sys.executable, "-m", "converter.zoo.warm"], env=env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, start_new_session=True)
        self._buffer = b""
        self._ready = False

    def run(self, request: dict, timeout: float) -> int | None:
        if not self._ready:
            self._read(time.monotonic() + _READY_SECONDS)
            self._ready = True
        self._proc.stdin.write(json.dumps(request).encode() + b"\n")
        self._proc.stdin.flush()
        pid = self._read(time.monotonic() + _READY_SECONDS)["pid"]
        _CHILDREN.add(pid)
        try:
            return self._read(time.monotonic() + timeout)["code"]
        except TimeoutError:
            _kill_group(pid)
            self._read(time.monotonic() + _READY_SECONDS)  # the worker reaps it and says so
            return None
        finally:
            _CHILDREN.discard(pid)

    def close(self) -> None:
        if self._proc.poll() is None:
            _kill_group(self._proc.pid)
        self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            stream.close()

    def _read(self, deadline: float) -> dict:
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, 4096)
            if not chunk:
                raise WorkerLost(f"zoo worker {self._proc.pid} exited "
                                 f"(code {self._proc.wait()})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)


# ---- the worker process ----------------------------------------------------------------------

def _import_everything() -> None:
    """What any job may need, imported before the first fork so no child imports it again.

    Much of the converter loads on first use (the importers' rule modules, the op families,
    the lowerings, the JSON Schema validators, ONNX's reference evaluator that folding runs),
    which a command run once wants; here each child would pay it again for every model (some
    300 modules, a third of a small model's job), so the worker loads it all once.
    """
    import numpy  # noqa: F401
    import numpy.random  # noqa: F401  (the seeded inputs of verify)
    import onnx  # noqa: F401
    import onnx.reference.ops._op_list  # noqa: F401  (folding's evaluator and its ops)
    import onnxruntime  # noqa: F401

    from .. import by_suffix, convert, execute, session, verification  # noqa: F401
    from .. import verification_steps  # noqa: F401
    from ..importers import onnx as onnx_importer, tflite as tflite_importer  # noqa: F401
    from ..importers.onnx import wire  # noqa: F401
    from ..ir import feeds, verify  # noqa: F401
    from ..lowering import onnx as lowering  # noqa: F401
    from ..lowering.onnx import executor  # noqa: F401
    from ..passes import _all  # noqa: F401  (every pass a target may run)
    from ..lowering.onnx.registry import all_lowerings
    from ..ops import all_ops
    from ..schemas import _validator
    from ..targets import pipeline  # noqa: F401
    from . import job  # noqa: F401

    onnx_importer.rules.load_all()
    all_ops()
    all_lowerings()
    _validator("target")  # jsonschema and the one schema jobs check (each --target's file)
    try:
        from ..runtimes import litert  # noqa: F401
        from ai_edge_litert import interpreter  # noqa: F401
    except ImportError:  # LiteRT is needed only by TFLite models, which then say so
        pass


def _child(request: dict) -> None:
    """In the forked child: a session of its own, stdio to the job's files, then the job."""
    os.setsid()
    err = os.open(request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(err, 2)
    code = 0
    try:
        from pathlib import Path

        from .job import run_spec_file

        run_spec_file(Path(request["spec"]), Path(request["out"]), request.get("memory"),
                      request.get("hook"))
    except MemoryError:
        os.write(2, b"MemoryError\n")
        code = 1
    except BaseException:  # noqa: BLE001 - the child's only report is its stderr and code
        import traceback

        os.write(2, traceback.format_exc().encode("utf-8", "replace"))
        code = 1
    finally:
        os._exit(code)  # never run the worker's own cleanup in the child


def _serve() -> None:
    # Die with the runner: a runner killed with SIGKILL leaves no worker behind.
    from .job import _die_with_parent

    _die_with_parent()
    _import_everything()
    out = sys.stdout.buffer

    def say(message: dict) -> None:
        out.write(json.dumps(message).encode() + b"\n")
        out.flush()

    say({"ready": True})
    for line in sys.stdin.buffer:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        say({"pid": pid})
        _, status = os.waitpid(pid, 0)
        say({"pid": pid, "code": os.waitstatus_to_exitcode(status)})


if __name__ == "__main__":
    _serve()
