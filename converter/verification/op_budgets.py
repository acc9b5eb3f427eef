"""Float32 ULP budgets of single WebNN operations (shared/reference/tolerances.md), for
judging one operation run alone on exact inputs against its float64 result.

    budget = op_ulp_budget(op)                   # conv2d: kh * kw * Cin/groups * 2 ...
    ok, worst = within_ulp(got, want, budget)
"""
from __future__ import annotations

import numpy as np

from ..ir import Operation
from .parity import ulp_distance

__all__ = ["op_ulp_budget", "within_ulp"]

# Fixed float32 budgets from the shared tolerances; data movement, comparisons and logic are
# exact (0), as are relu, clamp and maxPool2d (they select one of their inputs).
_FIXED = {"sigmoid": 34, "elu": 18, "gelu": 18, "softplus": 18, "batchNormalization": 6,
          "hardSwish": 4, "softsign": 3, "hardSigmoid": 2, "linear": 2, "leakyRelu": 1,
          "prelu": 1, "add": 1, "sub": 1, "mul": 1, "relu": 0, "clamp": 0, "maxPool2d": 0,
          "div": 2, "max": 0, "min": 0, "neg": 0, "abs": 0}
_MOVEMENT = {"reshape", "transpose", "slice", "gather", "gatherElements", "gatherND", "concat",
             "split", "expand", "pad", "tile", "reverse", "identity", "cast", "where",
             "triangular"}
# Not in the shared table: transcendental functions, normalisations, resampling. 32 ULP is the
# order of a float32 libm's error on exp/log/tanh/erf (a few ULP) times the handful of steps
# an implementation chains (range reduction, polynomial, reconstruction), with room to spare;
# a converter bug (a wrong axis, a wrong op) is off by far more.
_OTHER = 32


def op_ulp_budget(op: Operation) -> int:
    """The float32 ULP budget of one operation (shared/reference/tolerances.md)."""
    t = op.op_type
    if t in _FIXED:
        return _FIXED[t]
    if t in _MOVEMENT or t.startswith(("equal", "greater", "lesser", "logical", "not")):
        return 0
    if t in ("conv2d", "convTranspose2d"):
        filt = op.input("filter")
        out_channels = _channels(op)
        k = filt.desc.size // max(out_channels // (op.attr("groups") or 1), 1) \
            if t == "convTranspose2d" else filt.desc.size // max(out_channels, 1)
        return int(k) * 2
    if t in ("gemm", "matmul"):
        a = op.inputs[0].shape
        k = a[-2] if t == "gemm" and op.attr("aTranspose") else a[-1]
        return int(k) * 2 + (3 if t == "gemm" else 0)
    if t == "softmax":
        return int(op.inputs[0].shape[op.attr("axis")]) * 3 + 3
    if t.startswith("reduce"):
        n = max(op.inputs[0].desc.size // max(op.output.desc.size, 1), 1)
        return 2 * n + 1 if t == "reduceL2" else n
    if t in ("averagePool2d", "l2Pool2d"):
        window = op.attr("windowDimensions")
        n = int(np.prod(window)) if window else op.inputs[0].desc.size // op.output.desc.size
        return 2 * n + 1
    return _OTHER


def _channels(op: Operation) -> int:
    shape = op.output.shape
    return shape[3] if op.attr("inputLayout") == "nhwc" else shape[1]


def within_ulp(got: np.ndarray, want: np.ndarray, budget: int) -> tuple[bool, int]:
    """ULP distance within `budget`, or |diff| within `budget` ULPs of the tensor's largest
    magnitude: a sum that cancels to near zero keeps the absolute error of its terms, which
    ULPs of the tiny result would overstate."""
    got, want = np.asarray(got), np.asarray(want)
    if want.dtype.kind != "f":
        return bool(np.array_equal(got, want)), 0
    u = ulp_distance(got.astype(want.dtype), want)
    same = (np.isnan(got) & np.isnan(want)) | (got == want)
    scale = float(np.nanmax(np.abs(want[np.isfinite(want)]))) if np.isfinite(want).any() else 0
    floor = budget * float(np.spacing(want.dtype.type(scale)))
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    bad = ~same & (u > budget) & ~(diff <= floor)
    return not bool(bad.any()), int(u[bad].max()) if bad.any() else 0
