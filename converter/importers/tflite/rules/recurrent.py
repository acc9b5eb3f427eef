"""Recurrent ops: UNIDIRECTIONAL_SEQUENCE_LSTM (WebNN lstm) and UNIDIRECTIONAL_SEQUENCE_RNN
(unrolled: WebNN has no plain RNN). An LSTM with peepholes, int8 weights or a cell activation
WebNN's lstm does not take (RELU_N1_TO_1, RELU6, SIGN_BIT: LiteRT's kernel applies each) is
unrolled too (see _unrolled_lstm); its NONE is refused (LiteRT computes something else).

Their state tensors are variables LiteRT carries from one invocation to the next; a WebNN graph
is a function of its inputs, so the state starts from the variable's initial value (zeros), as
on a freshly created interpreter.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ....ir import Operand
from ..context import ACT_NONE, ACT_RELU, ACT_SIGN_BIT, ACT_TANH, ImportContext
from ..model_file import Operator
from ..registry import Unsupported, tflite_op
from ._common import emit, options, reshape, transpose
from ._hybrid import WEBNN_OPS as HYBRID, dynamically_quantized, is_hybrid

# Input slots of UNIDIRECTIONAL_SEQUENCE_LSTM (TFLite's lstm_shared.h).
_X = 0
_W = {"i": 1, "f": 2, "g": 3, "o": 4}  # input-to-gate weights [hidden, input]
_R = {"i": 5, "f": 6, "g": 7, "o": 8}  # recurrent weights [hidden, hidden]
_PEEP = {"i": 9, "f": 10, "o": 11}  # peepholes [hidden]
_B = {"i": 12, "f": 13, "g": 14, "o": 15}
_PROJECTION, _PROJECTION_BIAS = 16, 17
_H0, _C0 = 18, 19
_LAYER_NORM = (20, 21, 22, 23)
_ACTIVATIONS = {ACT_TANH: "tanh", ACT_RELU: "relu"}  # the ones WebNN's lstm takes


def _stack(ctx: ImportContext, ks: list[int], shape: list[int], what: str) -> Operand:
    """Tensors `ks` concatenated along their first axis and reshaped to `shape`: in numpy when
    all are known (the weights stay one constant), else in the graph."""
    known = [ctx.known(k) for k in ks]
    if all(v is not None for v in known) and all(ctx.quant(k) is None for k in ks):
        return ctx.constant(np.concatenate(known).reshape(shape), ctx.desc(ks[0]).data_type,
                            name=f"{ctx.out_tensor().name}/{what}")
    parts = [ctx.real(k) for k in ks]
    joined = ctx.emit("concat", parts, {"axis": 0}) if len(parts) > 1 else parts[0]
    return reshape(ctx, joined, shape, what)


@tflite_op("UNIDIRECTIONAL_SEQUENCE_LSTM",
           webnn=("lstm", "transpose", "reshape", "concat", "gemm", "slice", "split", "sigmoid",
                  "add", "mul", "tanh", "relu", "clamp", "lesser", "cast") + HYBRID)
def unidirectional_sequence_lstm(ctx: ImportContext, op: Operator):
    o = options(op)
    if not (ctx.has(_W["i"]) and ctx.has(_R["i"])):
        raise Unsupported("it couples the input and forget gates (CIFG, no input gate "
                          "weights); WebNN's lstm has an input gate")
    if ctx.has(_PROJECTION) or ctx.has(_PROJECTION_BIAS):
        raise Unsupported("it has a projection layer, which WebNN's lstm does not")
    if any(ctx.has(k) for k in _LAYER_NORM):
        raise Unsupported("it normalizes its gates (layer-norm LSTM), which WebNN's lstm "
                          "does not")
    if o.cellClip or o.projClip:
        raise Unsupported(f"it clips its cell ({o.cellClip}) or projection ({o.projClip}); "
                          f"WebNN's lstm does not")
    if getattr(o, "diagonalRecurrentTensors", False):
        raise Unsupported("its recurrent weights are diagonal vectors")
    code = o.fusedActivationFunction
    if not ACT_NONE <= code <= ACT_SIGN_BIT:  # the schema's six; LiteRT reads others as NONE
        raise Unsupported(f"its cell activation {code} is none of the schema's (NONE, RELU, "
                          f"RELU_N1_TO_1, RELU6, TANH, SIGN_BIT)")
    if code == ACT_NONE:  # LiteRT's h = o * g, where the schema's LSTM says h = o * c
        raise Unsupported("its cell activation is NONE, which LiteRT's LSTM kernel does not "
                          "apply as the schema says: its output multiplies the output gate by "
                          "the cell input, not the cell state (the activation leaves the "
                          "buffer it would fill as it was), so the model's meaning is "
                          "ambiguous; export the LSTM with TANH (the default)")
    activation = _ACTIVATIONS.get(code)  # None: the cell is unrolled to apply it
    x = ctx.real(_X)
    if x.rank != 3:
        raise Unsupported(f"its input has rank {x.rank}; it must be 3")
    if not o.timeMajor:
        x = transpose(ctx, x, [1, 0, 2], "time_major")
    steps, batch, size = x.shape
    hidden = ctx.shape(_W["f"])[0]
    gates = "ifgo"  # WebNN layout "ifgo" is TFLite's own order
    w = _stack(ctx, [_W[g] for g in gates], [1, 4 * hidden, size], "weight")
    r = _stack(ctx, [_R[g] for g in gates], [1, 4 * hidden, hidden], "recurrent_weight")
    bias = _stack(ctx, [_B[g] for g in gates], [1, 4 * hidden], "bias") \
        if all(ctx.has(_B[g]) for g in gates) else None
    h0 = reshape(ctx, ctx.real(_H0), [1, batch, hidden], "initial_hidden")
    c0 = reshape(ctx, ctx.real(_C0), [1, batch, hidden], "initial_cell")
    peepholes = any(ctx.has(_PEEP[g]) for g in "ifo")
    if peepholes and not all(ctx.has(_PEEP[g]) for g in "ifo"):
        raise Unsupported("it has some peepholes but not all three")
    # LiteRT decides by the input-to-output weights (lstm.cc) and reads the others alike
    hybrid = is_hybrid(ctx, _X, _W["o"])
    if any(is_hybrid(ctx, _X, k) != hybrid for k in [*_W.values(), *_R.values()]):
        raise Unsupported("some of its gate weights are int8 and others not; LiteRT's kernel "
                          "reads them all as the input-to-output weights' type")
    if peepholes or hybrid or activation is None:
        quantizer = None
        if hybrid:  # each row of a step's input and state, as in the RNN below
            symmetric = not o.asymmetricQuantizeInputs

            def quantizer(v: Operand) -> Operand:
                return dynamically_quantized(ctx, v, [1], symmetric)
        sequence = _unrolled_lstm(
            ctx, x, w, r, bias, h0, c0,
            lambda v: ctx.activation(v, code, kernel_applies_all=True), peepholes, quantizer)
    else:
        results = ctx.emit("lstm", [x, w, r, bias, None, None, h0, c0],
                           {"steps": steps, "hiddenSize": hidden, "returnSequence": True,
                            "layout": "ifgo",
                            "activations": ["sigmoid", activation, activation]})
        sequence = reshape(ctx, results[2], [steps, batch, hidden], "sequence")
    if not o.timeMajor:
        sequence = transpose(ctx, sequence, [1, 0, 2], "batch_major")
    return [sequence]


def _unrolled_lstm(ctx: ImportContext, x: Operand, w: Operand, r: Operand,
                   bias: Operand | None, h0: Operand, c0: Operand,
                   activation: Callable[[Operand], Operand], peepholes: bool,
                   quantizer: Callable[[Operand], Operand] | None) -> Operand:
    """The LSTM unrolled. For peepholes: TFLite's output gate looks at the cell state the step
    computes, where WebNN's lstm (as its spec emulates it) gives it the state the step starts
    from. For int8 weights: LiteRT quantizes each row of the step's input and of h before
    their products (`quantizer`), inside the step where WebNN's lstm cannot. `activation`:
    the model's fused activation, which LiteRT applies to the cell input and the cell state
    alike (lstm_eval.cc).
    Per step: gates = x W^T + b + h R^T; i, f = sigmoid(gate + p * c);
    c' = f c + i act(g); o = sigmoid(gate_o + p_o c'); h = o act(c') (p = 0 without
    peepholes)."""
    steps, batch, size = x.shape
    hidden = r.shape[2]
    rows = reshape(ctx, x, [steps * batch, size], "rows")
    if quantizer is not None:
        rows = quantizer(rows)
    w2, r2 = reshape(ctx, w, [4 * hidden, size]), reshape(ctx, r, [4 * hidden, hidden])
    b2 = reshape(ctx, bias, [4 * hidden]) if bias is not None else None
    projected = reshape(ctx, emit(ctx, "gemm", rows, w2, b2, bTranspose=True),
                        [steps, batch, 4 * hidden], "projected")
    p_i, p_f, p_o = (ctx.real(_PEEP[g]) for g in "ifo") if peepholes else (None,) * 3
    h, c = reshape(ctx, h0, [batch, hidden]), reshape(ctx, c0, [batch, hidden])
    outputs = []
    for t in range(steps):
        step = reshape(ctx, emit(ctx, "slice", projected, starts=[t, 0, 0],
                                 sizes=[1, batch, 4 * hidden], suffix=f"step{t}"),
                       [batch, 4 * hidden], f"step{t}_rows")
        state = quantizer(h) if quantizer is not None else h
        gates = emit(ctx, "gemm", state, r2, step, bTranspose=True, suffix=f"step{t}_gates")
        g_i, g_f, g_g, g_o = ctx.emit("split", [gates], {"splits": 4, "axis": 1})

        def peek(gate: Operand, p: Operand | None, state: Operand) -> Operand:
            if p is None:
                return emit(ctx, "sigmoid", gate)
            return emit(ctx, "sigmoid", emit(ctx, "add", gate, emit(ctx, "mul", p, state)))

        i, f = peek(g_i, p_i, c), peek(g_f, p_f, c)
        c = emit(ctx, "add", emit(ctx, "mul", f, c),
                 emit(ctx, "mul", i, activation(g_g)), suffix=f"step{t}_cell")
        o = peek(g_o, p_o, c)
        h = emit(ctx, "mul", o, activation(c), suffix=f"step{t}_hidden")
        outputs.append(reshape(ctx, h, [1, batch, hidden], f"step{t}_out"))
    return ctx.emit("concat", outputs, {"axis": 0}) if len(outputs) > 1 else outputs[0]


@tflite_op("UNIDIRECTIONAL_SEQUENCE_RNN", webnn=("gemm", "slice", "reshape", "add", "concat",
                                                 "relu", "clamp", "tanh", "lesser", "cast")
           + HYBRID)
def unidirectional_sequence_rnn(ctx: ImportContext, op: Operator):
    """h_t = act(x_t W^T + h_{t-1} R^T + b), unrolled over the steps. The input projection of
    every step is one gemm; each step adds its recurrent product. With int8 weights (hybrid),
    LiteRT quantizes each row of x_t and of h_{t-1} before its product (see _hybrid)."""
    o = options(op)
    x = ctx.real(0)
    if x.rank != 3:
        raise Unsupported(f"its input has rank {x.rank}; it must be 3")
    if o.timeMajor:
        steps, batch, size = x.shape
    else:
        batch, steps, size = x.shape
    w, r, b = ctx.real(1), ctx.real(2), ctx.real(3)
    hidden = w.shape[0]
    rows = reshape(ctx, x, [x.shape[0] * x.shape[1], size], "rows")
    symmetric = not o.asymmetricQuantizeInputs
    hybrid = is_hybrid(ctx, 0, 1)  # LiteRT decides by the input weights alone
    if hybrid != is_hybrid(ctx, 0, 2):
        raise Unsupported("one of its weights is int8 and the other not; LiteRT's kernel "
                          "reads both as the input weights' type")
    if hybrid:
        rows = dynamically_quantized(ctx, rows, [1], symmetric)
    projected = reshape(ctx, emit(ctx, "gemm", rows, w, b, bTranspose=True),
                        list(x.shape[:2]) + [hidden], "projected")
    h = reshape(ctx, ctx.real(4), [batch, hidden], "initial_hidden")
    outputs = []
    for t in range(steps):
        starts = [t, 0, 0] if o.timeMajor else [0, t, 0]
        sizes = [1, batch, hidden] if o.timeMajor else [batch, 1, hidden]
        step = reshape(ctx, emit(ctx, "slice", projected, starts=starts, sizes=sizes,
                                 suffix=f"step{t}"), [batch, hidden], f"step{t}_rows")
        state = dynamically_quantized(ctx, h, [1], symmetric) if hybrid else h
        total = emit(ctx, "gemm", state, r, step, bTranspose=True, suffix=f"step{t}_recurrent")
        h = ctx.activation(total, o.fusedActivationFunction, kernel_applies_all=True)
        outputs.append(reshape(ctx, h, [1, batch, hidden] if o.timeMajor
                               else [batch, 1, hidden], f"step{t}_out"))
    if len(outputs) == 1:
        return [outputs[0]]
    return [ctx.emit("concat", outputs, {"axis": 0 if o.timeMajor else 1})]
