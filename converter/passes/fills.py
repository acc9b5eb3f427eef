"""Constants whose elements are all one value are stored as that value once: a fill.

An ONNX ConstantOfShape, a Expand of a scalar or a zero bias computed at conversion time
reaches the graph as a full array, and every writer then stored every element (the onnx
package's light_resnet50, 80 KB of ConstantOfShape nodes, gave a 102 MB weights file). The IR
has a form for such a value, ConstantData(fill=...), that every writer stores compactly: the
`.webnn`/JSON `@scalar` declaration, a `filled()` call in the JavaScript module, ONNX's
ConstantOfShape, a one-element TFLite buffer broadcast where it is read. This pass turns each
array constant whose elements are bit for bit one finite value (not -0.0, which the text form
would not tell from 0) into that form; its value, as any reader sees it, is unchanged.

A candidate is recognised by comparing its first, second and last elements before all of them
are read, so real weights (which differ at once) cost three reads, not a pass over the file.
Packed 4-bit constants are left as they are (their writers have no fill form).
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..ir import ConstantData, Graph
from . import PassContext, PassResult, graph_pass

__all__ = ["compact_fills", "fills"]


def compact_fills(graph: Graph) -> bool:
    """Turn every array constant of one repeated value into a fill; return whether any was."""
    return _compact(graph)[0] > 0


@graph_pass("fills")
def fills(graph: Graph, ctx: PassContext) -> PassResult:
    count, saved = _compact(graph)
    return PassResult(count > 0, {"constants": count, "bytes_saved": saved})


def _compact(graph: Graph) -> tuple[int, int]:
    count = saved = 0
    for operand in graph.constants.values():
        data = operand.constant
        value = _one_value(data)
        if value is None:
            continue
        operand.constant = ConstantData(data.data_type, data.shape, fill=value, origin="scalar")
        count += 1
        saved += data.nbytes
    return count, saved


def _one_value(data: ConstantData | None) -> int | float | None:
    """The value every element of an array constant has, bit for bit; None otherwise."""
    if data is None or data.fill is not None or data.packed or data.nbytes == 0:
        return None
    arr = data.numpy()
    if arr.size < 2:
        return None
    flat = arr.reshape(-1)
    width = dtypes.info(data.data_type).numpy.itemsize
    first = flat[:1].view(f"u{width}")[0]
    # Three elements first: real weights differ there, and are not read further.
    if flat[1:2].view(f"u{width}")[0] != first or flat[-1:].view(f"u{width}")[0] != first:
        return None
    if not np.all(np.ascontiguousarray(flat).view(f"u{width}") == first):
        return None
    value = flat[0].item()
    if isinstance(value, float) and (not math.isfinite(value) or
                                     (value == 0 and math.copysign(1, value) < 0)):
        return None
    return value
