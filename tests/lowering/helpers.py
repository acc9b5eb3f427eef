"""Shared helpers for the lowering tests: run a built graph, compare by ULP."""
from __future__ import annotations

import numpy as np

from converter.ops.builder import GraphBuilder
from converter.runtimes.execute import run


def execute(b: GraphBuilder, outputs: dict, feeds: dict | None = None) -> dict[str, np.ndarray]:
    """Build the graph with `outputs` and run it on ONNX Runtime."""
    graph = b.build(outputs)
    return run(graph, feeds or {})


def run1(b: GraphBuilder, out, feeds: dict | None = None) -> np.ndarray:
    """Build with one output named 'y', run, and return it."""
    return execute(b, {"y": out}, feeds)["y"]


def ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """ULP distance as tolerances.md defines it: bit patterns read as sign-magnitude integers."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.dtype.kind == "f", (got.dtype, want.dtype)
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[got.dtype.itemsize]

    def ordered(x):
        i = x.view(bits).astype(np.int64)
        sign = np.int64(1) << (8 * got.dtype.itemsize - 1)
        return np.where(i < 0, -(i & (sign - 1)), i)

    return np.abs(ordered(got) - ordered(want))


def assert_ulp(got, want, ulp: int) -> None:
    """Each element of `got` within `ulp` ULP of `want` (rounded to got's type first)."""
    got = np.asarray(got)
    want = np.asarray(want).astype(got.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    both_nan = np.isnan(got) & np.isnan(want)
    dist = np.where(both_nan, 0, ulp_distance(got, want))
    worst = int(dist.max()) if dist.size else 0
    assert worst <= ulp, f"{worst} ULP > {ulp}: got {got.ravel()[:8]}, want {want.ravel()[:8]}"


def assert_exact(got, want, dtype=None) -> None:
    """Same dtype (when given), shape and values (NaNs in the same places)."""
    got = np.asarray(got)
    want = np.asarray(want, dtype=dtype or got.dtype)
    if dtype is not None:
        assert got.dtype == np.dtype(dtype), f"dtype {got.dtype}, want {np.dtype(dtype)}"
    assert got.shape == want.shape, f"shape {got.shape}, want {want.shape}"
    np.testing.assert_array_equal(got, want)
