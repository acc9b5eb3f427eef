"""cleanup and constant_operands corners: rewrites whose result needs one more sweep, the
counts, multi-result ops, the output guard of replace_results, and how folding a computed
operand tidies what it used. Numbers by hand or numpy."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.errors import ConverterError
from converter.runtimes.execute import run
from converter.passes import PassContext, run_passes
from converter.passes.cleanup import collapse_reshape_chains, replace_results

from .test_constant_operands import target as coreml_like


def _cleanup(graph):
    [(_, result)] = run_passes(graph, ["cleanup"], PassContext())
    return result


def test_a_cast_chain_that_comes_back_to_its_type_goes_in_a_second_sweep():
    # int8 -> int32 -> int8: the chain becomes cast(x, int8), a no-op; the inner cast stays
    # (another output reads it), so only another sweep removes the new no-op.
    b = GraphBuilder()
    x = b.input("x", "int8", [3])
    wide = b.cast(x, "int32")
    g = b.build({"wide": wide, "y": b.relu(b.cast(wide, "int8"))})
    result = _cleanup(g)
    assert g.op_histogram() == {"cast": 1, "relu": 1}
    assert result.counts["cast_chains"] == 1 and result.counts["no_ops"] == 1
    feeds = {"x": np.array([-3, 0, 7], np.int8)}
    got = run(g, feeds)
    np.testing.assert_array_equal(got["y"], [0, 0, 7])
    np.testing.assert_array_equal(got["wide"], [-3, 0, 7])


def test_transposes_that_cancel_into_an_output_leave_the_identity_it_needs():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    g = b.build({"y": b.transpose(b.transpose(x, permutation=[1, 0]), permutation=[1, 0])})
    result = _cleanup(g)
    assert g.op_histogram() == {"identity": 1} and result.counts["transposes_cancelled"] == 1
    assert result.counts["transposes_before"] == 2 and result.counts["transposes_after"] == 0
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}
    np.testing.assert_array_equal(run(g, feeds)["y"], feeds["x"])


def test_transposes_after_counts_transposes_only():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    g = b.build({"y": b.relu(b.transpose(b.identity(x), permutation=[1, 0]))})
    result = _cleanup(g)
    assert result.changed and result.counts["identities"] == 1
    assert result.counts["transposes_before"] == 1 and result.counts["transposes_after"] == 1


def test_ops_with_several_results_are_never_no_ops():
    b = GraphBuilder()
    x = b.input("x", "float32", [4])
    first, second = b.split(x, 2)
    g = b.build({"a": b.relu(first), "b": second})
    text = str(g)
    result = _cleanup(g)
    assert not result.changed and str(g) == text


def test_collapse_reshape_chains_counts_reshapes_only():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    flat = b.reshape(b.relu(x), [6])
    g = b.build({"y": b.neg(b.reshape(flat, [3, 2]))})
    assert collapse_reshape_chains(g) == 1
    assert g.op_histogram() == {"relu": 1, "reshape": 1, "neg": 1}


def test_an_output_cannot_be_replaced_by_an_input():
    b = GraphBuilder()
    x = b.input("x", "float32", [2])
    g = b.build({"y": b.relu(x)})
    with pytest.raises(ConverterError, match="output 'y' cannot become input 'x'"):
        replace_results(g, g.operations[0], [x], take_names=False)


# -- constant_operands: folding a computed bias ------------------------------------------------
def _conv_with_bias(make_bias):
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 2, 2])
    bias = make_bias(b)
    y = b.conv2d(x, b.constant(np.ones((1, 1, 1, 1), np.float32)), bias=bias)
    return b, y, bias


def _constant_operands(graph, tgt=None):
    [(_, result)] = run_passes(graph, ["constant_operands"], PassContext(target=tgt))
    return result


def test_a_folded_bias_takes_its_name_and_what_computed_it_goes():
    c1, c2 = np.array([1.5], np.float32), np.array([2.0], np.float32)
    b, y, bias = _conv_with_bias(
        lambda b: b.neg(b.add(b.constant(c1, name="c1"), b.constant(c2, name="c2")),
                        name="bias_op"))
    name = bias.name
    g = b.build({"y": y})
    result = _constant_operands(g, coreml_like())
    assert result.counts["folded"] == 1
    assert g.op_histogram() == {"conv2d": 1}
    folded = g.operations[0].input("bias")
    assert folded.is_constant and folded.name == name
    assert sorted(g.constants) == sorted(
        [g.operations[0].input("filter").name, name])  # c1 and c2 went
    feeds = {"x": np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)}
    np.testing.assert_array_equal(run(g, feeds)["y"], feeds["x"] - 3.5)


def test_a_folded_bias_that_is_also_an_output_keeps_its_producer():
    c = np.array([0.5], np.float32)
    b, y, bias = _conv_with_bias(lambda b: b.add(b.constant(c), b.constant(c)))
    g = b.build({"y": y, "bias": bias})
    _constant_operands(g, coreml_like())
    assert g.outputs["bias"].producer.op_type == "add"
    assert g.operations[-1].op_type == "conv2d" or any(
        op.op_type == "conv2d" and op.input("bias").is_constant for op in g.operations)
    feeds = {"x": np.zeros((1, 1, 2, 2), np.float32)}
    got = run(g, feeds)
    np.testing.assert_array_equal(got["bias"], [1.0])
    np.testing.assert_array_equal(got["y"], np.ones((1, 1, 2, 2), np.float32))


def test_a_constant_read_twice_is_evaluated_once():
    b, y, _ = _conv_with_bias(lambda b: (lambda c: b.add(c, c))(
        b.constant(np.array([0.25], np.float32))))
    g = b.build({"y": y})
    _constant_operands(g, coreml_like())
    conv = next(op for op in g.operations if op.op_type == "conv2d")
    np.testing.assert_array_equal(conv.input("bias").constant.numpy(), [0.5])


def test_constant_operands_without_a_target_changes_nothing():
    b, y, _ = _conv_with_bias(lambda b: b.input("bias", "float32", [1]))
    g = b.build({"y": y})
    text = str(g)
    assert not _constant_operands(g, None).changed and str(g) == text


def test_pass_context_does_not_dequantize_by_default():
    assert PassContext().dequantize is False
