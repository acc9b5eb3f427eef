"""The constant_operands pass: operands a target wants constant end up constant, by folding
when they depend on constants only, else by rewriting the op (detaching a bias, decomposing
batchNormalization, lstm, gru ...). Each rewrite is checked against the original graph through
converter.run within tolerances.md's float32 budget, and on inputs worked out by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest

from converter import dtypes
from converter.ops.builder import GraphBuilder
from converter.runtimes.execute import run
from converter.ops.registry import all_ops
from converter.verification.parity import compare
from converter.passes import PassContext, run_passes
from converter.passes.constant_operands import computed_operands, constant_rooted
from converter.targets import Target

RNG = np.random.default_rng(77)
COREML_LIKE = {
    "batchNormalization": ["mean", "variance", "scale", "bias"],
    "conv2d": ["bias"],
    "layerNormalization": ["scale", "bias"],
    "lstm": ["weight", "recurrentWeight", "bias", "recurrentBias", "peepholeWeight"],
    "lstmCell": ["weight", "recurrentWeight", "bias", "recurrentBias", "peepholeWeight"],
    "gru": ["weight", "recurrentWeight"],
    "gruCell": ["weight", "recurrentWeight"],
}


def target(lacks: tuple[str, ...] = (), constants=None) -> Target:
    return Target(name="coreml-like", limits={o: {} for o in all_ops() if o not in lacks},
                  constant_operands=COREML_LIKE if constants is None else constants)


def rand(*shape) -> np.ndarray:
    return np.asarray((RNG.random(shape, dtype=np.float32) - 0.5) * 2, np.float32)


def build(make, **inputs: np.ndarray):
    b = GraphBuilder()
    operands = {k: b.input(k, dtypes.from_numpy(v.dtype), v.shape) for k, v in inputs.items()}
    out = make(b, **operands)
    outs = out if isinstance(out, list) else [out]
    return b.build({f"y{i}": o for i, o in enumerate(outs)}), inputs


def rewrite(graph, feeds, tgt=None):
    """Run, apply the pass, run again: same values within the budget. Returns (after, result)."""
    tgt = tgt or target()
    before = run(graph, feeds)
    [(_, result)] = run_passes(graph, ["constant_operands"], PassContext(target=tgt))
    after = run(graph, feeds)
    for name, want in before.items():
        parity = compare(name, after[name], want)
        assert parity.passed, f"{name}: {parity.reason} (max abs {parity.max_abs})"
    for op in graph.operations:  # what the pass promises
        for name in tgt.must_be_constant(op.op_type):
            if name in op.opdef.slots and op.input(name) is not None:
                assert op.input(name).is_constant, f"{op.op_type} '{op.name}' {name}"
    return after, result


def f32(*values) -> np.ndarray:
    return np.array(values, np.float32)


# -- batchNormalization -------------------------------------------------------------------------
def _bn_of_own_statistics(b, x, epsilon=1e-5):
    """batchNormalization of x with the mean and variance of x itself (per channel)."""
    axes = [0, 2, 3]
    channels = x.shape[1]
    mean = b.reduceMean(x, axes=axes)
    centered = b.sub(x, b.reshape(mean, [1, channels, 1, 1]))
    variance = b.reduceMean(b.mul(centered, centered), axes=axes)
    return b.batchNormalization(x, mean, variance, scale=b.constant(f32(*[2] * channels)),
                                bias=b.constant(f32(*[1] * channels)), epsilon=epsilon)


def test_bn_statistics_from_the_input_are_decomposed():
    # channel values [1, 3]: mean 2, variance 1, so (x - 2) / 1 * 2 + 1 = [-1, 3].
    graph, feeds = build(lambda b, x: _bn_of_own_statistics(b, x, epsilon=0),
                         x=f32([[[1]]], [[[3]]]))
    after, result = rewrite(graph, feeds)
    assert "batchNormalization" not in graph.op_histogram()
    assert result.counts["decomposed batchNormalization"] == 1
    assert after["y0"].reshape(-1).tolist() == [-1, 3]


def test_bn_statistics_from_the_input_random():
    graph, feeds = build(_bn_of_own_statistics, x=rand(2, 3, 4, 5))
    after, _ = rewrite(graph, feeds)
    assert {"sub", "div", "sqrt", "mul", "add"} <= set(graph.op_histogram())
    # Normalized by its own statistics: each channel has mean 1 (the bias) after the pass.
    np.testing.assert_allclose(after["y0"].mean(axis=(0, 2, 3)), [1, 1, 1], atol=1e-5)


def test_bn_statistics_from_constants_are_folded():
    def make(b, x):
        mean = b.add(b.constant(f32(1, 2)), b.constant(f32(1, 1)))  # [2, 3]
        variance = b.mul(b.constant(f32(2, 8)), b.constant(f32(2, 2)))  # [4, 16]
        return b.batchNormalization(x, mean, variance, epsilon=0)

    graph, feeds = build(make, x=f32([[[4]], [[7]]]))
    bn = graph.operations[-1]
    assert constant_rooted(bn.input("mean")) and not constant_rooted(bn.input("input"))
    assert computed_operands(bn, target()) == ["mean", "variance"]
    after, result = rewrite(graph, feeds)
    assert graph.op_histogram() == {"batchNormalization": 1}
    assert result.counts == {"folded": 2, "operations added": 0}
    bn = graph.operations[0]
    assert bn.input("mean").constant.numpy().tolist() == [2, 3]
    assert bn.input("variance").constant.numpy().tolist() == [4, 16]
    assert after["y0"].reshape(-1).tolist() == [1, 1]  # (4 - 2) / 2, (7 - 3) / 4


def test_bn_scale_from_the_input_is_detached():
    def make(b, x, s):
        return b.batchNormalization(x, b.constant(f32(0, 1)), b.constant(f32(1, 4)), scale=s,
                                    bias=b.constant(f32(5, 5)), epsilon=0)

    graph, feeds = build(make, x=f32([[[2]], [[3]]]), s=f32(3, 10))
    after, result = rewrite(graph, feeds)
    assert result.counts["detached batchNormalization"] == 1
    assert graph.op_histogram()["batchNormalization"] == 1
    assert after["y0"].reshape(-1).tolist() == [11, 15]  # 3 * 2 + 5, 10 * (3 - 1) / 2 + 5


# -- detached biases ----------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_conv_bias_from_the_input_is_detached(layout):
    def make(b, x):
        spatial = [1, 2] if layout == "nhwc" else [2, 3]
        bias = b.reduceMean(x, axes=[0] + spatial)  # one value per channel
        filter_layout = "ohwi" if layout == "nhwc" else "oihw"
        weights = rand(3, 3, 2, 2) if layout == "nchw" else rand(3, 2, 2, 3)
        return b.conv2d(x, b.constant(weights), bias=bias, inputLayout=layout,
                        filterLayout=filter_layout, padding=[1, 0, 0, 1])

    shape = (2, 3, 5, 4) if layout == "nchw" else (2, 5, 4, 3)
    graph, feeds = build(make, x=rand(*shape))
    _, result = rewrite(graph, feeds)
    conv = next(op for op in graph.operations if op.op_type == "conv2d")
    assert conv.input("bias") is None and conv.output.consumers()[0].op_type == "add"
    assert result.counts["detached conv2d"] == 1


def test_conv_bias_hand_computed():
    # conv of [2] with [3] is 6; the bias is the input's mean, 2: 8.
    graph, feeds = build(lambda b, x: b.conv2d(x, b.constant(f32([[[3]]])),
                                               bias=b.reshape(x, [1])), x=f32([[[2]]]))
    after, _ = rewrite(graph, feeds)
    assert after["y0"].reshape(-1).tolist() == [8]


def test_layer_norm_scale_from_the_input_is_detached():
    def make(b, x, s):
        return b.layerNormalization(x, axes=[2, 1], scale=b.transpose(s),
                                    bias=b.constant(rand(4, 3)))

    graph, feeds = build(make, x=rand(2, 3, 4), s=rand(3, 4))
    _, result = rewrite(graph, feeds)
    norm = next(op for op in graph.operations if op.op_type == "layerNormalization")
    assert norm.input("scale") is None and norm.input("bias") is None
    assert result.counts["detached layerNormalization"] == 1


def test_instance_norm_bias_and_conv_transpose_bias_are_detached():
    def make(b, x):
        norm = b.instanceNormalization(x, bias=b.reduceMean(x, axes=[0, 1, 2]), layout="nhwc")
        up = b.convTranspose2d(b.transpose(norm, permutation=[0, 3, 1, 2]),
                               b.constant(rand(3, 2, 2, 2)), strides=[2, 2],
                               bias=b.reduceMean(x, axes=[0, 1, 3]))  # 2 output channels
        return up

    constants = {"instanceNormalization": ["scale", "bias"], "convTranspose2d": ["bias"]}
    graph, feeds = build(make, x=rand(1, 4, 2, 3))
    _, result = rewrite(graph, feeds, target(constants=constants))
    assert result.counts["detached instanceNormalization"] == 1
    assert result.counts["detached convTranspose2d"] == 1


def test_every_detaching_rule_is_exercised():
    from converter.passes.decompositions import _DETACHING, get_detaching

    get_detaching("conv2d")  # loads the table
    assert set(_DETACHING) == {"batchNormalization", "conv2d", "convTranspose2d",
                               "instanceNormalization", "layerNormalization"}


# -- recurrent ----------------------------------------------------------------------------------
S, B, I, H = 3, 2, 3, 4


@pytest.mark.parametrize("direction", ["forward", "backward", "both"])
@pytest.mark.parametrize("layout,peephole", [("iofg", True), ("ifgo", False), ("ifgo", True)])
def test_lstm_weights_from_the_input_are_decomposed(direction, layout, peephole):
    dirs = 2 if direction == "both" else 1

    def make(b, x, w):
        extra = {"peepholeWeight": b.constant(rand(dirs, 3 * H))} if peephole else {}
        return b.lstm(x, w, b.constant(rand(dirs, 4 * H, H)), S, H, direction=direction,
                      layout=layout, returnSequence=True, bias=b.constant(rand(dirs, 4 * H)),
                      recurrentBias=b.mul(b.constant(rand(dirs, 4 * H)), b.constant(f32(2))),
                      initialHiddenState=b.constant(rand(dirs, B, H)),
                      initialCellState=b.constant(rand(dirs, B, H)), **extra)

    graph, feeds = build(make, x=rand(S, B, I), w=rand(dirs, 4 * H, I))
    _, result = rewrite(graph, feeds)
    histogram = graph.op_histogram()
    assert "lstm" not in histogram and "lstmCell" not in histogram, histogram
    assert result.counts == {"folded": 1, "decomposed lstm": 1,
                             "operations added": result.counts["operations added"]}


def test_lstm_cell_hand_computed():
    # Zero weights fed at run time: every gate is sigmoid(0) = 0.5 and g = tanh(0) = 0, so
    # c' = 0.5 c and h' = 0.5 tanh(c').
    def make(b, x, w):
        zeros = b.constant(np.zeros((8, 2), np.float32))
        return b.lstmCell(x, w, zeros, b.constant(f32([0, 0])), b.constant(f32([2, 4])), 2)

    graph, feeds = build(make, x=f32([1, -1]), w=np.zeros((8, 2), np.float32))
    after, _ = rewrite(graph, feeds)
    assert "lstmCell" not in graph.op_histogram()
    np.testing.assert_allclose(after["y0"], [[0.5 * math.tanh(1), 0.5 * math.tanh(2)]],
                               rtol=1e-6)
    np.testing.assert_allclose(after["y1"], [[1, 2]], rtol=1e-6)


@pytest.mark.parametrize("direction,layout,reset_after", [
    ("both", "rzn", False), ("backward", "zrn", True), ("forward", "rzn", True)])
def test_gru_weights_from_the_input_are_decomposed(direction, layout, reset_after):
    dirs = 2 if direction == "both" else 1

    def make(b, x, r):
        return b.gru(x, b.constant(rand(dirs, 3 * H, I)), r, S, H, direction=direction,
                     layout=layout, resetAfter=reset_after, returnSequence=True,
                     bias=b.constant(rand(dirs, 3 * H)),
                     initialHiddenState=b.constant(rand(dirs, B, H)))

    graph, feeds = build(make, x=rand(S, B, I), r=rand(dirs, 3 * H, H))
    _, result = rewrite(graph, feeds)
    assert not {"gru", "gruCell"} & set(graph.op_histogram())
    assert result.counts["decomposed gru"] == 1


def test_constant_weights_leave_the_graph_alone():
    def make(b, x):
        return b.lstm(x, b.constant(rand(1, 4 * H, I)), b.constant(rand(1, 4 * H, H)), S, H)

    graph, feeds = build(make, x=rand(S, B, I))
    _, result = rewrite(graph, feeds)
    assert not result.changed and result.counts == {} and result.notes == []
    assert graph.op_histogram() == {"lstm": 1}


def test_impossible_rewrite_is_noted_and_the_graph_kept():
    def make(b, x, w):
        return b.gru(x, w, b.constant(rand(1, 3 * H, H)), S, H)

    graph, _ = build(make, x=rand(S, B, I), w=rand(1, 3 * H, I))
    [(_, result)] = run_passes(graph, ["constant_operands"],
                               PassContext(target=target(lacks=("matmul",))))
    assert not result.changed and graph.op_histogram() == {"gru": 1}
    [note] = result.notes
    assert note.startswith("gru 'gru': weight must be constant on coreml-like but is computed "
                           "from graph inputs")
    assert "matmul" in note


def test_targets_without_constant_operands_change_nothing():
    graph, feeds = build(lambda b, x: _bn_of_own_statistics(b, x), x=rand(1, 2, 2, 2))
    _, result = rewrite(graph, feeds, target(constants={}))
    assert not result.changed and graph.op_histogram()["batchNormalization"] == 1


@pytest.mark.parametrize("lacks, constants, cells", [
    ((), {"gru": ["weight", "recurrentWeight"]}, S),
    (("gruCell",), {"gru": ["weight", "recurrentWeight"]}, 0),
    ((), None, 0)])
def test_a_gru_with_computed_weights_uses_cells_only_where_they_take_them(lacks, constants,
                                                                         cells):
    # gruCell, when the target has it and does not want its weights constant, takes the
    # computed weights, so the steps stay cells. Otherwise the gru becomes primitives
    # directly: the computed recurrent weight is cut into its 3 gate blocks (a slice and a
    # transpose each) once, not once per step as cells decomposed in turn would cut it.
    def make(b, x, r):
        return b.gru(x, b.constant(rand(1, 3 * H, I)), r, S, H, returnSequence=True,
                     bias=b.constant(rand(1, 3 * H)), initialHiddenState=b.constant(rand(1, B, H)))

    graph, feeds = build(make, x=rand(S, B, I), r=rand(1, 3 * H, H))
    _, result = rewrite(graph, feeds, target(lacks=lacks, constants=constants))
    histogram = graph.op_histogram()
    assert "gru" not in histogram and histogram.get("gruCell", 0) == cells, histogram
    assert result.counts["decomposed gru"] == 1
    if not cells:
        # 3 gate blocks of r, and each step's slice of x
        assert histogram["transpose"] == 3 and histogram["slice"] == 3 + S, histogram
