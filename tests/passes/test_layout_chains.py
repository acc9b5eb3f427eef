"""Reshape/transpose chains collapsed to one transpose (layout_chains.py)."""
from __future__ import annotations

import numpy as np

import converter
from converter.builder import GraphBuilder
from converter.passes.layout_chains import chain_permutation

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
