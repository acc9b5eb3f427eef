"""What the generated one-op cases are made with: the Case record, the registry the case
families add their ops to (`@case`), seeded values and the bounds (cases.py says how they are
chosen)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..ops.builder import GraphBuilder
from ..ir import Graph
from ..verification.parity import Bounds

FLOATS = ("float32", "float16")


@dataclass
class Case:
    op: str
    data_type: str
    graph: Graph
    feeds: dict[str, np.ndarray]
    bounds: Bounds
    options: dict[str, str] = field(default_factory=dict)  # the VARIANTS values it was made with
    rank: int | None = None  # the rank it was made at (RANKED ops), None: its own shapes
    constant_bytes: int | None = None  # a size case's constant (sizes.py)


CASES: dict[str, Callable[[str, str], Case]] = {}


def case(*ops: str):
    def register(fn):
        for name in ops:
            CASES[name] = fn
        return fn
    return register


# -- values and bounds -----------------------------------------------------------------------
def rng(op: str, dt: str) -> np.random.Generator:
    # A seed from the case's name (not hash(), which changes between runs).
    return np.random.default_rng(sum(ord(c) * (i + 1) for i, c in enumerate(f"{op}/{dt}")))


def values(r: np.random.Generator, dt: str, shape, lo=-2.0, hi=2.0) -> np.ndarray:
    """Uniform floats in [lo, hi), or integers in [lo, hi] clipped to the type's range."""
    np_type = np.dtype({"int4": "int8", "uint4": "uint8"}.get(dt, dt))
    if np_type.kind == "f":
        return r.uniform(lo, hi, shape).astype(np_type)
    info = np.iinfo(np_type)
    lo, hi = max(int(lo), info.min), min(int(hi), info.max)
    return r.integers(lo, hi + 1, shape).astype(np_type)


# (op, data type) -> (why the case's bound does not apply against the exact value, the bound
# that does). A ULP budget of K x 2 for a sum of K products assumes no cancellation: a result
# near zero of terms near 1 has ULPs far smaller than the terms' rounding errors. The float32
# error of such a sum is bounded in ULPs of its terms (here |a||b| <= 1): the same K x 2
# budget, measured at the terms' scale, as an absolute bound.
CANCELLING_SUMS: dict[tuple[str, str], tuple[str, Bounds]] = {
    ("matmul", "float32"): ("a [2,3,4] x b [4,5] of values in [-1, 1]: y[0,1,2] = 0.0109 is a "
                            "sum of 4 products of size ~0.5",
                            Bounds(atol=4 * 2 * float(np.spacing(np.float32(1))), rtol=0.0)),
}


def exact_bounds(case: Case) -> Bounds:
    """The bound the case's outputs are held to against the exact (float64) result rounded to
    their type: its own, but for the sums that cancel (CANCELLING_SUMS)."""
    cancelling = CANCELLING_SUMS.get((case.op, case.data_type))
    return cancelling[1] if cancelling else case.bounds


def exact() -> Bounds:
    return Bounds(exact=True)


def ulp(dt: str, f32: int, f16: int | None = None) -> Bounds:
    if dt not in FLOATS:
        return exact()
    return Bounds(ulp=f32 if dt == "float32" or f16 is None else f16)


def atol(dt: str, value: float) -> Bounds:
    """An absolute bound, for results near zero where ULPs say nothing (rtol 0)."""
    return Bounds(atol=value, rtol=0.0) if dt in FLOATS else exact()


def built(op: str, dt: str, b: GraphBuilder, outputs, feeds: dict, bounds: Bounds) -> Case:
    if not isinstance(outputs, dict):
        outputs = {"y": outputs} if not isinstance(outputs, list) else \
            {f"y{i}": o for i, o in enumerate(outputs)}
    return Case(op, dt, b.build(outputs), feeds, bounds)


def ranked(rank: int | None, default=(2, 3, 4)) -> tuple[int, ...]:
    """A data shape of `rank` (2 along each axis: 256 elements at rank 8), or `default`."""
    return default if rank is None else (2,) * rank


def unary(op, dt, lo=-2.0, hi=2.0, shape=(2, 3, 4), **options):
    r = rng(op, dt)
    b = GraphBuilder(f"{op}_{dt}")
    x = b.input("x", dt, shape)
    feeds = {"x": values(r, dt, shape, lo, hi)}
    return b, getattr(b, op)(x, **options), feeds
