"""Run a WebNN graph: on ONNX Runtime (lowered to ONNX) or in a real Chromium's WebNN.

    outputs = run(graph, {"x": np.ones((1, 3, 8, 8), np.float32)})

Feeds are checked against the graph's inputs first (names, data types, shapes), and every
problem is reported in one error. Results are keyed by the graph's output names. The ONNX
Runtime executor itself is lowering/onnx/executor.py (`prepare` there for repeated runs); feed
checks are ir/feeds.py.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..errors import ConverterError
from ..ir import Graph

__all__ = ["run", "run_described", "RUNTIMES"]

# and "device", "device:NAME", "device:NAME:TYPE": a browser connected to `webnn-convert serve`
RUNTIMES = ("ort", "chromium")


def run(graph: Graph, feeds: Mapping[str, np.ndarray], runtime: str = "ort", *,
        opset: int | None = None) -> dict[str, np.ndarray]:
    """Execute `graph` on `feeds`; returns {output name: ndarray}.

    runtime "ort": the graph lowered to ONNX, on ONNX Runtime; "chromium": the graph emitted as
    JavaScript, on a real headless Chromium's WebNN (`webnn-convert browser-install`);
    "device[:NAME[:TYPE]]": on a device connected to the device server (converter.devices).
    """
    return run_described(graph, feeds, runtime, opset=opset)[0]


def run_described(graph: Graph, feeds: Mapping[str, np.ndarray], runtime: str = "ort", *,
                  opset: int | None = None) -> tuple[dict[str, np.ndarray], str]:
    """`run`, and where the graph ran as a report names it: "webnn-onnx", "chromium", or the
    device, its browser and deviceType."""
    if runtime == "device" or runtime.startswith("device:"):
        from ..devices.client import run_on_device

        return run_on_device(graph, feeds, runtime)
    if runtime not in RUNTIMES:
        raise ConverterError(f"unknown runtime '{runtime}'",
                             fix=f"use one of {', '.join(RUNTIMES)}, device[:NAME]")
    if runtime == "chromium":
        from .chromium import run_chromium

        return run_chromium(graph, feeds), "chromium"
    from ..lowering.onnx.executor import run_on_ort

    return run_on_ort(graph, feeds, opset), "webnn-onnx"
