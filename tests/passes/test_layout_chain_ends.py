"""Chains of reshapes and transposes the layout pass leaves as they are: one from a graph input
straight to a graph output that composes to the identity (the output must stay a result of its
own), and one whose reshapes regroup axes unevenly (no single transpose is equivalent)."""
from __future__ import annotations

from converter.ops.builder import GraphBuilder

from .layout_helpers import check_numbers, seeded, types


def test_an_identity_chain_from_input_to_output_stays():
    def build():
        b = GraphBuilder("identity_io")
        x = b.input("x", "float32", [2, 3, 4, 5])
        inner = b.transpose(x, permutation=[0, 2, 3, 1])
        return b.build({"y": b.transpose(inner, permutation=[0, 3, 1, 2])})

    after, result = check_numbers(build, "nhwc")
    assert [op.attr("permutation") for op in after.operations] == [[0, 2, 3, 1], [0, 3, 1, 2]]
    assert after.outputs["y"] is not after.inputs["x"]
    tallies = ("transposes_before", "transposes_after")
    assert {k: v for k, v in result.counts.items() if not k.startswith(tallies)} == {}


def test_a_chain_with_an_uneven_regrouping_keeps_its_transposes():
    def build():
        b = GraphBuilder("uneven")
        x = b.input("x", "float32", [2, 3, 4, 5])
        r = b.reshape(x, [6, 4, 5])  # merges the batch and the channels
        r = b.reshape(b.transpose(r, permutation=[0, 2, 1]), [6, 20])
        t = b.transpose(b.reshape(r, [3, 2, 20]), permutation=[1, 0, 2])  # splits 6 as 3 x 2
        return b.build({"y": b.matmul(t, b.constant(seeded((20, 2), 1)))})

    after, result = check_numbers(build, "nhwc")
    # the first transpose moves up to the input; the chain after it stays as it is
    assert types(after) == ["transpose", "reshape", "reshape", "reshape", "transpose", "matmul"]
    assert [op.attr("newShape") for op in after.operations if op.op_type == "reshape"] == \
        [[6, 5, 4], [6, 20], [3, 2, 20]]
    assert "transpose_chains_collapsed" not in result.counts
