"""The warm worker: a process that imports the converter and its runtimes once, then forks a
child for each model, several at once.

    worker = WarmWorker(env, targets=True)  # starts `python -m converter.zoo.warm [--targets]`,
                                            # which imports all the run's jobs use
    code = worker.run({"spec": ..., "out": ..., "err": ..., "memory": 4096, "hook": None},
                      timeout=600)  # the child's exit code; None when it was killed at timeout
    worker.close()

A fresh interpreter per model spends most of its time importing numpy, onnx and onnxruntime
(63% of the children's time on the public zoo). A warm worker pays that once, and one worker
serves every job of a run: `run` may be called from several threads, each waiting for its own
child, so `--jobs N` costs one set of imports, not N. The children are forks, so each model
still runs in a process of its own: its own session (the timeout kills its whole group, a
browser included), its own memory cap, its own crash. A segfault, hang or memory cap ends the
child, never the worker; a worker killed from outside costs the models it was running then.

Protocol, one JSON object a line: the worker says {"ready": true} once it has imported
everything; then for each request {"id", "spec", "out", "err", "memory", "hook"} it forks at
once and answers {"id", "pid"} when the child starts and {"id", "pid", "code"} when it ends
(`code` as subprocess reports it: negative for a signal), in whatever order the children end.
The child's stderr goes to the file `err`.
"""
from __future__ import annotations

import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
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
    """The runner's side of one worker process. `run` is safe to call from several threads:
    a reader thread hands each answer to the request it names."""

    def __init__(self, env: dict[str, str], targets: bool = True):
        """`targets`: whether the run's jobs rewrite for targets (so the worker imports the
        target passes and the JSON Schema validator of a target's file, 40 ms of its start)."""
        command = [sys.executable, "-m", "converter.zoo.warm"] + (["--targets"] if targets else [])
        self._proc = subprocess.Popen(command, env=env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, start_new_session=True)
        self._lock = threading.Lock()  # request ids, the waiting table, writes to the worker
        self._waiting: dict[int, queue.SimpleQueue] = {}
        self._next_id = 0
        self._ready = threading.Event()
        self._lost: WorkerLost | None = None
        self._reader = threading.Thread(target=self._read_answers, daemon=True,
                                        name=f"zoo-worker-{self._proc.pid}")
        self._reader.start()

    @property
    def lost(self) -> bool:
        return self._lost is not None

    def wait_ready(self) -> None:
        """Return once the worker has imported everything; WorkerLost if it never will."""
        if not self._ready.wait(_READY_SECONDS):
            raise WorkerLost(f"zoo worker {self._proc.pid} did not start within "
                             f"{_READY_SECONDS:g} s")

    def run(self, request: dict, timeout: float) -> int | None:
        self.wait_ready()
        answers: queue.SimpleQueue = queue.SimpleQueue()
        with self._lock:
            if self._lost is not None:
                raise self._lost
            ident, self._next_id = self._next_id, self._next_id + 1
            self._waiting[ident] = answers
            try:
                self._proc.stdin.write(json.dumps({**request, "id": ident}).encode() + b"\n")
                self._proc.stdin.flush()
            except OSError:  # the worker is gone; the reader says so to every waiter
                pass
        try:
            pid = _answer(answers, time.monotonic() + _READY_SECONDS)["pid"]
            _CHILDREN.add(pid)
            try:
                return _answer(answers, time.monotonic() + timeout)["code"]
            except TimeoutError:
                _kill_group(pid)
                _answer(answers, time.monotonic() + _READY_SECONDS)  # reaped, and said so
                return None
            finally:
                _CHILDREN.discard(pid)
        finally:
            with self._lock:
                self._waiting.pop(ident, None)

    def close(self) -> None:
        if self._proc.poll() is None:
            _kill_group(self._proc.pid)
        self._proc.wait()
        self._reader.join()
        for stream in (self._proc.stdin, self._proc.stdout):
            stream.close()

    def _read_answers(self) -> None:
        """The reader thread: every line the worker writes, to the request it answers."""
        for line in self._proc.stdout:
            message = json.loads(line)
            if message.get("ready"):
                self._ready.set()
                continue
            with self._lock:
                answers = self._waiting.get(message["id"])
            if answers is not None:
                answers.put(message)
        lost = WorkerLost(f"zoo worker {self._proc.pid} exited (code {self._proc.wait()})")
        with self._lock:
            self._lost = lost
            waiting = list(self._waiting.values())
        for answers in waiting:
            answers.put(lost)
        self._ready.set()  # a worker lost before it was ready: run() raises it at once


def _answer(answers: queue.SimpleQueue, deadline: float) -> dict:
    """The next answer to one request; TimeoutError at `deadline`, WorkerLost if it went."""
    try:
        message = answers.get(timeout=max(0.0, deadline - time.monotonic()))
    except queue.Empty:
        raise TimeoutError from None
    if isinstance(message, WorkerLost):
        raise message
    return message


# ---- the worker process ----------------------------------------------------------------------

def _import_everything(targets: bool = True) -> None:
    """What any job of the run may need, imported before the first fork so no child imports
    it again; with `targets` False (a run that names no target) the target pipeline and
    jsonschema are left out, as such a job never reaches them.

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

    from .. import convert  # noqa: F401
    from ..verification import core as verification  # noqa: F401
    from ..conversion import by_suffix  # noqa: F401
    from ..runtimes import crash_guard, execute, session  # noqa: F401
    from ..verification import steps as verification_steps  # noqa: F401
    from ..importers import onnx as onnx_importer, tflite as tflite_importer  # noqa: F401
    from ..importers.onnx import wire  # noqa: F401
    from ..ir import feeds, verify  # noqa: F401
    from ..lowering import onnx as lowering  # noqa: F401
    from ..lowering.onnx import executor  # noqa: F401
    from ..lowering.onnx.registry import all_lowerings
    from ..ops import all_ops
    from . import job  # noqa: F401

    onnx_importer.rules.load_all()
    all_ops()
    all_lowerings()
    if targets:
        from ..passes import _all  # noqa: F401  (every pass a target may run)
        from ..schemas import _validator
        from ..targets import pipeline  # noqa: F401

        _validator("target")  # jsonschema and the one schema jobs check (each --target's file)
    try:
        from ..runtimes import litert  # noqa: F401
        from ai_edge_litert import interpreter  # noqa: F401
    except ImportError:  # LiteRT is needed only by TFLite models, which then say so
        pass


def _rehearse() -> dict:
    """Run one small made-up model through a whole job (import, checks, lowering, ONNX
    Runtime on both sides, the compare) in the worker itself, before the first fork.

    CPython specialises a function's bytecode and fills its lookup caches as the function
    runs. Done once here, every child inherits warm code and only reads it; otherwise each
    child warms it again, writing to (and so copying) the pages the worker shares with it. On
    the public zoo this takes 15% off the jobs' time. Returns the job's result, which the
    worker does not look at (a job never raises; the tests check that this one verifies).
    """
    import tempfile
    from pathlib import Path

    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    from .job import run_job

    weights = np.linspace(-1, 1, 4 * 3 * 3 * 3, dtype=np.float32).reshape(4, 3, 3, 3)
    dense = np.linspace(-1, 1, 4 * 4 * 4 * 5, dtype=np.float32).reshape(64, 5)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Flatten", ["p"], ["f"]),
         helper.make_node("Gemm", ["f", "d"], ["g"]),
         helper.make_node("Softmax", ["g"], ["y"])],
        "rehearsal", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
        initializer=[onnx.numpy_helper.from_array(weights, "w"),
                     onnx.numpy_helper.from_array(dense, "d")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    stdout = os.dup(1)  # the protocol's channel: nothing the job might print may reach it
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        with tempfile.TemporaryDirectory(prefix="webnn-zoo-rehearsal-") as folder:
            path = Path(folder) / "rehearsal.onnx"
            onnx.save(model, path)
            return run_job({"id": "rehearsal", "format": "onnx", "path": str(path),
                            "folder": folder,
                            "targets": [], "runtimes": ["ort"]})
    finally:
        os.dup2(stdout, 1)
        os.close(stdout)
        os.close(null)


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


def _serve(targets: bool) -> None:
    """The worker's loop: fork a child for each request as it comes, report each as it ends.

    One thread only (forking a process with threads is unsafe): it waits in `select` on its
    stdin and on a pipe that SIGCHLD writes to, so it hears a request and a child's end alike.
    """
    # Die with the runner: a runner killed with SIGKILL leaves no worker behind.
    from .job import _die_with_parent

    _die_with_parent()
    # Everything made until the first fork lives as long as the worker: the collector would
    # only walk it again and again as it is made (30 ms of the worker's start), so it is off
    # until then; then it is frozen out of every later collection, so that a child's
    # collections do not write to (and so copy) every page the worker filled.
    import gc

    gc.disable()
    _import_everything(targets)
    _rehearse()
    gc.freeze()
    gc.enable()
    out = sys.stdout.buffer

    def say(message: dict) -> None:
        out.write(json.dumps(message).encode() + b"\n")
        out.flush()

    woken, wake = os.pipe()
    os.set_blocking(woken, False)
    os.set_blocking(wake, False)
    signal.set_wakeup_fd(wake)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup fd is what matters
    running: dict[int, int] = {}  # child pid -> request id
    pending, stdin_open = b"", True
    say({"ready": True})
    while stdin_open or running:
        ready = select.select([woken] + ([0] if stdin_open else []), [], [])[0]
        if woken in ready:
            while True:
                try:
                    if not os.read(woken, 512):
                        break
                except BlockingIOError:
                    break
        if 0 in ready:
            chunk = os.read(0, 65536)
            stdin_open = bool(chunk)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                request = json.loads(line)
                pid = os.fork()
                if pid == 0:  # the worker's way of hearing its children is not the job's
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    os.close(woken)
                    os.close(wake)
                    _child(request)
                running[pid] = request["id"]
                say({"id": request["id"], "pid": pid})
        while running:  # every child that has ended, however many signals that took
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            say({"id": running.pop(pid), "pid": pid,
                 "code": os.waitstatus_to_exitcode(status)})


if __name__ == "__main__":
    _serve(targets="--targets" in sys.argv[1:])
