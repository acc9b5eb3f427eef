"""GroupQueryAttention over a fixed-capacity KV cache (ONNX Runtime's shared-buffer form).

onnxruntime-genai runs builder decoders with `past_present_share_buffer`: the past key/value
inputs are buffers of a fixed capacity C, the present outputs the same buffers with this step's
keys and values written in, and `seqlens_k[b] + 1` says how many rows of sequence b are filled
after the step (the attention mask's row sums). ONNX Runtime's kernel takes that form whenever
total_sequence_length is the buffer's length: it writes the S new rows at
`start = seqlens_k + 1 - S`, rotates them at positions start .. start + S - 1, and lets query i
see keys 0 .. start + i.

Here that is one static WebNN graph for every step: the position is a runtime value, so the
write is a `where` over the buffer (a broadcast of the one new row when S = 1, a one-hot matmul
placing the S rows otherwise) and the masks compare a key index constant with it.
"""
from __future__ import annotations

import numpy as np

from ....ir import Operand
from ..registry import Unsupported
from ._emit import emit, np_type
from .quantization import reshape


def positions(ctx, seqlens: Operand, batch: int, seq: int) -> Operand:
    """[B, S] absolute positions of the new tokens: seqlens_k + 1 - S + (0 .. S - 1)."""
    if seqlens.shape not in ((batch,), (batch, 1)):
        raise Unsupported(f"seqlens_k of shape {list(seqlens.shape)}, expected [{batch}]")
    offsets = np.arange(1 - seq, 1).reshape(1, seq).astype(np_type(seqlens))
    return emit(ctx, "add", reshape(ctx, seqlens, (batch, 1)),
                ctx.constant(offsets, seqlens.data_type))


def write_rows(ctx, buffer: Operand, rows: Operand, pos: Operand) -> Operand:
    """`buffer` [B, N, C, H] with `rows` [B, N, S, H] written at rows pos[b, 0] .. pos[b, S-1]."""
    b, n, capacity, h = buffer.shape
    s = rows.shape[2]
    if s > capacity:
        raise Unsupported(f"{s} new tokens do not fit a cache of {capacity}")
    keys = ctx.constant(np.arange(capacity).reshape(1, capacity, 1).astype(np_type(pos)),
                        pos.data_type)
    hit = emit(ctx, "equal", keys, reshape(ctx, pos, (b, 1, s)))  # [B, C, S]: row c <- row s
    if s == 1:
        placed = emit(ctx, "expand", rows, newShape=[b, n, capacity, h])
        written = reshape(ctx, hit, (b, 1, capacity, 1))
    else:  # each buffer row takes at most one new row: the one-hot sum adds zeros only
        one_hot = emit(ctx, "cast", reshape(ctx, hit, (b, 1, capacity, s)),
                       dataType=rows.data_type)
        placed = emit(ctx, "matmul", one_hot, rows)
        inside = emit(ctx, "logicalAnd",
                      emit(ctx, "greaterOrEqual", keys, reshape(ctx, slice_pos(ctx, pos, 0),
                                                                (b, 1, 1))),
                      emit(ctx, "lesserOrEqual", keys, reshape(ctx, slice_pos(ctx, pos, s - 1),
                                                               (b, 1, 1))))
        written = reshape(ctx, inside, (b, 1, capacity, 1))
    return emit(ctx, "where", written, placed, buffer)


def slice_pos(ctx, pos: Operand, index: int) -> Operand:
    b, _ = pos.shape
    return emit(ctx, "slice", pos, starts=[0, index], sizes=[b, 1])


def allowed_keys(ctx, pos: Operand, capacity: int, causal: bool, window: int) -> Operand:
    """[B, 1, S, C] uint8: query i (at pos[b, i]) may attend key c.

    Causal: c <= pos[b, i]; otherwise every filled row, c <= pos[b, S-1]. A local window of
    w keys also drops keys older than pos - w + 1."""
    b, s = pos.shape
    keys = ctx.constant(np.arange(capacity).reshape(1, 1, 1, capacity).astype(np_type(pos)),
                        pos.data_type)
    query = reshape(ctx, pos, (b, 1, s, 1))
    last = query if causal else reshape(ctx, slice_pos(ctx, pos, s - 1), (b, 1, 1, 1))
    allowed = emit(ctx, "lesserOrEqual", keys, last)
    if window > 0:
        oldest = emit(ctx, "sub", query, ctx.scalar(window - 1, pos.data_type))
        allowed = emit(ctx, "logicalAnd", allowed, emit(ctx, "greaterOrEqual", keys, oldest))
    return allowed
