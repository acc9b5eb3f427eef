"""Where a probe's cases run: local Chromium (one page visit per batch of cases), or a device
connected to `webnn-convert serve` (on_device.py). Each backend gives its own
opSupportLimits(), a description of what ran the cases, and `run`, which takes a list of
(graph, feeds) and gives, per graph, its outputs or the ConverterError it met (its `stage`
says whether it was built); a problem with the backend itself raises.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import ConverterError
from ..ir import Graph

__all__ = ["Backend", "backend", "check_runtime", "RUNTIME_FIX"]

Cases = Sequence[tuple[Graph, Mapping[str, np.ndarray]]]
RUNTIME_FIX = "use --runtime chromium, device, device:NAME or device:NAME:TYPE"
# Cases per page visit of local Chromium: large enough that visits are few, small enough that
# a renderer crash (which makes every case of its batch run again on its own page) costs little.
BATCH = 64


@dataclass
class Backend:
    """`browser`: what ran the cases, as the target file's sources name it; `label`: the
    probed target's name stem ("chromium", "NAME-TYPE")."""

    limits: dict[str, Any]
    browser: str
    label: str
    run: Callable[[Cases], list]


def check_runtime(runtime: str) -> str:
    """`runtime`, if a probe runs there (chromium, device[:NAME[:TYPE]], each part checked)."""
    if runtime == "chromium":
        return runtime
    if runtime == "device" or runtime.startswith("device:"):
        from ..devices.protocol import parse_runtime

        parse_runtime(runtime)
        return runtime
    raise ConverterError(f"probe runs on chromium or a device, not '{runtime}'",
                         fix=RUNTIME_FIX)


def backend(runtime: str, say: Callable[[str], None] = lambda line: None) -> Backend:
    """The backend `runtime` names: chromium, device, device:NAME, device:NAME:TYPE."""
    if check_runtime(runtime) == "chromium":
        return _chromium()
    from .on_device import open_device

    return Backend(*open_device(runtime, say))


def _chromium() -> Backend:
    from ..runtimes.chromium import browser_version, op_support_limits, run_chromium_many

    def run(cases: Cases) -> list:
        results = []
        for start in range(0, len(cases), BATCH):
            results += run_chromium_many(list(cases[start:start + BATCH]))
        return results

    return Backend(op_support_limits(), browser_version(), "chromium", run)
