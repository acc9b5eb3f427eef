"""The lowering context's bookkeeping and the lowering table: fresh names, reads before a
value exists, refusals; and the rank-0 and below-size corners a few rules handle first."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.errors import ConverterError, UnsupportedError
from converter.runtimes.execute import run
from converter.lowering.onnx import to_onnx
from converter.lowering.onnx.context import LoweringContext
from converter.lowering.onnx.registry import lowering_for, lowers

from .helpers import assert_exact


def test_fresh_names_count_past_names_already_used():
    ctx = LoweringContext(21)
    assert ctx.fresh("a") == "a"
    assert ctx.fresh("a") == "a_1"
    ctx.reserve("a_2")
    assert ctx.fresh("a") == "a_3"
    assert ctx.fresh("b") == "b"
    # a counted name is taken too: asking for it as a base gives the next one
    assert ctx.fresh("a_1") == "a_1_1"


def test_a_node_s_explicit_output_names_are_taken():
    ctx = LoweringContext(21)
    assert ctx.node("Relu", ["x"], outputs=["y"]) == ["y"]
    assert ctx.fresh("y") == "y_1"


def test_reading_an_operand_not_lowered_yet_is_a_converter_error():
    b = GraphBuilder()
    x = b.input("x", "float32", [2])
    ctx = LoweringContext(21)
    with pytest.raises(ConverterError, match="operand 'x' is read before it is lowered") as info:
        ctx.name_of(x)
    assert "lowering" in str(info.value)
    assert ctx.name_of(None) == ""


def test_reduce_over_no_axes_is_the_rule_s_job():
    ctx = LoweringContext(21)
    with pytest.raises(ValueError, match="reduce\\(\\) over no axes"):
        ctx.reduce("ReduceSum", "x", [], True, "float32")


def test_an_unknown_numpy_type_has_no_lowering_type():
    ctx = LoweringContext(21)
    with pytest.raises(ConverterError, match="numpy dtype complex64 has no ONNX lowering type"):
        ctx.constant(np.zeros(2, np.complex64))


def test_the_lowering_table_refuses_a_second_rule_and_unknown_ops():
    lowering_for("add")  # the table is loaded (a second rule raises before it is stored)
    with pytest.raises(ValueError, match="op add has two lowerings"):
        lowers("add")(lambda ctx, op: [])
    with pytest.raises(UnsupportedError, match="no ONNX lowering for op 'noSuchOp'"):
        lowering_for("noSuchOp")


@pytest.mark.parametrize("op_name", ["slice", "tile"])
def test_rank_0_slice_and_tile_pass_the_scalar_through(op_name):
    b = GraphBuilder()
    x = b.input("x", "float32", [])
    y = b.slice(x, [], []) if op_name == "slice" else b.tile(x, [])
    g = b.build({"y": y})
    assert [n.op_type for n in to_onnx(g).graph.node] == ["Identity"]
    assert_exact(run(g, {"x": np.array(2.5, np.float32)})["y"], np.array(2.5), np.float32)


def test_small_unnamed_constants_are_shared_and_others_are_not():
    ctx = LoweringContext(21)
    a = ctx.constant(np.arange(64, dtype=np.int64))
    assert ctx.constant(np.arange(64, dtype=np.int64)) == a  # the same 64 values: one
    assert ctx.constant(np.arange(64, dtype=np.int32)) != a  # another type
    assert ctx.constant(np.arange(64, dtype=np.int64).reshape(8, 8)) != a  # another shape
    big = ctx.constant(np.arange(65, dtype=np.int64))
    assert ctx.constant(np.arange(65, dtype=np.int64)) != big  # past 64 values: not looked up
    assert ctx.constant(np.arange(64, dtype=np.int64), name="w") == "w" != a  # a named one
    assert ctx.constant(np.array(1.5), "float32") == ctx.constant(np.float32(1.5))
    # the same bytes and shape in two types are two constants
    assert ctx.constant(np.zeros(2, np.int32)) != ctx.constant(np.zeros(2, np.float32))
    assert len(ctx.initializers) == 9


def test_modular_widening_never_picks_a_float_type():
    # wrap-around add/sub/mul need an integer type; with no wider integer kernel, uint32 runs
    # as int32 (the same bits), never as float64 (which rounds past 2^53)
    class OnlyInt32AndFloat64(LoweringContext):
        def supports(self, onnx_op, dtype, constraint=None):
            return dtype in ("int32", "float64")

    ctx = OnlyInt32AndFloat64(21)
    assert ctx.compute_type("Add", "uint32", widen="modular") == "int32"
    assert ctx.compute_type("Add", "float16", widen="modular") == "float64"
    assert ctx.compute_type("Max", "uint32", widen="value") == "float64"


def _split_lowered_as(monkeypatch, rule):
    """A 2-way split of x [2, 2] whose lowering is `rule` (standing in for a faulty one)."""
    from converter.lowering.onnx import registry

    monkeypatch.setitem(registry._RULES, "split", rule)
    b = GraphBuilder("g")
    x = b.input("x", "float32", [2, 2])
    top, bottom = b.split(x, 2)
    return b.build({"top": top, "bottom": bottom})


def test_a_lowering_with_the_wrong_number_of_results_is_a_converter_error(monkeypatch):
    graph = _split_lowered_as(monkeypatch, lambda ctx, op: [ctx.name_of(op.inputs[0])])
    with pytest.raises(ConverterError) as info:
        to_onnx(graph)
    assert info.value.line() == "split 'split': the lowering gave 1 results, the op has 2"


def test_one_value_given_for_two_results_feeds_both(monkeypatch):
    def rule(ctx, op):
        first = ctx.node("Slice", [ctx.name_of(op.inputs[0]), ctx.int64s([0]), ctx.int64s([1]),
                                   ctx.int64s([0])], dtype="float32")
        return [first, first]

    graph = _split_lowered_as(monkeypatch, rule)
    x = np.array([[1, 2], [3, 4]], np.float32)
    got = run(graph, {"x": x})
    assert_exact(got["top"], [[1, 2]], np.float32)
    assert_exact(got["bottom"], [[1, 2]], np.float32)


def test_compute_type_refuses_an_op_no_type_can_run():
    ctx = LoweringContext(21)
    with pytest.raises(UnsupportedError, match="ONNX Runtime has no CPU kernel for Neg on "
                                                "uint64, and no wider type holds its values"):
        ctx.compute_type("Neg", "uint64")


def test_a_result_type_is_left_as_the_node_gives_it():
    # Neg has no uint8 kernel: it runs in int16, and with result="int16" nothing casts back
    ctx = LoweringContext(21)
    ctx.types["x"] = "uint8"
    out = ctx.typed("Neg", ["x"], "uint8", result="int16")
    assert [(n.op_type, list(n.input)) for n in ctx.nodes] == [("Cast", ["x"]),
                                                                 ("Neg", [ctx.nodes[0].output[0]])]
    assert out == ctx.nodes[1].output[0] and ctx.types[out] == "int16"


@pytest.mark.parametrize("first_use", ["lowering_for", "all_lowerings"])
def test_the_table_loads_its_rules_on_first_use(monkeypatch, first_use):
    # as in a fresh process: no rule module imported yet, the table empty
    import converter.lowering.onnx as package
    from converter.lowering.onnx import registry

    monkeypatch.setattr(registry, "_RULES", {})
    for name in ("activation", "conv", "elementwise", "indexing", "matmul", "normalization",
                 "pool", "quantization", "recurrent", "reduction", "resample", "shape"):
        monkeypatch.delitem(sys.modules, f"converter.lowering.onnx.{name}")
        monkeypatch.delattr(package, name)
    if first_use == "lowering_for":
        assert registry.lowering_for("relu").__module__ == "converter.lowering.onnx.activation"
    else:
        assert {"relu", "conv2d", "gather", "reduceSum"} <= set(registry.all_lowerings())
