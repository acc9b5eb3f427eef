"""Browser cases for data movement, indexing, casting, arg-reductions and cumulative sums
(see op_cases.py). Data movement is exact in every type."""
from __future__ import annotations

import numpy as np

from converter.ops.builder import GraphBuilder

from .op_cases import FLOATS, built, case, exact, rng, ulp, values


def _start(op, dt, shape, lo=-9, hi=9):
    r = rng(op, dt)
    b = GraphBuilder(f"{op}_{dt}")
    if dt in ("int4", "uint4"):
        # 4-bit data comes as packed constants (quantized weights), not as graph inputs.
        lo, hi = (-8, 7) if dt == "int4" else (0, 15)
        return r, b, b.constant(dt, list(shape), values(r, dt, shape, lo, hi)), {}
    if dt == "uint8":
        lo = 0
    x = b.input("x", dt, list(shape))
    return r, b, x, {"x": values(r, dt, shape, lo, hi)}


@case("argMax", "argMin")
def _arg(op, dt):
    r, b, x, feeds = _start(op, dt, (3, 4, 5))
    # Distinct values: which of two equal elements wins is not what this compares.
    flat = r.permutation(60) - (0 if dt == "uint8" else 30)
    feeds["x"] = (flat / (4 if dt in FLOATS else 1)).astype(feeds["x"].dtype).reshape(3, 4, 5)
    out_type = "int64" if dt == "float32" else "int32"
    y = getattr(b, op)(x, 1, keepDimensions=dt == "float16", outputDataType=out_type)
    return built(op, dt, b, y, feeds, exact())


# Each input type is cast to the next one, so every listed input and output type occurs.
_CAST_CHAIN = ("float32", "float16", "int32", "uint32", "int64", "int8", "uint8")


@case("cast")
def _cast(op, dt):
    r, b, x, feeds = _start(op, dt, (2, 6), 0, 100)
    target = _CAST_CHAIN[(_CAST_CHAIN.index(dt) + 1) % len(_CAST_CHAIN)]
    if dt in FLOATS:
        # Values every target holds exactly or rounds to, fractions included: float to integer
        # conversion truncates toward zero.
        feeds["x"] = np.array([0, 1.5, 2.75, 99, 100, 65.25] * 2, feeds["x"].dtype).reshape(2, 6)
    return built(op, dt, b, b.cast(x, target), feeds, exact())


@case("concat")
def _concat(op, dt):
    r, b, x, feeds = _start(op, dt, (2, 3))
    if dt in ("int4", "uint4"):
        others = [b.constant(dt, [2, 1], [[1], [-2 if dt == "int4" else 2]]),
                  b.constant(dt, [2, 2], [[3, 4], [5, 6]])]
        y = b.concat([x, *others], 1)
        return built(op, dt, b, {"y": y}, feeds, exact())
    z, w = b.input("z", dt, [2, 1]), b.input("w", dt, [2, 2])
    feeds.update(z=values(r, dt, (2, 1), 0, 9), w=values(r, dt, (2, 2), 0, 9))
    return built(op, dt, b, b.concat([x, z, w], 1), feeds, exact())


@case("cumulativeSum")
def _cumulative_sum(op, dt):
    r, b, x, feeds = _start(op, dt, (2, 5), -5, 5)
    y = b.cumulativeSum(x, 1, exclusive=dt in ("float32", "int32"),
                        reversed=dt in ("float16", "int32"))
    return built(op, dt, b, y, feeds, ulp(dt, 5))  # a sum of up to 5 elements


@case("expand")
def _expand(op, dt):
    r, b, x, feeds = _start(op, dt, (3, 1))
    return built(op, dt, b, b.expand(x, [2, 3, 4]), feeds, exact())


_INDEX_TYPES = ("int32", "uint32", "int64")


def _index_type(dt):
    return _INDEX_TYPES[sum(map(ord, dt)) % 3]  # spread the index types over the cases


@case("gather")
def _gather(op, dt):
    r, b, x, feeds = _start(op, dt, (4, 3))
    idx = b.constant(np.array([[2, 0], [1, 2]], _index_type(dt)))
    return built(op, dt, b, b.gather(x, idx, axis=1), feeds, exact())


@case("gatherElements")
def _gather_elements(op, dt):
    r, b, x, feeds = _start(op, dt, (3, 4))
    idx = b.constant(np.array([[2, 0, 1, 1], [0, 2, 2, 0]], _index_type(dt)))
    return built(op, dt, b, b.gatherElements(x, idx, axis=0), feeds, exact())


@case("gatherND")
def _gather_nd(op, dt):
    r, b, x, feeds = _start(op, dt, (3, 4, 2))
    idx = b.constant(np.array([[2, 1], [0, 3]], _index_type(dt)))
    return built(op, dt, b, b.gatherND(x, idx), feeds, exact())


@case("pad")
def _pad(op, dt):
    r, b, x, feeds = _start(op, dt, (2, 3))
    # Every mode Chromium builds: "edge" is refused by its LiteRT backend (known_differences.py).
    mode = {"float32": "reflection"}.get(dt, "constant")
    options = {"mode": mode} if mode != "constant" else {"value": 7}
    y = b.pad(x, [1, 2], [0, 1], **options)
    return built(op, dt, b, y, feeds, exact())


@case("reshape")
def _reshape(op, dt):
    r, b, x, feeds = _start(op, dt, (2, 3, 4))
    return built(op, dt, b, b.reshape(x, [4, 6]), feeds, exact())


@case("reverse")
def _reverse(op, dt):
    r, b, x, feeds = _start(op, dt, (2, 3, 4))
    return built(op, dt, b, b.reverse(x, axes=[0, 2]), feeds, exact())


@case("scatterElements")
def _scatter_elements(op, dt):
    r, b, x, feeds = _start(op, dt, (3, 4))
    # Distinct targets per column: which of two updates to one element wins is unspecified.
    idx = b.constant(np.array([[2, 0, 1, 1], [0, 2, 2, 0]], np.int32))
    upd = b.input("updates", dt, [2, 4])
    feeds["updates"] = values(r, dt, (2, 4), 20, 40)
    return built(op, dt, b, b.scatterElements(x, idx, upd, axis=0), feeds, exact())


@case("scatterND")
def _scatter_nd(op, dt):
    r, b, x, feeds = _start(op, dt, (4, 3))
    idx = b.constant(np.array([[1], [3]], np.int32))
    upd = b.input("updates", dt, [2, 3])
    feeds["updates"] = values(r, dt, (2, 3), 20, 40)
    return built(op, dt, b, b.scatterND(x, idx, upd), feeds, exact())


@case("slice")
def _slice(op, dt):
    r, b, x, feeds = _start(op, dt, (4, 5))
    return built(op, dt, b, b.slice(x, [1, 0], [2, 5], strides=[1, 2]), feeds, exact())


@case("split")
def _split(op, dt):
    r, b, x, feeds = _start(op, dt, (2, 6))
    splits = [2, 4] if dt == "float32" else 3  # sizes, or a count of equal parts
    return built(op, dt, b, b.split(x, splits, axis=1), feeds, exact())


@case("tile")
def _tile(op, dt):
    r, b, x, feeds = _start(op, dt, (2, 3))
    return built(op, dt, b, b.tile(x, [2, 2]), feeds, exact())


@case("transpose")
def _transpose(op, dt):
    r, b, x, feeds = _start(op, dt, (2, 3, 4))
    return built(op, dt, b, b.transpose(x, permutation=[2, 0, 1]), feeds, exact())


@case("triangular")
def _triangular(op, dt):
    r, b, x, feeds = _start(op, dt, (2, 3, 4))
    upper, diagonal = (False, 1) if dt in ("float32", "int32", "int64") else (True, -1)
    return built(op, dt, b, b.triangular(x, upper=upper, diagonal=diagonal), feeds, exact())
