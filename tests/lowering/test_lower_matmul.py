"""matmul and gemm through the ONNX lowering. Budget K x 2 ULP (gemm's rule in tolerances.md,
plus one per alpha/beta/c term); non-negative inputs keep the sums free of cancellation."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from .helpers import assert_exact, assert_ulp, run1

RNG = np.random.default_rng(3)


def test_matmul_hand_values():
    b = GraphBuilder()
    a = b.input("a", "float32", [2, 2])
    y = b.matmul(a, b.constant(np.array([[5, 6], [7, 8]], np.float32)))
    got = run1(b, y, {"a": np.array([[1, 2], [3, 4]], np.float32)})
    assert_exact(got, [[19, 22], [43, 50]], np.float32)


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 3, 4), (4, 2)),
                                   ((2, 1, 3, 4), (3, 4, 2)), ((1, 3, 4), (5, 4, 3))])
def test_matmul_broadcasts_batch_dimensions(sa, sb):
    x, w = RNG.random(sa).astype(np.float32), RNG.random(sb).astype(np.float32)
    b = GraphBuilder()
    a = b.input("a", "float32", list(sa))
    got = run1(b, b.matmul(a, b.constant(w)), {"a": x})
    want = np.matmul(x.astype(np.float64), w.astype(np.float64))
    assert_ulp(got, want, sa[-1] * 2)


def test_matmul_float16():
    x, w = RNG.random((2, 8)).astype(np.float16), RNG.random((8, 3)).astype(np.float16)
    b = GraphBuilder()
    a = b.input("a", "float16", [2, 8])
    got = run1(b, b.matmul(a, b.constant(w)), {"a": x})
    assert got.dtype == np.float16
    assert_ulp(got, x.astype(np.float64) @ w.astype(np.float64), 16)


def test_gemm_hand_values():
    b = GraphBuilder()
    a = b.input("a", "float32", [2, 2])
    y = b.gemm(a, b.constant(np.eye(2, dtype=np.float32)),
               c=b.constant(np.array([1, 2], np.float32)),
               alpha=2.0, beta=10.0)
    got = run1(b, y, {"a": np.array([[1, 2], [3, 4]], np.float32)})
    assert_exact(got, [[12, 24], [16, 28]], np.float32)


@pytest.mark.parametrize("a_t,b_t", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("c_shape", [None, (), (1,), (5,), (3, 1), (3, 5)])
def test_gemm_transposes_and_c_broadcasting(a_t, b_t, c_shape):
    a = RNG.random((4, 3) if a_t else (3, 4)).astype(np.float32)
    w = RNG.random((5, 4) if b_t else (4, 5)).astype(np.float32)
    b = GraphBuilder()
    ai = b.input("a", "float32", list(a.shape))
    opts = dict(alpha=0.5, beta=2.0, aTranspose=a_t, bTranspose=b_t)
    want = 0.5 * ((a.T if a_t else a).astype(np.float64) @ (w.T if b_t else w).astype(np.float64))
    if c_shape is not None:
        c = RNG.random(c_shape).astype(np.float32)
        opts["c"] = b.constant(c)
        want = want + 2.0 * c.astype(np.float64)
    got = run1(b, b.gemm(ai, b.constant(w), **opts), {"a": a})
    assert_ulp(got, want, 4 * 2 + 3)
