"""Types and storage: QUANTIZE, DEQUANTIZE, DENSIFY and CAST.

DEQUANTIZE of float16 weights is a cast, so the weights stay float16 in the graph (half the
bytes, as stored); of int8/uint8 ones, dequantizeLinear. DENSIFY runs at conversion time: the
sparse weights become a dense constant.
"""
from __future__ import annotations

import numpy as np

from .... import dtypes
from ....ir import Operand
from ..context import Complex, ImportContext
from ..model_file import TYPES, Operator, Tensor
from ..registry import Unsupported, tflite_op
from ._common import emit

_DENSE, _SPARSE_CSR = 0, 1


@tflite_op("DEQUANTIZE", webnn=("cast", "dequantizeLinear"))
def dequantize(ctx: ImportContext, op: Operator):
    src = ctx.desc(0).data_type
    if ctx.quant(0) is not None:
        return [ctx.real(0)]
    if src == "float16":
        return [emit(ctx, "cast", ctx.operand(0), dataType="float32")]
    # (LiteRT's kernel will not prepare a float32 input either)
    raise Unsupported(f"its input {ctx.tensor(0)} is {ctx.tensor(0).type_name} without "
                      f"quantization parameters")


@tflite_op("QUANTIZE", webnn=("quantizeLinear", "dequantizeLinear"))
def quantize(ctx: ImportContext, op: Operator):
    """float -> quantized, or quantized -> quantized with other parameters (requantize): the
    real value goes out, and the output's parameters quantize it."""
    if ctx.out_quant() is None:
        raise Unsupported(f"its output {ctx.out_tensor()} has no quantization parameters")
    x = ctx.real(0)
    if x.data_type not in ("float32", "float16"):
        raise Unsupported(f"its input {ctx.tensor(0)} is neither float nor quantized")
    return [x]


@tflite_op("CAST", webnn=("cast", "notEqual", "identity", "greaterOrEqual", "lesser",
                          "logicalOr", "where"))
def cast(ctx: ImportContext, op: Operator):
    """A cast to BOOL is `x != 0`; others convert (floats to integers toward zero, saturating
    at the integer type's ends as LiteRT does).

    A COMPLEX64 input (an RFFT2D's spectrum) casts its real part, as LiteRT's kernel does
    (std::real, then the cast: the imaginary part is dropped, and BOOL is `real != 0`); to
    COMPLEX64 it stays as it is."""
    target_tensor = ctx.out_tensor()
    if ctx.is_complex(0):
        z = ctx.complex(0)
        if target_tensor.type_name == "COMPLEX64":
            return [Complex(emit(ctx, "identity", z.real, suffix="re"),
                            emit(ctx, "identity", z.imag, suffix="im"))]
    target = target_tensor.info.webnn
    if target is None:
        raise Unsupported(f"its output is {target_tensor.type_name}, which WebNN does not have")
    known = ctx.known(0) if not ctx.is_complex(0) else None
    if known is not None and ctx.quant(0) is None and known.dtype.kind in "iu" \
            and target_tensor.info.numpy.kind in "iu" and not target_tensor.is_bool:
        return [known.astype(target_tensor.info.numpy)]
    x = ctx.complex(0).real if ctx.is_complex(0) else ctx.operand(0)
    if target_tensor.is_bool:
        return [emit(ctx, "notEqual", x, ctx.scalar(0, x.data_type))]
    if x.data_type == target:
        return [emit(ctx, "identity", x)]
    if x.data_type in ("float32", "float16") and target not in ("float32", "float16"):
        return [_saturating_cast(ctx, x, target)]
    return [emit(ctx, "cast", x, dataType=target)]


def _saturating_cast(ctx: ImportContext, x: Operand, target: str) -> Operand:
    """A float to an integer type as LiteRT's CAST does it: toward zero, saturating at the
    type's ends (+-Infinity too), NaN giving the largest value. WebNN's cast leaves values out
    of range to the implementation (ONNX Runtime wraps them: 298.7 came out as uint8 42)."""
    info = np.iinfo(dtypes.numpy_dtype(target))
    dt = x.data_type
    # trunc(x) > max exactly when x >= max + 1 (a power of two, exact in float32; past float16's
    # range it casts to +Infinity, which only +Infinity reaches), and trunc(x) < min when
    # x < min (0 or minus a power of two, exact).
    above = emit(ctx, "logicalOr", emit(ctx, "greaterOrEqual", x, ctx.scalar(
        float(info.max) + 1.0, dt), suffix="above"), emit(ctx, "notEqual", x, x, suffix="nan"))
    below = emit(ctx, "lesser", x, ctx.scalar(float(info.min), dt), suffix="below")
    y = emit(ctx, "cast", x, dataType=target)
    y = emit(ctx, "where", below, ctx.scalar(int(info.min), target), y, suffix="min")
    return emit(ctx, "where", above, ctx.scalar(int(info.max), target), y, suffix="max")


@tflite_op("DENSIFY")
def densify(ctx: ImportContext, op: Operator):
    t = ctx.tensor(0)
    if t.sparsity is None or t.data is None:
        raise Unsupported(f"its input {t} is not a sparse constant")
    # The walk holds int64 coordinates of every dense position, then the dense values.
    ctx.claim(list(t.shape), 8 * (len(t.shape) + 1))
    return [densified(t)]


def densified(t: Tensor) -> np.ndarray:
    """A sparse tensor's dense values, as TFLite's format converter lays them out.

    The stored values are the leaves of a walk over the traversal order's dimensions: a DENSE
    level visits every position, a SPARSE_CSR level the positions its segments list for the
    parent. Levels past the tensor's rank are blocks of the dimension block_map names.
    """
    sp = t.sparsity
    info = TYPES[t.type]
    values = t.data.view(info.numpy)
    shape = list(t.shape)
    order = [int(d) for d in sp.traversalOrder]
    block_map = [int(d) for d in (sp.blockMap if sp.blockMap is not None else [])]
    meta = sp.dimMetadata
    rank = len(shape)
    if len(order) != len(meta) or len(order) != rank + len(block_map):
        raise Unsupported(f"{t}: its sparsity has {len(meta)} levels for rank {rank} and "
                          f"{len(block_map)} blocks")
    parent = np.zeros(1, np.int64)  # each entry's position within its level
    coords = np.zeros((1, 0), np.int64)
    for level, m in enumerate(meta):
        if m.format == _DENSE:
            n = int(m.denseSize)
            parent = (parent[:, None] * n + np.arange(n)).reshape(-1)
            coords = np.concatenate([np.repeat(coords, n, axis=0),
                                     np.tile(np.arange(n), len(coords))[:, None]], axis=1)
        elif m.format == _SPARSE_CSR:
            segments = np.asarray(m.arraySegments.values, np.int64)
            indices = np.asarray(m.arrayIndices.values, np.int64)
            if parent.size and (parent.max() + 1 >= segments.size or
                                segments[-1] > indices.size):
                raise Unsupported(f"{t}: its sparse segments do not cover level {level}")
            starts, ends = segments[parent], segments[parent + 1]
            counts = ends - starts
            rows = np.repeat(np.arange(len(parent)), counts)
            position = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts) \
                + np.repeat(starts, counts)
            parent = position
            coords = np.concatenate([coords[rows], indices[position][:, None]], axis=1)
        else:
            raise Unsupported(f"{t}: unknown sparse dimension format {m.format}")
    if len(parent) != values.size:
        raise Unsupported(f"{t}: its sparsity lists {len(parent)} values, its buffer holds "
                          f"{values.size}")
    dense_index = np.zeros((len(parent), rank), np.int64)
    for level in range(rank):
        dense_index[:, order[level]] = coords[:, level]
    block_sizes = {order[level] - rank: int(meta[level].denseSize)
                   for level in range(rank, len(order))}
    for level in range(rank, len(order)):
        b = order[level] - rank
        dim = block_map[b]
        dense_index[:, dim] = dense_index[:, dim] * block_sizes[b] + coords[:, level]
    out = np.zeros(shape, info.numpy)
    out[tuple(dense_index.T)] = values
    return out
