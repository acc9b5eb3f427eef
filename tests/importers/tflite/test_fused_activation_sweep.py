"""Every TFLite op whose options carry a fused activation, with every activation code, against
LiteRT: what we import must equal LiteRT's output under the op's budget, and what we refuse must
be a code LiteRT's kernel does not apply as the schema names it (it ignores it or rejects the
model), so the refusal's reason is checked against the runtime rather than taken on trust.

The inputs span [-8, 8] so that RELU, RELU_N1_TO_1 and RELU6 all clip on both sides where they
have one, and each op's raw output crosses -1, 0, 1 and 6.
"""
from __future__ import annotations

import numpy as np
import pytest

from converter.verification.parity import compare
from converter.runtimes.litert import run_litert
from converter.testing.tflite_fixtures import (RELU, RELU6, RELU_N1_TO_1, SAME, SIGN_BIT, TANH,
                                               Const, Input, Output, Quant, one_op)

from .helpers import EXACT, QSTEP, atol, check, rand, refused, ulp

NONE = 0
ACTIVATIONS = {"NONE": NONE, "RELU": RELU, "RELU_N1_TO_1": RELU_N1_TO_1, "RELU6": RELU6,
               "TANH": TANH, "SIGN_BIT": SIGN_BIT}
# What the spec of each code asks for, applied to the op's raw output in float64.
CLAMPS = {NONE: (-np.inf, np.inf), RELU: (0, np.inf), RELU_N1_TO_1: (-1, 1), RELU6: (0, 6)}


def _wide(*shape):
    return rand(*shape, low=-8.0, high=8.0)


# Each case: (op, the model for an activation code, feeds, budget of the op without activation).
def _binary(op):
    a, b = _wide(2, 3, 4), _wide(3, 1)
    if op == "DIV":
        b = np.where(np.abs(b) < 0.5, 2.0, b).astype(np.float32)
    budget = ulp(1)

    def model(act):
        return one_op(op, [Input("a", a.shape), Input("b", b.shape)],
                      [Output("y", [2, 3, 4])], fusedActivationFunction=act)
    return model, {"a": a, "b": b}, budget


def _conv():
    x, w, b = _wide(1, 5, 5, 3), rand(4, 3, 3, 3), rand(4)

    def model(act):
        return one_op("CONV_2D", [Input("x", x.shape), Const(w), Const(b)],
                      [Output("y", [1, 5, 5, 4])], padding=SAME, strideW=1, strideH=1,
                      fusedActivationFunction=act)
    return model, {"x": x}, atol(2e-5)


def _depthwise():
    x, w, b = _wide(1, 5, 5, 2), rand(1, 3, 3, 4), rand(4)

    def model(act):
        return one_op("DEPTHWISE_CONV_2D", [Input("x", x.shape), Const(w), Const(b)],
                      [Output("y", [1, 5, 5, 4])], padding=SAME, strideW=1, strideH=1,
                      depthMultiplier=2, fusedActivationFunction=act)
    return model, {"x": x}, atol(2e-5)


def _transpose_conv():
    x, w, b = _wide(1, 3, 3, 2), rand(3, 3, 3, 2), rand(3)

    def model(act):
        return one_op("TRANSPOSE_CONV", [Const(np.array([1, 6, 6, 3], np.int32)), Const(w),
                                         Input("x", x.shape), Const(b)],
                      [Output("y", [1, 6, 6, 3])], padding=SAME, strideW=2, strideH=2,
                      fusedActivationFunction=act)
    return model, {"x": x}, atol(2e-5)


def _fully_connected():
    x, w, b = _wide(3, 6), rand(5, 6), rand(5)

    def model(act):
        return one_op("FULLY_CONNECTED", [Input("x", x.shape), Const(w), Const(b)],
                      [Output("y", [3, 5])], fusedActivationFunction=act)
    return model, {"x": x}, atol(2e-5)


def _pool(op):
    x = _wide(1, 4, 4, 3)
    # Averages of values of both signs can cancel to near zero: judged there by an absolute
    # bound (a few float32 steps of the window's sum), as the policy allows.
    budget = {"AVERAGE_POOL_2D": atol(4e-6), "MAX_POOL_2D": EXACT, "L2_POOL_2D": ulp(6)}[op]

    def model(act):
        return one_op(op, [Input("x", x.shape)], [Output("y", [1, 2, 2, 3])], padding=SAME,
                      strideW=2, strideH=2, filterWidth=2, filterHeight=2,
                      fusedActivationFunction=act)
    return model, {"x": x}, budget


def _concatenation():
    a, b = _wide(2, 3), _wide(2, 2)

    def model(act):
        return one_op("CONCATENATION", [Input("a", a.shape), Input("b", b.shape)],
                      [Output("y", [2, 5])], axis=1, fusedActivationFunction=act)
    return model, {"a": a, "b": b}, EXACT


def _l2_normalization():
    x = _wide(2, 6)

    def model(act):
        return one_op("L2_NORMALIZATION", [Input("x", x.shape)], [Output("y", [2, 6])],
                      fusedActivationFunction=act)
    return model, {"x": x}, ulp(4)


CASES = {
    **{op: (lambda op=op: _binary(op)) for op in ("ADD", "SUB", "MUL", "DIV")},
    "CONV_2D": _conv, "DEPTHWISE_CONV_2D": _depthwise, "TRANSPOSE_CONV": _transpose_conv,
    "FULLY_CONNECTED": _fully_connected,
    **{op: (lambda op=op: _pool(op)) for op in ("AVERAGE_POOL_2D", "MAX_POOL_2D",
                                                "L2_POOL_2D")},
    "CONCATENATION": _concatenation, "L2_NORMALIZATION": _l2_normalization,
}


def _litert_or_error(model, feeds):
    try:
        return run_litert(model, feeds)["y"]
    except Exception as error:  # LiteRT refusing the model is one of the two accepted answers
        return error


@pytest.mark.parametrize("act_name", list(ACTIVATIONS))
@pytest.mark.parametrize("op", list(CASES))
def test_fused_activation_matches_litert_or_is_refused_for_the_reason_given(op, act_name):
    act = ACTIVATIONS[act_name]
    model_for, feeds, budget = CASES[op]()
    plain = run_litert(model_for(NONE), feeds)["y"].astype(np.float64)
    model = model_for(act)
    if act in CLAMPS and not (act != NONE and op in ("CONCATENATION", "L2_NORMALIZATION")):
        # Imported: LiteRT is the oracle (within the op's budget); on top, the result is the
        # op's own output clamped as the code says (the clamp itself exact).
        _, ours = check(model, feeds, budget)
        low, high = CLAMPS[act]
        want = np.clip(plain, low, high)
        assert np.abs(ours["y"] - want).max() <= np.abs(plain).max() * 1e-5
        if act != NONE and not (op == "L2_POOL_2D" and act == RELU):  # L2 is never < 0
            assert (plain < max(low, -1e30)).any() or (plain > min(high, 1e30)).any(), \
                "the inputs never reach the clamp: the case proves nothing"
        return
    error = refused(model)
    theirs = _litert_or_error(model, feeds)
    if isinstance(theirs, Exception):
        return  # LiteRT refuses the model too
    # LiteRT runs it: our refusal says its kernel ignores the code, so it must equal NONE's
    # (within the op's budget: a model with the code may run on another of LiteRT's kernels).
    assert "ignores" in error.line() or "rejects" in error.line(), error.line()
    same = compare("y", theirs, plain.astype(theirs.dtype), budget, "float32")
    assert same.passed, f"LiteRT applies {act_name} on {op}: {same.reason}"



# Quantized kernels apply the RELU family as a clamp of the quantized output range: the same
# codes on int8 ADD, CONV_2D and FULLY_CONNECTED, within one quantization step of LiteRT.
Q_IN, Q_OUT = Quant([1 / 16], [0]), Quant([1 / 8], [-3])


def _quantized(op, act):
    if op == "ADD":
        return one_op("ADD", [Input("a", [2, 8], "int8", Q_IN), Input("b", [2, 8], "int8", Q_IN)],
                      [Output("y", [2, 8], "int8", Q_OUT)], fusedActivationFunction=act)
    w = Const(np.arange(-12, 12, dtype=np.int8).reshape(3, 8) if op == "FULLY_CONNECTED"
              else np.arange(-27, 27, dtype=np.int8).reshape(2, 3, 3, 3),
              quant=Quant([1 / 32], [0]))
    if op == "FULLY_CONNECTED":
        return one_op(op, [Input("a", [2, 8], "int8", Q_IN), w, None],
                      [Output("y", [2, 3], "int8", Q_OUT)], fusedActivationFunction=act)
    # LiteRT's quantized conv needs its int32 bias (scale: input scale x filter scale).
    bias = Const(np.array([40, -40], np.int32), quant=Quant([1 / 16 / 32], [0]))
    return one_op(op, [Input("a", [1, 4, 4, 3], "int8", Q_IN), w, bias],
                  [Output("y", [1, 4, 4, 2], "int8", Q_OUT)], padding=SAME, strideW=1,
                  strideH=1, fusedActivationFunction=act)


@pytest.mark.parametrize("act_name", ["NONE", "RELU", "RELU_N1_TO_1", "RELU6"])
@pytest.mark.parametrize("op", ["ADD", "CONV_2D", "FULLY_CONNECTED"])
def test_quantized_fused_activation_matches_litert(op, act_name):
    model = _quantized(op, ACTIVATIONS[act_name])
    shape = [1, 4, 4, 3] if op == "CONV_2D" else [2, 8]
    feeds = {"a": np.random.default_rng(3).integers(-128, 128, shape).astype(np.int8)}
    if op == "ADD":
        feeds["b"] = np.random.default_rng(4).integers(-128, 128, shape).astype(np.int8)
    check(model, feeds, QSTEP)


# The recurrent kernels apply every code, TANH and SIGN_BIT too (kernel_applies_all): LSTM to
# its cell input and its cell state, RNN to each step's sum. Wide inputs, so that RELU6 clamps
# at 6 (its result differs from RELU's) and the others cross their bounds.
def _recurrent(op, act):
    from .test_recurrent import _lstm, _rnn

    model, shape = _lstm(activation=act) if op == "LSTM" else _rnn(act)
    return model, {"x": _wide(*shape)}


@pytest.mark.parametrize("act_name", list(ACTIVATIONS))
@pytest.mark.parametrize("op", ["LSTM", "RNN"])
def test_recurrent_fused_activation_matches_litert(op, act_name):
    model, feeds = _recurrent(op, ACTIVATIONS[act_name])
    if op == "LSTM" and act_name == "NONE":
        assert "cell activation is NONE" in refused(model).line()
        return
    check(model, feeds, atol(2e-6))
    if act_name == "RELU6":  # the bound 6 is reached: not RELU's result
        relu = run_litert(_recurrent(op, RELU)[0], feeds)["y"]
        assert np.abs(run_litert(model, feeds)["y"] - relu).max() > 1e-3


def test_litert_lstm_with_no_activation_is_not_the_schemas_lstm():
    """Why LSTM's NONE is refused, checked against LiteRT: its kernel's output is the output
    gate times the cell input (the buffer NONE leaves unwritten), not times the cell state."""
    from converter.testing.tflite_fixtures import Const

    from .test_recurrent import B, H, I, T, _lstm

    rng = np.random.default_rng(7)
    w = {g: (rng.uniform(-1, 1, (H, I)) * 0.5).astype(np.float32) for g in "ifco"}
    r = {g: (rng.uniform(-1, 1, (H, H)) * 0.5).astype(np.float32) for g in "ifco"}
    b = {g: (rng.uniform(-1, 1, H) * 0.5).astype(np.float32) for g in "ifco"}
    slots = {1 + k: Const(w[g]) for k, g in enumerate("ifco")}
    slots |= {5 + k: Const(r[g]) for k, g in enumerate("ifco")}
    slots |= {12 + k: Const(b[g]) for k, g in enumerate("ifco")}
    model, shape = _lstm(activation=NONE, extra=slots)
    x = _wide(*shape)
    theirs = run_litert(model, {"x": x})["y"].astype(np.float64)
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    by_schema, by_kernel = [], []
    for cell_output in (True, False):
        h, c, out = np.zeros((B, H)), np.zeros((B, H)), []
        for t in range(T):
            gate = {g: x[:, t] @ w[g].T.astype(np.float64) + h @ r[g].T + b[g] for g in "ifco"}
            c = sigmoid(gate["f"]) * c + sigmoid(gate["i"]) * gate["c"]
            h = sigmoid(gate["o"]) * (c if cell_output else gate["c"])
            out.append(h)
        (by_schema if cell_output else by_kernel).append(np.stack(out, axis=1))
    np.testing.assert_allclose(theirs, by_kernel[0], atol=1e-5)
    assert np.abs(theirs - by_schema[0]).max() > 0.1
