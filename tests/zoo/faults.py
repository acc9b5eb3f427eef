"""The zoo runner's test-only job hook: makes a job process segfault or hang on purpose.

The runner passes it to the child only when a test sets `ZooOptions(hook=HOOK)`; the command
line has no way to. It reads the `webnn-zoo-test-fault` metadata entry that
models/make_synthetic.py writes into its `crash` and `hang` models.
"""
from __future__ import annotations

import ctypes
import time

HOOK = "tests.zoo.faults:inject"


def inject(spec: dict) -> None:
    if not spec.get("path") or not spec["path"].endswith(".onnx"):
        return
    import onnx

    try:
        model = onnx.load(spec["path"], load_external_data=False)
    except Exception:
        return  # a corrupt file is the job's to report
    fault = {p.key: p.value for p in model.metadata_props}.get("webnn-zoo-test-fault")
    if fault == "segfault":
        ctypes.string_at(0)  # reads address 0: SIGSEGV, exactly like a crashing native runtime
    elif fault == "hang":
        time.sleep(3600)


KILL_WORKER_HOOK = "tests.zoo.faults:kill_worker"


def kill_worker(spec: dict) -> None:
    """Kill the warm worker that forked this job (as an outside `kill -9` would), then die."""
    import os
    import signal

    if spec["id"] == "add":
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(3600)  # dies with the worker (PR_SET_PDEATHSIG)
