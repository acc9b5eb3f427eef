"""matmul and gemm: signatures, output shapes and every validation step of the spec."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.ops.registry import get_op

from .helpers import const, fails


# -- signatures --------------------------------------------------------------------------------
def test_signatures():
    matmul = get_op("matmul")
    assert (matmul.operands, matmul.operand_options, matmul.options) == (("a", "b"), (), ())
    gemm = get_op("gemm")
    assert (gemm.operands, gemm.operand_options) == (("a", "b"), ("c",))
    assert [(p.name, p.kind, p.default) for p in gemm.options] == [
        ("alpha", "float", 1.0), ("beta", "float", 1.0),
        ("aTranspose", "bool", False), ("bTranspose", "bool", False)]


# -- matmul -----------------------------------------------------------------------------------
def test_matmul_2d():
    b = GraphBuilder()
    y = b.matmul(b.input("a", "float32", [2, 3]), const(b, 3, 4))
    assert (y.data_type, y.shape) == ("float32", (2, 4))  # [2,3] x [3,4] = [2,4]


def test_matmul_stacks_broadcast_their_batch_dimensions():
    b = GraphBuilder()
    # batch [5] and [] broadcast to [5]: [5, 2, 3] x [3, 4] = [5, 2, 4].
    assert b.matmul(b.input("a", "float16", [5, 2, 3]),
                    const(b, 3, 4, dtype=np.float16)).shape == (5, 2, 4)
    # batch [2, 1] and [4] broadcast to [2, 4]: [2, 1, 2, 3] x [4, 3, 5] = [2, 4, 2, 5].
    assert b.matmul(b.input("c", "float32", [2, 1, 2, 3]), const(b, 4, 3, 5)).shape == (2, 4, 2, 5)
    # b may have the higher rank: [2, 3] x [6, 3, 1] = [6, 2, 1].
    assert b.matmul(b.input("d", "float32", [2, 3]), const(b, 6, 3, 1)).shape == (6, 2, 1)


def test_matmul_inner_dimensions_must_agree():
    b = GraphBuilder()
    fails(lambda: b.matmul(b.input("a", "float32", [2, 3]), const(b, 4, 5)), "matmul", "b",
          "a has 3 columns", "b has 4 rows")


def test_matmul_batch_dimensions_must_broadcast():
    b = GraphBuilder()
    # batch [2] and [3]: neither is 1.
    fails(lambda: b.matmul(b.input("a", "float32", [2, 2, 3]), const(b, 3, 3, 4)),
          "matmul", "b", "[2] and [3] are not broadcastable")


def test_matmul_operands_are_at_least_2d_and_of_one_type():
    b = GraphBuilder()
    fails(lambda: b.matmul(b.input("a", "float32", [3]), const(b, 3, 4)), "matmul", "a", "rank 1")
    fails(lambda: b.matmul(b.input("c", "float32", [2, 3]), const(b, 3)), "matmul", "b", "rank 1")
    fails(lambda: b.matmul(b.input("d", "float32", [2, 3]), const(b, 3, 4, dtype=np.float16)),
          "matmul", "b", "must match a")
    fails(lambda: b.matmul(b.input("e", "int32", [2, 3]), const(b, 3, 4, dtype=np.int32)),
          "matmul", "a", "not allowed")


# -- gemm -------------------------------------------------------------------------------------
def test_gemm_shapes_with_and_without_transposes():
    b = GraphBuilder()
    a = b.input("a", "float32", [2, 3])       # [M, K] = [2, 3]
    a_t = b.input("at", "float32", [3, 2])    # [K, M]
    w = const(b, 3, 4)                        # [K, N] = [3, 4]
    w_t = const(b, 4, 3)                      # [N, K]
    assert b.gemm(a, w).shape == (2, 4)
    assert b.gemm(a_t, w, aTranspose=True).shape == (2, 4)
    assert b.gemm(a, w_t, bTranspose=True).shape == (2, 4)
    y = b.gemm(a_t, w_t, aTranspose=True, bTranspose=True, alpha=0.5, beta=2)
    assert (y.data_type, y.shape) == ("float32", (2, 4))
    assert y.producer.attrs == {"aTranspose": True, "bTranspose": True, "alpha": 0.5, "beta": 2.0}


def test_gemm_inner_dimensions_must_agree():
    b = GraphBuilder()
    a = b.input("a", "float32", [2, 3])
    fails(lambda: b.gemm(a, const(b, 4, 3)), "gemm", "b", "[2, 3]", "[4, 3]")
    # Transposing a makes it [3, 2]: K = 2 now, and b's 3 rows no longer match.
    fails(lambda: b.gemm(a, const(b, 3, 4), aTranspose=True), "gemm", "b", "[3, 2]")


@pytest.mark.parametrize("c_shape", [(), (4,), (1, 4), (2, 1), (1, 1), (2, 4)])
def test_gemm_c_broadcasts_unidirectionally_to_m_n(c_shape):
    b = GraphBuilder()
    a = b.input("a", "float32", [2, 3])
    c = const(b, *c_shape)
    y = b.gemm(a, const(b, 3, 4), c=c)
    assert y.shape == (2, 4)
    assert y.producer.inputs[2] is c  # c is the trailing operand slot


@pytest.mark.parametrize("c_shape", [(3,), (4, 2), (2, 2), (3, 4)])
def test_gemm_c_that_does_not_broadcast_to_m_n_fails(c_shape):
    b = GraphBuilder()
    a = b.input("a", "float32", [2, 3])
    fails(lambda: b.gemm(a, const(b, 3, 4), c=const(b, *c_shape)), "gemm", "c",
          "does not broadcast to the output shape [2, 4]")


def test_gemm_limits():
    b = GraphBuilder()
    a = b.input("a", "float32", [2, 3])
    fails(lambda: b.gemm(b.input("a3", "float32", [1, 2, 3]), const(b, 3, 4)), "gemm", "a", "rank 3")
    fails(lambda: b.gemm(a, const(b, 3, 4), c=const(b, 1, 2, 4)), "gemm", "c", "rank 3")
    fails(lambda: b.gemm(a, const(b, 3, 4), c=const(b, 4, dtype=np.float16)), "gemm", "c",
          "must match a")
