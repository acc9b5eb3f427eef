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

__all__ = ["run", "RUNTIMES"]

RUNTIMES = ("ort", "chromium")


def run(graph: Graph, feeds: Mapping[str, np.ndarray], runtime: str = "ort", *,
        opset: int | None = None) -> dict[str, np.ndarray]:
    """Execute `graph` on `feeds`; returns {output name: ndarray}.

    runtime "ort": the graph lowered to ONNX, on ONNX Runtime; "chromium": the graph emitted as
    JavaScript, on a real headless Chromium's WebNN (`webnn-convert browser-install`).
    """
    if runtime not in RUNTIMES:
        raise ConverterError(f"unknown runtime '{runtime}'",
                             fix=f"use one of {', '.join(RUNTIMES)}")
    if runtime == "chromium":
        from .chromium import run_chromium

        return run_chromium(graph, feeds)
    from ..lowering.onnx.executor import run_on_ort

    return run_on_ort(graph, feeds, opset)
