"""A device run: every (model, device) job in that device's own queue, the devices at work at
the same time.

    devices = resolve_devices(options.runtimes)   # before anything is written: each named
                                                  # device must be connected now
    results, resumed = run_matrix(entries, options, shared, store, keys, devices, finish)

A run whose runtimes name a device (`device:NAME`) is a device run: each runtime is a lane
with a queue of its own, and each model a job per lane, run in its own process as any zoo
job (converted there, then run on that one runtime; the per-model `--timeout` bounds it). A
device, and local chromium (one browser), run one job at a time, as a page runs one graph at
a time; ort runs `--jobs` at a time. So a slow phone holds up only its own column.

A device that disconnects costs its own lane only: the job it was running and every job left
in its queue are recorded as `device lost` (cells.LOST), without running; the other lanes go
on. Whether a device is still there is asked of the server before each of its jobs and after
each one that failed (a disconnect fails the job it interrupts at once: the server answers
it); a device that no longer answers without closing its connection is dropped by the
server's heartbeat, and its job is cut at the per-model timeout meanwhile.
"""
from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections import deque
from typing import Any, Callable

from ..errors import ConverterError
from .cells import device_identity, is_device, lost_result, make_cell, merge_cells, where_of

__all__ = ["is_device_run", "lane_widths", "resolve_devices", "run_matrix"]

_DONE = object()  # a lane's thread has no more jobs


def is_device_run(runtimes: list[str]) -> bool:
    return any(is_device(r) for r in runtimes)


def lane_widths(runtimes: list[str], jobs: int) -> dict[str, int]:
    """How many jobs each lane runs at once: one on a device or local chromium (a browser
    runs one graph at a time), `jobs` on ort."""
    return {r: jobs if r == "ort" else 1 for r in runtimes}


def resolve_devices(runtimes: list[str]) -> dict[str, dict | None]:
    """Each runtime's device as the server lists it now (None for a local runtime);
    ConverterError naming the connected ones if a named device is not connected."""
    if not is_device_run(runtimes):
        return {r: None for r in runtimes}
    from ..devices.client import devices

    listed = {d.get("name"): d for d in devices() if isinstance(d, dict)}
    found: dict[str, dict | None] = {}
    for runtime in runtimes:
        if not is_device(runtime):
            found[runtime] = None
            continue
        name = runtime.split(":")[1]
        if name not in listed:
            raise ConverterError(f"no device named '{name}' is connected", where="--runtime",
                                 fix=f"connected: {', '.join(sorted(listed)) or 'none'}")
        found[runtime] = listed[name]
    return found


def _gone(runtime: str, listed: dict) -> str | None:
    """Why the device of `runtime` can take no more jobs (disconnected, or replaced by another
    under its name, or the server stopped answering), or None while it is connected."""
    from ..devices.client import devices

    name = runtime.split(":")[1]
    try:
        now = {d.get("name"): d for d in devices() if isinstance(d, dict)}
    except ConverterError as e:
        return f"the device server stopped answering ({e.line()})"
    if name not in now or device_identity(now[name]) != device_identity(listed):
        return f"device '{name}' disconnected"
    return None


@dataclasses.dataclass
class _Lane:
    runtime: str
    listed: dict | None          # the device as the server listed it at the start
    todo: deque
    lost: str | None = None      # why its device is gone, once it is


def run_matrix(entries: list, options, shared, store, cell_key: Callable[[Any, str], str],
               devices: dict[str, dict | None], finish: Callable[[Any, dict], dict],
               on_result: Callable[[dict, int, int], None] | None = None
               ) -> tuple[dict[str, dict], list[str]]:
    """Every model on every runtime: ({id: the model's result (finish(entry, merged))},
    the ids whose every cell came from the store). Each cell is stored as it arrives."""
    runtimes = list(options.runtimes)
    limits = {"timeout": options.timeout, "memory": options.memory}
    raws: dict[str, dict[str, dict]] = {e.id: {} for e in entries}
    cells: dict[str, dict[str, dict]] = {e.id: {} for e in entries}
    results: dict[str, dict] = {}
    lanes = {r: _Lane(r, devices.get(r), deque()) for r in runtimes}
    for entry in entries:
        for runtime in runtimes:
            stored = store.reusable(cell_key(entry, runtime), options.timeout, options.memory)
            if _whole(stored, runtime):
                raw = {k: v for k, v in stored.items() if k != "cell"}
                raws[entry.id][runtime] = raw
                cells[entry.id][runtime] = {**stored["cell"], "resumed": True}
            else:
                lanes[runtime].todo.append(entry)
    resumed = [e.id for e in entries if len(cells[e.id]) == len(runtimes)]
    done = 0

    def complete(entry) -> None:
        nonlocal done
        results[entry.id] = finish(entry, merge_cells(raws[entry.id], cells[entry.id],
                                                      runtimes))
        done += 1
        if on_result:
            on_result(results[entry.id], done, len(entries))

    for entry in entries:
        if entry.id in resumed:
            complete(entry)
    arrived: queue.SimpleQueue = queue.SimpleQueue()
    stopping = threading.Event()
    guard = threading.Lock()
    widths = lane_widths(runtimes, options.jobs)

    def work(lane: _Lane) -> None:
        try:
            while not stopping.is_set():
                with guard:
                    if not lane.todo:
                        break
                    entry = lane.todo.popleft()
                arrived.put((entry, lane.runtime, *_one(lane, entry, options, shared)))
        except BaseException as e:  # a fault of ours: raised in the caller's thread
            arrived.put(e)
        finally:
            arrived.put(_DONE)

    threads = [threading.Thread(target=work, args=(lane,), daemon=True,
                                name=f"zoo-lane-{lane.runtime}")
               for lane in lanes.values() if lane.todo
               for _ in range(min(widths[lane.runtime], len(lane.todo)))]
    for thread in threads:
        thread.start()
    running = len(threads)
    try:
        while running:
            item = arrived.get()
            if item is _DONE:
                running -= 1
                continue
            if isinstance(item, BaseException):
                raise item
            entry, runtime, raw, cell = item
            if not cell["lost"]:  # a lost cell got no verdict: a --resume runs it again
                store.append(cell_key(entry, runtime), {**raw, "cell": cell}, limits)
            raws[entry.id][runtime], cells[entry.id][runtime] = raw, cell
            if len(cells[entry.id]) == len(runtimes):
                complete(entry)
    finally:  # also on Ctrl-C: what finished is stored; what runs is killed, not waited for
        stopping.set()
        from .warm import kill_children  # a device run's jobs are all the warm worker's

        kill_children()
        for thread in threads:
            thread.join()
    return results, resumed


def _whole(stored: dict | None, runtime: str) -> bool:
    """Whether a stored record is a cell of `runtime` as this run writes them (a results file
    is a file like any other: one edited or from another version is run again, not read)."""
    from .cells import CELL_VERDICTS
    from .manifest import STATUSES

    cell = stored.get("cell") if isinstance(stored, dict) else None
    return (isinstance(cell, dict) and cell.get("runtime") == runtime
            and cell.get("verdict") in CELL_VERDICTS and cell.get("lost") is None
            and stored.get("status") in STATUSES and isinstance(stored.get("targets"), list)
            and isinstance(stored.get("times"), dict))


def _one(lane: _Lane, entry, options, shared) -> tuple[dict, dict]:
    """One job of a lane: (its result, its cell). A device known to be gone runs nothing."""
    spec, runtime = entry.spec(), lane.runtime
    where = where_of(runtime, lane.listed)
    started = time.time()
    if lane.lost is None and lane.listed is not None:
        lane.lost = _gone(runtime, lane.listed)
    if lane.lost is not None:
        why = f"{lane.lost} before this job ran"
        raw = lost_result(spec, runtime, why)
        return raw, make_cell(runtime, raw, where, started, time.time(), lost=why)
    raw = shared.run(spec, dataclasses.replace(options, runtimes=[runtime]))
    ended = time.time()
    lost = None
    if lane.listed is not None and raw["status"] in ("error", "timeout", "crash"):
        lane.lost = _gone(runtime, lane.listed)
        if lane.lost is not None:
            lost = f"{lane.lost} during this job"
    return raw, make_cell(runtime, raw, where, started, ended, lost=lost)
