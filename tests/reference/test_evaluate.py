"""The interpreter's interface: feeds and constants in, outputs and kept operands out, the float
type it computes in, and clear errors."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.errors import ConverterError
from converter.verification.reference import KERNELS, evaluate


def _graph():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [2, 2])
    k = b.constant(np.array([[1, 2], [3, 4]], np.int32))
    two = b.constant("float32", 2.0)  # a filled scalar constant
    h = b.mul(x, two, name="h")
    c = b.cast(k, "float32", name="c")
    y = b.add(h, c, name="sum")
    return b.build({"out": b.relu(y), "count": b.reduceSum(k)})


X = np.array([[0.1, -5.0], [1.0, 2.0]], np.float32)


def test_outputs_by_name_with_widened_floats_and_exact_integers():
    out = evaluate(_graph(), {"x": X})
    assert set(out) == {"out", "count"}
    assert out["out"].dtype == np.float64 and out["count"].dtype == np.int32
    # float32(0.1) widened, times 2, plus 1: no rounding back to float32 on the way.
    assert out["out"][0, 0] == float(np.float32(0.1)) * 2 + 1
    np.testing.assert_array_equal(out["out"][0, 1:], [0])
    assert out["count"] == 10


def test_keep_returns_named_intermediates_and_all():
    g = _graph()
    out = evaluate(g, {"x": X}, keep=["h", "c"])
    assert set(out) == {"out", "count", "h", "c"}
    np.testing.assert_array_equal(out["h"], X.astype(np.float64) * 2)
    assert set(evaluate(g, {"x": X}, keep="sum")) == {"out", "count", "sum"}  # one name
    every = evaluate(g, {"x": X}, keep="all")
    assert {"h", "c", "sum"} <= set(every)
    assert every["sum"][0, 1] == -8.0  # relu's input (-5 * 2 + 2), before it clamps
    with pytest.raises(ConverterError, match="no operand named 'nope'"):
        evaluate(g, {"x": X}, keep=["nope"])


def test_float32_mode_computes_in_float32():
    b = GraphBuilder("f")
    x = b.input("x", "float32", [1])
    g = b.build({"y": b.div(x, b.constant(np.array([3.0], np.float32)))})
    y32 = evaluate(g, {"x": np.array([1.0], np.float32)}, dtype=np.float32)["y"]
    y64 = evaluate(g, {"x": np.array([1.0], np.float32)})["y"]
    assert y32.dtype == np.float32 and y32[0] == np.float32(1) / np.float32(3)
    assert y64[0] == 1 / 3 and y64[0] != float(y32[0])
    with pytest.raises(ValueError, match="float64 or float32"):
        evaluate(g, {"x": np.array([1.0], np.float32)}, dtype=np.float16)


def test_an_op_without_a_kernel_is_named(monkeypatch):
    monkeypatch.delitem(KERNELS, "relu")
    with pytest.raises(NotImplementedError, match="'relu'"):
        evaluate(_graph(), {"x": X})


def test_missing_or_misshapen_feeds_are_clear_errors():
    with pytest.raises(ConverterError, match="input 'x' .* is not fed"):
        evaluate(_graph(), {})
    with pytest.raises(ConverterError, match=r"the feed has \[3\]"):
        evaluate(_graph(), {"x": np.zeros(3, np.float32)})
    with pytest.raises(ConverterError, match="input 'x' is float32, the feed is numpy float64"):
        evaluate(_graph(), {"x": X.astype(np.float64)})
    with pytest.raises(ConverterError, match="'z' is not an input of the graph"):
        evaluate(_graph(), {"x": X, "z": X})


def test_results_are_writable_even_when_they_view_a_constant():
    b = GraphBuilder("v")
    g = b.build({"y": b.reshape(b.constant(np.arange(4, dtype=np.int32)), [2, 2])})  # a view
    y = evaluate(g, {})["y"]
    y[0, 0] = 7
    assert y[0, 0] == 7


def test_packed_int4_constants_are_unpacked():
    b = GraphBuilder("q4")
    w = b.constant("int4", [2, 3], [[-8, 7, 1], [0, -1, 3]])
    scale = b.constant(np.array([[0.5, 0.5, 0.5]], np.float32))
    zero = b.constant("int4", [1, 3], [[0, 1, -1]])
    g = b.build({"y": b.dequantizeLinear(w, scale, zero)})
    np.testing.assert_array_equal(evaluate(g, {})["y"], [[-4, 3, 1], [0, -1, 2]])
