"""Feeds checked against a graph's inputs, before any runtime sees them.

    arrays = check_feeds(graph, {"x": x})   # every mismatch in one error

Every runtime (the ONNX Runtime executor, the browser, the float64 reference interpreter)
checks its feeds here, so a feed mistake reads the same whichever runs the graph.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

import numpy as np

from .. import dtypes
from ..errors import ConverterError

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["check_feeds"]


def check_feeds(graph: "Graph", feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The feeds as ndarrays, or a ConverterError listing every mismatch with the graph's inputs."""
    problems: list[str] = []
    arrays: dict[str, np.ndarray] = {}
    for name, operand in graph.inputs.items():
        if name not in feeds:
            problems.append(f"input '{name}' ({operand.desc}) is not fed")
            continue
        arr = np.asarray(feeds[name])
        want = dtypes.numpy_dtype(operand.data_type).newbyteorder("=")
        if arr.dtype.newbyteorder("=") != want:
            problems.append(f"input '{name}' is {operand.data_type}, the feed is numpy {arr.dtype}")
        elif tuple(arr.shape) != operand.shape:
            problems.append(f"input '{name}' has shape {list(operand.shape)}, the feed has "
                            f"{list(arr.shape)}")
        arrays[name] = np.asarray(arr, dtype=want, order="C")  # (ascontiguousarray makes 0-d 1-d)
    for name in feeds:
        if name not in graph.inputs:
            problems.append(f"'{name}' is not an input of the graph "
                            f"(inputs: {', '.join(graph.inputs) or 'none'})")
    if problems:
        raise ConverterError("; ".join(problems), where=f"graph '{graph.name}' feeds",
                             fix="feed each input once, with its exact data type and shape")
    return arrays
