"""matmul and gemm exported to TFLite: BATCH_MATMUL, or FULLY_CONNECTED when B is a constant
(its weights laid out [N, K] at export time, beta * C folded into the bias when C varies along
N only). Budget: K x 2 ULP, +1 for alpha, +1 for C, +1 more for beta != 1 (tolerances.md)."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from .helpers import check, ops_of, rand, run_one

RNG = np.random.default_rng(15)


def test_gemm_hand_values():
    b = GraphBuilder()
    a = b.input("a", "float32", [2, 2])
    y = b.gemm(a, b.constant(np.array([[1, 2], [3, 4]], np.float32)),
               c=b.constant(np.array([10, 20], np.float32)), alpha=2.0, beta=0.5)
    got = run_one(b, y, {"a": np.array([[1, 0], [1, 1]], np.float32)}, ulp=2)
    assert got.tolist() == [[2 + 5, 4 + 10], [8 + 5, 12 + 10]]


@pytest.mark.parametrize("a_shape,b_shape", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)),
                                             ((2, 1, 3, 4), (3, 4, 5)),
                                             ((2, 3, 4, 5, 6), (2, 3, 4, 6, 2))])
@pytest.mark.parametrize("const_b", [False, True])
def test_matmul_broadcasts_batches(a_shape, b_shape, const_b):
    b = GraphBuilder()
    a = b.input("a", "float32", list(a_shape))
    feeds = {"a": rand(RNG, a_shape, "float32", 0, 1)}
    if const_b:
        w = b.constant(rand(RNG, b_shape, "float32", 0, 1))
    else:
        w = b.input("b", "float32", list(b_shape))
        feeds["b"] = rand(RNG, b_shape, "float32", 0, 1)
    graph = b.build({"y": b.matmul(a, w)})
    y = check(graph, feeds, ulp=2 * a_shape[-1])["y"]
    assert y.shape == tuple(graph.outputs["y"].shape)


@pytest.mark.parametrize("const_b", [False, True])
@pytest.mark.parametrize("c_shape,const_c,opts", [
    (None, True, dict()), (None, True, dict(aTranspose=True)),
    (None, True, dict(bTranspose=True, alpha=0.5)), ((5,), True, dict()),
    ((3, 5), True, dict(beta=0.5)), ((1, 5), True, dict(beta=0.25, alpha=2.0)),
    ((3, 1), False, dict()), ((), True, dict(beta=3.0)),
])
def test_gemm_options(const_b, c_shape, const_c, opts):
    a_shape = (4, 3) if opts.get("aTranspose") else (3, 4)
    b_shape = (5, 4) if opts.get("bTranspose") else (4, 5)
    b = GraphBuilder()
    a = b.input("a", "float32", list(a_shape))
    feeds = {"a": rand(RNG, a_shape, "float32", 0, 1)}
    if const_b:
        w = b.constant(rand(RNG, b_shape, "float32", 0, 1))
    else:
        w = b.input("b", "float32", list(b_shape))
        feeds["b"] = rand(RNG, b_shape, "float32", 0, 1)
    if c_shape is not None:
        value = rand(RNG, c_shape, "float32", 0, 1)
        if const_c:
            opts["c"] = b.constant(value)
        else:
            opts["c"] = b.input("c", "float32", list(c_shape))
            feeds["c"] = value
    graph = b.build({"y": b.gemm(a, w, **opts)})
    check(graph, feeds, ulp=2 * 4 + 3)
    ops = ops_of(graph)
    assert ("FULLY_CONNECTED" in ops) == const_b and ("BATCH_MATMUL" in ops) != const_b


def test_gemm_folds_a_row_constant_c_into_the_bias():
    b = GraphBuilder()
    a = b.input("a", "float32", [3, 4])
    y = b.gemm(a, b.constant(rand(RNG, (4, 5), "float32", 0, 1)),
               c=b.constant(rand(RNG, (1, 5), "float32", 0, 1)), beta=0.5)
    graph = b.build({"y": y})
    check(graph, {"a": rand(RNG, (3, 4), "float32", 0, 1)}, ulp=2 * 4 + 3)
    assert ops_of(graph) == ["FULLY_CONNECTED"]


@pytest.mark.parametrize("op", ["matmul", "gemm"])
def test_float16(op):
    b = GraphBuilder()
    a = b.input("a", "float16", [3, 4])
    w = b.constant(rand(RNG, (4, 5), "float16", 0, 1))
    y = run_one(b, getattr(b, op)(a, w), {"a": rand(RNG, (3, 4), "float16", 0, 1)}, ulp=8)
    assert y.dtype == np.float16
