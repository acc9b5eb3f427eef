"""ONNX Runtime's dynamically quantized contrib ops: com.microsoft DynamicQuantizeMatMul,
MatMulIntegerToFloat and DynamicQuantizeLSTM.

"Dynamic" means the activation's scale and zero point are computed at run time, in the
graph: uint8 over the range [min(x, 0), max(x, 0)], zero point rounded half to even and
saturated, the values quantized by quantizeLinear (round half to even, saturate); see
quantization.dynamic_quantize, which is DynamicQuantizeLinear's rule. The integer product
(A - a_zero_point)(B - b_zero_point) is computed as float32 matmul of exact small integers,
then scaled by a_scale * b_scale, as ONNX Runtime scales its int32 sums.
"""
from __future__ import annotations

import numpy as np

from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..registry import Unsupported, onnx_op
from ._emit import MS, emit
from .quantization import dynamic_quantize


def _centered(ctx: ImportContext, q: Operand, zero: Operand | None, axis: int | None) -> Operand:
    """(q - zero) as float32 integers: dequantizeLinear with scale 1. A per-column zero
    point ([N]) lies along `axis`."""
    if q.data_type not in ("uint8", "int8"):
        raise Unsupported(f"a quantized input is {q.data_type}; it must be uint8 or int8")
    shape = [1] * q.rank
    if zero is not None and zero.size > 1:
        if axis is None or zero.size != q.shape[axis]:
            raise Unsupported(f"zero point of shape {list(zero.shape)} for an input of shape "
                              f"{list(q.shape)}")
        shape[axis] = zero.size
    if zero is None:
        zero = ctx.constant(np.zeros(shape, np.dtype(q.data_type)), q.data_type)
    elif zero.data_type != q.data_type:
        raise Unsupported(f"zero point is {zero.data_type}, its input {q.data_type}")
    else:
        zero = emit(ctx, "reshape", zero, newShape=shape)
    one = ctx.constant(np.ones(shape, np.float32), "float32")
    return emit(ctx, "dequantizeLinear", q, one, zero)


def _column_scale(ctx: ImportContext, name: str, columns: int) -> Operand:
    scale = ctx.operand(name)
    if scale.data_type != "float32" or scale.size not in (1, columns):
        raise Unsupported(f"scale '{name}' is {scale.desc}; it must be float32, one value or "
                          f"{columns}")
    return emit(ctx, "reshape", scale, newShape=[] if scale.size == 1 else [columns])


def _optional(ctx: ImportContext, name: str | None) -> Operand | None:
    return ctx.operand(name) if name is not None else None


def _scaled_product(ctx: ImportContext, a_int: Operand, b_int: Operand, scale: Operand,
                    bias: str | None) -> Operand:
    if b_int.rank != 2:
        raise Unsupported(f"B of rank {b_int.rank}: it must be a [K, N] matrix")
    a2 = a_int if a_int.rank >= 2 else emit(ctx, "reshape", a_int, newShape=[1, a_int.shape[0]])
    y = emit(ctx, "mul", emit(ctx, "matmul", a2, b_int), scale)
    if a_int.rank < 2:
        y = emit(ctx, "reshape", y, newShape=[b_int.shape[1]])
    if bias is not None:
        y = emit(ctx, "add", y, ctx.operand(bias))
    return y


_OPS = ("reduceMin", "reduceMax", "min", "max", "sub", "div", "neg", "equal", "where", "clamp",
        "roundEven", "cast", "reshape", "quantizeLinear", "dequantizeLinear", "matmul", "mul",
        "add")


@onnx_op("DynamicQuantizeMatMul", domain=MS, webnn=_OPS)
def dynamic_quantize_matmul(ctx: ImportContext, node: OnnxNode):
    """Inputs A (float32), B (uint8/int8 [K, N]), b_scale, b_zero_point, bias: A quantized at
    run time, then (A_q - a_zp)(B - b_zp) * a_scale * b_scale + bias."""
    a = ctx.operand(node.input(0))
    if a.data_type != "float32":
        raise Unsupported(f"A is {a.data_type}; it must be float32")
    b = ctx.operand(node.input(1))
    a_q, a_scale, a_zero = dynamic_quantize(ctx, a)
    a_int = _centered(ctx, a_q, a_zero, None)
    b_int = _centered(ctx, b, _optional(ctx, node.input(3)), b.rank - 1)
    scale = emit(ctx, "mul", a_scale, _column_scale(ctx, node.input(2), b.shape[-1]))
    return [_scaled_product(ctx, a_int, b_int, scale, node.input(4))]


@onnx_op("MatMulIntegerToFloat", domain=MS, webnn=_OPS)
def matmul_integer_to_float(ctx: ImportContext, node: OnnxNode):
    """Inputs A, B (uint8/int8), a_scale, b_scale, a_zero_point, b_zero_point, bias: what
    MatMulInteger -> Cast -> Mul(a_scale * b_scale) -> Add(bias) computes, fused."""
    a, b = ctx.operand(node.input(0)), ctx.operand(node.input(1))
    a_int = _centered(ctx, a, _optional(ctx, node.input(4)), None)
    b_int = _centered(ctx, b, _optional(ctx, node.input(5)), b.rank - 1)
    a_scale = ctx.operand(node.input(2))
    if a_scale.size != 1:
        raise Unsupported("a_scale must be one value (per-tensor)")
    a_scale = emit(ctx, "reshape", a_scale, newShape=[])
    scale = emit(ctx, "mul", a_scale, _column_scale(ctx, node.input(3), b.shape[-1]))
    return [_scaled_product(ctx, a_int, b_int, scale, node.input(6))]


# -- DynamicQuantizeLSTM ------------------------------------------------------------------------
def _direction_weights(ctx: ImportContext, node: OnnxNode, index: int, scale_index: int,
                       d: int, rows: int, cols: int) -> tuple[Operand, Operand]:
    """Direction d of a quantized weight ([dirs, rows, cols], ONNX Runtime's transposed
    layout) as float32 integers (w - zero point), and its scale (one value, or per column)."""
    w = ctx.operand(node.input(index))
    if tuple(w.shape[1:]) != (rows, cols):
        raise Unsupported(f"'{node.input(index)}' has shape {list(w.shape)}; it must be "
                          f"[directions, {rows}, {cols}]")
    part = emit(ctx, "reshape", emit(ctx, "slice", w, starts=[d, 0, 0], sizes=[1, rows, cols]),
                newShape=[rows, cols])
    scale = ctx.operand(node.input(scale_index))
    zero = _optional(ctx, node.input(scale_index + 1))
    per_column = scale.rank == 2

    def pick(v: Operand) -> Operand:
        if per_column:
            return emit(ctx, "reshape", emit(ctx, "slice", v, starts=[d, 0], sizes=[1, cols]),
                        newShape=[cols])
        return emit(ctx, "reshape", emit(ctx, "slice", v, starts=[d], sizes=[1]), newShape=[])

    centered = _centered(ctx, part, pick(zero) if zero is not None else None,
                         1 if per_column else None)
    return centered, pick(scale)


def _quantized_product(ctx: ImportContext, x: Operand, w_int: Operand, w_scale: Operand,
                       per_row: bool = False):
    """x [M, K] quantized at run time (over all its elements, or each row on its own), times
    integer weights [K, N], scaled back to float."""
    x_q, x_scale, x_zero = dynamic_quantize(ctx, x, per_row)
    if per_row:
        one = ctx.constant(np.ones((x.shape[0], 1), np.float32), "float32")
        x_int = emit(ctx, "dequantizeLinear", x_q, one, x_zero)
    else:
        x_int = _centered(ctx, x_q, x_zero, None)
    return emit(ctx, "mul", emit(ctx, "matmul", x_int, w_int), emit(ctx, "mul", x_scale, w_scale))


# ONNX Runtime splits an LSTM's batch over its threads unless the batch has at most 4 rows and
# the hidden size is over 256 (uni_directional_lstm.cc, SetNumThreads): such a batch is one
# thread's, its hidden state quantized with one scale over all its rows.
_ONE_GROUP = (4, 256)


@onnx_op("DynamicQuantizeLSTM", domain=MS, webnn=_OPS + ("slice", "split", "sigmoid", "tanh",
                                                       "concat"))
def dynamic_quantize_lstm(ctx: ImportContext, node: OnnxNode):
    """An LSTM with int8/uint8 weights, unrolled as ONNX Runtime runs it: the whole input
    sequence X quantized at run time as one [steps * batch, input] matrix and multiplied by
    W at once, then per step the previous hidden state quantized and multiplied by R. Which
    rows of the hidden state share one scale is ONNX Runtime's choice (uni_directional_lstm's
    SetNumThreads): a batch of at most 4 rows with hidden_size over 256 is computed by one
    thread, all rows together, whatever the thread count (_ONE_GROUP); other batches are split
    over the threads, the rows one thread computes quantized together, so ORT's results depend
    on its thread count: each row on its own is its result with a thread per row (other
    groupings round the hidden state differently: 1e-3 apart in our tests). Gates i, o, f, c
    (ONNX's order) with the default activations sigmoid, tanh, tanh, and the float bias and
    peepholes."""
    if node.attr("activations") or node.attr("clip") is not None \
            or node.attr("input_forget", 0):
        raise Unsupported("only the default activations, no clip and no input_forget are "
                          "imported")
    x = ctx.operand(node.input(0))
    if x.rank != 3 or x.data_type != "float32":
        raise Unsupported(f"X is {x.desc}; it must be float32 [steps, batch, input]")
    steps, batch, size = x.shape
    hidden = int(node.attr("hidden_size") or ctx.shape(node.input(2))[1])
    direction = node.attr("direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    if node.input(4) is not None:
        lens = ctx.require_known(node.input(4), "sequence_lens")
        if np.any(np.asarray(lens) != steps):
            raise Unsupported("sequence_lens shorter than the sequence are not imported")
    flat_x = emit(ctx, "reshape", x, newShape=[steps * batch, size])
    together = batch <= _ONE_GROUP[0] and hidden > _ONE_GROUP[1]
    ys, last_h, last_c = [], [], []
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        w_int, w_scale = _direction_weights(ctx, node, 1, 8, d, size, 4 * hidden)
        r_int, r_scale = _direction_weights(ctx, node, 2, 10, d, hidden, 4 * hidden)
        xw = emit(ctx, "reshape", _quantized_product(ctx, flat_x, w_int, w_scale),
                  newShape=[steps, batch, 4 * hidden])
        if node.input(3) is not None:
            b = _part(ctx, node.input(3), d, 8 * hidden)
            halves = emit(ctx, "split", b, splits=[4 * hidden, 4 * hidden], axis=0)
            xw = emit(ctx, "add", xw, emit(ctx, "add", halves[0], halves[1]))
        h = _state(ctx, node.input(5), d, batch, hidden)
        c = _state(ctx, node.input(6), d, batch, hidden)
        peep = None
        if node.input(7) is not None:
            peep = emit(ctx, "split", _part(ctx, node.input(7), d, 3 * hidden),
                        splits=[hidden] * 3, axis=0)  # i, o, f
        outputs = [None] * steps
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            x_t = emit(ctx, "reshape", emit(ctx, "slice", xw, starts=[t, 0, 0],
                                            sizes=[1, batch, 4 * hidden]),
                       newShape=[batch, 4 * hidden])
            gates = emit(ctx, "add", x_t, _quantized_product(ctx, h, r_int, r_scale,
                                                              per_row=not together))
            i, o, f, g = emit(ctx, "split", gates, splits=[hidden] * 4, axis=1)
            if peep is not None:
                i = emit(ctx, "add", i, emit(ctx, "mul", peep[0], c))
                f = emit(ctx, "add", f, emit(ctx, "mul", peep[2], c))
            i, f, g = emit(ctx, "sigmoid", i), emit(ctx, "sigmoid", f), emit(ctx, "tanh", g)
            c = emit(ctx, "add", emit(ctx, "mul", f, c), emit(ctx, "mul", i, g))
            if peep is not None:  # ONNX's output gate reads the new cell state
                o = emit(ctx, "add", o, emit(ctx, "mul", peep[1], c))
            h = emit(ctx, "mul", emit(ctx, "sigmoid", o), emit(ctx, "tanh", c))
            outputs[t] = emit(ctx, "reshape", h, newShape=[1, 1, batch, hidden])
        ys.append(outputs[0] if steps == 1 else emit(ctx, "concat", *outputs, axis=0))
        last_h.append(emit(ctx, "reshape", h, newShape=[1, batch, hidden]))
        last_c.append(emit(ctx, "reshape", c, newShape=[1, batch, hidden]))

    def joined(parts, axis):
        return parts[0] if len(parts) == 1 else emit(ctx, "concat", *parts, axis=axis)

    return [joined(ys, 1), joined(last_h, 0), joined(last_c, 0)]


def _part(ctx: ImportContext, name: str, d: int, length: int) -> Operand:
    v = ctx.operand(name)
    if tuple(v.shape[1:]) != (length,):
        raise Unsupported(f"'{name}' has shape {list(v.shape)}; it must be [directions, "
                          f"{length}]")
    return emit(ctx, "reshape", emit(ctx, "slice", v, starts=[d, 0], sizes=[1, length]),
                newShape=[length])


def _state(ctx: ImportContext, name: str | None, d: int, batch: int, hidden: int) -> Operand:
    if name is None:
        return ctx.constant(np.zeros((batch, hidden), np.float32), "float32")
    v = ctx.operand(name)
    return emit(ctx, "reshape", emit(ctx, "slice", v, starts=[d, 0, 0],
                                     sizes=[1, batch, hidden]), newShape=[batch, hidden])
