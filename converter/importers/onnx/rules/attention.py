"""Transformer ops: ai.onnx Attention and RotaryEmbedding (opset 23), and the com.microsoft
contrib ops that exported transformers use: MultiHeadAttention and GroupQueryAttention.
Rotary embeddings are in rotary.py, the contrib normalizations, Gelu family and FusedMatMul in
contrib.py, MatMulNBits (a quantized matmul) in quantization.py, GroupQueryAttention over a
fixed-capacity KV cache (ONNX Runtime's shared buffer) in attention_cache.py.

None of these is a WebNN op; each is written with matmul, softmax, reshape/transpose and
element-wise ops. Masks that depend only on shapes (causal, sliding windows, the offset of a
known past) are computed here as constants; masks read from graph inputs stay WebNN ops. The
contrib ops' semantics are ONNX Runtime's (which defines them): the tests compare against it.
"""
from __future__ import annotations

import math

import numpy as np
import onnx

from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..registry import Unsupported, onnx_op
from ..tensor_data import onnx_dtype_name
from . import attention_cache
from ._emit import MS, emit, np_type, scalar_like, slice_last, transpose
from .quantization import reshape
from .rotary import cos_sin, rotate

_NEG_INF = -np.inf

def _split_heads(ctx, x: Operand, heads: int) -> Operand:
    """[B, S, N * H] -> [B, N, S, H]."""
    b, s, d = x.shape
    if d % heads:
        raise Unsupported(f"hidden size {d} is not a multiple of {heads} heads")
    return transpose(ctx, reshape(ctx, x, (b, s, heads, d // heads)), (0, 2, 1, 3))


def _merge_heads(ctx, x: Operand) -> Operand:
    """[B, N, S, H] -> [B, S, N * H]."""
    b, n, s, h = x.shape
    return reshape(ctx, transpose(ctx, x, (0, 2, 1, 3)), (b, s, n * h))


def _repeat_heads(ctx, x: Operand, heads: int) -> Operand:
    """Each of x's kv heads used by heads / kv_heads consecutive query heads (h0 h0 h1 h1)."""
    b, kv, s, h = x.shape
    if heads == kv:
        return x
    if heads % kv:
        raise Unsupported(f"{heads} query heads cannot share {kv} key/value heads evenly")
    x = emit(ctx, "expand", reshape(ctx, x, (b, kv, 1, s, h)), newShape=[b, kv, heads // kv, s, h])
    return reshape(ctx, x, (b, heads, s, h))


def _softcap(ctx, x: Operand, cap: float) -> Operand:
    if not cap or cap <= 0:
        return x
    return emit(ctx, "mul", emit(ctx, "tanh", emit(ctx, "div", x, scalar_like(ctx, cap, x))), scalar_like(ctx, cap, x))


def _position_mask(q_len: int, kv_len: int, offset: int, causal: bool, left: int = -1,
                   right: int = -1) -> np.ndarray | None:
    """Allowed (query i, key j) pairs as a bool array, the query at absolute position
    offset + i; None when every pair is allowed."""
    diff = (np.arange(q_len)[:, None] + offset) - np.arange(kv_len)[None, :]
    allowed = np.ones((q_len, kv_len), bool)
    if causal:
        allowed &= diff >= 0
    if left >= 0:
        allowed &= diff <= left
    if right >= 0:
        allowed &= -diff <= right
    return None if allowed.all() else allowed


def _attend(ctx, q: Operand, k: Operand, v: Operand, scale: float, *, bias: Operand | None,
            softcap: float = 0.0, split_scale: bool = False, softmax_type: str | None = None,
            guard: Operand | None = None, sink: Operand | None = None):
    """softmax(softcap(q k^T * scale) + bias) v on [B, N, S, H] operands.

    Returns (output, scaled scores, scores with bias, probabilities). `split_scale` multiplies
    q and k by sqrt(scale) each (ONNX Attention's own arithmetic); `guard` zeroes the rows
    whose keys are all masked; `sink` is one more logit per row that takes probability mass
    but no value (GroupQueryAttention's smooth softmax and head sinks).
    """
    kt = transpose(ctx, k, (0, 1, 3, 2))
    if split_scale:
        root = scalar_like(ctx, math.sqrt(scale), q)
        scores = emit(ctx, "matmul", emit(ctx, "mul", q, root), emit(ctx, "mul", kt, root))
    else:
        scores = emit(ctx, "mul", emit(ctx, "matmul", q, kt), scalar_like(ctx, scale, q))
    scores = _softcap(ctx, scores, softcap)
    biased = scores if bias is None else emit(ctx, "add", scores, bias)
    logits = biased
    if softmax_type and softmax_type != logits.data_type:
        logits = emit(ctx, "cast", logits, dataType=softmax_type)
    if sink is not None:
        b, n, s, _ = logits.shape
        column = emit(ctx, "expand", sink, newShape=[b, n, s, 1])
        logits = emit(ctx, "concat", logits, column, axis=3)
    probs = emit(ctx, "softmax", logits, axis=3)
    if sink is not None:
        probs = slice_last(ctx, probs, 0, probs.shape[-1] - 1)
    if guard is not None:
        probs = emit(ctx, "where", guard, scalar_like(ctx, 0, probs), probs)
    if probs.data_type != v.data_type:
        probs = emit(ctx, "cast", probs, dataType=v.data_type)
    return emit(ctx, "matmul", probs, v), scores, biased, probs


def _additive(ctx, mask: Operand, like: Operand, masked_value=_NEG_INF) -> Operand:
    """A 0/1 (uint8) mask as a bias: 0 where allowed, masked_value elsewhere."""
    return emit(ctx, "where", mask, scalar_like(ctx, 0, like), scalar_like(ctx, masked_value, like))


def _const_bias(ctx, allowed: np.ndarray, like: Operand, masked_value=_NEG_INF) -> Operand:
    return ctx.constant(np.where(allowed, 0, masked_value).astype(np_type(like)),
                        like.data_type)


def _sum(ctx, parts: list[Operand]) -> Operand | None:
    total = None
    for p in parts:
        total = p if total is None else emit(ctx, "add", total, p)
    return total


# -- ai.onnx Attention --------------------------------------------------------------------------
@onnx_op("Attention", since=23,
         webnn=("matmul", "mul", "add", "softmax", "transpose", "reshape", "expand", "concat",
                "where", "tanh", "div", "cast", "pad", "reduceMax", "isInfinite", "lesser",
                "lesserOrEqual", "greaterOrEqual", "logicalAnd"))
def attention(ctx: ImportContext, node: OnnxNode):
    q, k, v = (ctx.operand(node.input(i)) for i in range(3))
    mask_name, past_k, past_v, nonpad = (node.input(i) for i in (3, 4, 5, 6))
    if q.data_type not in ("float32", "float16"):
        raise Unsupported(f"Q is {q.data_type}; WebNN's matmul takes float32 or float16")
    three_d = q.rank == 3
    if three_d:
        q_heads, kv_heads = node.attr("q_num_heads"), node.attr("kv_num_heads")
        if not q_heads or not kv_heads:
            raise Unsupported("3-D inputs need the q_num_heads and kv_num_heads attributes")
        q, k, v = _split_heads(ctx, q, q_heads), _split_heads(ctx, k, kv_heads), \
            _split_heads(ctx, v, kv_heads)
    if (past_k is None) != (past_v is None):
        raise Unsupported("past_key and past_value must be given together")
    past_len = 0
    if past_k is not None:
        if nonpad is not None:
            raise Unsupported("nonpad_kv_seqlen cannot be combined with a past cache")
        past_len = ctx.shape(past_k)[2]
        k = emit(ctx, "concat", ctx.operand(past_k), k, axis=2)
        v = emit(ctx, "concat", ctx.operand(past_v), v, axis=2)
    present_k, present_v = k, v
    batch, q_len, kv_len = q.shape[0], q.shape[2], k.shape[2]
    scale = node.attr("scale")
    scale = 1.0 / math.sqrt(q.shape[3]) if scale is None else float(scale)
    causal = bool(node.attr("is_causal", 0))
    left, right = int(node.attr("left_window_size", -1)), int(node.attr("right_window_size", -1))

    parts = []
    if mask_name is not None:
        parts.append(_user_mask(ctx, node, mask_name, kv_len, q))
    if nonpad is None:
        allowed = _position_mask(q_len, kv_len, past_len, causal, left, right)
        if allowed is not None:
            parts.append(_const_bias(ctx, allowed, q))
    else:  # per batch: the query block ends at key nonpad_kv_seqlen[b]
        parts.append(_nonpad_bias(ctx, ctx.operand(nonpad), batch, q_len, kv_len, causal,
                                  left, right, q))
    bias = _sum(ctx, parts)
    guard = None
    if bias is not None and _may_mask_a_whole_row(bias):
        # ONNX defines a row with no allowed key as 0 (softmax alone would give NaN).
        guard = emit(ctx, "isInfinite", emit(ctx, "reduceMax", bias, axes=[bias.rank - 1],
                                         keepDimensions=True))
    k = _repeat_heads(ctx, k, q.shape[1])
    v = _repeat_heads(ctx, v, q.shape[1])
    precision = node.attr("softmax_precision")
    softmax_type = None
    if precision:
        softmax_type = {onnx.TensorProto.FLOAT: "float32",
                        onnx.TensorProto.FLOAT16: "float16"}.get(precision)
        if softmax_type is None:
            raise Unsupported(f"softmax_precision {onnx_dtype_name(precision)} "
                              f"is not a WebNN type")
    y, scores, biased, probs = _attend(ctx, q, k, v, scale, bias=bias, split_scale=True,
                                       softcap=float(node.attr("softcap", 0.0) or 0.0),
                                       softmax_type=softmax_type, guard=guard)
    if three_d:
        y = _merge_heads(ctx, y)
    mode = int(node.attr("qk_matmul_output_mode", 0))
    # ONNX's reference: modes 0 and 1 give the (softcapped) scores, 2 adds the mask, 3 is the
    # softmax output.
    qk = {0: scores, 1: scores, 2: biased, 3: probs}.get(mode)
    if qk is None:
        raise Unsupported(f"qk_matmul_output_mode {mode} is not an ONNX mode")
    if qk.data_type != q.data_type:
        qk = emit(ctx, "cast", qk, dataType=q.data_type)
    return [y, present_k, present_v, qk]


def _may_mask_a_whole_row(bias: Operand) -> bool:
    """False only for a constant bias with an allowed key in every row (a causal mask)."""
    if not bias.is_constant:
        return True
    return bool(np.isneginf(bias.constant.numpy().max(axis=-1)).any())


def _user_mask(ctx, node: OnnxNode, name: str, kv_len: int, like: Operand) -> Operand:
    """attn_mask as an additive bias; a mask shorter than the keys is padded as masked."""
    mask = ctx.operand(name)
    is_bool = ctx.onnx_type(name) == onnx.TensorProto.BOOL
    short = kv_len - mask.shape[-1]
    if short > 0:
        mask = emit(ctx, "pad", mask, beginningPadding=[0] * mask.rank,
                  endingPadding=[0] * (mask.rank - 1) + [short],
                  value=0 if is_bool else _NEG_INF)
    if is_bool:
        return _additive(ctx, mask, like)
    if mask.data_type != like.data_type:
        raise Unsupported(f"attn_mask is {mask.data_type}, Q is {like.data_type}")
    return mask


def _nonpad_bias(ctx, lengths: Operand, batch, q_len, kv_len, causal, left, right, like):
    """Keys at or past nonpad_kv_seqlen[b] are masked; with causal or windows, the query block
    is aligned to end there (offset[b] = nonpad_kv_seqlen[b] - q_len)."""
    lengths = reshape(ctx, lengths, (batch, 1, 1, 1))
    key = ctx.constant(np.arange(kv_len, dtype=np.int64).reshape(1, 1, 1, kv_len)
                       .astype(np_type(lengths)), lengths.data_type)
    allowed = emit(ctx, "lesser", key, lengths)
    if causal or left >= 0 or right >= 0:
        # diff = i + offset - j  =  (i - j - q_len) + length
        base = (np.arange(q_len)[:, None] - np.arange(kv_len)[None, :] - q_len)
        diff = emit(ctx, "add", ctx.constant(base.reshape(1, 1, q_len, kv_len)
                                           .astype(np_type(lengths)),
                                           lengths.data_type), lengths)
        zero = ctx.scalar(0, lengths.data_type)
        if causal:
            allowed = emit(ctx, "logicalAnd", allowed, emit(ctx, "greaterOrEqual", diff, zero))
        if left >= 0:
            allowed = emit(ctx, "logicalAnd", allowed,
                         emit(ctx, "lesserOrEqual", diff, ctx.scalar(left, lengths.data_type)))
        if right >= 0:
            allowed = emit(ctx, "logicalAnd", allowed,
                         emit(ctx, "greaterOrEqual", diff, ctx.scalar(-right, lengths.data_type)))
    return _additive(ctx, allowed, like)


def _kv_heads(ctx, x: Operand, heads: int) -> Operand:
    """A key or value: [B, L, N * H] or already [B, N, L, H]."""
    return x if x.rank == 4 else _split_heads(ctx, x, heads)


def _unsupported_inputs(node: OnnxNode, indices: dict[int, str]) -> None:
    for i, why in indices.items():
        if node.input(i) is not None:
            raise Unsupported(why)


@onnx_op("MultiHeadAttention", domain=MS,
         webnn=("matmul", "mul", "add", "softmax", "transpose", "reshape", "concat", "slice",
                "where", "lesser", "notEqual", "split"))
def multi_head_attention(ctx: ImportContext, node: OnnxNode):
    _unsupported_inputs(node, {8: "past_sequence_length (a shared KV buffer) has no static "
                                  "WebNN form", 9: "cache_indirection (beam search) has no "
                                                   "WebNN form"})
    if len(node.outputs) > 3 and node.outputs[3] is not None:
        raise Unsupported("the qk output is not produced")
    heads = int(node.attr("num_heads"))
    masked = float(node.attr("mask_filter_value", -10000.0))
    q = ctx.operand(node.input(0))
    k_name, v_name, bias_name = node.input(1), node.input(2), node.input(3)
    if q.rank == 5:  # packed [B, S, N, 3, H]
        if k_name is not None or bias_name is not None:
            raise Unsupported("packed QKV takes no key, value or bias")
        q, k, v = _unpack(ctx, q)
    else:
        if k_name is None:
            raise Unsupported("key is required unless the query packs Q, K and V")
        k = ctx.operand(k_name)
        if k.rank == 5:  # packed [B, L, N, 2, H]
            if v_name is not None or bias_name is not None:
                raise Unsupported("packed KV takes no value or bias")
            k, v = _unpack(ctx, k)
        else:
            v = ctx.operand(v_name)
            if bias_name is not None:
                if k.rank == 4:
                    raise Unsupported("a bias with [B, N, L, H] key and value is not defined")
                q, k, v = _add_qkv_bias(ctx, ctx.operand(bias_name), q, k, v)
            k, v = _kv_heads(ctx, k, heads), _kv_heads(ctx, v, heads)
        q = _split_heads(ctx, q, heads)
    past_len = 0
    if node.input(6) is not None:
        past_len = ctx.shape(node.input(6))[2]
        k = emit(ctx, "concat", ctx.operand(node.input(6)), k, axis=2)
        v = emit(ctx, "concat", ctx.operand(node.input(7)), v, axis=2)
    batch, q_len, kv_len = q.shape[0], q.shape[2], k.shape[2]
    parts = []
    if node.attr("unidirectional", 0):
        allowed = _position_mask(q_len, kv_len, past_len, True)
        if allowed is not None:
            parts.append(_const_bias(ctx, allowed, q, masked))
    if node.input(4) is not None:
        parts.append(_key_padding_bias(ctx, ctx.operand(node.input(4)), batch, kv_len, q,
                                       masked))
    if node.input(5) is not None:
        parts.append(ctx.operand(node.input(5)))
    scale = float(node.attr("scale", 0.0) or 0.0) or 1.0 / math.sqrt(q.shape[3])
    y, *_ = _attend(ctx, q, k, v, scale, bias=_sum(ctx, parts))
    return [_merge_heads(ctx, y), k, v]


def _unpack(ctx, packed: Operand) -> list[Operand]:
    """[B, S, N, P, H] packed along P -> P operands [B, N, S, H]."""
    b, s, n, p, h = packed.shape
    parts = emit(ctx, "split", packed, splits=p, axis=3) if p > 1 else [packed]
    return [transpose(ctx, reshape(ctx, t, (b, s, n, h)), (0, 2, 1, 3)) for t in parts]


def _add_qkv_bias(ctx, bias: Operand, q, k, v):
    d_q, d_k, d_v = q.shape[-1], k.shape[-1], v.shape[-1]
    if bias.shape != (d_q + d_k + d_v,):
        raise Unsupported(f"bias has shape {list(bias.shape)}, expected [{d_q + d_k + d_v}]")
    bq, bk, bv = emit(ctx, "split", bias, splits=[d_q, d_k, d_v], axis=0)
    return emit(ctx, "add", q, bq), emit(ctx, "add", k, bk), emit(ctx, "add", v, bv)


def _key_padding_bias(ctx, mask: Operand, batch: int, kv_len: int, like: Operand,
                      masked: float) -> Operand:
    """key_padding_mask [B] (valid key counts) or [B, L] (1 keeps a key) as [B, 1, 1, L]."""
    if mask.shape == (batch,):
        keys = ctx.constant(np.arange(kv_len).reshape(1, 1, 1, kv_len).astype(np_type(mask)),
                            mask.data_type)
        allowed = emit(ctx, "lesser", keys, reshape(ctx, mask, (batch, 1, 1, 1)))
    elif mask.shape == (batch, kv_len):
        allowed = emit(ctx, "notEqual", reshape(ctx, mask, (batch, 1, 1, kv_len)),
                     ctx.scalar(0, mask.data_type))
    else:
        raise Unsupported(f"key_padding_mask of shape {list(mask.shape)}: only [B] lengths "
                          f"and [B, L] masks are supported")
    return _additive(ctx, allowed, like, masked)


@onnx_op("GroupQueryAttention", domain=MS,
         webnn=("matmul", "mul", "add", "softmax", "transpose", "reshape", "concat", "slice",
                "split", "expand", "where", "lesserOrEqual", "tanh", "div", "gather", "sub",
                "equal", "greaterOrEqual", "logicalAnd", "cast"))
def group_query_attention(ctx: ImportContext, node: OnnxNode):
    _unsupported_inputs(node, {12: "k_scale (a quantized KV cache) has no WebNN form here",
                               13: "v_scale (a quantized KV cache) has no WebNN form here",
                               14: "q_norm_weight is not supported",
                               15: "k_norm_weight is not supported"})
    if len(node.outputs) > 3 and node.outputs[3] is not None:
        raise Unsupported("the output_qk output is not produced")
    heads, kv_heads = int(node.attr("num_heads")), int(node.attr("kv_num_heads"))
    q = ctx.operand(node.input(0))
    if node.input(1) is None:  # packed [B, S, (N + 2 * kvN) * H]
        h = q.shape[2] // (heads + 2 * kv_heads)
        q, k, v = emit(ctx, "split", q, splits=[heads * h, kv_heads * h, kv_heads * h], axis=2)
    else:
        k, v = ctx.operand(node.input(1)), ctx.operand(node.input(2))
    batch, q_len = q.shape[0], q.shape[1]
    past_k, past_v = node.input(3), node.input(4)
    past_len = ctx.shape(past_k)[2] if past_k is not None else 0
    total = int(np.asarray(ctx.require_known(node.input(6), "total_sequence_length"))
                .reshape(-1)[0])
    if past_k is not None and total == past_len:
        return _shared_buffer_gqa(ctx, node, q, k, v, heads, kv_heads)
    if total != past_len + q_len:
        raise Unsupported(f"total_sequence_length {total} is neither the past length "
                          f"{past_len} plus the new tokens {q_len} (a growing cache) nor the "
                          f"past buffers' length (a shared KV buffer)")
    q, k, v = _split_heads(ctx, q, heads), _split_heads(ctx, k, kv_heads), \
        _split_heads(ctx, v, kv_heads)
    if node.attr("do_rotary", 0):
        q, k = _gqa_rotary(ctx, node, q, k, past_len)
    if past_k is not None:
        k = emit(ctx, "concat", ctx.operand(past_k), k, axis=2)
        v = emit(ctx, "concat", ctx.operand(past_v), v, axis=2)
    present_k, present_v = k, v
    lowest = float(np.finfo(np_type(q)).min)  # ONNX Runtime masks with the lowest value
    parts = []
    window = int(node.attr("local_window_size", -1))
    allowed = _position_mask(q_len, total, past_len, bool(node.attr("causal", 1)),
                             window - 1 if window > 0 else -1)
    if allowed is not None:
        parts.append(_const_bias(ctx, allowed, q, lowest))
    parts.append(_seqlens_bias(ctx, node.input(5), batch, total, past_k is not None, q, lowest))
    if node.input(10) is not None:
        parts.append(ctx.operand(node.input(10)))
    sink = None
    if node.input(11) is not None:  # one sink logit per head
        sink = reshape(ctx, ctx.operand(node.input(11)), (1, heads, 1, 1))
    elif node.attr("smooth_softmax", -1) == 1:  # a sink logit of 0 for every head
        sink = ctx.constant(np.zeros((1, 1, 1, 1), np_type(q)), q.data_type)
    scale = float(node.attr("scale", 0.0) or 0.0) or 1.0 / math.sqrt(q.shape[3])
    y, *_ = _attend(ctx, q, _repeat_heads(ctx, k, heads), _repeat_heads(ctx, v, heads), scale,
                    bias=_sum(ctx, [p for p in parts if p is not None]),
                    softcap=float(node.attr("softcap", 0.0) or 0.0), sink=sink)
    return [_merge_heads(ctx, y), present_k, present_v]


def _shared_buffer_gqa(ctx, node: OnnxNode, q, k, v, heads: int, kv_heads: int):
    """The fixed-capacity form (attention_cache.py): the past inputs are buffers as long as
    total_sequence_length, the new rows written at the runtime position seqlens_k + 1 - S."""
    if node.input(9) is not None:
        raise Unsupported("position_ids with a shared KV buffer: the positions follow seqlens_k")
    batch, q_len = q.shape[0], q.shape[1]
    pos = attention_cache.positions(ctx, ctx.operand(node.input(5)), batch, q_len)
    q, k, v = _split_heads(ctx, q, heads), _split_heads(ctx, k, kv_heads), \
        _split_heads(ctx, v, kv_heads)
    if node.attr("do_rotary", 0):
        q, k = _gqa_rotary(ctx, node, q, k, 0, positions=pos)
    present_k = attention_cache.write_rows(ctx, ctx.operand(node.input(3)), k, pos)
    present_v = attention_cache.write_rows(ctx, ctx.operand(node.input(4)), v, pos)
    window = int(node.attr("local_window_size", -1))
    allowed = attention_cache.allowed_keys(ctx, pos, present_k.shape[2],
                                           bool(node.attr("causal", 1)), window)
    lowest = float(np.finfo(np_type(q)).min)
    parts = [_additive(ctx, allowed, q, lowest)]
    if node.input(10) is not None:
        parts.append(ctx.operand(node.input(10)))
    sink = None
    if node.input(11) is not None:
        sink = reshape(ctx, ctx.operand(node.input(11)), (1, heads, 1, 1))
    elif node.attr("smooth_softmax", -1) == 1:
        sink = ctx.constant(np.zeros((1, 1, 1, 1), np_type(q)), q.data_type)
    scale = float(node.attr("scale", 0.0) or 0.0) or 1.0 / math.sqrt(q.shape[3])
    y, *_ = _attend(ctx, q, _repeat_heads(ctx, present_k, heads),
                    _repeat_heads(ctx, present_v, heads), scale, bias=_sum(ctx, parts),
                    softcap=float(node.attr("softcap", 0.0) or 0.0), sink=sink)
    return [_merge_heads(ctx, y), present_k, present_v]


def _seqlens_bias(ctx, name: str, batch: int, total: int, has_past: bool, like: Operand,
                  masked: float) -> Operand | None:
    """Keys past seqlens_k[b] (the last valid key of each sequence) are masked.

    With a past cache the new keys are appended after all of it, which is where ONNX Runtime
    puts them when seqlens_k[b] = total - 1; a known seqlens_k that says otherwise is refused,
    a runtime one is taken to say so (left-aligned, unpadded caches, as decoders feed them).
    """
    known = ctx.known(name)
    if known is not None:
        if np.all(known == total - 1):
            return None
        if has_past:
            raise Unsupported("seqlens_k is not total_sequence_length - 1 for every sequence "
                              "while a past cache is given: those sequences would append "
                              "their new keys inside the cache")
    lengths = reshape(ctx, ctx.operand(name), (batch, 1, 1, 1))
    keys = ctx.constant(np.arange(total).reshape(1, 1, 1, total).astype(np_type(lengths)),
                        lengths.data_type)
    return _additive(ctx, emit(ctx, "lesserOrEqual", keys, lengths), like, masked)


def _gqa_rotary(ctx, node: OnnxNode, q: Operand, k: Operand, past_len: int,
                positions: Operand | None = None):
    """Rotate the new queries and keys at positions past_len .. past_len + S - 1 (or
    position_ids, or the given [B, S] positions)."""
    b, _, s, h = q.shape
    if positions is not None:
        pass
    elif node.input(9) is not None:
        pos = node.input(9)
        positions = ctx.known(pos) if ctx.is_known(pos) else ctx.operand(pos)
    else:
        positions = np.broadcast_to(past_len + np.arange(s), (b, s))
    cos, sin = cos_sin(ctx, node.input(7), node.input(8), positions, b, s, q)
    interleaved = bool(node.attr("rotary_interleaved", 0))
    rd = 2 * cos.shape[-1]
    out = []
    for x in (q, k):
        xs = transpose(ctx, x, (0, 2, 1, 3))
        out.append(transpose(ctx, rotate(ctx, xs, cos, sin, rd, interleaved), (0, 2, 1, 3)))
    return out


# -- normalizations -----------------------------------------------------------------------------
