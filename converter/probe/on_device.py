"""A probe's cases on a device connected to `webnn-convert serve`: each case is one job
(devices/client.run_on_device), IN_FLIGHT of them sent at a time so that the round trips
overlap (the page runs its jobs one after another, in the order sent).

A case must not stop the probe. The page gives up on a job when the server does (`serve
--job-timeout`), so a case that hangs is recorded as "timeout" and the jobs queued behind it
run. A case that takes the page down (a renderer crash) closes its connection: every job in
flight fails with it, and the jobs sent after it find no device. Those in flight are suspects:
once the device is back (the page reloaded, under the same name), each runs again alone, and
the one that takes the page down again is recorded as having crashed it ("page"); the jobs
that found no device run again as usual. Jobs that timed out while others were in flight are
suspects too (they may have waited behind a hung one), and are run again alone.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from ..errors import ConverterError

__all__ = ["open_device", "IN_FLIGHT", "RECONNECT_SECONDS"]

# Jobs sent at a time: enough to hide a round trip's latency behind the page's work.
IN_FLIGHT = 4
# How long a probe waits for a device whose page went away to come back.
RECONNECT_SECONDS = 120.0
_POLL = 0.5


def open_device(runtime: str, say: Callable[[str], None]) -> tuple[dict, str, str, Callable]:
    """(its opSupportLimits(), a description of it, "NAME-TYPE", run) for the device `runtime`
    names: the parts of a backends.Backend."""
    from ..devices.client import describe, device_limits

    device, kind, limits = device_limits(runtime)
    name = device["name"]
    where = f"device:{name}:{kind}"

    def run(cases) -> list:
        return _Runner(where, name, say).run(cases)

    return limits, describe(device, kind), f"{name}-{kind}", run


def _status(result) -> int | None:
    return getattr(result, "status", None) if isinstance(result, ConverterError) else None


def _lost(result) -> bool:
    """The job died with the device's connection (502), or the device was gone (404)."""
    return _status(result) in (502, 404)


def _timed_out(result) -> bool:
    return _status(result) == 504 or getattr(result, "stage", None) == "timeout"


class _Runner:
    def __init__(self, runtime: str, name: str, say: Callable[[str], None]):
        self.runtime, self.name, self.say = runtime, name, say

    def one(self, graph, feeds):
        from ..devices.client import run_on_device

        try:
            return run_on_device(graph, feeds, self.runtime)[0]
        except ConverterError as e:
            if _timed_out(e):
                e.stage = "timeout"
            elif _status(e) is not None and not _lost(e):
                raise  # the server refused the job itself (its size, its upload): no verdict
            return e

    def run(self, cases) -> list:
        results: dict[int, object] = {}
        waiting = list(range(len(cases)))
        while waiting:
            with ThreadPoolExecutor(IN_FLIGHT, thread_name_prefix="probe-device") as pool:
                got = dict(zip(waiting, pool.map(lambda i: self.one(*cases[i]), waiting)))
            several = len(waiting) > 1
            suspects = [i for i in waiting if _status(got[i]) == 502
                        or (several and _timed_out(got[i]))]
            absent = [i for i in waiting if _status(got[i]) == 404]
            results.update({i: r for i, r in got.items() if i not in suspects + absent})
            for i in suspects:
                self.wait_for_device()
                result = self.one(*cases[i])
                while _status(result) == 404:  # it left again before the job was sent
                    self.wait_for_device()
                    result = self.one(*cases[i])
                if _status(result) == 502:
                    result = _crashed(cases[i][0], self.name)
                results[i] = result
            if absent:
                self.wait_for_device()
            waiting = absent
        return [results[i] for i in range(len(cases))]

    def wait_for_device(self) -> None:
        from ..devices.client import devices

        if any(d.get("name") == self.name for d in devices()):
            return
        self.say(f"device '{self.name}' disconnected: waiting up to {RECONNECT_SECONDS:g} s for "
                 f"its page to come back (reload it, with ?name={self.name})")
        end = time.monotonic() + RECONNECT_SECONDS
        while time.monotonic() < end:
            time.sleep(_POLL)
            if any(d.get("name") == self.name for d in devices()):
                self.say(f"device '{self.name}' is back: probing on")
                return
        raise ConverterError(f"device '{self.name}' disconnected during the probe and did not "
                             f"come back in {RECONNECT_SECONDS:g} s",
                             fix=f"reload the page on it (with ?name={self.name}) and probe "
                                 f"again")


def _crashed(graph, name: str) -> ConverterError:
    error = ConverterError(f"the page on device '{name}' went away while running it, twice "
                           f"(a renderer crash)", where=f"graph '{graph.name}'")
    error.stage = "page"
    return error
