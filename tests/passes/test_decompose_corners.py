"""decompose: the corners the table's cases do not reach: the Expander's nesting, counting and
undoing, the Emitter's caches and checks, the registries, and rule branches taken only by some
options (integer and matmul-less cumulative sums, gemm's beta, clamp with no bounds, a filled
constant reshaped). Numbers are worked out by hand or with numpy."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.errors import ConverterError
from converter.runtimes.execute import run
from converter.passes import decompositions
from converter.passes.decompose import CannotExpand, Expander
from converter.passes.decompositions import Emitter, decomposition, detaching

from .test_decompose import build, decompose, f32, lacking, same_after



# -- rule branches ----------------------------------------------------------------------------
@pytest.mark.parametrize("exclusive, reversed_, want", [
    (False, False, [[1, 3, 6], [10, 30, 60]]),
    (False, True, [[6, 5, 3], [60, 50, 30]]),
    (True, True, [[5, 3, 0], [50, 30, 0]]),
])
def test_integer_cumulative_sum_along_the_last_axis(exclusive, reversed_, want):
    x = np.array([[1, 2, 3], [10, 20, 30]], np.int32)
    graph, feeds = build(lambda b, x: b.cumulativeSum(x, 1, exclusive=exclusive,
                                                      reversed=reversed_), x)
    after, result = same_after(graph, feeds, lacking("cumulativeSum"))
    assert "matmul" not in graph.op_histogram()
    np.testing.assert_array_equal(after["y0"], np.array(want, np.int32))


def test_cumulative_sum_of_length_one_is_the_input():
    graph, feeds = build(lambda b, x: b.cumulativeSum(x, 0), np.array([7], np.int32))
    after, _ = same_after(graph, feeds, lacking("cumulativeSum"))
    assert "concat" not in graph.op_histogram()
    np.testing.assert_array_equal(after["y0"], [7])


def test_float_cumulative_sum_without_matmul_is_a_running_sum():
    graph, feeds = build(lambda b, x: b.cumulativeSum(x, 0, reversed=True), f32(1, 2, 3, 4))
    after, _ = same_after(graph, feeds, lacking("cumulativeSum", "matmul"))
    assert "matmul" not in graph.op_histogram()
    np.testing.assert_array_equal(after["y0"], f32(10, 9, 7, 4))


def test_float_cumulative_sum_reversed_exclusive_by_matmul():
    graph, feeds = build(lambda b, x: b.cumulativeSum(x, 0, exclusive=True, reversed=True),
                         f32(1, 2, 3, 4))
    after, _ = same_after(graph, feeds, lacking("cumulativeSum"))
    assert "matmul" in graph.op_histogram()
    np.testing.assert_array_equal(after["y0"], f32(9, 7, 4, 0))


def test_gemm_beta_two_scales_c():
    # [1, 2] @ [[3], [4]] = 11; + 2 * 5 = 21.
    graph, feeds = build(lambda b, x: b.gemm(x, b.constant(f32([3], [4])),
                                             c=b.constant(f32([5])), beta=2), f32([1, 2]))
    after, _ = same_after(graph, feeds, lacking("gemm"))
    np.testing.assert_array_equal(after["y0"], f32([21]))


def test_clamp_without_bounds_becomes_an_identity():
    graph, feeds = build(lambda b, x: b.clamp(x), f32(-3, 0.5, 9))
    after, result = same_after(graph, feeds, lacking("clamp"))
    assert graph.op_histogram() == {"identity": 1} and result.counts["decomposed clamp"] == 1
    np.testing.assert_array_equal(after["y0"], f32(-3, 0.5, 9))


def test_batch_normalization_with_filled_statistics_keeps_their_values():
    # mean and variance stored as one number each ([2] filled with 0.5 and 4.25).
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 2, 2])
    from converter.ir import ConstantData
    mean = b.graph.add_constant("mean", ConstantData("float32", (2,), fill=0.5))
    var = b.graph.add_constant("var", ConstantData("float32", (2,), fill=4.25))
    graph = b.build({"y": b.batchNormalization(x, mean, var, epsilon=0)})
    feeds = {"x": f32([[2.5, 0.5], [-1.5, 4.5]])}
    after, _ = same_after(graph, feeds, lacking("batchNormalization"))
    want = (feeds["x"] - 0.5) / np.sqrt(np.float32(4.25))
    np.testing.assert_allclose(after["y"], want, rtol=1e-6)


def test_statistics_two_ops_share_are_reshaped_once():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    mean, var = b.constant(f32(1, 2, 3)), b.constant(f32(4, 9, 16))
    y = b.batchNormalization(x, mean, var, epsilon=0)
    graph = b.build({"y": b.batchNormalization(y, mean, var, epsilon=0)})
    feeds = {"x": f32([1, 2, 3], [5, 8, 11])}
    after, _ = same_after(graph, feeds, lacking("batchNormalization"))
    constants = _constants(graph)
    # mean and var reshaped to [1, 3] once each (both ops read the same copies), and the
    # epsilon scalar once.
    assert len(constants) == 3, [c.shape for c in constants]
    shapes = sorted((o.shape, tuple(np.asarray(o.constant.numpy()).ravel()))
                    for o in constants)
    assert len(shapes) == len(set(shapes)), shapes
    step = (feeds["x"] - f32(1, 2, 3)) / f32(2, 3, 4)
    np.testing.assert_allclose(after["y"], (step - f32(1, 2, 3)) / f32(2, 3, 4), rtol=1e-6)


def test_two_gelus_share_their_scalar_constants():
    graph, feeds = build(lambda b, x: b.gelu(b.gelu(x)), f32(-1, 0, 1, 2))
    same_after(graph, feeds, lacking("gelu"))
    fills = [o.constant.fill for o in _constants(graph)]
    assert len(fills) == len(set(fills)) == 3, fills  # 0.5, 1 and sqrt(2), once each


def _constants(graph):
    ops = graph.operations
    seen, out = set(), []
    for op in ops:
        for x in op.inputs:
            if x is not None and x.is_constant and id(x) not in seen:
                seen.add(id(x))
                out.append(x)
    return out


# -- the Expander ------------------------------------------------------------------------------
def test_nested_expansion_counts_only_the_final_ops():
    # reduceL2 -> sqrt(reduceSumSquare) -> reduceSumSquare -> reduceSum(pow(x, 2)).
    graph, feeds = build(lambda b, x: b.reduceL2(x), f32(3, 4))
    after, result = same_after(graph, feeds, lacking("reduceL2", "reduceSumSquare"))
    assert graph.op_histogram() == {"pow": 1, "reduceSum": 1, "sqrt": 1}
    assert result.counts == {"decomposed reduceL2": 1, "decomposed": 1, "operations added": 3}
    np.testing.assert_allclose(after["y0"], 5, rtol=1e-6)


@pytest.mark.parametrize("depth, fits", [(1, False), (2, True)])
def test_the_depth_limit_is_the_number_of_levels(depth, fits):
    graph, _ = build(lambda b, x: b.reduceL2(x), f32(3, 4))
    wanted = {"reduceL2", "reduceSumSquare"}
    expander = Expander(graph, acceptable=lambda o: o.op_type not in wanted,
                        available=lambda t: t not in wanted, max_depth=depth)
    if fits:
        expander.expand(graph.operations[0])
        assert graph.op_histogram() == {"pow": 1, "reduceSum": 1, "sqrt": 1}
    else:
        with pytest.raises(CannotExpand):
            expander.expand(graph.operations[0])


def test_an_emulated_op_in_a_replacement_is_kept_when_it_cannot_be_decomposed():
    # softmax -> reduceMax, exp, reduceSum, div; the target emulates exp and has no rule for
    # it, so exp stays (the target runs it) and softmax is still replaced.
    graph, feeds = build(lambda b, x: b.softmax(x, 0), f32(0, np.log(3)))
    target = lacking("softmax", emulated=("exp",))
    after, result = same_after(graph, feeds, target)
    assert "softmax" not in graph.op_histogram() and graph.op_histogram()["exp"] == 1
    np.testing.assert_allclose(after["y0"], f32(0.25, 0.75), rtol=1e-6)


def test_a_rule_giving_the_wrong_number_of_results_is_a_bug(monkeypatch):
    monkeypatch.setitem(decompositions._TABLE, "softsign", lambda e, op: [])
    graph, _ = build(lambda b, x: b.softsign(x), f32(1))
    with pytest.raises(ConverterError, match="gave 0 results for 1"):
        decompose(graph, lacking("softsign"))
    assert graph.op_histogram() == {"softsign": 1}


def test_a_rule_giving_the_wrong_shape_is_a_bug(monkeypatch):
    monkeypatch.setitem(decompositions._TABLE, "softsign",
                        lambda e, op: e.reshape(op.input("input"), [1, 2]))
    graph, _ = build(lambda b, x: b.softsign(x), f32(1, 2))
    with pytest.raises(ConverterError, match="a bug in the rule"):
        decompose(graph, lacking("softsign"))
    assert graph.op_histogram() == {"softsign": 1}  # the reshape it made is undone


def test_a_rule_that_raises_leaves_no_trace(monkeypatch):
    def broken(e, op):
        e.abs(op.input("input"))
        e.scalar(3, "float32")
        raise RuntimeError("boom")

    monkeypatch.setitem(decompositions._TABLE, "softsign", broken)
    graph, _ = build(lambda b, x: b.softsign(x), f32(1))
    text = str(graph)
    with pytest.raises(RuntimeError, match="boom"):
        decompose(graph, lacking("softsign"))
    assert str(graph) == text


# -- the Emitter and the registries -------------------------------------------------------------
def _emitter():
    graph, _ = build(lambda b, x: b.relu(x), f32(1, 2))
    return graph, Emitter(graph, graph.operations[0])


def test_an_emitter_without_a_shared_cache_still_shares_its_scalars():
    graph, e = _emitter()
    assert e.scalar(2, "float32") is e.scalar(2, "float32")
    assert e.scalar(2, "float32") is not e.scalar(3, "float32")
    assert e.available("anything") is True


def test_an_emitter_names_only_ops():
    _, e = _emitter()
    with pytest.raises(AttributeError):
        e._private
    with pytest.raises(AttributeError):
        e.notAnOp
    with pytest.raises(ConverterError, match="relu takes 0 arguments after its operands, got 1"):
        e.op("relu", e.graph.inputs["x0"] if isinstance(e.graph.inputs, dict)
             else e.graph.inputs[0], 5)


def test_int8_constants_fold_but_4_bit_ones_do_not():
    b = GraphBuilder()
    i8 = b.constant(np.array([[1, 2]], np.int8))
    i4 = b.constant("int4", [1, 2], np.array([[1, 2]], np.int8))
    graph = b.build({"y": b.relu(b.input("x", "float32", [2]))})
    e = Emitter(graph, graph.operations[-1])
    folded = e.reshape_to(i8, [2])
    assert folded.is_constant and list(folded.constant.numpy()) == [1, 2]
    assert decompositions.foldable(i8) and not decompositions.foldable(i4)


def test_whole_slices_and_identity_permutations_are_the_operand_itself():
    graph, e = _emitter()
    x = graph.operations[0].inputs[0]
    assert e.part(x, [0], [2]) is x and e.transpose_to(x, [0]) is x and e.reshape_to(x, [2]) is x
    assert e.ops == []
    tail = e.part(x, [1], [1])
    assert tail.producer.op_type == "slice"


def test_registering_a_rule_twice_or_for_an_unknown_op_is_refused():
    with pytest.raises(ValueError, match="decomposition of gelu registered twice"):
        decomposition("gelu")(lambda e, op: None)
    with pytest.raises(ConverterError):
        decomposition("notAnOp")(lambda e, op: None)
    with pytest.raises(ValueError, match=r"conv2d has no operand-valued option \['filter'\]"):
        detaching("conv2d", operands=("filter",))(lambda e, op: None)


def test_ops_the_target_has_are_left_alone_even_with_a_rule():
    graph, feeds = build(lambda b, x: b.softsign(b.gelu(x)), f32(-1, 0, 1, 2))
    after, result = same_after(graph, feeds, lacking("softsign"))
    assert graph.op_histogram()["gelu"] == 1 and "softsign" not in graph.op_histogram()
    assert result.counts["decomposed"] == 1


# -- recurrent weights that are not constants, and one bias of two ---------------------------
def _seeded(*shape, seed=0):
    return (np.random.default_rng(seed).random(shape, dtype=np.float32) - 0.5)


@pytest.mark.parametrize("direction", ["forward", "both"])
def test_lstm_with_weights_fed_at_run_time_and_one_constant_bias(direction):
    dirs, hidden, steps = (2 if direction == "both" else 1), 2, 3
    b = GraphBuilder()
    x = b.input("x", "float32", [steps, 1, 3])
    w = b.input("w", "float32", [dirs, 4 * hidden, 3])
    r = b.input("r", "float32", [dirs, 4 * hidden, hidden])
    bias = b.input("bias", "float32", [dirs, 4 * hidden])
    rbias = b.constant(_seeded(dirs, 4 * hidden, seed=4))
    outs = b.lstm(x, w, r, steps, hidden, bias=bias, recurrentBias=rbias, direction=direction,
                  returnSequence=True)
    graph = b.build({f"y{i}": o for i, o in enumerate(outs)})
    feeds = {"x": _seeded(steps, 1, 3, seed=1), "w": _seeded(dirs, 4 * hidden, 3, seed=2),
             "r": _seeded(dirs, 4 * hidden, hidden, seed=3),
             "bias": _seeded(dirs, 4 * hidden, seed=5)}
    same_after(graph, feeds, lacking("lstm", "lstmCell"))
    assert "lstm" not in graph.op_histogram() and "slice" in graph.op_histogram()


@pytest.mark.parametrize("which", ["bias", "recurrentBias"])
def test_gru_with_only_one_bias(which):
    hidden, steps = 2, 2
    b = GraphBuilder()
    x = b.input("x", "float32", [steps, 1, 3])
    w = b.constant(_seeded(1, 3 * hidden, 3, seed=2))
    r = b.constant(_seeded(1, 3 * hidden, hidden, seed=3))
    one = b.constant(_seeded(1, 3 * hidden, seed=4))
    graph = b.build({"y": b.gru(x, w, r, steps, hidden, **{which: one})[0]})
    feeds = {"x": _seeded(steps, 1, 3, seed=1)}
    same_after(graph, feeds, lacking("gru", "gruCell"))
    assert "gru" not in graph.op_histogram()


def test_a_result_whose_op_is_decomposed_in_turn_is_followed(monkeypatch):
    # A rule whose result comes from an op the target also lacks: softsign as softplus here
    # (a stand-in rule), and softplus -> log(exp(x) + 1).
    monkeypatch.setitem(decompositions._TABLE, "softsign",
                        lambda e, op: e.softplus(op.input("input")))
    graph, feeds = build(lambda b, x: b.softsign(x), f32(0, 1))
    decompose(graph, lacking("softsign", "softplus"))
    assert sorted(graph.op_histogram()) == ["add", "exp", "log"]
    np.testing.assert_allclose(run(graph, feeds)["y0"], np.log1p(np.exp(f32(0, 1))),
                               rtol=1e-6)


def test_a_rule_passing_its_input_through_gets_an_identity(monkeypatch):
    monkeypatch.setitem(decompositions._TABLE, "softsign", lambda e, op: op.input("input"))
    graph, feeds = build(lambda b, x: b.softsign(x), f32(0, 1))
    decompose(graph, lacking("softsign"))
    assert graph.op_histogram() == {"identity": 1}
    np.testing.assert_array_equal(run(graph, feeds)["y0"], f32(0, 1))


def test_a_failed_nested_expansion_undoes_the_inner_one_too():
    # reduceL2 -> sqrt(reduceSumSquare); reduceSumSquare expands (pow, reduceSum and a
    # constant 2), then sqrt can be neither run nor decomposed: everything goes.
    graph, _ = build(lambda b, x: b.reduceL2(x), f32(3, 4))
    text = str(graph)
    result = decompose(graph, lacking("reduceL2", "reduceSumSquare", "sqrt"))
    assert str(graph) == text and not result.changed
    [note] = result.notes
    assert "its replacement needs sqrt" in note


# -- more option branches ---------------------------------------------------------------------
def test_softmax_along_a_later_axis_keeps_the_reduced_dimension():
    x = np.array([[0, np.log(3), 0], [1, 1, 1]], np.float32)
    graph, feeds = build(lambda b, x: b.softmax(x, 1), x)
    after, _ = same_after(graph, feeds, lacking("softmax"))
    np.testing.assert_allclose(after["y0"], [[0.2, 0.6, 0.2], [1 / 3] * 3], rtol=1e-6)


@pytest.mark.parametrize("exclusive, want", [(False, [[1, 3], [10, 30]]), (True, [[0, 1], [0, 10]])])
def test_integer_cumulative_sum_of_length_two(exclusive, want):
    x = np.array([[1, 2], [10, 20]], np.int32)
    graph, feeds = build(lambda b, x: b.cumulativeSum(x, 1, exclusive=exclusive), x)
    after, _ = same_after(graph, feeds, lacking("cumulativeSum"))
    np.testing.assert_array_equal(after["y0"], want)


def test_layer_normalization_without_axes_and_epsilon_is_zero_over_zero():
    # Each element is its own mean with variance 0: (x - x) / sqrt(0 + 0) is NaN by the
    # spec's formula.
    graph, feeds = build(lambda b, x: b.layerNormalization(x, axes=[], epsilon=0), f32(1, -2))
    decompose(graph, lacking("layerNormalization"))
    assert np.isnan(run(graph, feeds)["y0"]).all()


def test_a_rule_returning_another_ops_result_gets_an_identity(monkeypatch):
    monkeypatch.setitem(decompositions._TABLE, "softsign", lambda e, op: op.input("input"))
    graph, feeds = build(lambda b, x: b.softsign(b.relu(x)), f32(-1, 2))
    decompose(graph, lacking("softsign"))
    assert graph.op_histogram() == {"relu": 1, "identity": 1}
    np.testing.assert_array_equal(run(graph, feeds)["y0"], f32(0, 2))


@pytest.mark.parametrize("levels, fits", [(4, True), (5, False)])
def test_the_default_depth_limit_is_four_levels(monkeypatch, levels, fits):
    # Stand-in rules: softsign -> softplus -> elu -> gelu -> tanh -> relu, each op lacking.
    chain = ["softsign", "softplus", "elu", "gelu", "tanh", "relu"][:levels + 1]
    for here, then in zip(chain, chain[1:]):
        monkeypatch.setitem(decompositions._TABLE, here,
                            lambda e, op, then=then: getattr(e, then)(op.input("input")))
    graph, _ = build(lambda b, x: b.softsign(x), f32(1))
    result = decompose(graph, lacking(*chain[:-1]))
    if fits:
        assert graph.op_histogram() == {chain[-1]: 1} and not result.notes
    else:
        assert graph.op_histogram() == {"softsign": 1}
        [note] = result.notes
        assert "nests deeper than 4 levels" in note


def test_instance_normalization_scale_computed_at_run_time_is_detached():
    from .test_constant_operands import target as coreml_like
    rng = np.random.default_rng(5)
    b = GraphBuilder()
    x = b.input("x", "float32", [1, 3, 2, 4])
    s = b.input("s", "float32", [3])
    graph = b.build({"y": b.instanceNormalization(x, scale=b.abs(s))})
    feeds = {"x": rng.standard_normal((1, 3, 2, 4)).astype(np.float32),
             "s": f32(0.5, -2, 3)}
    before = run(graph, feeds)["y"]
    from converter.passes import PassContext, run_passes
    tgt = coreml_like(constants={"instanceNormalization": ["scale", "bias"]})
    [(_, result)] = run_passes(graph, ["constant_operands"], PassContext(target=tgt))
    assert result.counts["detached instanceNormalization"] == 1
    norm = next(op for op in graph.operations if op.op_type == "instanceNormalization")
    assert norm.input("scale") is None
    np.testing.assert_allclose(run(graph, feeds)["y"], before, rtol=1e-5, atol=1e-6)
    xv = feeds["x"]
    mean, var = xv.mean((2, 3), keepdims=True), xv.var((2, 3), keepdims=True)
    want = (xv - mean) / np.sqrt(var + 1e-5) * np.abs(feeds["s"]).reshape(1, 3, 1, 1)
    np.testing.assert_allclose(before, want, rtol=1e-4, atol=1e-5)
