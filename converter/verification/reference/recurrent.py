"""Reference kernels for gru, gruCell, lstm and lstmCell, from the spec's cell equations.

Gates are stacked along the weights' first axis in `layout` order; activations are given by
name ("sigmoid", "relu", "tanh"). The sequence ops run each direction over the steps (backward:
from the last step to the first) and return the final hidden (and cell) state per direction;
with returnSequence, the hidden states in time order: the backward direction's state after
reading input step t sits at index t, as the spec's emulation builds it.
"""
from __future__ import annotations

import numpy as np

from .core import kernel

ACTIVATIONS = {
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "relu": lambda x: np.maximum(x, 0),
}


def _gates(tensor, order: str, hidden: int) -> dict[str, np.ndarray]:
    """Split the gate-stacked leading axis of `tensor` into {gate letter: block}."""
    if tensor is None:
        return {g: 0 for g in order}
    return {g: tensor[i * hidden:(i + 1) * hidden] for i, g in enumerate(order)}


def gru_step(x, h, weight, recurrent, bias, recurrent_bias, hidden, layout, activations,
             reset_after):
    f, g = (ACTIVATIONS[a] for a in activations)
    w, rw = _gates(weight, layout, hidden), _gates(recurrent, layout, hidden)
    b, rb = _gates(bias, layout, hidden), _gates(recurrent_bias, layout, hidden)
    z = f(x @ w["z"].T + b["z"] + h @ rw["z"].T + rb["z"])
    r = f(x @ w["r"].T + b["r"] + h @ rw["r"].T + rb["r"])
    if reset_after:
        n = g(x @ w["n"].T + b["n"] + r * (h @ rw["n"].T + rb["n"]))
    else:
        n = g(x @ w["n"].T + b["n"] + (r * h) @ rw["n"].T + rb["n"])
    return z * h + (1 - z) * n


def lstm_step(x, h, c, weight, recurrent, bias, recurrent_bias, peephole, hidden, layout,
              activations):
    """One LSTM step. The peephole weights (in input, output, forget order) multiply the cell
    state the step starts from, for all three gates: the spec's lstmCell emulation feeds the
    output gate `cellState`, not the new cell state (ONNX LSTM's Po reads the new one)."""
    f_act, g_act, h_act = (ACTIVATIONS[a] for a in activations)
    w, rw = _gates(weight, layout, hidden), _gates(recurrent, layout, hidden)
    b, rb = _gates(bias, layout, hidden), _gates(recurrent_bias, layout, hidden)
    p = _gates(peephole, "iof", hidden)

    def pre(gate):
        return x @ w[gate].T + b[gate] + h @ rw[gate].T + rb[gate]

    i = f_act(pre("i") + p["i"] * c)
    f = f_act(pre("f") + p["f"] * c)
    cell = f * c + i * g_act(pre("g"))
    o = f_act(pre("o") + p["o"] * c)
    return o * h_act(cell), cell


def _activations(op):
    return op.attr("activations")


@kernel("gruCell")
def gru_cell(op, ins, env):
    x, weight, recurrent, h, bias, recurrent_bias = ins
    return gru_step(x, h, weight, recurrent, bias, recurrent_bias, op.attr("hiddenSize"),
                    op.attr("layout"), _activations(op), op.attr("resetAfter"))


@kernel("lstmCell")
def lstm_cell(op, ins, env):
    x, weight, recurrent, h, c, bias, recurrent_bias, peephole = ins
    return list(lstm_step(x, h, c, weight, recurrent, bias, recurrent_bias, peephole,
                          op.attr("hiddenSize"), op.attr("layout"), _activations(op)))


def _directions(op):
    direction = op.attr("direction")
    return {"forward": [False], "backward": [True], "both": [False, True]}[direction]


def _pick(v, d):
    return None if v is None else v[d]


@kernel("gru")
def gru(op, ins, env):
    x, weight, recurrent, bias, recurrent_bias, h0 = ins
    steps, batch, _ = x.shape
    hidden = op.attr("hiddenSize")
    finals, sequences = [], []
    for d, backward in enumerate(_directions(op)):
        h = np.zeros((batch, hidden), x.dtype) if h0 is None else h0[d]
        seq = [None] * steps
        for t in (range(steps - 1, -1, -1) if backward else range(steps)):
            h = gru_step(x[t], h, weight[d], recurrent[d], _pick(bias, d),
                         _pick(recurrent_bias, d), hidden, op.attr("layout"),
                         _activations(op), op.attr("resetAfter"))
            seq[t] = h
        finals.append(h)
        sequences.append(np.stack(seq))
    out = [np.stack(finals)]
    if op.attr("returnSequence"):
        out.append(np.stack(sequences, axis=1))
    return out


@kernel("lstm")
def lstm(op, ins, env):
    x, weight, recurrent, bias, recurrent_bias, peephole, h0, c0 = ins
    steps, batch, _ = x.shape
    hidden = op.attr("hiddenSize")
    hs, cs, sequences = [], [], []
    for d, backward in enumerate(_directions(op)):
        h = np.zeros((batch, hidden), x.dtype) if h0 is None else h0[d]
        c = np.zeros((batch, hidden), x.dtype) if c0 is None else c0[d]
        seq = [None] * steps
        for t in (range(steps - 1, -1, -1) if backward else range(steps)):
            h, c = lstm_step(x[t], h, c, weight[d], recurrent[d], _pick(bias, d),
                             _pick(recurrent_bias, d), _pick(peephole, d), hidden,
                             op.attr("layout"), _activations(op))
            seq[t] = h
        hs.append(h)
        cs.append(c)
        sequences.append(np.stack(seq))
    out = [np.stack(hs), np.stack(cs)]
    if op.attr("returnSequence"):
        out.append(np.stack(sequences, axis=1))
    return out
