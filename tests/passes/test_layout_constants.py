"""The constants the layout pass makes: a constant re-laid out once per permutation however many
ops read it, named by what was done to it, and the source constants it no longer needs gone."""
from __future__ import annotations

import numpy as np

import converter
from converter.ops.builder import GraphBuilder
from converter.ir import ConstantData

from .layout_helpers import check_numbers, conv, seeded, types


def test_a_constant_two_pushed_ops_read_is_re_laid_out_once():
    def build():
        b = GraphBuilder("shared_constant")
        x = b.input("x", "float32", [2, 3, 4, 5])
        t = b.transpose(x, permutation=[0, 2, 3, 1])  # [2, 4, 5, 3]
        c = b.constant(seeded((4, 5, 3), 1))
        return b.build({"y": b.add(t, c), "z": b.mul(t, c)})

    after, result = check_numbers(build, "nhwc")
    # t goes below both ops (each copy reaches an output); both read one constant [1, 3, 4, 5]
    assert types(after) == ["add", "transpose", "mul", "transpose"]
    add, mul = (op for op in after.operations if op.op_type in ("add", "mul"))
    assert add.inputs[1] is mul.inputs[1] and add.inputs[1].shape == (1, 3, 4, 5)
    assert add.inputs[1].name.endswith("_t0312")  # named by the permutation applied
    assert result.counts["constants_transposed"] == 1
    assert len(after.constants) == 1  # the source constant, read by nobody now, is gone


def test_relaid_filters_are_named_by_their_layout_and_the_originals_dropped():
    def build():
        b = GraphBuilder("filters")
        x = b.input("x", "float32", [1, 3, 6, 5])
        return b.build({"y": b.relu(conv(b, conv(b, x, 3, 4, "nchw", k=3), 4, 2, "nchw"))})

    after, result = check_numbers(build, "nhwc")
    filters = [op.inputs[1] for op in after.operations if op.op_type == "conv2d"]
    assert [f.shape for f in filters] == [(4, 3, 3, 3), (2, 1, 1, 4)]
    assert all(f.name.endswith("_ohwi") for f in filters)
    assert result.counts["filters_relaid"] == 2
    # only the re-laid filters remain, each read
    assert sorted(after.constants) == sorted(f.name for f in filters)
    assert all(c.uses() for c in after.constants.values())


def test_a_flattening_head_leaves_no_unread_weights():
    def build():
        b = GraphBuilder("head")
        x = b.input("x", "float32", [1, 3, 4, 5])
        flat = b.reshape(conv(b, x, 3, 4, "nchw"), [1, 80])
        return b.build({"y": b.gemm(flat, b.constant(seeded((80, 2), 2)))})

    after, result = check_numbers(build, "nhwc")
    assert result.counts["dense_weights_permuted"] == 1
    gemm = next(op for op in after.operations if op.op_type == "gemm")
    # the filter, re-laid out, and the weights, rows permuted: nothing else
    assert len(after.constants) == 2 and all(c.uses() for c in after.constants.values())
    assert gemm.inputs[1].name in after.constants and gemm.inputs[1].name.endswith("_rows")


def test_a_transposed_constant_is_folded_unless_it_is_a_graph_output():
    def build(output):
        def graph():
            b = GraphBuilder("folded")
            x = b.input("x", "float32", [2, 3, 4, 5])
            t = b.transpose(b.constant(seeded((2, 4, 5, 3), 1)), permutation=[0, 3, 1, 2])
            if output:  # an output must stay an op's result: the transpose stays
                return b.build({"y": b.relu(x), "c": t})
            return b.build({"y": b.add(x, t)})
        return graph

    tallies = ("transposes_before", "transposes_after")
    after, result = check_numbers(build(False), "nhwc")
    assert types(after) == ["add"] and after.operations[0].inputs[1].shape == (2, 3, 4, 5)
    assert {k: v for k, v in result.counts.items() if not k.startswith(tallies)} == \
        {"constants_transposed": 1}
    after, result = check_numbers(build(True), "nhwc")
    assert sorted(types(after)) == ["relu", "transpose"]
    assert after.outputs["c"].producer.op_type == "transpose"
    assert after.outputs["c"].kind == "intermediate"
    assert {k: v for k, v in result.counts.items() if not k.startswith(tallies)} == {}


def test_a_filled_filter_is_re_laid_out_as_a_fill():
    """A filter given as one number for every element (the `.webnn` `@scalar` form) is re-laid
    out as a fill of the new shape: no array is made for it."""
    def build():
        b = GraphBuilder("filled_filter")
        x = b.input("x", "float32", [1, 3, 6, 5])
        w = b.graph.add_constant("w", ConstantData("float32", (4, 3, 2, 1), fill=0.25))
        return b.build({"y": b.relu(b.conv2d(x, w))})

    after, result = check_numbers(build, "nhwc")
    [conv2d] = [op for op in after.operations if op.op_type == "conv2d"]
    w = conv2d.inputs[1]
    assert conv2d.attr("filterLayout") == "ohwi" and w.shape == (4, 2, 1, 3)
    assert w.constant.fill == 0.25 and w.constant.data_type == "float32"
    assert result.counts["filters_relaid"] == 1
    assert sorted(after.constants) == [w.name]
    # by hand: a 2 x 1 window of three channels, every weight 1/4
    x = np.arange(90, dtype=np.float32).reshape(1, 3, 6, 5) - 40
    got = converter.run(after, {"x": x})["y"]
    window = 0.25 * (x[0, :, :-1, :] + x[0, :, 1:, :]).sum(axis=0)  # [5, 5], each out channel
    np.testing.assert_allclose(got, np.broadcast_to(np.maximum(window, 0), (1, 4, 5, 5)),
                               rtol=1e-6)
