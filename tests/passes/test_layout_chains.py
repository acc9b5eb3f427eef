"""Reshape/transpose chains collapsed to one transpose (layout_chains.py)."""
from __future__ import annotations

import numpy as np
import pytest

import converter
from converter.ops.builder import GraphBuilder
from converter.passes import PassContext, run_passes
from converter.passes.layout_chains import atomize, chain_permutation
from converter.targets import Target

from .layout_helpers import layout_pass, seeded, types


def _replay(x, steps):
    for kind, arg in steps:
        x = x.reshape(arg) if kind == "reshape" else x.transpose(arg)
    return x


def test_chain_permutation_equals_the_chain_on_numpy():
    shape = (1, 16, 8, 8)
    steps = [("transpose", [0, 2, 3, 1]),  # a layout transpose in front
             ("transpose", [0, 3, 1, 2]),
             ("reshape", [64, 2, 4, 2]), ("transpose", [0, 2, 1, 3]),
             ("reshape", [1, 16, 16, 4]), ("transpose", [0, 3, 2, 1]),
             ("reshape", [4, 16, 16])]
    sizes, perm = chain_permutation(shape, steps)
    x = np.arange(np.prod(shape)).reshape(shape)
    want = _replay(x, steps)
    np.testing.assert_array_equal(x.reshape(sizes).transpose(perm).reshape(want.shape), want)
    # x's atoms [d, nh, ph, nw, pw] go to the tokens' order [ph, pw, nh, nw, d].
    assert sizes == [16, 4, 2, 4, 2] and perm == [2, 4, 1, 3, 0]


def test_chain_permutation_refuses_an_uneven_regrouping():
    # [6, 4] read as [2, 3, 4], moved to [3, 2, 4], read as [4, 6]: the 4 would need a
    # whole 3 and a third of the 2 (not a permutation of axes).
    assert chain_permutation((6, 4), [("reshape", [2, 3, 4]), ("transpose", [1, 0, 2]),
                                      ("reshape", [4, 6])]) is None
    # A transpose and its inverse across a regrouping: nothing moves.
    assert chain_permutation((6, 4), [("reshape", [2, 3, 4]), ("transpose", [1, 0, 2]),
                                      ("transpose", [1, 0, 2]), ("reshape", [24])]) == ([24], [0])


def test_a_pixel_shuffle_chain_becomes_one_transpose_with_the_same_numbers():
    def build():
        b = GraphBuilder("shuffle")
        x = b.input("x", "float32", [1, 8, 3, 5])
        # depth-to-space by 2 written with two transposes (as some exporters do)
        y = b.reshape(x, [1, 2, 2, 2, 3, 5])
        y = b.transpose(y, permutation=[0, 3, 4, 1, 5, 2])
        y = b.reshape(y, [1, 2, 6, 10])
        return b.build({"y": b.transpose(y, permutation=[0, 2, 3, 1])})

    before = build()
    feeds = {"x": seeded((1, 8, 3, 5))}
    want = converter.run(before, feeds)
    after = build()

    result = layout_pass(after, "nhwc")

    assert result.counts["transpose_chains_collapsed"] == 1
    assert types(after).count("transpose") == 1 and types(before).count("transpose") == 2
    np.testing.assert_array_equal(converter.run(after, feeds)["y"], want["y"])


def _random_chain(rng, shape):
    """A chain of transposes and reshapes that only regroup whole axes or split one axis."""
    steps, cur = [], list(shape)
    for _ in range(4):
        if rng.random() < 0.5:
            perm = [int(p) for p in rng.permutation(len(cur))]
            steps.append(("transpose", perm))
            cur = [cur[p] for p in perm]
        else:
            i = int(rng.integers(len(cur)))
            d = cur[i]
            splits = [f for f in (2, 3) if d % f == 0 and d > f]
            if splits and rng.random() < 0.6:
                f = splits[int(rng.integers(len(splits)))]
                cur = cur[:i] + [f, d // f] + cur[i + 1:]
            elif i + 1 < len(cur):
                cur = cur[:i] + [cur[i] * cur[i + 1]] + cur[i + 2:]
            else:
                cur = cur + [1]  # a size-1 axis carries no atom
            steps.append(("reshape", list(cur)))
    return steps


def test_chain_permutation_of_random_chains_matches_numpy():
    rng = np.random.default_rng(5)
    checked = 0
    for case in range(120):
        shape = [int(d) for d in rng.choice([1, 2, 3, 4, 6], size=int(rng.integers(2, 5)))]
        steps = _random_chain(rng, shape)
        found = chain_permutation(shape, steps)
        x = np.arange(int(np.prod(shape))).reshape(shape)
        want = _replay(x, steps)
        if found is None:  # a split that cuts earlier atoms unevenly ([2, 3] -> [6] -> [3, 2])
            continue
        sizes, perm = found
        assert sorted(perm) == list(range(len(sizes)))
        assert 1 not in sizes or sizes == [1]
        # Merged: no two neighbours in the result that are neighbours in x as well.
        assert all(perm[k + 1] != perm[k] + 1 for k in range(len(perm) - 1)), (shape, steps)
        got = x.reshape(sizes).transpose(perm).reshape(want.shape)
        np.testing.assert_array_equal(got, want, err_msg=str((shape, steps)))
        checked += 1
    assert checked >= 110  # 118 of 120 with this seed


def test_atomize_splits_an_axis_where_a_later_reshape_needs_it():
    # [8, 3] read as [2, 4, 3]: the 8 splits into atoms 2 (major) and 4 (minor).
    size, source, axes = atomize([8, 1, 3], [("reshape", [2, 4, 3])])
    assert [size[a] for a in source] == [2, 4, 3]
    assert [[size[a] for a in axis] for axis in axes] == [[2], [4], [3]]
    # An axis of 6 cannot be read as 4 x something.
    assert atomize([6, 2], [("reshape", [4, 3])]) is None
    # Size-1 axes hold no atoms, before and after.
    size, source, axes = atomize([1, 6, 1], [("transpose", [2, 1, 0]), ("reshape", [1, 2, 3])])
    assert [size[a] for a in source] == [2, 3] and axes[0] == []


def _shuffle_build():
    b = GraphBuilder("shuffle_ranks")
    x = b.input("x", "float32", [1, 8, 3, 5])
    y = b.reshape(x, [1, 2, 2, 2, 3, 5])
    y = b.transpose(y, permutation=[0, 3, 4, 1, 5, 2])
    y = b.reshape(y, [1, 2, 6, 10])
    return b.build({"y": b.transpose(y, permutation=[0, 2, 3, 1])})


@pytest.mark.parametrize("op,low,high,collapsed", [
    ("transpose", 4, 4, 1),  # the one transpose has x's atoms [2, 4, 3, 5]: rank 4
    ("transpose", 0, 3, 0), ("transpose", 5, 6, 0),
    ("reshape", 4, 4, 1),  # the atoms, x and the result are rank 4
    ("reshape", 0, 3, 0), ("reshape", 5, 8, 0)])
def test_a_chain_collapses_only_into_ranks_the_target_takes(op, low, high, collapsed):
    before = _shuffle_build()
    feeds = {"x": seeded((1, 8, 3, 5))}
    want = converter.run(before, feeds)
    after = _shuffle_build()
    ranks = {"rankRange": {"min": low, "max": high}}
    target = Target(name="t", limits={"preferredInputLayout": "nhwc",
                                      op: {"input": ranks, "output": ranks}})
    [(_, result)] = run_passes(after, ["layout"], PassContext(target=target))

    assert result.counts.get("transpose_chains_collapsed", 0) == collapsed
    assert types(after).count("transpose") == (1 if collapsed else 2)
    np.testing.assert_array_equal(converter.run(after, feeds)["y"], want["y"])


def test_a_chain_is_collapsed_from_its_start_only():
    """The shuffle chain read through a first reshape from a rank-5 x: the whole chain starts at
    that reshape, and with reshapes limited to rank 4 it cannot be collapsed (x is rank 5).
    Its tail, from the second reshape on, would fit, but it is no chain of its own (its input
    is read only by it): the pass leaves all four ops and both transposes."""
    def build():
        b = GraphBuilder("chain_start")
        x = b.input("x", "float32", [1, 8, 3, 5, 1])
        y = b.reshape(b.reshape(x, [1, 8, 3, 5]), [1, 2, 2, 2, 3, 5])
        y = b.transpose(y, permutation=[0, 3, 4, 1, 5, 2])
        y = b.reshape(y, [1, 2, 6, 10])
        return b.build({"y": b.transpose(y, permutation=[0, 2, 3, 1])})
    feeds = {"x": seeded((1, 8, 3, 5, 1))}
    want = converter.run(build(), feeds)
    after = build()
    ranks = {"rankRange": {"min": 4, "max": 4}}
    target = Target(name="t", limits={"preferredInputLayout": "nhwc",
                                      "reshape": {"input": ranks, "output": ranks}})
    [(_, result)] = run_passes(after, ["layout"], PassContext(target=target))
    assert result.counts.get("transpose_chains_collapsed", 0) == 0
    assert types(after) == ["reshape", "reshape", "transpose", "reshape", "transpose"]
    np.testing.assert_array_equal(converter.run(after, feeds)["y"], want["y"])
