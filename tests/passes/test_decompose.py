"""The decompose pass and the decomposition table.

Every table entry is checked twice over: on small inputs whose results are worked out by hand
from the spec's formulas, and on seeded random inputs against the original op, both through
converter.run. Comparisons use tolerances.md's float32 budget (|d| <= 1e-4 + 1e-3 |want|,
cosine >= 0.9999; integers exact), via converter.verification.parity.compare.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

from converter import dtypes
from converter.ops.builder import GraphBuilder
from converter.runtimes.execute import run
from converter.ir import ConstantData
from converter.ops.registry import all_ops
from converter.verification.parity import compare
from converter.passes import PassContext, run_passes
from converter.passes.decompose import CannotExpand, Expander
from converter.passes.decompositions import decomposable_ops
from converter.targets import Target

RNG = np.random.default_rng(2024)


def lacking(*ops: str, emulated: tuple[str, ...] = ()) -> Target:
    limits = {name: {} for name in all_ops() if name not in ops}
    return Target(name="test-target", limits=limits, emulated={o: "by test" for o in emulated})


def decompose(graph, target):
    [(_, result)] = run_passes(graph, ["decompose"], PassContext(target=target))
    return result


def build(make: Callable, *inputs: np.ndarray):
    """A graph with inputs x0, x1 ... and outputs y0, y1 ... from make(b, *inputs)."""
    b = GraphBuilder()
    operands = [b.input(f"x{i}", dtypes.from_numpy(a.dtype), a.shape) for i, a in
                enumerate(inputs)]
    out = make(b, *operands)
    outs = out if isinstance(out, list) else [out]
    return b.build({f"y{i}": o for i, o in enumerate(outs)}), \
        {f"x{i}": a for i, a in enumerate(inputs)}


def same_after(graph, feeds, target) -> tuple[dict, object]:
    """Run, decompose for `target`, run again; every output within the parity budget."""
    before = run(graph, feeds)
    result = decompose(graph, target)
    after = run(graph, feeds)
    for name, want in before.items():
        parity = compare(name, after[name], want)
        assert parity.passed, f"{name}: {parity.reason} (max abs {parity.max_abs})"
    return after, result


def f32(*values) -> np.ndarray:
    return np.array(values, np.float32)


# -- hand-computed cases: one or more per table entry -------------------------------------------
@dataclass
class Case:
    op: str
    make: Callable
    x: np.ndarray
    want: list  # one array per output
    uses: frozenset = frozenset()  # op types the replacement must contain
    id: str = ""


E = math.e
W3 = [[7, 1, 2], [9, 4, 8], [2, 6, 3]]  # the spec's triangular example
CASES = [
    Case("gelu", lambda b, x: b.gelu(x), f32(-1, 0, 1, 2),
         [[-0.15865526, 0, 0.84134474, 1.9544997]], frozenset({"erf"})),
    Case("hardSwish", lambda b, x: b.hardSwish(x), f32(-4, -1, 1, 4), [[0, -1 / 3, 2 / 3, 4]],
         frozenset({"max", "min"})),
    Case("hardSigmoid", lambda b, x: b.hardSigmoid(x), f32(-3, 0, 1, 3), [[0, 0.5, 0.7, 1]]),
    Case("hardSigmoid", lambda b, x: b.hardSigmoid(x, alpha=0.5, beta=0.25), f32(-1, 1),
         [[0, 0.75]], id="alpha-beta"),
    Case("linear", lambda b, x: b.linear(x, alpha=2, beta=1), f32(1, -1), [[3, -1]]),
    Case("softplus", lambda b, x: b.softplus(x), f32(0, 1), [[math.log(2), math.log(1 + E)]],
         frozenset({"exp", "log"})),
    Case("softsign", lambda b, x: b.softsign(x), f32(-3, 1), [[-0.75, 0.5]], frozenset({"abs"})),
    Case("elu", lambda b, x: b.elu(x), f32(-1, 2), [[1 / E - 1, 2]], frozenset({"exp"})),
    Case("elu", lambda b, x: b.elu(x, alpha=2), f32(-1), [[2 * (1 / E - 1)]], id="alpha"),
    Case("leakyRelu", lambda b, x: b.leakyRelu(x, alpha=0.1), f32(-2, 3), [[-0.2, 3]]),
    Case("leakyRelu", lambda b, x: b.leakyRelu(x), f32(-2), [[-0.02]], id="default"),
    Case("prelu", lambda b, x: b.prelu(x, b.constant(f32(0.5, 0.25))), f32([-2, -4], [3, 1]),
         [[[-1, -1], [3, 1]]]),
    Case("sigmoid", lambda b, x: b.sigmoid(x), f32(0, math.log(3)), [[0.5, 0.75]]),
    Case("clamp", lambda b, x: b.clamp(x, minValue=0, maxValue=1), f32(-1, 0.5, 2),
         [[0, 0.5, 1]]),
    Case("clamp", lambda b, x: b.clamp(x, maxValue=1), f32(-1, 2), [[-1, 1]], id="max-only"),
    Case("sign", lambda b, x: b.sign(x), f32(-2, 0, 3), [[-1, 0, 1]], frozenset({"where"})),
    Case("softmax", lambda b, x: b.softmax(x, 1), f32([0, math.log(3)]), [[[0.25, 0.75]]],
         frozenset({"reduceMax", "reduceSum", "exp"})),
    Case("reduceL1", lambda b, x: b.reduceL1(x, axes=[1]), f32([1, -2], [3, -4]), [[3, 7]]),
    Case("reduceL2", lambda b, x: b.reduceL2(x, axes=[1], keepDimensions=True), f32([3, 4]),
         [[[5]]]),
    Case("reduceLogSum", lambda b, x: b.reduceLogSum(x), f32(1, E - 1), [1]),
    Case("reduceLogSumExp", lambda b, x: b.reduceLogSumExp(x), f32(0, math.log(3)),
         [math.log(4)]),
    Case("reduceSumSquare", lambda b, x: b.reduceSumSquare(x), f32(1, 2, 3), [14],
         frozenset({"pow"})),
    Case("reduceMean", lambda b, x: b.reduceMean(x, axes=[0]), f32([1, 2], [3, 6]), [[2, 4]]),
    Case("cumulativeSum", lambda b, x: b.cumulativeSum(x, 0), f32(1, 2, 3, 4), [[1, 3, 6, 10]],
         frozenset({"matmul"})),
    Case("cumulativeSum", lambda b, x: b.cumulativeSum(x, 0, exclusive=True), f32(1, 2, 3, 4),
         [[0, 1, 3, 6]], id="exclusive"),
    Case("cumulativeSum", lambda b, x: b.cumulativeSum(x, 0, reversed=True), f32(1, 2, 3, 4),
         [[10, 9, 7, 4]], id="reversed"),
    Case("cumulativeSum", lambda b, x: b.cumulativeSum(x, 0, exclusive=True, reversed=True),
         np.array([1, 2, 3, 4], np.int32), [[9, 7, 4, 0]], frozenset({"slice", "concat"}),
         id="int32-exclusive-reversed"),
    Case("gemm", lambda b, x: b.gemm(x, b.constant(f32([3], [4])), c=b.constant(f32([1])),
                                     alpha=2, beta=3), f32([1, 2]), [[[25]]],
         frozenset({"matmul"})),
    Case("gemm", lambda b, x: b.gemm(x, b.constant(f32([3, 4])), aTranspose=True,
                                     bTranspose=True), f32([1], [2]), [[[11]]],
         frozenset({"transpose"}), id="transposed"),
    Case("triangular", lambda b, x: b.triangular(x), np.array(W3, np.float32),
         [[[7, 1, 2], [0, 4, 8], [0, 0, 3]]], frozenset({"where"})),
    Case("triangular", lambda b, x: b.triangular(x, diagonal=-1), np.array(W3, np.float32),
         [[[7, 1, 2], [9, 4, 8], [0, 6, 3]]], id="upper-minus-1"),
    Case("triangular", lambda b, x: b.triangular(x, upper=False, diagonal=1),
         np.array([W3, W3], np.float32), [[[[7, 1, 0], [9, 4, 8], [2, 6, 3]]] * 2],
         id="lower-plus-1-batched"),
    Case("split", lambda b, x: b.split(x, [2, 3]), f32(1, 2, 3, 4, 5), [[1, 2], [3, 4, 5]],
         frozenset({"slice"})),
    Case("split", lambda b, x: b.split(x, 2, axis=1), f32([1, 2], [3, 4]), [[[1], [3]],
                                                                            [[2], [4]]],
         id="count-axis-1"),
    Case("l2Pool2d", lambda b, x: b.l2Pool2d(x), f32([[[3, 4], [0, 0]]]), [[[[[5]]]]],
         frozenset({"averagePool2d", "sqrt"})),
    Case("l2Pool2d", lambda b, x: b.l2Pool2d(x, windowDimensions=[2, 2], padding=[1, 1, 1, 1]),
         f32([[[3, 4], [0, 0]]]), [[[[[3, 5, 4], [3, 5, 4], [0, 0, 0]]]]], id="padded"),
    Case("l2Pool2d", lambda b, x: b.l2Pool2d(x, layout="nhwc"), f32([[[3], [4]], [[0], [0]]]),
         [[[[[5]]]]], id="nhwc"),
    Case("batchNormalization",
         lambda b, x: b.batchNormalization(x, b.constant(f32(1, 2)), b.constant(f32(4, 16)),
                                           scale=b.constant(f32(2, 3)),
                                           bias=b.constant(f32(1, -1)), epsilon=0),
         f32([[[3]], [[6]]]), [[[[[3]], [[2]]]]], frozenset({"sub", "div", "sqrt"})),
    Case("instanceNormalization",
         lambda b, x: b.instanceNormalization(x, scale=b.constant(f32(2)),
                                              bias=b.constant(f32(1)), epsilon=0),
         f32([[[1, 3], [1, 3]]]), [[[[[-1, 3], [-1, 3]]]]], frozenset({"reduceMean"})),
    Case("instanceNormalization", lambda b, x: b.instanceNormalization(x, layout="nhwc",
                                                                        epsilon=0),
         f32([[[1], [3]], [[1], [3]]]), [[[[[-1], [1]], [[-1], [1]]]]], id="nhwc"),
    Case("layerNormalization", lambda b, x: b.layerNormalization(x, epsilon=0),
         f32([1, 3, 1, 3]), [[[-1, 1, -1, 1]]], frozenset({"reduceMean"})),
    Case("gruCell", lambda b, x: b.gruCell(x, b.constant(np.zeros((6, 2), np.float32)),
                                           b.constant(np.zeros((6, 2), np.float32)),
                                           b.constant(f32([1, 2])), 2),
         f32([5, -5]), [[[0.5, 1]]], frozenset({"matmul", "sigmoid", "tanh"})),
    Case("lstmCell", lambda b, x: b.lstmCell(x, b.constant(np.zeros((8, 2), np.float32)),
                                             b.constant(np.zeros((8, 2), np.float32)),
                                             b.constant(f32([0, 0])), b.constant(f32([2, 4])),
                                             2),
         f32([5, -5]), [[[0.5 * math.tanh(1), 0.5 * math.tanh(2)]], [[1, 2]]],
         frozenset({"matmul", "sigmoid", "tanh"})),
    Case("gru", lambda b, x: b.gru(x, b.constant(np.zeros((1, 6, 1), np.float32)),
                                   b.constant(np.zeros((1, 6, 2), np.float32)), 2, 2,
                                   initialHiddenState=b.constant(f32([[1, 2]]))),
         f32([[1]], [[2]]), [[[[0.25, 0.5]]]], frozenset({"gruCell"})),
    Case("lstm", lambda b, x: b.lstm(x, b.constant(np.zeros((1, 8, 1), np.float32)),
                                     b.constant(np.zeros((1, 8, 2), np.float32)), 2, 2,
                                     initialCellState=b.constant(f32([[2, 4]]))),
         f32([[1]], [[2]]), [[[[0.5 * math.tanh(0.5), 0.5 * math.tanh(1)]]], [[[0.5, 1]]]],
         frozenset({"lstmCell"})),
    Case("gatherElements", lambda b, x: b.gatherElements(
        x, b.constant(np.array([[2, -3], [0, 1]], np.int64)), axis=1),
        f32([0, 10, 20], [30, 40, 50]), [[[20, 0], [30, 40]]], frozenset({"gather"})),
    Case("gatherElements", lambda b, x: b.gatherElements(
        x, b.constant(np.array([[1, 0, 1]], np.uint32))),
        f32([0, 10, 20], [30, 40, 50]), [[[30, 10, 50]]], id="uint32-axis-0"),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.op}-{c.id}" if c.id else c.op for c in CASES])
def test_hand_computed(case: Case):
    graph, feeds = build(case.make, case.x)
    after, result = same_after(graph, feeds, lacking(case.op))
    assert result.changed and result.counts[f"decomposed {case.op}"] == 1
    histogram = graph.op_histogram()
    assert case.op not in histogram, histogram
    assert case.uses <= set(histogram), histogram
    for i, want in enumerate(case.want):
        got = after[f"y{i}"]
        want = np.asarray(want, dtype=got.dtype)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_every_table_entry_has_a_hand_computed_case():
    assert {c.op for c in CASES} == set(decomposable_ops())


# -- random inputs, every option ----------------------------------------------------------------
def rand(*shape) -> np.ndarray:
    return np.asarray((RNG.random(shape, dtype=np.float32) - 0.5) * 4, np.float32)


OPTION_CASES = {
    "softmax-axis0": (lambda b, x: b.softmax(x, 0), "softmax", (3, 2, 4)),
    "bn-rank3-axis2": (lambda b, x: b.batchNormalization(
        x, b.constant(rand(4)), b.constant(np.abs(rand(4)) + 0.1), axis=2), "batchNormalization",
        (2, 3, 4)),
    "bn-rank1-scale": (lambda b, x: b.batchNormalization(
        x, b.constant(rand(5)), b.constant(np.abs(rand(5)) + 0.1), axis=0,
        scale=b.constant(rand(5))), "batchNormalization", (5,)),
    "instance-nchw-scale-bias": (lambda b, x: b.instanceNormalization(
        x, scale=b.constant(rand(3)), bias=b.constant(rand(3))), "instanceNormalization",
        (2, 3, 4, 5)),
    "instance-nhwc-bias": (lambda b, x: b.instanceNormalization(
        x, bias=b.constant(rand(3)), layout="nhwc"), "instanceNormalization", (2, 4, 5, 3)),
    "layer-unsorted-axes": (lambda b, x: b.layerNormalization(
        x, axes=[2, 1], scale=b.constant(rand(4, 3)), bias=b.constant(rand(4, 3))),
        "layerNormalization", (2, 3, 4)),
    "layer-no-axes": (lambda b, x: b.layerNormalization(x, axes=[], bias=b.constant(rand())),
                      "layerNormalization", (3,)),
    "l2pool-strided-ceil": (lambda b, x: b.l2Pool2d(
        x, windowDimensions=[3, 2], strides=[2, 2], dilations=[1, 2], padding=[1, 0, 0, 1],
        outputShapeRounding="ceil"), "l2Pool2d", (1, 2, 7, 6)),
    "gemm-c-broadcast": (lambda b, x: b.gemm(x, b.constant(rand(4, 3)), c=b.constant(rand(3)),
                                             beta=0.5), "gemm", (2, 4)),
    "cumsum-axis1": (lambda b, x: b.cumulativeSum(x, 1, exclusive=True), "cumulativeSum",
                     (2, 5, 3)),
    "reduce-mean-all": (lambda b, x: b.reduceMean(x, keepDimensions=True), "reduceMean",
                        (2, 3, 4)),
    "reduce-l1-no-axes": (lambda b, x: b.reduceL1(x, axes=[]), "reduceL1", (2, 3)),
}


@pytest.mark.parametrize("key", sorted(OPTION_CASES))
def test_random_inputs_match(key):
    make, op, shape = OPTION_CASES[key]
    graph, feeds = build(make, rand(*shape))
    same_after(graph, feeds, lacking(op))
    assert op not in graph.op_histogram()


@pytest.mark.parametrize("op,make", [
    ("gelu", lambda b, x: b.gelu(x)),
    ("layerNormalization", lambda b, x: b.layerNormalization(x, bias=b.constant(
        rand(4).astype(np.float16)))),
    ("hardSigmoid", lambda b, x: b.hardSigmoid(x, alpha=0.3)),
])
def test_float16_constants_take_the_input_type(op, make):
    graph, feeds = build(make, rand(2, 4).astype(np.float16))
    after, _ = same_after(graph, feeds, lacking(op))
    assert after["y0"].dtype == np.float16
    assert {c.data_type for c in graph.constants.values()} == {"float16"}


S, B, I, H = 3, 2, 3, 4  # steps, batch, input size, hidden size


def _recurrent(kind: str, direction: str, layout: str, *, gates: int, seq=True, biases=True,
               initial=True, peephole=False, **options):
    """A gru or lstm over a random [S, B, I] input with random constant weights."""
    dirs = 2 if direction == "both" else 1

    def make(b, x):
        extra = {}
        if biases:
            extra["bias"] = b.constant(rand(dirs, gates * H))
            extra["recurrentBias"] = b.constant(rand(dirs, gates * H))
        if initial:
            extra["initialHiddenState"] = b.constant(rand(dirs, B, H))
            if kind == "lstm":
                extra["initialCellState"] = b.constant(rand(dirs, B, H))
        if peephole:
            extra["peepholeWeight"] = b.constant(rand(dirs, 3 * H))
        return getattr(b, kind)(x, b.constant(rand(dirs, gates * H, I)),
                                b.constant(rand(dirs, gates * H, H)), S, H, direction=direction,
                                layout=layout, returnSequence=seq, **extra, **options)

    return build(make, rand(S, B, I))


@pytest.mark.parametrize("direction", ["forward", "backward", "both"])
@pytest.mark.parametrize("layout", ["zrn", "rzn"])
@pytest.mark.parametrize("reset_after", [True, False])
@pytest.mark.parametrize("cells", [True, False], ids=["to-gruCell", "to-primitives"])
def test_gru_per_step_matches(direction, layout, reset_after, cells):
    graph, feeds = _recurrent("gru", direction, layout, gates=3, resetAfter=reset_after)
    lacks = ("gru",) if cells else ("gru", "gruCell")
    _, result = same_after(graph, feeds, lacking(*lacks))
    histogram = graph.op_histogram()
    dirs = 2 if direction == "both" else 1
    assert histogram.get("gruCell", 0) == (S * dirs if cells else 0), histogram
    assert "gru" not in histogram and result.counts["decomposed gru"] == 1


@pytest.mark.parametrize("direction", ["forward", "backward", "both"])
@pytest.mark.parametrize("layout", ["iofg", "ifgo"])
@pytest.mark.parametrize("peephole", [True, False])
@pytest.mark.parametrize("cells", [True, False], ids=["to-lstmCell", "to-primitives"])
def test_lstm_per_step_matches(direction, layout, peephole, cells):
    dirs = 2 if direction == "both" else 1
    graph, feeds = _recurrent("lstm", direction, layout, gates=4, peephole=peephole)
    lacks = ("lstm",) if cells else ("lstm", "lstmCell")
    same_after(graph, feeds, lacking(*lacks))
    histogram = graph.op_histogram()
    assert histogram.get("lstmCell", 0) == (S * dirs if cells else 0), histogram
    assert "lstm" not in histogram


@pytest.mark.parametrize("kind,gates,options", [
    ("gru", 3, {"activations": ["relu", "sigmoid"]}),
    ("gru", 3, {"biases": False, "initial": False, "seq": False}),
    ("lstm", 4, {"activations": ["tanh", "relu", "sigmoid"]}),
    ("lstm", 4, {"biases": False, "initial": False, "seq": False}),
])
def test_recurrent_other_options_match(kind, gates, options):
    layout = "zrn" if kind == "gru" else "iofg"
    graph, feeds = _recurrent(kind, "both", layout, gates=gates, **options)
    same_after(graph, feeds, lacking(kind, f"{kind}Cell"))
    assert set(graph.op_histogram()) <= {"slice", "reshape", "matmul", "add", "mul", "sub",
                                         "sigmoid", "tanh", "relu", "concat"}


def test_constant_weights_are_cut_once_at_conversion_time():
    graph, feeds = _recurrent("lstm", "forward", "iofg", gates=4)
    constants_before = len(graph.constants)
    same_after(graph, feeds, lacking("lstm", "lstmCell"))
    histogram = graph.op_histogram()
    assert "transpose" not in histogram  # weight blocks became constants, not runtime ops
    # 4 gates x (W', R', b + rb) and the 2 initial states without their direction axis, each
    # made once, not per step; what they were cut from in between is gone.
    assert len(graph.constants) - constants_before == 4 * 3 + 2
    assert histogram["matmul"] == S * 4 * 2


def test_l2_pool_window_wholly_in_padding_is_zero():
    # ceil rounding gives a second window that starts in the end padding and holds no element:
    # the average pool would divide 0 by 0 there, so a mask sets the norm to 0. (ONNX Runtime
    # refuses padding as large as the window, so this is checked on the structure.)
    graph, _ = build(lambda b, x: b.l2Pool2d(x, windowDimensions=[1, 1], padding=[0, 1, 0, 0],
                                             outputShapeRounding="ceil"), f32([[[3]]]))
    decompose(graph, lacking("l2Pool2d"))
    where = graph.outputs["y0"].producer
    assert where.op_type == "where" and where.input("falseValue").constant.fill == 0
    assert where.input("condition").constant.numpy().reshape(-1).tolist() == [1, 0]


# -- the driver ---------------------------------------------------------------------------------
def test_replacement_keeps_the_output_name():
    graph, _ = build(lambda b, x: b.gelu(x, name="activation"), f32(1, 2))
    decompose(graph, lacking("gelu"))
    assert graph.outputs["y0"].name == "activation"
    assert graph.outputs["y0"].producer.op_type == "mul"


def test_missing_replacement_op_is_decomposed_in_turn():
    graph, feeds = build(lambda b, x: b.reduceL2(x, axes=[0]), f32([3, 1], [4, 2]))
    after, result = same_after(graph, feeds, lacking("reduceL2", "reduceSumSquare"))
    np.testing.assert_allclose(after["y0"], [5, math.sqrt(5)], rtol=1e-6)
    assert set(graph.op_histogram()) == {"sqrt", "reduceSum", "pow"}
    assert result.counts["decomposed reduceL2"] == 1


def test_impossible_replacement_leaves_the_op_and_a_note():
    graph, _ = build(lambda b, x: b.gelu(x), f32(1, 2))
    constants = len(graph.constants)
    result = decompose(graph, lacking("gelu", "erf"))
    assert not result.changed
    assert graph.op_histogram() == {"gelu": 1} and len(graph.constants) == constants
    [note] = result.notes
    assert "gelu" in note and "erf" in note and "no decomposition of erf" in note


def test_op_without_decomposition_is_noted():
    graph, _ = build(lambda b, x: b.sqrt(x), f32(1, 4))
    result = decompose(graph, lacking("sqrt"))
    assert not result.changed
    assert result.notes == ["sqrt 'sqrt' stays: test-target lacks sqrt and there is no "
                            "decomposition of sqrt"]


def test_emulated_op_is_decomposed_and_kept_when_it_cannot_be():
    graph, feeds = build(lambda b, x: b.gemm(x, b.constant(f32([2], [3]))), f32([1, 1]))
    after, result = same_after(graph, feeds, lacking(emulated=("gemm",)))
    assert graph.op_histogram() == {"matmul": 1} and after["y0"].tolist() == [[5]]
    graph, _ = build(lambda b, x: b.gemm(x, b.constant(f32([2], [3]))), f32([1, 1]))
    result = decompose(graph, lacking("matmul", emulated=("gemm",)))
    assert graph.op_histogram() == {"gemm": 1} and result.notes == [] and not result.changed


def test_depth_is_bounded():
    graph, _ = build(lambda b, x: b.reduceL2(x), f32(3, 4))
    op = graph.operations[0]
    wanted = {"reduceL2", "reduceSumSquare"}
    expander = Expander(graph, acceptable=lambda o: o.op_type not in wanted,
                        available=lambda t: t not in wanted, max_depth=1)
    with pytest.raises(CannotExpand, match="deeper than 1 levels"):
        expander.expand(op)
    assert graph.op_histogram() == {"reduceL2": 1}


def test_counts_and_no_target():
    graph, _ = build(lambda b, x: b.softsign(b.softsign(x)), f32(1))
    assert decompose(graph, None).changed is False
    result = decompose(graph, lacking("softsign"))
    assert result.counts == {"decomposed softsign": 2, "decomposed": 2, "operations added": 6}


def test_two_batch_normalizations_sharing_uniform_statistics_share_their_reshapes():
    # Fill constants reshaped to broadcast along the channel axis: one reshaped fill each, for
    # both ops. By hand: (x - 0.5) / sqrt(4 + 0) * 2 + 1 = x - 0.5 + 1 = x + 0.5.
    def make(b, x0, x1):
        g = b.graph
        stats = {name: g.add_constant(name, ConstantData("float32", (2,), fill=value))
                 for name, value in (("mean", 0.5), ("variance", 4.0), ("scale", 2.0),
                                     ("bias", 1.0))}
        return [b.batchNormalization(x, stats["mean"], stats["variance"], scale=stats["scale"],
                                     bias=stats["bias"], epsilon=0.0) for x in (x0, x1)]

    x0, x1 = rand(1, 2, 2, 2), rand(1, 2, 2, 2)
    graph, feeds = build(make, x0, x1)
    after, _ = same_after(graph, feeds, lacking("batchNormalization"))
    np.testing.assert_allclose(after["y0"], x0 + 0.5, rtol=1e-6)
    np.testing.assert_allclose(after["y1"], x1 + 0.5, rtol=1e-6)
    reshaped = [c for c in graph.constants.values() if c.shape == (1, 2, 1, 1)]
    assert len(reshaped) == 4 and all(c.uses() for c in reshaped)


def test_two_gemms_transposing_one_constant_share_the_transposed_constant():
    # gemm(a, B, bTranspose) = a @ B^T (numpy); both gemms read B, so its transpose is made
    # once, at conversion time.
    weight = rand(3, 4)

    def make(b, x0, x1):
        w = b.constant(weight, name="w")
        return [b.gemm(x, w, bTranspose=True) for x in (x0, x1)]

    x0, x1 = rand(2, 4), rand(5, 4)
    graph, feeds = build(make, x0, x1)
    after, _ = same_after(graph, feeds, lacking("gemm"))
    np.testing.assert_allclose(after["y0"], x0 @ weight.T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(after["y1"], x1 @ weight.T, rtol=1e-5, atol=1e-6)
    assert graph.op_histogram() == {"matmul": 2}
    [transposed] = [c for c in graph.constants.values() if c.shape == (4, 3)]
    np.testing.assert_array_equal(transposed.constant.numpy(), weight.T)


def test_a_constant_sequence_is_cut_once_for_both_directions():
    # A bidirectional gru over a constant input: the backward direction takes the same steps
    # x[t] the forward one took, so each step's slice is made once (S constants [B, I]).
    sequence = rand(S, B, I)

    def make(b, r):
        return b.gru(b.constant(sequence, name="seq"), b.constant(rand(2, 3 * H, I)), r, S, H,
                     direction="both", returnSequence=True)

    graph, feeds = build(make, rand(2, 3 * H, H))
    same_after(graph, feeds, lacking("gru", "gruCell"))
    steps = [c for c in graph.constants.values() if c.shape == (B, I)]
    assert len(steps) == S
    assert sorted(c.constant.numpy().tobytes() for c in steps) == \
        sorted(sequence[t].tobytes() for t in range(S))
