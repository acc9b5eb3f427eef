"""gru, gruCell, lstm and lstmCell through the ONNX lowering, against step-by-step numpy
references of the spec's cell formulas (tests/lowering/references.py).

tolerances.md gives recurrent ops no budget; each step chains matmuls and transcendental
activations, so results are compared with |got - want| <= 1e-5 + 1e-4 * |want| (float32).
"""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from . import references as ref
from .helpers import execute

RNG = np.random.default_rng(21)
B, I, H, S = 2, 3, 4, 3


def _r(*shape):
    return (RNG.random(shape) - 0.5).astype(np.float32)


def _close(got, want):
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def _blocks(a, order, hidden, axis=0):
    """Reorder gate blocks of size `hidden` along `axis` (to give the op another layout)."""
    parts = np.split(a, a.shape[axis] // hidden, axis=axis)
    return np.concatenate([parts[k] for k in order], axis=axis)


# -- gru ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("reset_after", [True, False])
@pytest.mark.parametrize("layout", ["zrn", "rzn"])
@pytest.mark.parametrize("acts", [None, ["sigmoid", "relu"]])
def test_gru_cell(reset_after, layout, acts):
    x, h = _r(B, I), _r(B, H)
    w, r, bias, rbias = _r(3 * H, I), _r(3 * H, H), _r(3 * H), _r(3 * H)
    want = ref.gru_cell(x.astype(np.float64), w, r, h, bias, rbias, reset_after,
                        tuple(acts or ("sigmoid", "tanh")))
    order = (0, 1, 2) if layout == "zrn" else (1, 0, 2)
    b = GraphBuilder()
    xi = b.input("x", "float32", [B, I])
    opts = dict(resetAfter=reset_after, layout=layout)
    if acts:
        opts["activations"] = acts
    y = b.gruCell(xi, b.constant(_blocks(w, order, H)), b.constant(_blocks(r, order, H)),
                  b.constant(h), H, bias=b.constant(_blocks(bias, order, H)),
                  recurrentBias=b.constant(_blocks(rbias, order, H)), **opts)
    _close(execute(b, {"y": y}, {"x": x})["y"], want)


def _gru_reference(x, w, r, bias, rbias, h0, direction, reset_after):
    dirs = 2 if direction == "both" else 1
    finals, seq = [], np.zeros((S, dirs, B, H))
    for d in range(dirs):
        h = h0[d].astype(np.float64)
        steps = range(S - 1, -1, -1) if (direction == "backward" or d == 1) else range(S)
        for t in steps:
            h = ref.gru_cell(x[t].astype(np.float64), w[d], r[d], h, bias[d], rbias[d],
                             reset_after)
            seq[t, d] = h
        finals.append(h)
    return np.stack(finals), seq


@pytest.mark.parametrize("direction", ["forward", "backward", "both"])
@pytest.mark.parametrize("reset_after", [True, False])
def test_gru_sequence_in_every_direction(direction, reset_after):
    dirs = 2 if direction == "both" else 1
    x = _r(S, B, I)
    w, r, rbias, h0 = _r(dirs, 3 * H, I), _r(dirs, 3 * H, H), _r(dirs, 3 * H), _r(dirs, B, H)
    zeros = np.zeros((dirs, 3 * H), np.float32)  # no bias given: the spec uses zeros
    want_last, want_seq = _gru_reference(x, w, r, zeros, rbias, h0, direction, reset_after)
    b = GraphBuilder()
    xi = b.input("x", "float32", [S, B, I])
    outs = b.gru(xi, b.constant(w), b.constant(r), S, H, recurrentBias=b.constant(rbias),
                 initialHiddenState=b.constant(h0), direction=direction, resetAfter=reset_after,
                 returnSequence=True)
    got = execute(b, {"last": outs[0], "seq": outs[1]}, {"x": x})
    _close(got["last"], want_last)
    _close(got["seq"], want_seq)


def test_gru_defaults_one_result():
    x = _r(S, B, I)
    w, r, bias = _r(1, 3 * H, I), _r(1, 3 * H, H), _r(1, 3 * H)
    zeros = np.zeros((1, 3 * H), np.float32)
    want_last, _ = _gru_reference(x, w, r, bias, zeros, np.zeros((1, B, H)), "forward", True)
    b = GraphBuilder()
    xi = b.input("x", "float32", [S, B, I])
    outs = b.gru(xi, b.constant(w), b.constant(r), S, H, bias=b.constant(bias))
    assert len(outs) == 1
    _close(execute(b, {"last": outs[0]}, {"x": x})["last"], want_last)


# -- lstm ---------------------------------------------------------------------------------------
IFGO = (0, 2, 3, 1)  # iofg blocks [i, o, f, g] -> ifgo order [i, f, g, o]


@pytest.mark.parametrize("peephole", [False, True])
@pytest.mark.parametrize("layout", ["iofg", "ifgo"])
@pytest.mark.parametrize("acts", [None, ["sigmoid", "relu", "tanh"]])
def test_lstm_cell(peephole, layout, acts):
    x, h, c = _r(B, I), _r(B, H), _r(B, H)
    w, r, bias, rbias, p = _r(4 * H, I), _r(4 * H, H), _r(4 * H), _r(4 * H), _r(3 * H)
    p_used = p if peephole else np.zeros(3 * H, np.float32)
    want_h, want_c = ref.lstm_cell(x.astype(np.float64), w, r, h, c, bias, rbias, p_used,
                                   tuple(acts or ("sigmoid", "tanh", "tanh")))
    order = (0, 1, 2, 3) if layout == "iofg" else IFGO
    b = GraphBuilder()
    xi = b.input("x", "float32", [B, I])
    opts = dict(layout=layout, bias=b.constant(_blocks(bias, order, H)),
                recurrentBias=b.constant(_blocks(rbias, order, H)))
    if peephole:
        opts["peepholeWeight"] = b.constant(p)
    if acts:
        opts["activations"] = acts
    hy, cy = b.lstmCell(xi, b.constant(_blocks(w, order, H)), b.constant(_blocks(r, order, H)),
                        b.constant(h), b.constant(c), H, **opts)
    got = execute(b, {"h": hy, "c": cy}, {"x": x})
    _close(got["h"], want_h)
    _close(got["c"], want_c)


def test_lstm_cell_peephole_feeds_the_output_gate_the_old_cell_state():
    # One unit, zero weights and biases: every gate is sigmoid(peephole * c) and g = tanh(0) = 0.
    # c' = f * c = sigmoid(pf * c) * c, and o = sigmoid(po * c) with the OLD c (the spec's
    # lstmCell), not sigmoid(po * c') as ONNX LSTM would compute.
    b = GraphBuilder()
    xi = b.input("x", "float32", [1, 1])
    zeros = lambda *s: b.constant(np.zeros(s, np.float32))  # noqa: E731
    hy, cy = b.lstmCell(xi, zeros(4, 1), zeros(4, 1), zeros(1, 1),
                        b.constant(np.array([[2.0]], np.float32)), 1,
                        peepholeWeight=b.constant(np.array([0.0, 3.0, 1.0], np.float32)))
    got = execute(b, {"h": hy, "c": cy}, {"x": np.zeros((1, 1), np.float32)})
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    c_new = sig(1.0 * 2.0) * 2.0
    _close(got["c"], np.array([[c_new]]))
    _close(got["h"], np.array([[sig(3.0 * 2.0) * np.tanh(c_new)]]))


def _lstm_reference(x, w, r, bias, rbias, p, h0, c0, direction):
    dirs = 2 if direction == "both" else 1
    hs, cs, seq = [], [], np.zeros((S, dirs, B, H))
    for d in range(dirs):
        h, c = h0[d].astype(np.float64), c0[d].astype(np.float64)
        steps = range(S - 1, -1, -1) if (direction == "backward" or d == 1) else range(S)
        for t in steps:
            h, c = ref.lstm_cell(x[t].astype(np.float64), w[d], r[d], h, c, bias[d], rbias[d],
                                 p[d])
            seq[t, d] = h
        hs.append(h)
        cs.append(c)
    return np.stack(hs), np.stack(cs), seq


@pytest.mark.parametrize("direction", ["forward", "backward", "both"])
@pytest.mark.parametrize("peephole", [False, True])
def test_lstm_sequence_in_every_direction(direction, peephole):
    dirs = 2 if direction == "both" else 1
    x = _r(S, B, I)
    w, r, bias, rbias = _r(dirs, 4 * H, I), _r(dirs, 4 * H, H), _r(dirs, 4 * H), _r(dirs, 4 * H)
    p = _r(dirs, 3 * H) if peephole else np.zeros((dirs, 3 * H), np.float32)
    h0, c0 = _r(dirs, B, H), _r(dirs, B, H)
    want_h, want_c, want_seq = _lstm_reference(x, w, r, bias, rbias, p, h0, c0, direction)
    b = GraphBuilder()
    xi = b.input("x", "float32", [S, B, I])
    opts = dict(bias=b.constant(bias), recurrentBias=b.constant(rbias),
                initialHiddenState=b.constant(h0), initialCellState=b.constant(c0),
                direction=direction, returnSequence=True)
    if peephole:
        opts["peepholeWeight"] = b.constant(p)
    outs = b.lstm(xi, b.constant(w), b.constant(r), S, H, **opts)
    got = execute(b, {"h": outs[0], "c": outs[1], "seq": outs[2]}, {"x": x})
    _close(got["h"], want_h)
    _close(got["c"], want_c)
    _close(got["seq"], want_seq)


def test_lstm_defaults_two_results_and_ifgo_layout():
    x = _r(S, B, I)
    w, r = _r(1, 4 * H, I), _r(1, 4 * H, H)
    zeros = np.zeros((1, 4 * H), np.float32)
    want_h, want_c, _ = _lstm_reference(x, w, r, zeros, zeros, np.zeros((1, 3 * H)),
                                        np.zeros((1, B, H)), np.zeros((1, B, H)), "forward")
    b = GraphBuilder()
    xi = b.input("x", "float32", [S, B, I])
    outs = b.lstm(xi, b.constant(_blocks(w, IFGO, H, axis=1)),
                  b.constant(_blocks(r, IFGO, H, axis=1)), S, H, layout="ifgo")
    assert len(outs) == 2
    got = execute(b, {"h": outs[0], "c": outs[1]}, {"x": x})
    _close(got["h"], want_h)
    _close(got["c"], want_c)


@pytest.mark.parametrize("op_name", ["gru", "lstm"])
def test_custom_activations_in_both_directions(op_name):
    # Every activation relu: gates are unbounded, so the check is sensitive to which function
    # lands where. lstm gets a peephole so it takes the unrolled path, gru the ONNX one.
    x = _r(S, B, I)
    gates = 3 if op_name == "gru" else 4
    w, r = _r(2, gates * H, I), _r(2, gates * H, H)
    zeros = np.zeros((2, gates * H))
    b = GraphBuilder()
    xi = b.input("x", "float32", [S, B, I])
    if op_name == "gru":
        acts = ["relu", "sigmoid"]
        outs = b.gru(xi, b.constant(w), b.constant(r), S, H, direction="both", activations=acts)
        dirs_h = []
        for d in range(2):
            h = np.zeros((B, H))
            for t in (range(S) if d == 0 else range(S - 1, -1, -1)):
                h = ref.gru_cell(x[t].astype(np.float64), w[d], r[d], h, zeros[d], zeros[d],
                                 True, tuple(acts))
            dirs_h.append(h)
    else:
        acts = ["relu", "tanh", "sigmoid"]
        p = _r(2, 3 * H)
        outs = b.lstm(xi, b.constant(w), b.constant(r), S, H, direction="both", activations=acts,
                      peepholeWeight=b.constant(p))
        dirs_h = []
        for d in range(2):
            h, c = np.zeros((B, H)), np.zeros((B, H))
            for t in (range(S) if d == 0 else range(S - 1, -1, -1)):
                h, c = ref.lstm_cell(x[t].astype(np.float64), w[d], r[d], h, c, zeros[d],
                                     zeros[d], p[d], tuple(acts))
            dirs_h.append(h)
    got = execute(b, {"h": outs[0]}, {"x": x})["h"]
    _close(got, np.stack(dirs_h))


def test_float16_gru_cell():
    x, h = _r(B, I), _r(B, H)
    w, r = _r(3 * H, I), _r(3 * H, H)
    z = np.zeros(3 * H)
    want = ref.gru_cell(x.astype(np.float16).astype(np.float64), w.astype(np.float16),
                        r.astype(np.float16), h.astype(np.float16).astype(np.float64), z, z, True)
    b = GraphBuilder()
    xi = b.input("x", "float16", [B, I])
    y = b.gruCell(xi, b.constant(w.astype(np.float16)), b.constant(r.astype(np.float16)),
                  b.constant(h.astype(np.float16)), H)
    got = execute(b, {"y": y}, {"x": x.astype(np.float16)})["y"]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


def test_cells_with_only_one_of_bias_and_recurrent_bias():
    # the absent one is zeros of one direction's [1, gates * H] (a cell has one direction)
    x, h, c = _r(B, I), _r(B, H), _r(B, H)
    gw, gr, gb = _r(3 * H, I), _r(3 * H, H), _r(3 * H)
    lw, lr, lrb = _r(4 * H, I), _r(4 * H, H), _r(4 * H)
    b = GraphBuilder()
    xi = b.input("x", "float32", [B, I])
    g = b.gruCell(xi, b.constant(gw), b.constant(gr), b.constant(h), H, bias=b.constant(gb))
    lh, lc = b.lstmCell(xi, b.constant(lw), b.constant(lr), b.constant(h), b.constant(c), H,
                        recurrentBias=b.constant(lrb))
    got = execute(b, {"g": g, "lh": lh, "lc": lc}, {"x": x})
    x64 = x.astype(np.float64)
    _close(got["g"], ref.gru_cell(x64, gw, gr, h, gb, np.zeros(3 * H), True))
    want_h, want_c = ref.lstm_cell(x64, lw, lr, h, c, np.zeros(4 * H), lrb, np.zeros(3 * H))
    _close(got["lh"], want_h)
    _close(got["lc"], want_c)
