"""gru, gruCell, lstm and lstmCell exported to TFLite, unrolled step by step.

Not in the policy's list: a few steps of matmuls and activations on values in (-1, 1), judged
by an absolute bound of 2e-6 (float32) and 2e-3 (float16), with a relative part of 1e-5."""
from __future__ import annotations

import math

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder

from .helpers import check, rand

RNG = np.random.default_rng(22)
S, B, I, H = 3, 2, 4, 5


def _run(kind, dt="float32", const=True, **opts):
    b = GraphBuilder()
    feeds = {}
    cell = kind.endswith("Cell")
    gates = 3 if kind.startswith("gru") else 4
    dirs = 2 if opts.get("direction") == "both" else 1

    def operand(name, shape, fed=False):
        value = rand(RNG, shape, dt, -0.5, 0.5)
        if const and not fed:
            return b.constant(value)
        feeds[name] = value
        return b.input(name, dt, list(shape))

    lead = [] if cell else [dirs]
    x = operand("x", [B, I] if cell else [S, B, I], fed=True)
    w = operand("w", lead + [gates * H, I])
    r = operand("r", lead + [gates * H, H])
    sizes = {"bias": [gates * H], "recurrentBias": [gates * H], "peepholeWeight": [3 * H],
             "initialHiddenState": [B, H], "initialCellState": [B, H]}
    for name in [k for k in opts if k in sizes]:
        opts[name] = operand(name, lead + sizes[name])
    if kind == "gruCell":
        ys = [b.gruCell(x, w, r, operand("h", [B, H], True), H, **opts)]
    elif kind == "lstmCell":
        ys = b.lstmCell(x, w, r, operand("h", [B, H], True), operand("c", [B, H], True), H,
                        **opts)
    else:
        ys = getattr(b, kind)(x, w, r, S, H, **opts)
    graph = b.build({f"y{i}": y for i, y in enumerate(ys)})
    return check(graph, feeds, atol=2e-6 if dt == "float32" else 2e-3, rtol=1e-5)


def test_gru_cell_with_zero_weights_halves_the_state():
    # z = sigmoid(0) = 0.5 and n = tanh(0) = 0, so h' = (1 - z) * n + z * h = h / 2.
    b = GraphBuilder()
    x, h = b.input("x", "float32", [1, 2]), b.input("h", "float32", [1, 3])
    zeros = b.constant(np.zeros((9, 2), np.float32))
    y = b.gruCell(x, zeros, b.constant(np.zeros((9, 3), np.float32)), h, 3)
    got = check(b.build({"y": y}), {"x": np.ones((1, 2), np.float32),
                                    "h": np.array([[2, -4, 1]], np.float32)}, ulp=0)
    assert got["y"].tolist() == [[1, -2, 0.5]]


def test_lstm_cell_hand_values():
    # All pre-activations 0: i = f = o = 0.5, g = 0, so c' = 0.5 c and h' = 0.5 tanh(c').
    b = GraphBuilder()
    x, h, c = (b.input(n, "float32", [1, 2]) for n in ("x", "h", "c"))
    w = b.constant(np.zeros((8, 2), np.float32))
    hs, cs = b.lstmCell(x, w, w, h, c, 2)
    got = check(b.build({"h": hs, "c": cs}), {"x": np.ones((1, 2), np.float32),
                                             "h": np.ones((1, 2), np.float32),
                                             "c": np.array([[2, -1]], np.float32)}, ulp=1)
    assert got["c"].tolist() == [[1, -0.5]]
    np.testing.assert_allclose(got["h"], [[0.5 * math.tanh(1), 0.5 * math.tanh(-0.5)]],
                               rtol=1e-6)


@pytest.mark.parametrize("const", [True, False])
@pytest.mark.parametrize("kind,opts", [
    ("gruCell", dict()), ("gruCell", dict(bias=1, recurrentBias=1, resetAfter=False)),
    ("gruCell", dict(bias=1, layout="rzn", activations=["sigmoid", "relu"])),
    ("lstmCell", dict()), ("lstmCell", dict(bias=1, recurrentBias=1, peepholeWeight=1)),
    ("lstmCell", dict(bias=1, layout="ifgo", activations=["sigmoid", "relu", "tanh"])),
    ("gru", dict()),
    ("gru", dict(bias=1, recurrentBias=1, initialHiddenState=1, returnSequence=True,
                 direction="both")),
    ("gru", dict(direction="backward", resetAfter=False, bias=1, recurrentBias=1,
                 returnSequence=True)),
    ("lstm", dict()),
    ("lstm", dict(bias=1, recurrentBias=1, peepholeWeight=1, initialHiddenState=1,
                  initialCellState=1, returnSequence=True, direction="both")),
    ("lstm", dict(direction="backward", layout="ifgo", returnSequence=True)),
])
def test_recurrent_options(kind, opts, const):
    got = _run(kind, const=const, **opts)
    assert all(np.isfinite(v).all() for v in got.values())


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_float16(kind):
    got = _run(kind, dt="float16", bias=1, returnSequence=True, peepholeWeight=1) \
        if kind == "lstm" else _run(kind, dt="float16", bias=1, returnSequence=True)
    assert got["y0"].dtype == np.float16
