"""The rank rule table, op family by op family: each rewrite brings the op into the target's
rank range (before/after) and computes what the unrewritten graph computed (numbers)."""
from __future__ import annotations

import numpy as np
import pytest

import converter
from converter.ops.builder import GraphBuilder
from converter.ops.elementwise import BINARY, COMPARISON, LOGICAL_BINARY, PREDICATES, UNARY
from converter.passes.rank_limits import rank_problems
from converter.passes.rank_rules import RULES
from converter.targets import load_target
from converter.targets.check import check
from converter.targets.pipeline import convert_for_target

from .test_rank import rank_pass, seeded, target


def _ints(shape, high, seed=0):
    return np.random.default_rng(seed).integers(0, high, shape).astype(np.int32)


def _positive(shape, seed=0):
    return np.abs(seeded(shape, seed)) + 0.5


# Each case: the op under test, the rank range the target gives it, and a function returning
# (graph, feeds). The graph's last op of that type is the one the rule rewrites.
def _gather_scalar_index():
    b = GraphBuilder("gather0")
    x = b.input("x", "float32", [5])
    return b.build({"y": b.gather(x, b.constant(np.array(3, np.int32)), axis=0)}), \
        {"x": seeded(5)}


def _gather_high_rank():
    b = GraphBuilder("gather6")
    x = b.input("x", "float32", [2, 3, 4, 5])
    idx = b.input("i", "int32", [2, 3])
    return b.build({"y": b.gather(x, idx, axis=2)}), \
        {"x": seeded((2, 3, 4, 5)), "i": _ints((2, 3), 4)}


def _gather_elements():
    b = GraphBuilder("gather_elements")
    x = b.input("x", "float32", [2, 3, 4, 5, 2])
    idx = b.constant(_ints((2, 3, 2, 5, 2), 4))
    return b.build({"y": b.gatherElements(x, idx, axis=2)}), {"x": seeded((2, 3, 4, 5, 2))}


def _scatter_elements():
    b = GraphBuilder("scatter_elements")
    x = b.input("x", "float32", [2, 3, 4, 5, 2])
    idx = b.constant(np.broadcast_to(np.array([3, 0], np.int32).reshape(1, 1, 2, 1, 1),
                                     (2, 3, 2, 5, 2)).copy())
    upd = b.input("u", "float32", [2, 3, 2, 5, 2])
    return b.build({"y": b.scatterElements(x, idx, upd, axis=2)}), \
        {"x": seeded((2, 3, 4, 5, 2)), "u": seeded((2, 3, 2, 5, 2), 1)}


def _split():
    b = GraphBuilder("split")
    x = b.input("x", "float32", [2, 3, 6, 5, 2])
    a, c = b.split(x, [2, 4], axis=2)
    return b.build({"a": a, "c": c}), {"x": seeded((2, 3, 6, 5, 2))}


def _tile():
    b = GraphBuilder("tile")
    x = b.input("x", "float32", [2, 3, 4, 5, 2])
    return b.build({"y": b.tile(x, [1, 1, 2, 1, 1])}), {"x": seeded((2, 3, 4, 5, 2))}


def _concat_scalars():
    b = GraphBuilder("concat0")
    x = b.input("x", "float32", [2, 3, 4, 5, 2])
    return b.build({"y": b.concat([x, x], 3)}), {"x": seeded((2, 3, 4, 5, 2))}


def _slice():
    b = GraphBuilder("slice")
    x = b.input("x", "float32", [2, 3, 4, 5, 2])
    return b.build({"y": b.slice(x, [0, 0, 1, 0, 0], [2, 3, 2, 5, 2])}), \
        {"x": seeded((2, 3, 4, 5, 2))}


def _expand():
    b = GraphBuilder("expand")
    x = b.input("x", "float32", [1, 4, 5, 2])
    return b.build({"y": b.expand(x, [2, 3, 4, 5, 2])}), {"x": seeded((1, 4, 5, 2))}


def _where():
    b = GraphBuilder("where")
    c = b.input("c", "uint8", [2, 3, 4, 5, 2])
    x = b.input("x", "float32", [2, 3, 4, 5, 2])
    y = b.input("y", "float32", [5, 2])
    return b.build({"z": b.where(c, x, y)}), \
        {"c": _ints((2, 3, 4, 5, 2), 2).astype(np.uint8), "x": seeded((2, 3, 4, 5, 2)),
         "y": seeded((5, 2), 1)}


def _cumulative_sum():
    b = GraphBuilder("cumsum")
    x = b.input("x", "float32", [2, 3, 4, 5, 2])
    return b.build({"y": b.cumulativeSum(x, 2, exclusive=True, reversed=True)}), \
        {"x": seeded((2, 3, 4, 5, 2))}


def _softmax():
    b = GraphBuilder("softmax")
    x = b.input("x", "float32", [2, 3, 4, 5, 2])
    return b.build({"y": b.softmax(x, 3)}), {"x": seeded((2, 3, 4, 5, 2))}


def _arg_min():
    b = GraphBuilder("argmin")
    x = b.input("x", "float32", [2, 3, 4, 5, 2])
    return b.build({"y": b.argMin(x, 1)}), {"x": seeded((2, 3, 4, 5, 2))}


def _transpose():
    b = GraphBuilder("transpose")
    x = b.input("x", "float32", [2, 3, 4, 5, 2])
    return b.build({"y": b.transpose(x, permutation=[3, 4, 0, 1, 2])}), \
        {"x": seeded((2, 3, 4, 5, 2))}


def _pad():
    b = GraphBuilder("pad")
    x = b.input("x", "float32", [2, 3, 4, 5, 2])
    return b.build({"y": b.pad(x, [0, 0, 1, 0, 0], [0, 0, 2, 0, 0], value=0.5)}), \
        {"x": seeded((2, 3, 4, 5, 2))}


def _reverse():
    b = GraphBuilder("reverse")
    x = b.input("x", "float32", [2, 3, 4, 5, 2])
    return b.build({"y": b.reverse(x, axes=[0, 1])}), {"x": seeded((2, 3, 4, 5, 2))}


def _triangular():
    b = GraphBuilder("triangular")
    x = b.input("x", "float32", [2, 3, 2, 4, 5])
    return b.build({"y": b.triangular(x, upper=False, diagonal=1)}), \
        {"x": seeded((2, 3, 2, 4, 5))}


def _layer_normalization():
    b = GraphBuilder("layer_norm")
    x = b.input("x", "float32", [2, 3, 4, 5, 2])
    scale, bias = b.constant(seeded((4, 5, 2), 1)), b.constant(seeded((4, 5, 2), 2))
    return b.build({"y": b.layerNormalization(x, axes=[2, 3, 4], scale=scale, bias=bias)}), \
        {"x": seeded((2, 3, 4, 5, 2))}


def _reduce_all():
    b = GraphBuilder("reduce")
    x = b.input("x", "float32", [2, 3, 4, 5, 2])
    return b.build({"y": b.reduceMax(x, axes=[2, 3, 4])}), {"x": seeded((2, 3, 4, 5, 2))}


def _matmul():
    b = GraphBuilder("matmul")
    x = b.input("x", "float32", [2, 3, 4, 5])
    w = b.constant(seeded((5, 2), 1))
    return b.build({"y": b.matmul(x, w)}), {"x": seeded((2, 3, 4, 5))}


def _unary(op_type):
    def build():
        b = GraphBuilder(op_type)
        data_type = "uint8" if op_type in PREDICATES and op_type == "logicalNot" else "float32"
        x = b.input("x", data_type, [2, 3, 4, 5, 2])
        feed = _ints((2, 3, 4, 5, 2), 2).astype(np.uint8) if data_type == "uint8" \
            else _positive((2, 3, 4, 5, 2))
        return b.build({"y": getattr(b, op_type)(x)}), {"x": feed}
    return build


def _binary(op_type):
    def build():
        b = GraphBuilder(op_type)
        data_type = "uint8" if op_type in LOGICAL_BINARY else "float32"
        x = b.input("x", data_type, [2, 3, 4, 5, 2])
        y = b.input("y", data_type, [5, 2])  # broadcast over the three leading dimensions
        if data_type == "uint8":
            feeds = {"x": _ints((2, 3, 4, 5, 2), 2).astype(np.uint8),
                     "y": _ints((5, 2), 2, 1).astype(np.uint8)}
        else:
            feeds = {"x": _positive((2, 3, 4, 5, 2)), "y": _positive((5, 2), 1)}
        return b.build({"z": getattr(b, op_type)(x, y)}), feeds
    return build


FAMILIES = {
    "gather (scalar index)": ("gather", (1, 5), _gather_scalar_index),
    "gather (rank 5 result)": ("gather", (1, 3), _gather_high_rank),
    "gatherElements": ("gatherElements", (1, 3), _gather_elements),
    "scatterElements": ("scatterElements", (1, 3), _scatter_elements),
    "split": ("split", (1, 3), _split),
    "tile": ("tile", (0, 3), _tile),
    "concat": ("concat", (1, 3), _concat_scalars),
    "slice": ("slice", (0, 3), _slice),
    "expand": ("expand", (0, 3), _expand),
    "where": ("where", (0, 3), _where),
    "cumulativeSum": ("cumulativeSum", (1, 3), _cumulative_sum),
    "softmax": ("softmax", (1, 3), _softmax),
    "argMin": ("argMin", (1, 3), _arg_min),
    "transpose": ("transpose", (0, 3), _transpose),
    "pad": ("pad", (0, 3), _pad),
    "reverse": ("reverse", (0, 3), _reverse),
    "triangular": ("triangular", (2, 3), _triangular),
    "layerNormalization": ("layerNormalization", (0, 3), _layer_normalization),
    "reduceMax": ("reduceMax", (0, 3), _reduce_all),
    "matmul": ("matmul", (2, 3), _matmul),
    **{op: (op, (0, 3), _unary(op)) for op in UNARY if op not in ("identity",)},
    "logicalNot": ("logicalNot", (0, 3), _unary("logicalNot")),
    **{op: (op, (0, 3), _binary(op)) for op in (*BINARY, *COMPARISON, *LOGICAL_BINARY)},
}

def test_every_op_with_a_rank_rule_has_a_case_or_shares_its_familys():
    tested = {op_type for op_type, _, _ in FAMILIES.values()}
    # Ops that share a tested op's plan function (the same code path).
    plan_of = {op: RULES[op].plan for op in RULES}
    tested_plans = {plan_of[op] for op in tested}
    assert {op for op in RULES if plan_of[op] not in tested_plans} == set()
    assert {"gather", "split", "tile", "concat", "slice", "expand", "where", "cumulativeSum",
            "gatherElements", "scatterElements", "triangular", "layerNormalization"} <= tested


def test_gather_plan_regroups_input_indices_and_result_separately():
    t = target("gather3", {"gather": (1, 3)})
    graph, feeds = _gather_high_rank()
    rank_pass(graph, t)
    gather = next(op for op in graph.operations if op.op_type == "gather")
    # input [2, 3 | 4 | 5] -> [6, 4, 5]; indices [2, 3] -> [6]; result [6, 6, 5].
    assert gather.inputs[0].shape == (6, 4, 5) and gather.inputs[1].shape == (6,)
    assert gather.attr("axis") == 1 and gather.output.shape == (6, 6, 5)
    np.testing.assert_array_equal(converter.run(graph, feeds)["y"],
                                  np.take(feeds["x"], feeds["i"], axis=2))


def test_issue_17_scalar_index_gather_converts_for_chromium_litert():
    b = GraphBuilder("g0")
    x = b.input("x", "float32", [3])
    s = b.gather(x, b.constant(np.array(0, np.int32)), axis=0)
    g = b.build({"y": b.add(s, b.constant(np.array(1, np.float32)))})

    report = convert_for_target(g, "chromium-litert")

    assert report.passed and check(g, load_target("chromium-litert")) == []
    gather = next(op for op in g.operations if op.op_type == "gather")
    assert gather.inputs[1].shape == (1,) and gather.output.shape == (1,)
    feeds = {"x": np.array([2.5, -1.0, 7.0], np.float32)}
    got = converter.run(g, feeds)["y"]
    assert got.shape == () and got.dtype == np.float32
    assert float(got) == float(np.take(feeds["x"], 0) + np.float32(1))  # 3.5, by numpy


def _gather_nd():
    b = GraphBuilder("gather_nd")
    x = b.input("x", "float32", [3, 4, 2, 5, 2])
    idx = b.constant(np.array([[[2, 1], [0, 3]], [[1, 1], [2, 0]]], np.int32))  # [2, 2, 2]
    return b.build({"y": b.gatherND(x, idx)}), {"x": seeded((3, 4, 2, 5, 2))}


def _scatter_nd():
    b = GraphBuilder("scatter_nd")
    x = b.input("x", "float32", [3, 4, 2, 5, 2])
    idx = b.constant(np.array([[[2, 1], [0, 3]], [[1, 0], [2, 0]]], np.int32))  # distinct
    upd = b.input("u", "float32", [2, 2, 2, 5, 2])
    return b.build({"y": b.scatterND(x, idx, upd)}), \
        {"x": seeded((3, 4, 2, 5, 2)), "u": seeded((2, 2, 2, 5, 2), 1)}


def _dequantize():
    b = GraphBuilder("dequantize")
    x = b.input("x", "int8", [2, 3, 4, 6, 2])
    scale = b.constant(_positive((1, 1, 4, 3, 2)))  # per channel (dim 2), blocks of 2 (dim 3)
    zero = b.constant(_ints((1, 1, 4, 3, 2), 5).astype(np.int8))
    return b.build({"y": b.dequantizeLinear(x, scale, zero)}), \
        {"x": (_ints((2, 3, 4, 6, 2), 200) - 100).astype(np.int8)}


FAMILIES.update({
    "gatherND": ("gatherND", (1, 3), _gather_nd),
    "scatterND": ("scatterND", (1, 4), _scatter_nd),
    "dequantizeLinear": ("dequantizeLinear", (0, 4), _dequantize),
})


def test_gather_nd_keeps_the_indexed_dimensions_and_regroups_the_rest():
    t = target("gathernd3", {"gatherND": (1, 3)})
    graph, feeds = _gather_nd()
    rank_pass(graph, t)
    op = next(op for op in graph.operations if op.op_type == "gatherND")
    # input [3, 4 | 2, 5, 2] -> [3, 4, 20]; indices [2, 2 | 2] stay; result [2, 2, 20].
    assert op.inputs[0].shape == (3, 4, 20) and op.inputs[1].shape == (2, 2, 2)
    assert op.output.shape == (2, 2, 20)
    idx = np.array([[[2, 1], [0, 3]], [[1, 1], [2, 0]]])
    np.testing.assert_array_equal(converter.run(graph, feeds)["y"],
                                  feeds["x"][idx[..., 0], idx[..., 1]])


# Within a budget of a few ULP per element: the same values in another grouping.
_ULP = {"softmax": 8, "layerNormalization": 16, "cumulativeSum": 8, "matmul": 10}


@pytest.mark.parametrize("case", sorted(FAMILIES))
def test_rank_rule_brings_the_op_into_range_with_the_same_numbers(case):
    op_type, (lo, hi), build = FAMILIES[case]
    t = target(f"{op_type}_{lo}_{hi}", {op_type: (lo, hi)})
    graph, feeds = build()
    want = converter.run(graph, feeds)
    [op] = [op for op in graph.operations if op.op_type == op_type]
    assert rank_problems(t, op), "the case must be outside the target's range to test anything"

    result = rank_pass(graph, t)

    assert result.changed and result.counts["ops_rewritten"] == 1 and not result.notes
    [new] = [op for op in graph.operations if op.op_type == op_type]
    assert not rank_problems(t, new)
    assert all(lo <= x.rank <= hi for x in (*new.inputs, *new.outputs) if x is not None)
    got = converter.run(graph, feeds)
    ulp = _ULP.get(op_type, 0)
    for key, value in want.items():
        assert got[key].shape == value.shape and got[key].dtype == value.dtype, key
        if ulp == 0 or value.dtype.kind != "f":
            np.testing.assert_array_equal(got[key], value, err_msg=key)
        else:
            eps = float(np.finfo(np.float32).eps)
            np.testing.assert_allclose(got[key], value, rtol=ulp * eps, atol=ulp * eps,
                                       err_msg=key)


def test_every_catalogue_op_has_a_rank_rule_or_a_reason_it_cannot():
    from converter.ops.registry import all_ops
    from converter.passes.rank_rules import NO_RANK_RULE

    assert not set(RULES) & set(NO_RANK_RULE)
    assert set(all_ops()) == set(RULES) | set(NO_RANK_RULE)
