"""The zoo's test-only job hook for the device-run test (test_zoo_on_devices.py): each job says
it started, with a file in the folder WEBNN_ZOO_TEST_FLAGS names, and waits where the test
needs an order that does not depend on timing:

- the first model's job on each device waits until the other device's has started too: a
  runner that runs the devices one after the other never gets past it (its first job then
  ends only when the wait gives up, after the second could not start);
- the second model's job on beta waits until beta is no longer connected (the test closes
  beta's page once this job has started): beta is lost in the middle of this job.

The runner passes the hook to the job's process only when a test sets ZooOptions(hook=HOOK).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

HOOK = "tests.devices.zoo_hooks:pace"
FLAGS = "WEBNN_ZOO_TEST_FLAGS"
FIRST, SECOND = "add", "conv_relu"
DEVICES = ("alpha", "beta")
_GIVE_UP = 120.0  # seconds: a wait that is never met ends, and the test's assertions fail


def started(folder: Path, model: str, runtime: str) -> Path:
    return folder / f"{model}@{runtime}.started"


def pace(spec: dict) -> None:
    folder = Path(os.environ[FLAGS])
    runtime = spec["runtimes"][0]
    started(folder, spec["id"], runtime).write_text(str(time.time()))
    if spec["id"] == FIRST and runtime.startswith("device:"):
        _wait(lambda: all(started(folder, FIRST, f"device:{n}").exists() for n in DEVICES))
    elif spec["id"] == SECOND and runtime == "device:beta":
        from converter.devices.client import devices

        _wait(lambda: "beta" not in {d["name"] for d in devices()})


def _wait(condition) -> None:
    end = time.monotonic() + _GIVE_UP
    while time.monotonic() < end and not condition():
        time.sleep(0.05)
