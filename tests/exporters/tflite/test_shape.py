"""Data-movement ops exported to TFLite, on every data type (uint32, uint64 and float16 cross
the kernels that lack them as same-width integers, bit for bit). All exact."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from .helpers import check, ops_of, rand, run_one

RNG = np.random.default_rng(18)
TYPES = ("float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8")
V = np.arange(24).reshape(2, 3, 4)


@pytest.mark.parametrize("dt", TYPES)
def test_every_data_movement_op_on_every_type(dt):
    v = V.astype(dt)
    if dt == "uint64":
        v = v + np.uint64(2**63)  # values only a uint64 holds
    b = GraphBuilder()
    x = b.input("x", dt, [2, 3, 4])
    y = b.input("y", dt, [2, 1, 4])
    graph = b.build({
        "concat": b.concat([x, y], 1), "expand": b.expand(y, [2, 2, 3, 4]),
        "reshape": b.reshape(x, [6, 4]), "transpose": b.transpose(x, permutation=[2, 0, 1]),
        "tile": b.tile(y, [1, 2, 2]), "slice": b.slice(x, [0, 1, 1], [2, 2, 3],
                                                      strides=[1, 1, 2]),
        "reverse": b.reverse(x, axes=[0, 2]), "split": b.split(x, [1, 3], axis=2)[1],
        "pad": b.pad(x, [0, 1, 2], [1, 0, 1], value=7), "triangular": b.triangular(x),
    })
    w = v[:, :1, :]
    got = check(graph, {"x": v, "y": w})
    assert got["concat"].tolist() == np.concatenate([v, w], 1).tolist()
    assert got["expand"].tolist() == np.broadcast_to(w, (2, 2, 3, 4)).tolist()
    assert got["reshape"].tolist() == v.reshape(6, 4).tolist()
    assert got["transpose"].tolist() == v.transpose(2, 0, 1).tolist()
    assert got["tile"].tolist() == np.tile(w, (1, 2, 2)).tolist()
    assert got["slice"].tolist() == v[:, 1:3, 1:4:2].tolist()
    assert got["reverse"].tolist() == v[::-1, :, ::-1].tolist()
    assert got["split"].tolist() == v[:, :, 1:].tolist()
    assert got["pad"].tolist() == np.pad(v, [(0, 1), (1, 0), (2, 1)],
                                         constant_values=7).tolist()
    assert got["triangular"].tolist() == np.triu(v).tolist()


def test_pad_modes_on_hand_values():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    graph = b.build({"edge": b.pad(x, [1, 2], [0, 1], mode="edge"),
                     "reflect": b.pad(x, [1, 2], [1, 1], mode="reflection"),
                     "const": b.pad(x, [0, 1], [1, 0], value=-1.5)})
    got = check(graph, {"x": np.array([[1, 2, 3], [4, 5, 6]], np.float32)})
    assert got["edge"].tolist() == [[1, 1, 1, 2, 3, 3], [1, 1, 1, 2, 3, 3], [4, 4, 4, 5, 6, 6]]
    assert got["reflect"].tolist() == [[6, 5, 4, 5, 6, 5], [3, 2, 1, 2, 3, 2],
                                       [6, 5, 4, 5, 6, 5], [3, 2, 1, 2, 3, 2]]
    assert got["const"].tolist() == [[-1.5, 1, 2, 3], [-1.5, 4, 5, 6], [-1.5, -1.5, -1.5, -1.5]]


@pytest.mark.parametrize("upper,diagonal", [(True, 0), (True, 1), (False, 0), (False, -1),
                                            (True, -2)])
def test_triangular_keeps_nan_and_the_chosen_diagonals(upper, diagonal):
    v = rand(RNG, (2, 3, 4), "float32")
    v[0, 0, 0] = np.nan
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3, 4])
    y = run_one(b, b.triangular(x, upper=upper, diagonal=diagonal), {"x": v})
    want = np.triu(v, diagonal) if upper else np.tril(v, diagonal)
    np.testing.assert_array_equal(y, want)


def test_reverse_every_axis_by_default_and_none_when_empty():
    b = GraphBuilder()
    x = b.input("x", "int32", [2, 3])
    graph = b.build({"all": b.reverse(x), "none": b.reverse(x, axes=[])})
    got = check(graph, {"x": np.array([[1, 2, 3], [4, 5, 6]], np.int32)})
    assert got["all"].tolist() == [[6, 5, 4], [3, 2, 1]]
    assert got["none"].tolist() == [[1, 2, 3], [4, 5, 6]]


def test_split_into_equal_parts_and_rank0_reshape():
    b = GraphBuilder()
    x = b.input("x", "float16", [2, 6])
    parts = b.split(x, 3, axis=1)
    graph = b.build({"p0": parts[0], "p2": parts[2],
                     "scalar": b.reshape(b.slice(x, [1, 5], [1, 1]), [])})
    got = check(graph, {"x": np.arange(12, dtype=np.float16).reshape(2, 6)})
    assert got["p0"].tolist() == [[0, 1], [6, 7]] and got["p2"].tolist() == [[4, 5], [10, 11]]
    assert got["scalar"].shape == () and got["scalar"] == 11
    assert "SPLIT_V" in ops_of(graph)
