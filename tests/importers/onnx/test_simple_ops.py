"""The ops folded with numpy instead of ONNX's reference evaluator (simple_ops.py) give the
evaluator's results exactly: values and types, broadcast, wrapped integers, NaN. Swept over
every op and the types it takes."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

from converter.importers.onnx.simple_ops import SIMPLE_OPS, computed

NUMERIC = [np.int8, np.uint8, np.int32, np.int64, np.uint64, np.float16, np.float32,
           np.float64]


def _reference(node: onnx.NodeProto, args: list[np.ndarray]) -> np.ndarray:
    from onnx.reference import ReferenceEvaluator

    names = list(node.input)
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype),
                                            a.shape) for n, a in zip(names, args)]
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_empty_tensor_value_info(node.output[0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return ReferenceEvaluator(model).run(None, dict(zip(names, args)))[0]


def _values(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)  # the extremes, so sums and products wrap
        pool = np.array([info.min, info.max, 0, 1, 2, info.max // 2 + 1], dtype)
        return rng.choice(pool, shape)
    out = rng.normal(0, 1e3, shape).astype(dtype)
    out.reshape(-1)[0] = np.nan
    return out


def _cases():
    for op in sorted(SIMPLE_OPS - {"Cast"}):
        if op in ("And", "Or", "Xor", "Not"):
            types = [np.bool_]
        elif op == "Identity":
            types = [np.bool_, *NUMERIC]
        else:
            types = NUMERIC
        for dtype in types:
            yield op, dtype


@pytest.mark.parametrize("op, dtype", list(_cases()))
def test_numpy_fold_equals_the_reference_evaluator(op, dtype):
    unary = op in ("Identity", "Not")
    args = [_values(dtype, (3, 4), 0)] if unary else \
        [_values(dtype, (3, 4), 0), _values(dtype, (4,), 1)]  # broadcast
    node = helper.make_node(op, [f"a{k}" for k in range(len(args))], ["out"])
    got, want = computed(node, args), _reference(node, args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("source", [np.bool_, np.int8, np.uint16, np.int64])
@pytest.mark.parametrize("to", [T.BOOL, T.INT8, T.UINT8, T.INT32, T.UINT64, T.FLOAT16, T.FLOAT,
                                T.DOUBLE])
def test_cast_from_integers_equals_the_reference_evaluator(source, to):
    node = helper.make_node("Cast", ["a"], ["out"], to=to)
    args = [_values(source, (7,), 2)]
    got, want = computed(node, args), _reference(node, args)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("node, args", [
    (helper.make_node("Add", ["a", "b"], ["o"]), [np.int32([1]), np.int64([1])]),  # types differ
    (helper.make_node("Cast", ["a"], ["o"], to=T.INT32), [np.float32([1.5])]),  # from float
    (helper.make_node("Cast", ["a"], ["o"], to=T.BFLOAT16), [np.int32([1])]),
    (helper.make_node("Less", ["a", "b"], ["o"]), [np.bool_([1]), np.bool_([0])]),
    (helper.make_node("Max", ["a", "b", "c"], ["o"]), [np.int32([1])] * 3),  # 3 inputs
    (helper.make_node("Abs", ["a"], ["o"]), [np.int32([1])]),
])
def test_what_numpy_does_not_compute_exactly_is_left_to_the_evaluator(node, args):
    assert computed(node, args) is None
