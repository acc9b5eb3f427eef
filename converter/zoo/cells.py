"""The cells of a device run: one model on one device (or local runtime), and the model's
result made of its cells.

    cell = make_cell(runtime, raw, where, started_at, ended_at)  # raw: the job's result
    lost = lost_result(spec, runtime, "device 'b' disconnected ...")
    result = merge_cells(raw_by_runtime, cells)     # the model's one result, cells in it

A cell says what the report's model x device matrix shows: whether the graph was built there
(and if not, the one line why), whether it ran, the verdict, the build and run times the
device's page measured, and which device, browser and deviceType it was. Its verdict is one of
the model statuses or `device lost`: the device disconnected before or while running it (the
model's status is then `error`, of kind `device-lost`: the run could not judge it there).
"""
from __future__ import annotations

import copy
from typing import Any

from .job import worst
from .manifest import STATUSES

__all__ = ["LOST", "LOST_KIND", "CELL_VERDICTS", "make_cell", "lost_result", "merge_cells",
           "device_identity", "where_of", "is_device"]

LOST = "device lost"        # a cell's verdict when its device went away
LOST_KIND = "device-lost"   # the error kind of such a cell's (and model's) result
CELL_VERDICTS = (*STATUSES, LOST)
# The page's stages up to a built graph (chromium's runtime and the device page share them).
_BEFORE_BUILT = ("import", "createContext", "weights", "build")


def is_device(runtime: str) -> bool:
    return runtime.startswith("device:")


def device_identity(listed: dict) -> dict[str, Any]:
    """What identifies a connected device (as `client.devices()` lists it): the key of its
    cells includes it (store.DEVICE_KEYED), the lost check compares it."""
    from .store import DEVICE_KEYED

    return {k: listed.get(k) for k in DEVICE_KEYED}


def where_of(runtime: str, listed: dict | None) -> dict[str, Any]:
    """Where a cell runs, as the matrix names it: the device, its browser, platform, user
    agent and deviceType (the first of cpu, gpu, npu it has, the server's choice for a
    runtime that names none); for a local runtime, the runtime itself."""
    if listed is not None:  # the server's words: strings or nothing
        types = listed.get("deviceTypes") if isinstance(listed.get("deviceTypes"), list) else []
        where = {k: v if isinstance(v := listed.get(k), str) else None
                 for k in ("name", "browser", "platform", "userAgent")}
        return {**where, "deviceType": types[0] if types and isinstance(types[0], str)
                else None}
    browser = "Chromium (this machine)" if runtime == "chromium" else None
    return {"name": runtime, "browser": browser, "platform": None, "userAgent": None,
            "deviceType": "cpu"}


def _parity(raw: dict, runtime: str) -> dict | None:
    variants = raw.get("targets") or []
    return (variants[0].get("parity") or {}).get(runtime) if variants else None


def make_cell(runtime: str, raw: dict, where: dict, started_at: float, ended_at: float,
              *, lost: str | None = None) -> dict[str, Any]:
    """The cell of `runtime` from its job's result `raw`. `lost`: the device went away (the
    reason): the verdict is `device lost` whatever the job says."""
    entry = _parity(raw, runtime)
    done = (entry or {}).get("device")
    if done:  # the device's own account: what its page got through, and in how long
        built, ran = bool(done.get("built")), bool(done.get("ran"))
        build_ms, run_ms = done.get("buildMs"), done.get("runMs")
        where = {**where, **{k: done[k] for k in ("browser", "platform", "userAgent",
                                                   "deviceType") if done.get(k) is not None}}
    elif entry is not None:  # a local runtime: ran if it gave outputs
        ran = bool(entry.get("outputs"))
        stage = entry.get("stage")
        built = True if ran else (stage not in _BEFORE_BUILT if stage else None)
        page = entry.get("pageTimes") or {}  # chromium's page measures as a device's does
        build_ms, run_ms = page.get("buildMs"), page.get("runMs")
    else:  # never reached the runtime: the model did not convert, or the job died
        built, ran, build_ms, run_ms = (None if lost else False), False, None, None
    reason = None
    if built is not True:
        error = (entry or {}).get("error") or (raw.get("error") or {}).get("message")
        if error is None and raw.get("targets"):
            error = (raw["targets"][0].get("error") or {}).get("message")
        reason = lost if lost and error is None else error
    return {"runtime": runtime, "device": where, "verdict": LOST if lost else raw["status"],
            "built": built, "notBuilt": reason, "ran": ran, "buildMs": build_ms,
            "runMs": run_ms, "startedAt": round(started_at, 3),
            "endedAt": round(ended_at, 3), "lost": lost}


def lost_result(spec: dict, runtime: str, reason: str) -> dict[str, Any]:
    """The result of a job its device was gone for: not run."""
    return {"id": spec["id"], "status": "error", "error": {"kind": LOST_KIND, "message": reason},
            "unsupported": [], "ops": None, "transposes": None, "opHistogram": {},
            "targets": [], "times": {"wall": 0.0}}


def merge_cells(raws: dict[str, dict], cells: dict[str, dict], runtimes: list[str]
                ) -> dict[str, Any]:
    """One model's result from its jobs' (one per runtime, in `runtimes` order): the first
    job that converted gives the model's facts (ops, histogram, the target's check), every job
    its runtime's parity and run time; the status is the worst cell's (a lost cell counts as
    `error`), `cells` lists every cell, and the wall time is the jobs' sum."""
    ordered = [raws[r] for r in runtimes]
    base = next((r for r in ordered if r.get("targets")), None) or next(
        (r for r in ordered if (r.get("error") or {}).get("kind") != LOST_KIND), ordered[0])
    result = copy.deepcopy(base)
    status = worst("error" if cells[r]["verdict"] == LOST else cells[r]["verdict"]
                   for r in runtimes)
    if result.get("targets"):
        variant = result["targets"][0]
        variant["parity"], times = {}, variant.get("times", {})
        variant["times"] = {k: v for k, v in times.items() if not k.startswith("run:")}
        for runtime in runtimes:
            entry = _parity(raws[runtime], runtime)
            if entry is not None:
                variant["parity"][runtime] = entry
                took = raws[runtime]["targets"][0].get("times", {}).get(f"run:{runtime}")
                if took is not None:
                    variant["times"][f"run:{runtime}"] = took
        if variant["parity"]:  # it reached the runtimes (else: its target refused it)
            variant["status"] = status
            variant["error"] = _first_error(runtimes, raws, cells)
    result["status"] = status
    if status == "verified":
        result["error"] = None
    elif result.get("targets") or (result.get("error") or {}).get("kind") == LOST_KIND:
        result["error"] = _first_error(runtimes, raws, cells)
    # else: it failed before any runtime (its file, its conversion), the same on every one
    walls = [raws[r].get("times", {}).get("wall", raws[r].get("times", {}).get("job", 0.0))
             for r in runtimes]
    result.setdefault("times", {})["wall"] = round(sum(float(w) for w in walls), 4)
    result["cells"] = [cells[r] for r in runtimes]
    return result


def _first_error(runtimes: list[str], raws: dict[str, dict], cells: dict[str, dict]
                 ) -> dict | None:
    """The first cell's failure, by the runtimes' order, naming the runtime."""
    for runtime in runtimes:
        raw, cell = raws[runtime], cells[runtime]
        if cell["verdict"] == "verified":
            continue
        if cell["verdict"] == LOST:
            return {"kind": LOST_KIND, "message": f"{runtime}: {cell['lost']}"}
        variant = (raw.get("targets") or [{}])[0]
        error = variant.get("error") or raw.get("error")
        if error:
            return {"kind": error["kind"], "message": _named(runtime, error["message"])}
        return {"kind": "runtime", "message": f"{runtime}: {cell['verdict']}"}
    return None


def _named(runtime: str, message: str) -> str:
    """`message` naming the runtime it is about (a parity failure names it already)."""
    return message if message.startswith(f"{runtime} ") else f"{runtime}: {message}"
