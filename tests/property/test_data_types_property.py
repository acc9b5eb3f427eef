"""The int64 -> int32 pass on random integers at and beyond both int32 bounds: a group of
operands becomes int32 exactly when every constant in it fits, and the graph computes the same
int64 numbers before and after (run-time values kept inside int32)."""
from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import converter
from converter import dtypes
from converter.ops.builder import GraphBuilder
from converter.passes import PassContext, run_passes
from converter.targets import Target

from ..passes.test_data_types import target

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

near_bounds = st.one_of(st.integers(INT32_MIN - 4, INT32_MIN + 4),
                        st.integers(INT32_MAX - 4, INT32_MAX + 4),
                        st.integers(INT64_MIN, INT64_MIN + 4), st.integers(INT64_MAX - 4, INT64_MAX),
                        st.integers(INT64_MIN, INT64_MAX), st.integers(-100, 100))
TARGET: Target = target("ops_without_int64", io_types=dtypes.SPEC_DATA_TYPES)


def retype(graph):
    [(_, result)] = run_passes(graph, ["data_types"], PassContext(target=TARGET))
    return result


@given(st.lists(near_bounds, min_size=1, max_size=5), st.booleans())
def test_a_constant_converts_exactly_when_all_its_values_fit(values, scalar):
    values = values[:1] if scalar else values
    fits = all(INT32_MIN <= v <= INT32_MAX for v in values)
    b = GraphBuilder("g")
    x = b.input("x", "int64", [len(values)])
    c = b.constant("int64", values[0], name="c") if scalar else \
        b.constant(np.array(values, np.int64), name="c")
    # max(x, c) with x = INT64_MIN: equal to c, and no run-time value leaves int32 when c fits
    g = b.build({"y": b.max(x, c, name="y")})
    feeds = {"x": np.full(len(values), INT64_MIN if not fits else INT32_MIN, np.int64)}
    before = converter.run(g, feeds)

    result = retype(g)

    assert (g.operand("c").data_type == "int32") == fits
    kept = [n for n in result.notes if "kept int64" in n]
    assert bool(kept) == (not fits)
    if not fits:
        assert "constant 'c' has values outside int32" in kept[0]
    after = converter.run(g, feeds)
    assert after["y"].dtype == np.int64
    np.testing.assert_array_equal(after["y"], before["y"])
    np.testing.assert_array_equal(after["y"], np.broadcast_to(np.array(values, np.int64),
                                                              (len(values),)))


@given(near_bounds, near_bounds)
def test_two_groups_convert_independently(a, b_value):
    b = GraphBuilder("g")
    x = b.input("x", "int64", [1])
    z = b.input("z", "int64", [1])
    g = b.build({"p": b.max(x, b.constant(np.array([a], np.int64), name="ca"), name="p"),
                 "q": b.max(z, b.constant(np.array([b_value], np.int64), name="cb"), name="q")})
    feeds = {"x": np.array([INT32_MIN], np.int64), "z": np.array([INT32_MIN], np.int64)}
    if not INT32_MIN <= a <= INT32_MAX:
        feeds["x"] = np.array([INT64_MIN], np.int64)
    if not INT32_MIN <= b_value <= INT32_MAX:
        feeds["z"] = np.array([INT64_MIN], np.int64)
    before = converter.run(g, feeds)
    retype(g)
    assert (g.operand("ca").data_type == "int32") == (INT32_MIN <= a <= INT32_MAX)
    assert (g.operand("cb").data_type == "int32") == (INT32_MIN <= b_value <= INT32_MAX)
    after = converter.run(g, feeds)
    assert after["p"].tolist() == before["p"].tolist() == [a]
    assert after["q"].tolist() == before["q"].tolist() == [b_value]
