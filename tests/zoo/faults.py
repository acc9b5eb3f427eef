"""The zoo runner's test-only job hooks: make a job process segfault or hang on purpose (a hanging
job first writes its pid to ID.hanging beside its model), or report what it sees.

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
        import os
        from pathlib import Path

        # Said beside the model (with the pid), so that a test can wait until the hang is
        # provably running, and see afterwards that its process is gone.
        (Path(spec["path"]).parent / f"{spec['id']}.hanging").write_text(str(os.getpid()))
        time.sleep(3600)


KILL_WORKER_HOOK = "tests.zoo.faults:kill_worker"


def kill_worker(spec: dict) -> None:
    """Kill the warm worker that forked this job (as an outside `kill -9` would), then die."""
    import os
    import signal

    if spec["id"] == "add":
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(3600)  # dies with the worker (PR_SET_PDEATHSIG)


MEET_HOOK = "tests.zoo.faults:meet"


def meet(spec: dict) -> None:
    """Say "here" beside the model, then wait until every model of the folder has said so:
    jobs that run one after another never meet (the first dies waiting, exit code 3); jobs
    that run at once all go on. The folder's `meet.json` says how many must meet and how long
    to wait: {"count": N, "seconds": S}."""
    import json
    import os
    from pathlib import Path

    folder = Path(spec["path"]).parent
    (folder / f"{spec['id']}.here").write_text(str(os.getpid()))
    plan = json.loads((folder / "meet.json").read_text())
    deadline = time.monotonic() + plan["seconds"]
    while len(list(folder.glob("*.here"))) < plan["count"]:
        if time.monotonic() > deadline:
            os._exit(3)
        time.sleep(0.01)


COLLECTOR_HOOK = "tests.zoo.faults:collector_state"


def collector_state(spec: dict) -> None:
    """Write the job process's garbage-collector state beside the model, as JSON."""
    import gc
    import json
    from pathlib import Path

    state = {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}
    (Path(spec["path"]).parent / f"{spec['id']}.gc.json").write_text(json.dumps(state))
