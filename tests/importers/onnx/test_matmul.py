"""ONNX MatMul, Gemm, MatMulInteger and Einsum: hand-computed products, the WebNN ops chosen,
and agreement with ONNX Runtime."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from .helpers import check, op_named, ops_of, rand, single_node

I32 = onnx.TensorProto.INT32


def _matmul(a, b, **kwargs):
    feeds = {"a": a, "b": b}
    return check(single_node("MatMul", ["a", "b"], feeds), feeds, **kwargs)


def test_matmul_of_two_vectors_is_a_scalar():
    graph, (y,) = _matmul(np.array([1, 2, 3], np.float32), np.array([4, 5, 6], np.float32))
    assert y.shape == () and y == 32
    assert ops_of(graph) == ["reshape", "reshape", "matmul", "reshape"]


def test_matmul_matrix_by_vector_drops_the_column_axis():
    _, (y,) = _matmul(np.array([[1, 2], [3, 4]], np.float32), np.array([1, 1], np.float32))
    np.testing.assert_array_equal(y, [3, 7])


@pytest.mark.parametrize("a_shape, b_shape, out", [
    ((3,), (2, 3, 4), (2, 4)),
    ((2, 1, 3, 4), (4,), (2, 1, 3)),
    ((2, 1, 3, 4), (5, 4, 2), (2, 5, 3, 2)),
])
def test_matmul_numpy_shapes(a_shape, b_shape, out):
    _, (y,) = _matmul(rand(*a_shape), rand(*b_shape))
    assert y.shape == out


def test_gemm_with_transposes_alpha_and_beta():
    a = np.array([[1, 3], [2, 4]], np.float32)   # transposed: [[1, 2], [3, 4]]
    b = np.array([[1, 0], [1, 1]], np.float32)   # transposed: [[1, 1], [0, 1]]
    c = np.array([10, 20], np.float32)
    model = single_node("Gemm", ["a", "b", "c"], {"a": a}, {"b": b, "c": c}, transA=1, transB=1,
                        alpha=2.0, beta=0.5)
    graph, (y,) = check(model, {"a": a})
    # 2 * [[1, 3], [3, 7]] + 0.5 * [10, 20]
    np.testing.assert_allclose(y, [[7, 16], [11, 24]])
    gemm = op_named(graph, "gemm")
    assert gemm.attrs == {"alpha": 2.0, "beta": 0.5, "aTranspose": True, "bTranspose": True}


def test_gemm_without_c():
    a, b = rand(3, 4), rand(4, 5)
    _, (y,) = check(single_node("Gemm", ["a", "b"], {"a": a, "b": b}), {"a": a, "b": b})
    assert y.shape == (3, 5)


def test_matmul_integer_per_column_zero_points():
    a = np.array([[1, 2]], np.uint8)
    b = np.array([[1, 2], [3, 4]], np.uint8)
    model = single_node("MatMulInteger", ["a", "b", "az", "bz"], {"a": a},
                        {"b": b, "az": np.array(1, np.uint8), "bz": np.array([1, 2], np.uint8)},
                        out_types=[I32], opset=10)
    graph, (y,) = check(model, {"a": a})
    # [0, 1] x [[0, 0], [2, 2]]
    np.testing.assert_array_equal(y, [[2, 2]])
    assert y.dtype == np.int32
    assert ops_of(graph) == ["dequantizeLinear", "dequantizeLinear", "matmul", "cast"]


def test_matmul_integer_batched_int8_matches_onnx_runtime():
    a = np.random.default_rng(3).integers(-128, 127, (2, 3, 8), dtype=np.int8)
    b = np.random.default_rng(4).integers(0, 255, (8, 5), dtype=np.uint8)
    model = single_node("MatMulInteger", ["a", "b", "az"], {"a": a},
                        {"b": b, "az": np.array(-3, np.int8)}, out_types=[I32], opset=10)
    _, (y,) = check(model, {"a": a})
    assert y.shape == (2, 3, 5)


def test_matmul_integer_with_unknown_weights_sums_long_products_in_exact_parts():
    # 255 * 255 * 300 is past 2^24, where float32 stops holding every integer: K is cut in
    # two parts, each summed exactly, added in int32
    a = np.full((1, 300), 255, np.uint8)
    b = np.full((300, 2), 255, np.uint8)
    b[0, 1] = 254
    model = single_node("MatMulInteger", ["a", "b"], {"a": a, "b": b}, out_types=[I32],
                        opset=10)
    graph, (y,) = check(model, {"a": a, "b": b})
    np.testing.assert_array_equal(y, [[255 * 255 * 300, 255 * 255 * 300 - 255]])
    assert ops_of(graph).count("matmul") == 2


# -- Einsum ----------------------------------------------------------------------------------
def _einsum(equation: str, *operands, **kwargs):
    feeds = {f"x{i}": x for i, x in enumerate(operands)}
    model = single_node("Einsum", list(feeds), feeds, opset=12, equation=equation)
    return check(model, feeds, **kwargs)


def test_einsum_inner_product():
    _, (y,) = _einsum("i,i", np.array([1, 2, 3], np.float32), np.array([4, 5, 6], np.float32))
    assert y.shape == () and y == 32


def test_einsum_transpose_and_row_sums():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    graph, (y,) = _einsum("ij->ji", x)
    np.testing.assert_array_equal(y, x.T)
    assert ops_of(graph) == ["transpose"]
    graph, (y,) = _einsum("ij->i", x)
    np.testing.assert_array_equal(y, [6, 15])
    assert ops_of(graph) == ["reduceSum"]


def test_einsum_batch_diagonal():
    x = np.arange(18, dtype=np.float32).reshape(2, 3, 3)
    graph, (y,) = _einsum("...ii->...i", x, ort=False)
    np.testing.assert_array_equal(y, [[0, 4, 8], [9, 13, 17]])
    assert "gather" in ops_of(graph)


def test_einsum_outer_product():
    _, (y,) = _einsum("i,j->ij", np.array([1, 2], np.float32), np.array([3, 4, 5], np.float32))
    np.testing.assert_array_equal(y, [[3, 4, 5], [6, 8, 10]])


@pytest.mark.parametrize("equation, shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("abc,cd->bd", [(2, 3, 4), (4, 5)]),
    ("ij,ij->i", [(3, 4), (3, 4)]),
    ("...ij,...jk", [(2, 3, 4), (2, 4, 5)]),
])
def test_einsum_contractions_match_numpy(equation, shapes):
    operands = [rand(*s) for s in shapes]
    _, (y,) = _einsum(equation, *operands)
    np.testing.assert_allclose(y, np.einsum(equation, *operands), rtol=1e-4, atol=1e-5)
