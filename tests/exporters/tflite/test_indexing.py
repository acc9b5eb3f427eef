"""gather, gatherElements, gatherND, scatterElements and scatterND exported to TFLite.

Indices may be negative and are clamped into [-N, N - 1] (the spec's notes); TFLite takes
[0, N) only, so the export clamps and wraps them, at export time for constant indices. A
constant index outside [-N, N - 1] makes the graph invalid (converter/ir/constant_indices.py),
as the ONNX importer refuses it: only indices given at run time are clamped."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.errors import GraphInvalidError

from .helpers import check, ops_of, rand

RNG = np.random.default_rng(19)
TYPES = ("float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8")
X = np.arange(24).reshape(2, 3, 4)


def _graph(fn, x, indices, updates=None, const=False, index_type="int32"):
    b = GraphBuilder()
    xi = b.input("x", str(x.dtype), list(x.shape))
    feeds = {"x": x}
    idx = np.asarray(indices).astype(index_type)
    if const:
        ii = b.constant(idx)
    else:
        ii = b.input("i", index_type, list(idx.shape))
        feeds["i"] = idx
    args = [xi, ii]
    if updates is not None:
        args.append(b.input("u", str(updates.dtype), list(updates.shape)))
        feeds["u"] = updates
    graph = b.build({"y": fn(b, *args)})
    return graph, check(graph, feeds)["y"]


@pytest.mark.parametrize("const", [False, True])
@pytest.mark.parametrize("index_type", ["int32", "int64", "uint32"])
def test_gather_wraps_negative_and_clamps_out_of_range_indices(const, index_type):
    idx = [[2, 0], [1, 2]] if index_type == "uint32" else [[-1, 0], [7, -9]]
    if const and index_type != "uint32":  # constant and out of range: an invalid graph
        with pytest.raises(GraphInvalidError, match=r"gather '\w+': index -9 is out of range "
                                                    r"for axis 1 of size 3"):
            _graph(lambda b, x, i: b.gather(x, i, axis=1), X.astype(np.float32), idx,
                   const=const, index_type=index_type)
        return
    graph, y = _graph(lambda b, x, i: b.gather(x, i, axis=1), X.astype(np.float32), idx,
                      const=const, index_type=index_type)
    rows = [[2, 0], [1, 2]] if index_type == "uint32" else [[2, 0], [2, 0]]  # 7->2, -9->-3->0
    assert y.tolist() == X[:, rows].tolist()


@pytest.mark.parametrize("dt", TYPES)
def test_gathers_on_every_type(dt):
    x = X.astype(dt)
    _, y = _graph(lambda b, v, i: b.gather(v, i, axis=2), x, [3, -4])
    assert y.tolist() == x[:, :, [3, 0]].tolist()
    _, y = _graph(lambda b, v, i: b.gatherND(v, i), x, [[1, -1], [0, 5]])
    assert y.tolist() == [x[1, 2].tolist(), x[0, 2].tolist()]
    _, y = _graph(lambda b, v, i: b.gatherElements(v, i, axis=1), x,
                  [[[0, 1, 2, -1]], [[2, 2, 0, 9]]])
    assert y.tolist() == [[[0, 5, 10, 11]], [[20, 21, 14, 23]]]


@pytest.mark.parametrize("const", [False, True])
def test_gather_nd_full_coordinates_and_a_scalar_index(const):
    x = X.astype(np.float32)
    _, y = _graph(lambda b, v, i: b.gatherND(v, i), x, [[1, 2, 3], [0, -1, -4]], const=const)
    assert y.tolist() == [23, 8]
    graph, y = _graph(lambda b, v, i: b.gather(v, i), x, 1, const=const)
    assert y.tolist() == X[1].tolist()


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("const", [False, True])
def test_scatter_nd_replaces_rows_and_elements(dt, const):
    x = X[0].astype(dt)
    rows = np.array([[7, 7, 7, 7], [9, 9, 9, 9]], dt)
    graph, y = _graph(lambda b, v, i, u: b.scatterND(v, i, u), x, [[2], [-3]], rows,
                      const=const)
    assert y.tolist() == [[9] * 4, x[1].tolist(), [7] * 4]
    _, y = _graph(lambda b, v, i, u: b.scatterND(v, i, u), x, [[0, 1], [2, -1]],
                  np.array([5, 6], dt), const=const)
    want = x.copy()
    want[0, 1], want[2, 3] = 5, 6
    assert y.tolist() == want.tolist()
    assert ops_of(graph).count("SCATTER_ND") == 2  # the values, and where they land


@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_elements(axis):
    x = X[0].astype(np.float32)
    idx = [[2, 0, 1, -1]] if axis == 0 else [[3], [0], [-2]]
    upd = rand(RNG, np.shape(idx), "float32", 50, 60)
    _, y = _graph(lambda b, v, i, u: b.scatterElements(v, i, u, axis=axis), x, idx, upd)
    want = x.copy()
    for pos in np.ndindex(*np.shape(idx)):
        target = list(pos)
        target[axis] = np.asarray(idx)[pos] % x.shape[axis]
        want[tuple(target)] = upd[pos]
    assert y.tolist() == want.tolist()
