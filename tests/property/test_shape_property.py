"""Shape inference of each op family on random shapes, against numpy: the shape the builder
infers must be numpy's, the executor's numbers numpy's, and a shape numpy refuses (shapes that
do not broadcast, axes out of range) must be refused with OpValidationError.

Families: element-wise binary, comparison, logical and ternary (broadcasting), unary,
reductions (axes, keepDimensions), matmul (batch broadcasting, rank-1 operands), the shape
ops (transpose, reshape, concat, slice with strides, pad in every mode, expand, tile, reverse,
split), the indexing ops (gather, gatherElements), normalization (softmax, layerNormalization)
and quantization (per-tensor and broadcast scales)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import converter
from converter.ops.builder import GraphBuilder
from converter.errors import OpValidationError

shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4)


def _values(shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def _run_one(build, feeds):
    """build(b, *inputs) -> output operand; returns (graph output shape, the value)."""
    b = GraphBuilder("p")
    ins = [b.input(f"x{i}", str(v.dtype), list(v.shape)) for i, v in enumerate(feeds)]
    y = build(b, *ins)
    g = b.build({"y": y})
    got = converter.run(g, {f"x{i}": v for i, v in enumerate(feeds)})["y"]
    return tuple(g.outputs["y"].shape), got


def _numpy_shape(fn, *arrays):
    try:
        return fn(*arrays).shape
    except (ValueError, IndexError):
        return None


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
          "min": np.minimum}
COMPARE = {"equal": np.equal, "greater": np.greater, "lesserOrEqual": np.less_equal}


@given(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4),
       st.sampled_from(sorted(BINARY) + sorted(COMPARE)))
def test_binary_ops_broadcast_like_numpy(shapes_, name):
    a, b = _values(shapes_.input_shapes[0], 1), _values(shapes_.input_shapes[1], 2)
    fn = {**BINARY, **COMPARE}[name]
    shape, got = _run_one(lambda bb, x, y: getattr(bb, name)(x, y), [a, b])
    want = fn(a, b)
    assert shape == want.shape == shapes_.result_shape
    if name in COMPARE:
        np.testing.assert_array_equal(got, want.astype(np.uint8))
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


@given(shapes, shapes)
def test_shapes_that_do_not_broadcast_are_refused(s1, s2):
    try:
        want = np.broadcast_shapes(s1, s2)
    except ValueError:
        want = None
    b = GraphBuilder("p")
    x, y = b.input("a", "float32", list(s1)), b.input("b", "float32", list(s2))
    if want is None:
        with pytest.raises(OpValidationError):
            b.add(x, y)
    else:
        assert tuple(b.add(x, y).shape) == tuple(want)


@given(hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=4, max_side=3))
def test_where_broadcasts_its_three_operands_like_numpy(shapes_):
    cond = (np.random.default_rng(3).random(shapes_.input_shapes[0]) > 0.5).astype(np.uint8)
    t, f = _values(shapes_.input_shapes[1], 4), _values(shapes_.input_shapes[2], 5)
    shape, got = _run_one(lambda b, c, x, y: b.where(c, x, y), [cond, t, f])
    want = np.where(cond.astype(bool), t, f)
    assert shape == want.shape
    np.testing.assert_array_equal(got, want)


@given(shapes, st.sampled_from(["relu", "abs", "neg", "floor", "sigmoid", "tanh"]))
def test_unary_ops_keep_the_shape(shape, name):
    x = _values(shape, 6)
    out_shape, got = _run_one(lambda b, v: getattr(b, name)(v), [x])
    ref = {"relu": lambda v: np.maximum(v, 0), "abs": np.abs, "neg": np.negative,
           "floor": np.floor, "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh}[name]
    assert out_shape == x.shape
    np.testing.assert_allclose(got, ref(x), rtol=1e-5, atol=1e-6)


REDUCE = {"reduceSum": np.sum, "reduceMean": np.mean, "reduceMax": np.max, "reduceMin": np.min,
          "reduceProduct": np.prod, "reduceSumSquare": lambda v, **k: np.sum(v * v, **k),
          "reduceL1": lambda v, **k: np.sum(np.abs(v), **k)}


@given(hnp.array_shapes(min_dims=1, max_dims=4, max_side=4), st.data(),
       st.sampled_from(sorted(REDUCE)), st.booleans())
def test_reductions_drop_or_keep_axes_like_numpy(shape, data, name, keep):
    rank = len(shape)
    axes = data.draw(st.lists(st.integers(0, rank - 1), unique=True, max_size=rank))
    x = _values(shape, 7, 0.5, 1.5)
    out_shape, got = _run_one(
        lambda b, v: getattr(b, name)(v, axes=axes, keepDimensions=keep), [x])
    want = REDUCE[name](x, axis=tuple(axes), keepdims=keep)
    assert out_shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-5)


@given(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), st.data())
def test_reduction_axes_out_of_range_or_repeated_are_refused(shape, data):
    bad = data.draw(st.sampled_from([[len(shape)], [0, 0], [len(shape) + 2]]))
    b = GraphBuilder("p")
    with pytest.raises(OpValidationError):
        b.reduceSum(b.input("x", "float32", list(shape)), axes=bad)


@given(hnp.mutually_broadcastable_shapes(signature="(m,n),(n,p)->(m,p)", max_dims=2,
                                         max_side=4))
def test_matmul_broadcasts_batch_dimensions_like_numpy(shapes_):
    a, b = _values(shapes_.input_shapes[0], 8), _values(shapes_.input_shapes[1], 9)
    out_shape, got = _run_one(lambda bb, x, y: bb.matmul(x, y), [a, b])
    want = np.matmul(a, b)
    assert out_shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@given(hnp.array_shapes(min_dims=1, max_dims=4, max_side=4), st.data())
def test_transpose_reverse_and_tile_like_numpy(shape, data):
    rank = len(shape)
    perm = data.draw(st.permutations(range(rank)))
    axes = data.draw(st.lists(st.integers(0, rank - 1), unique=True, max_size=rank))
    reps = data.draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    x = _values(shape, 10)
    s, got = _run_one(lambda b, v: b.transpose(v, permutation=list(perm)), [x])
    assert s == np.transpose(x, perm).shape
    np.testing.assert_array_equal(got, np.transpose(x, perm))
    s, got = _run_one(lambda b, v: b.reverse(v, axes=axes), [x])
    np.testing.assert_array_equal(got, np.flip(x, axis=tuple(axes)) if axes else x)
    s, got = _run_one(lambda b, v: b.tile(v, reps), [x])
    assert s == np.tile(x, reps).shape
    np.testing.assert_array_equal(got, np.tile(x, reps))


@given(hnp.array_shapes(min_dims=1, max_dims=4, max_side=5), st.data())
def test_slice_with_strides_like_numpy(shape, data):
    starts, sizes, strides = [], [], []
    for d in shape:
        start = data.draw(st.integers(0, d - 1))
        size = data.draw(st.integers(1, d - start))
        starts.append(start)
        sizes.append(size)
        strides.append(data.draw(st.integers(1, 3)))
    x = _values(shape, 11)
    s, got = _run_one(lambda b, v: b.slice(v, starts, sizes, strides=strides), [x])
    want = x[tuple(slice(a, a + n, k) for a, n, k in zip(starts, sizes, strides))]
    assert s == want.shape
    np.testing.assert_array_equal(got, want)


@given(hnp.array_shapes(min_dims=1, max_dims=4, min_side=2, max_side=4), st.data(),
       st.sampled_from(["constant", "edge", "reflection"]))
def test_pad_every_mode_like_numpy(shape, data, mode):
    limit = 1 if mode == "reflection" else 3
    begin = data.draw(st.lists(st.integers(0, limit), min_size=len(shape), max_size=len(shape)))
    end = data.draw(st.lists(st.integers(0, limit), min_size=len(shape), max_size=len(shape)))
    x = _values(shape, 12)
    s, got = _run_one(lambda b, v: b.pad(v, begin, end, mode=mode, value=0.5), [x])
    np_mode = {"constant": "constant", "edge": "edge", "reflection": "reflect"}[mode]
    kw = {"constant_values": 0.5} if mode == "constant" else {}
    want = np.pad(x, list(zip(begin, end)), mode=np_mode, **kw)
    assert s == want.shape
    np.testing.assert_array_equal(got, want)


@given(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=3))
def test_expand_is_numpy_broadcast_to(shapes_):
    x = _values(shapes_.input_shapes[0], 13)
    target = shapes_.result_shape
    want = _numpy_shape(lambda v: np.broadcast_to(v, target), x)
    b = GraphBuilder("p")
    v = b.input("x", "float32", list(x.shape))
    if want is None:
        with pytest.raises(OpValidationError):
            b.expand(v, list(target))
        return
    s, got = _run_one(lambda bb, u: bb.expand(u, list(target)), [x])
    assert s == tuple(target)
    np.testing.assert_array_equal(got, np.broadcast_to(x, target))


@given(hnp.array_shapes(min_dims=1, max_dims=3, max_side=3), st.integers(1, 3), st.data())
def test_concat_and_split_along_an_axis_like_numpy(shape, parts, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    xs = [_values(shape, 14 + i) for i in range(parts)]
    s, got = _run_one(lambda b, *vs: b.concat(list(vs), axis), xs)
    want = np.concatenate(xs, axis)
    assert s == want.shape
    np.testing.assert_array_equal(got, want)
    # split the concatenation back into its parts
    b = GraphBuilder("p")
    v = b.input("x", "float32", list(want.shape))
    pieces = b.split(v, [shape[axis]] * parts, axis=axis)
    g = b.build({f"y{i}": p for i, p in enumerate(pieces)})
    out = converter.run(g, {"x": want})
    for i in range(parts):
        np.testing.assert_array_equal(out[f"y{i}"], xs[i])


@given(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
       hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), st.data())
def test_gather_is_numpy_take(shape, index_shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    x = _values(shape, 20)
    idx = np.random.default_rng(21).integers(-shape[axis], shape[axis], index_shape
                                             ).astype(np.int32)
    s, got = _run_one(lambda b, v, i: b.gather(v, i, axis=axis), [x, idx])
    want = np.take(x, idx, axis=axis)
    assert s == want.shape
    np.testing.assert_array_equal(got, want)


@given(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), st.data())
def test_gather_elements_is_take_along_axis(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    index_shape = list(shape)
    index_shape[axis] = data.draw(st.integers(1, 4))
    x = _values(shape, 22)
    idx = np.random.default_rng(23).integers(0, shape[axis], index_shape).astype(np.int32)
    s, got = _run_one(lambda b, v, i: b.gatherElements(v, i, axis=axis), [x, idx])
    want = np.take_along_axis(x, idx, axis=axis)
    assert s == want.shape
    np.testing.assert_array_equal(got, want)


@given(hnp.array_shapes(min_dims=1, max_dims=4, max_side=4), st.data())
def test_softmax_and_layer_normalization_keep_shape_and_match_numpy(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    x = _values(shape, 24)
    s, got = _run_one(lambda b, v: b.softmax(v, axis), [x])
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    assert s == x.shape
    np.testing.assert_allclose(got, e / e.sum(axis=axis, keepdims=True), rtol=1e-5, atol=1e-7)
    axes = sorted(data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, min_size=1)))
    s, got = _run_one(lambda b, v: b.layerNormalization(v, axes=axes, epsilon=1e-3), [x])
    mean = x.mean(axis=tuple(axes), keepdims=True)
    var = x.var(axis=tuple(axes), keepdims=True)
    assert s == x.shape
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)


@given(hnp.array_shapes(min_dims=1, max_dims=3, max_side=3), st.data())
def test_quantize_dequantize_with_broadcast_scales(x_shape, data):
    # scale and zero point: the input's rank, each dimension the input's or 1
    s_shape = tuple(d if data.draw(st.booleans()) else 1 for d in x_shape)
    x = _values(x_shape, 25, -3, 3)
    scale = np.random.default_rng(26).uniform(0.01, 0.1, s_shape).astype(np.float32)
    zero = np.random.default_rng(27).integers(-5, 5, s_shape).astype(np.int8)

    def build(b, v):
        sc, zp = b.constant(scale), b.constant(zero)
        return b.dequantizeLinear(b.quantizeLinear(v, sc, zp), sc, zp)

    s, got = _run_one(build, [x])
    q = np.clip(np.round(x / scale) + zero, -128, 127)
    assert s == x.shape
    np.testing.assert_allclose(got, (q - zero) * scale, rtol=1e-5, atol=1e-6)
