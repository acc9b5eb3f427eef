"""The largest graph constant a backend's build() takes: Chromium 153's LiteRT backend refuses
one over 128 MiB ("Buffer size is over inline limit") though its opSupportLimits() says any
tensor may be 2 GiB - 1; the target file's `maxConstantByteLength` says so, and check and the
split_constants pass read it.

Each size is one case: a float32 constant of that many bytes, made as a fill (one value: the
converter, the upload and the emitted module never lay it out; only the browser does), read
by a 4-element slice added to an input, so the output is tiny and checked against the float64
reference like any case.

The search is bounded in sizes tried, each run on its own: doubling from START while build()
takes it, up to CEILING or the backend's maxTensorByteLength (so a backend without such a limit
costs a few builds and never a constant over CEILING); halving from START if START is refused;
then one element over the largest that built, and if that builds too, at most REFINE bisection
steps between it and the smallest refused. The limits browsers have are powers of two, which
the first two steps find exactly: 6 builds on Chromium 153 (16, 32, 64, 128 and 256 MiB, then
128 MiB + 4 bytes), two of them over its limit.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..ir import ConstantData
from ..ops.builder import GraphBuilder
from .case_kit import Case, exact

__all__ = ["constant_case", "constant_sizes", "START", "CEILING", "SIZE_OP"]

SIZE_OP = "constant"  # the name a size case goes by (MLGraphBuilder.constant)
START = 16 << 20
CEILING = 1 << 30
REFINE = 6
_ELEMENT = 4  # float32
_FILL = 0.5


def constant_case(byte_length: int) -> Case:
    """A graph reading one float32 constant of `byte_length` bytes (a multiple of 4)."""
    if byte_length % _ELEMENT or byte_length < 4 * _ELEMENT:
        raise ValueError(f"a size case's constant is whole float32 elements, at least 4: "
                         f"{byte_length} bytes")
    b = GraphBuilder(f"constant_{byte_length}_bytes")
    x = b.input("x", "float32", [4])
    c = b.graph.add_constant("c", ConstantData("float32", (byte_length // _ELEMENT,),
                                               fill=_FILL))
    graph = b.build({"y": b.add(x, b.slice(c, [0], [4]))})
    case = Case(SIZE_OP, "float32", graph, {"x": np.arange(4, dtype=np.float32)}, exact())
    case.constant_bytes = byte_length
    return case


def constant_sizes(run: Callable[[int], bool], max_tensor: int | None) -> None:
    """Probe constant sizes with `run(byte_length) -> built`, as the module says."""
    ceiling = min(CEILING, max_tensor) if max_tensor else CEILING
    ceiling -= ceiling % _ELEMENT
    built, refused = None, None
    size = min(START, ceiling)
    while True:  # doubling while it builds
        if run(size):
            built = size
            if size >= ceiling:
                return  # no limit below the ceiling: nothing to narrow
            size = min(size * 2, ceiling)
        else:
            refused = size
            break
    while built is None and size > 4 * _ELEMENT:  # halving while it does not
        size = max(size // 2 - size // 2 % _ELEMENT, 4 * _ELEMENT)
        if run(size):
            built = size
        else:
            refused = size
    if built is None:
        return
    over = built + _ELEMENT
    if over >= refused or not run(over):
        return
    built = over
    for _ in range(REFINE):
        middle = (built + refused) // 2
        middle -= middle % _ELEMENT
        if middle <= built:
            return
        if run(middle):
            built = middle
        else:
            refused = middle
