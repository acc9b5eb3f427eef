"""GroupQueryAttention on a fixed-capacity KV cache (ONNX Runtime's shared past/present
buffer): the form in which one WebNN graph serves every step of a decode loop, the cache a
state pair of the same shape in and out. attention.py hands the node here when
total_sequence_length equals the past's length."""
from __future__ import annotations

import math

import numpy as np

from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..registry import Unsupported
from ._emit import emit, np_type, transpose
from .attention import _additive, _attend, _merge_heads, _repeat_heads
from .quantization import reshape
from .rotary import cos_sin, rotate

__all__ = ["shared_buffer"]


def shared_buffer(ctx: ImportContext, node: OnnxNode, q: Operand, k: Operand, v: Operand, heads: int):
    """GroupQueryAttention on a fixed-capacity KV cache: past and present are both
    [B, kvN, L, H] with L = total_sequence_length (ONNX Runtime's shared past/present buffer, how
    onnxruntime-genai runs builder models with `past_present_share_buffer`). Sequence b's S new
    tokens sit at positions start_b .. start_b + S - 1, start_b = seqlens_k[b] + 1 - S, known only
    when the graph runs: they are rotated at those positions, written into the cache there
    (a `where` per new token; the slots after them zeroed, as ONNX Runtime's present has them)
    and attend to the keys at or before their own position. One graph
    serves every step of a decode loop; ONNX Runtime gives the same numbers as with the concat
    form (past of length start_b, total start_b + S), which the tests check."""
    batch, _, q_len, _ = q.shape
    capacity = ctx.shape(node.input(3))[2]
    if q_len > capacity:
        raise Unsupported(f"{q_len} new tokens do not fit a KV cache of {capacity}")
    if not node.attr("causal", 1):
        raise Unsupported("a shared KV buffer is read causally; causal=0 is not supported")
    if node.input(10) is not None or node.input(11) is not None:
        raise Unsupported("attention_bias and head_sink are not supported with a shared KV "
                          "buffer")
    if node.input(9) is not None:
        raise Unsupported("position_ids are not supported with a shared KV buffer")
    lengths = ctx.operand(node.input(5))
    if lengths.data_type != "int32":
        raise Unsupported(f"seqlens_k is {lengths.data_type}, not int32")
    # start_b: the position of sequence b's first new token
    start = emit(ctx, "sub", reshape(ctx, lengths, (batch, 1)), ctx.scalar(q_len - 1, "int32"))
    positions = emit(ctx, "add", start, ctx.constant(np.arange(q_len, dtype=np.int32)
                                                     .reshape(1, q_len), "int32"))  # [B, S]
    if node.attr("do_rotary", 0):
        cos, sin = cos_sin(ctx, node.input(7), node.input(8), positions, batch, q_len, q)
        interleaved = bool(node.attr("rotary_interleaved", 0))
        q, k = (transpose(ctx, rotate(ctx, transpose(ctx, x, (0, 2, 1, 3)), cos, sin,
                                      2 * cos.shape[-1], interleaved), (0, 2, 1, 3))
                for x in (q, k))
    slots = ctx.constant(np.arange(capacity, dtype=np.int32).reshape(1, 1, capacity, 1),
                         "int32")
    present_k, present_v = ctx.operand(node.input(3)), ctx.operand(node.input(4))
    for i in range(q_len):  # new token i goes to slot positions[b, i]
        at = reshape(ctx, _column(ctx, positions, i), (batch, 1, 1, 1))
        here = emit(ctx, "equal", slots, at)  # [B, 1, L, 1]
        present_k = emit(ctx, "where", here, _row(ctx, k, i), present_k)
        present_v = emit(ctx, "where", here, _row(ctx, v, i), present_v)
    # Slots after the new tokens are zero in ONNX Runtime's present (it copies only the valid
    # past): the same here, so the cache holds what it would.
    after = emit(ctx, "greater", slots, reshape(ctx, _column(ctx, positions, q_len - 1),
                                                (batch, 1, 1, 1)))
    zero = ctx.scalar(0, present_k.data_type)
    present_k = emit(ctx, "where", after, zero, present_k)
    present_v = emit(ctx, "where", after, zero, present_v)
    keys = reshape(ctx, slots, (1, 1, 1, capacity))
    queries = reshape(ctx, positions, (batch, 1, q_len, 1))
    allowed = emit(ctx, "lesserOrEqual", keys, queries)  # [B, 1, S, L]
    window = int(node.attr("local_window_size", -1))
    if window > 0:  # and no further back than the window
        recent = emit(ctx, "greater", keys,
                      emit(ctx, "sub", queries, ctx.scalar(window, "int32")))
        allowed = emit(ctx, "logicalAnd", allowed, recent)
    lowest = float(np.finfo(np_type(q)).min)  # ONNX Runtime masks with the lowest value
    sink = None
    if node.attr("smooth_softmax", -1) == 1:  # a sink logit of 0 for every head
        sink = ctx.constant(np.zeros((1, 1, 1, 1), np_type(q)), q.data_type)
    scale = float(node.attr("scale", 0.0) or 0.0) or 1.0 / math.sqrt(q.shape[3])
    y, *_ = _attend(ctx, q, _repeat_heads(ctx, present_k, heads),
                    _repeat_heads(ctx, present_v, heads), scale,
                    bias=_additive(ctx, allowed, q, lowest),
                    softcap=float(node.attr("softcap", 0.0) or 0.0), sink=sink)
    return [_merge_heads(ctx, y), present_k, present_v]


def _column(ctx, x: Operand, i: int) -> Operand:
    """x[:, i:i+1] of a [B, S] operand."""
    if x.shape[1] == 1:
        return x
    return emit(ctx, "slice", x, starts=[0, i], sizes=[x.shape[0], 1])


def _row(ctx, x: Operand, i: int) -> Operand:
    """x[:, :, i:i+1, :] of a [B, N, S, H] operand."""
    if x.shape[2] == 1:
        return x
    b, n, _, h = x.shape
    return emit(ctx, "slice", x, starts=[0, 0, i, 0], sizes=[b, n, 1, h])
