"""UNIDIRECTIONAL_SEQUENCE_LSTM (WebNN lstm) and UNIDIRECTIONAL_SEQUENCE_RNN (unrolled)
against LiteRT; the fused activations TANH and SIGN_BIT, which only these kernels apply."""
from __future__ import annotations

import numpy as np
import pytest

from converter.testing.tflite_fixtures import RELU, RELU6, SIGN_BIT, TANH, Const, Input, \
    Output, Variable, one_op

from .helpers import atol, check, op_named, ops_of, rand, refused

B, T, I, H = 2, 3, 4, 5


def _lstm(peephole=False, time_major=False, cifg=False, activation=TANH, peepholes="ifo",
          extra=None, **options):
    w = [Const(rand(H, I) * 0.5, name=f"w_{g}") for g in "ifco"]
    r = [Const(rand(H, H) * 0.5, name=f"r_{g}") for g in "ifco"]
    if cifg:
        w[0] = r[0] = None
    p = [Const(rand(H) * 0.5, name=f"p_{g}") if g in peepholes else None for g in "ifo"] \
        if peephole else [None] * 3
    b = [Const(rand(H) * 0.5, name=f"b_{g}") for g in "ifco"]
    shape = [T, B, I] if time_major else [B, T, I]
    inputs = [Input("x", shape), *w, *r, *p, *b, None, None, Variable([B, H], name="h"),
              Variable([B, H], name="c"), None, None, None, None]
    for k, value in (extra or {}).items():  # {input slot: value} replaced
        inputs[k] = value
    out = [T, B, H] if time_major else [B, T, H]
    clips = {"cellClip": 0.0, "projClip": 0.0, **options}
    return one_op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [Output("y", out)],
                  fusedActivationFunction=activation, timeMajor=time_major, **clips), shape


@pytest.mark.parametrize("peephole, time_major", [(False, False), (True, False), (False, True)])
def test_lstm_matches_litert(peephole, time_major):
    model, shape = _lstm(peephole, time_major)
    graph, got = check(model, {"x": rand(*shape)}, atol(2e-6))
    if peephole:  # unrolled: WebNN's lstm feeds the output peephole the old cell state
        assert "lstm" not in ops_of(graph) and ops_of(graph).count("split") == T
    else:
        lstm = op_named(graph, "lstm")
        assert lstm.attrs["layout"] == "ifgo"
        assert lstm.attrs["activations"] == ["sigmoid", "tanh", "tanh"]
        assert lstm.input("weight").shape == (1, 4 * H, I)
    assert ops_of(graph).count("transpose") == (0 if time_major else 2)


def test_lstm_relu_cell_activation():
    model, shape = _lstm(activation=RELU)
    graph, _ = check(model, {"x": rand(*shape)}, atol(2e-6))
    assert op_named(graph, "lstm").attrs["activations"] == ["sigmoid", "relu", "relu"]


@pytest.mark.parametrize("output_peephole", [0.0, 0.5])
def test_lstm_one_step_by_hand(output_peephole):
    # one unit, one step, zero state: c = i * g, h = o * tanh(c) with each gate a sigmoid of
    # its weight times x (g a tanh). TFLite's output peephole looks at the NEW cell state c.
    x = np.array([[[2.0]]], np.float32)
    weights = {"i": 0.5, "f": 1.0, "c": -0.25, "o": 0.75}
    inputs = [Input("x", [1, 1, 1])]
    inputs += [Const(np.array([[weights[g]]], np.float32), name=f"w_{g}") for g in "ifco"]
    inputs += [Const(np.array([[0.3]], np.float32), name=f"r_{g}") for g in "ifco"]
    inputs += [Const(np.array([p], np.float32), name=f"p_{g}")
               for g, p in zip("ifo", (0.0, 0.0, output_peephole))]
    inputs += [Const(np.zeros(1, np.float32), name=f"b_{g}") for g in "ifco"]
    inputs += [None, None, Variable([1, 1], name="h"), Variable([1, 1], name="c")] + [None] * 4
    model = one_op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [Output("y", [1, 1, 1])],
                   fusedActivationFunction=TANH)
    _, got = check(model, {"x": x}, atol(1e-6))

    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    c = sigmoid(1.0) * np.tanh(-0.5)
    o = sigmoid(1.5 + output_peephole * c)
    np.testing.assert_allclose(got["y"].reshape(()), o * np.tanh(c), rtol=1e-6)


@pytest.mark.parametrize("changes, message", [
    ({"extra": {16: Const(np.ones((H, H), np.float32))}}, "projection layer"),
    ({"extra": {17: Const(np.ones(H, np.float32))}}, "projection layer"),
    *[({"extra": {k: Const(np.ones(H, np.float32))}}, "normalizes its gates")
      for k in (20, 21, 22, 23)],
    ({"cellClip": 1.0}, "clips its cell"),
    ({"projClip": 1.0}, "clips its cell"),
    ({"diagonalRecurrentTensors": True}, "diagonal vectors"),
    ({"activation": 0}, "cell activation is NONE"),
    ({"activation": 6}, "cell activation 6 is none of the schema's"),
    ({"extra": {0: Input("x", [B, I])}}, "rank 2"),
    ({"extra": {5: None}}, "CIFG"),  # input gate weights without their recurrent half
])
def test_lstm_refusals(changes, message):
    model, _ = _lstm(**changes)
    assert message in refused(model).line()


def test_lstm_weights_stay_one_constant_each():
    model, shape = _lstm()
    graph, _ = check(model, {"x": rand(*shape)}, atol(2e-6))
    assert "concat" not in ops_of(graph)  # the four gates joined at conversion time


def test_rnn_time_major_and_a_rank_2_input():
    model, shape = _rnn(TANH, time_major=True)
    graph, _ = check(model, {"x": rand(*shape)}, atol(2e-6))
    assert op_named(graph, "concat").attrs["axis"] == 0
    inputs = [Input("x", [B, I]), Const(rand(H, I)), Const(rand(H, H)), Const(rand(H)),
              Variable([B, H], name="h")]
    model = one_op("UNIDIRECTIONAL_SEQUENCE_RNN", inputs, [Output("y", [B, H])],
                   fusedActivationFunction=TANH)
    assert "rank 2" in refused(model).line()


def test_rnn_of_one_step():
    x = rand(B, 1, I)
    w, r, b = rand(H, I), rand(H, H), rand(H)
    inputs = [Input("x", x.shape), Const(w), Const(r), Const(b), Variable([B, H], name="h")]
    model = one_op("UNIDIRECTIONAL_SEQUENCE_RNN", inputs, [Output("y", [B, 1, H])],
                   fusedActivationFunction=TANH)
    graph, got = check(model, {"x": x}, atol(2e-6))
    np.testing.assert_allclose(got["y"][:, 0], np.tanh(x[:, 0] @ w.T + b), atol=2e-6)
    assert "concat" not in ops_of(graph)


def test_lstm_with_only_some_peepholes_is_refused():
    model, _ = _lstm(peephole=True, peepholes="if")
    assert "some peepholes but not all three" in refused(model).line()


def test_lstm_without_an_input_gate_is_refused():
    model, _ = _lstm(cifg=True)
    assert "CIFG" in refused(model).line()


def _rnn(activation, time_major=False):
    shape = [T, B, I] if time_major else [B, T, I]
    inputs = [Input("x", shape), Const(rand(H, I) * 0.5), Const(rand(H, H) * 0.5),
              Const(rand(H) * 0.5), Variable([B, H], name="h")]
    out = [T, B, H] if time_major else [B, T, H]
    return one_op("UNIDIRECTIONAL_SEQUENCE_RNN", inputs, [Output("y", out)],
                  fusedActivationFunction=activation, timeMajor=time_major), shape


@pytest.mark.parametrize("activation, op", [(TANH, "tanh"), (RELU, "relu"), (RELU6, "clamp"),
                                            (SIGN_BIT, "lesser")])
def test_rnn_applies_every_fused_activation(activation, op):
    model, shape = _rnn(activation)
    graph, _ = check(model, {"x": rand(*shape)}, atol(2e-6))
    assert ops_of(graph).count(op) == T  # one activation per unrolled step


def test_rnn_time_major():
    model, shape = _rnn(TANH, time_major=True)
    check(model, {"x": rand(*shape)}, atol(2e-6))


def test_rnn_sign_bit_by_hand():
    # h1 = signbit(x W^T + b) = 1 where negative; h2 adds h1 R^T
    x = np.array([[[1.0], [1.0]]], np.float32)  # batch 1, 2 steps, 1 input
    inputs = [Input("x", [1, 2, 1]), Const(np.array([[-1.0], [2.0]], np.float32)),
              Const(np.array([[0, 0], [-5, 0]], np.float32)), Const(np.zeros(2, np.float32)),
              Variable([1, 2], name="h")]
    model = one_op("UNIDIRECTIONAL_SEQUENCE_RNN", inputs, [Output("y", [1, 2, 2])],
                   fusedActivationFunction=SIGN_BIT)
    _, got = check(model, {"x": x}, atol(0))
    # step 1: [-1, 2] -> [1, 0]; step 2: [-1, 2 - 5 * 1] = [-1, -3] -> [1, 1]
    np.testing.assert_array_equal(got["y"][0], [[1, 0], [1, 1]])
