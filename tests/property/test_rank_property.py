"""The rank pass on random shapes, size-1 dimensions and broadcasts included: after the pass
every op the target limits is within its rank window (or the pass says why it could not), the
graph's outputs keep their shapes, and the numbers are numpy's for the op on the original
shapes (an oracle that shares nothing with the pass or our executor's lowering).

Shapes are drawn of rank 0 to 7 with many 1s (the dims that broadcast, that reshapes may drop
or keep, and that make merge groups ambiguous); targets take ranks 1..4, 0..4 or 2..3.
"""
from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import converter
from converter.ops.builder import GraphBuilder

from ..passes.test_rank import rank_pass, seeded, target

WINDOWS = [(1, 4), (0, 4), (2, 3)]
dims = st.sampled_from([1, 1, 1, 2, 3, 4])
shapes = st.lists(dims, min_size=0, max_size=7).map(tuple)
windows = st.sampled_from(WINDOWS)
# Each example costs milliseconds, and a wrong merge shows only on some shapes (a mutation of
# the broadcast labels survived 20 examples): five times the profile's count, whichever runs.
more = settings(max_examples=5 * settings.default.max_examples)


def _in_window_or_noted(graph, op_type, window, result):
    lo, hi = window
    for op in graph.operations:
        if op.op_type != op_type:
            continue
        operand_ranks = [o.rank for o in op.inputs if o is not None] + \
            [o.rank for o in op.outputs]
        if not all(lo <= r <= hi for r in operand_ranks):
            assert result.notes, f"{op_type} left at ranks {operand_ranks} without a note"


def _broadcast_partner(shape, draw):
    """A shape that broadcasts against `shape`: a suffix of it with some dims set to 1."""
    k = draw(st.integers(0, len(shape)))
    tail = list(shape[len(shape) - k:])
    return tuple(1 if draw(st.booleans()) else d for d in tail)


@more
@given(st.data(), shapes, windows, st.sampled_from(["add", "mul", "max", "pow"]))
def test_binary_broadcasting_keeps_numpy_numbers(data, a_shape, window, op_type):
    b_shape = _broadcast_partner(a_shape, data.draw)
    if data.draw(st.booleans()):
        a_shape, b_shape = b_shape, a_shape
    a, c = seeded(a_shape, 1), seeded(b_shape, 2)
    if op_type == "pow":
        a = np.abs(a) + 0.5
    b = GraphBuilder("binary")
    x, y = b.input("a", "float32", list(a_shape)), b.input("b", "float32", list(b_shape))
    g = b.build({"y": b.relu(getattr(b, op_type)(x, y))})
    result = rank_pass(g, target("t", {op_type: window, "relu": window}))
    _in_window_or_noted(g, op_type, window, result)
    want = np.maximum({"add": np.add, "mul": np.multiply, "max": np.maximum,
                       "pow": np.power}[op_type](a.astype(np.float64), c), 0)
    got = converter.run(g, {"a": a, "b": c})["y"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=3e-7 if op_type == "pow" else 1.2e-7, atol=0)


@more
@given(st.data(), shapes, windows, st.sampled_from(["reduceSum", "reduceMax", "reduceMean"]),
       st.booleans())
def test_reductions_over_random_axes(data, shape, window, op_type, keep):
    axes = sorted(data.draw(st.sets(st.integers(0, max(len(shape) - 1, 0)),
                                    max_size=len(shape))))
    x_val = seeded(shape, 3)
    b = GraphBuilder("reduce")
    x = b.input("x", "float32", list(shape))
    g = b.build({"y": getattr(b, op_type)(x, axes=axes, keepDimensions=keep)})
    result = rank_pass(g, target("t", {op_type: window}))
    _in_window_or_noted(g, op_type, window, result)
    fn = {"reduceSum": np.sum, "reduceMax": np.max, "reduceMean": np.mean}[op_type]
    want = fn(x_val.astype(np.float64), axis=tuple(axes), keepdims=keep)
    got = converter.run(g, {"x": x_val})["y"]
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@more
@given(st.data(), shapes.filter(lambda s: len(s) >= 1), windows)
def test_data_movement_is_exact(data, shape, window):
    rank = len(shape)
    perm = data.draw(st.permutations(range(rank)))
    starts = [data.draw(st.integers(0, d - 1)) for d in shape]
    sizes = [data.draw(st.integers(1, d - s)) for d, s in zip(shape, starts)]
    before = [data.draw(st.integers(0, 2)) for _ in shape]
    after = [data.draw(st.integers(0, 2)) for _ in shape]
    reps = [data.draw(st.sampled_from([1, 1, 2])) for _ in shape]
    flip = sorted(data.draw(st.sets(st.integers(0, rank - 1))))
    axis = data.draw(st.integers(0, rank - 1))
    x_val = seeded(shape, 4)
    b = GraphBuilder("moves")
    x = b.input("x", "float32", list(shape))
    g = b.build({"t": b.transpose(x, permutation=list(perm)),
                 "s": b.slice(x, starts, sizes),
                 "p": b.pad(x, before, after, value=0.5),
                 "r": b.reverse(x, axes=flip),
                 "tile": b.tile(x, reps),
                 "c": b.concat([x, x], axis)})
    ops = ["transpose", "slice", "pad", "reverse", "tile", "concat"]
    result = rank_pass(g, target("t", {op: window for op in ops}))
    for op in ops:
        _in_window_or_noted(g, op, window, result)
    got = converter.run(g, {"x": x_val})
    window_slices = tuple(slice(s, s + n) for s, n in zip(starts, sizes))
    want = {"t": np.transpose(x_val, perm), "s": x_val[window_slices],
            "p": np.pad(x_val, list(zip(before, after)), constant_values=0.5),
            "r": np.flip(x_val, axis=tuple(flip)) if flip else x_val,
            "tile": np.tile(x_val, reps), "c": np.concatenate([x_val, x_val], axis)}
    for name, expected in want.items():
        assert got[name].shape == expected.shape, name
        np.testing.assert_array_equal(got[name], expected, err_msg=name)


@more
@given(st.data(), shapes.filter(lambda s: len(s) >= 1), windows)
def test_gather_and_softmax_keep_their_axis(data, shape, window):
    axis = data.draw(st.integers(0, len(shape) - 1))
    index_shape = data.draw(st.lists(st.sampled_from([1, 2]), max_size=2))
    assume(len(shape) - 1 + len(index_shape) <= 7)
    indices = np.random.default_rng(5).integers(0, shape[axis], index_shape).astype(np.int32)
    x_val = seeded(shape, 6)
    b = GraphBuilder("axis")
    x = b.input("x", "float32", list(shape))
    g = b.build({"g": b.gather(x, b.constant(indices), axis=axis),
                 "sm": b.softmax(x, axis)})
    result = rank_pass(g, target("t", {"gather": window, "softmax": window}))
    for op in ("gather", "softmax"):
        _in_window_or_noted(g, op, window, result)
    got = converter.run(g, {"x": x_val})
    np.testing.assert_array_equal(got["g"], np.take(x_val, indices, axis=axis))
    e = np.exp(x_val.astype(np.float64) - x_val.max(axis=axis, keepdims=True))
    want = e / e.sum(axis=axis, keepdims=True)
    assert got["sm"].shape == want.shape
    np.testing.assert_allclose(got["sm"], want, rtol=2e-6, atol=1e-7)
