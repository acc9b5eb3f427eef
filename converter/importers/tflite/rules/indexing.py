"""Indexing: STRIDED_SLICE, SLICE, GATHER, GATHER_ND, SCATTER_ND, EMBEDDING_LOOKUP, ONE_HOT,
MATRIX_DIAG, MATRIX_SET_DIAG, DYNAMIC_UPDATE_SLICE."""
from __future__ import annotations

import numpy as np

from .... import dtypes
from ....ir import Operand
from ..context import ImportContext
from ..model_file import Operator
from ..registry import Unsupported, tflite_op
from ._common import axis_of, emit, reshape

def _bit(mask: int, i: int) -> bool:
    return bool((mask >> i) & 1)


def strided_index(begin, end, strides, o) -> tuple:
    """TF's strided-slice spec as a numpy index: numpy's basic indexing was its model, so an
    ellipsis, a new axis, a shrunk axis (an integer) and a clamped slice mean the same."""
    index = []
    seen_ellipsis = False
    for i in range(len(begin)):
        if _bit(o.ellipsisMask, i):  # LiteRT reads a second ellipsis bit as a whole axis
            index.append(slice(None) if seen_ellipsis else Ellipsis)
            seen_ellipsis = True
        elif _bit(o.newAxisMask, i):
            index.append(None)
        elif _bit(o.shrinkAxisMask, i):
            index.append(int(begin[i]))
        else:
            b = None if _bit(o.beginMask, i) else int(begin[i])
            e = None if _bit(o.endMask, i) else int(end[i])
            if o.offset and e is not None:
                e += 0 if b is None else b
            s = int(strides[i])
            if s == 0:
                raise Unsupported("a stride of 0")
            index.append(slice(b, e, s))
    return tuple(index)


def apply_index(ctx: ImportContext, x: Operand, index: tuple) -> Operand:
    """A numpy basic index as WebNN ops: reverse (negative steps), slice, reshape. The index
    is one `_empty_result` accepted: in range, and selecting something on every axis."""
    shape = list(x.shape)
    explicit = sum(1 for item in index if item is not None and item is not Ellipsis)
    expanded = []
    for item in index:
        if item is Ellipsis:
            expanded.extend([slice(None)] * (len(shape) - explicit))
        else:
            expanded.append(item)
    expanded.extend([slice(None)] * (len(shape) - sum(1 for i in expanded if i is not None)))
    starts, sizes, steps, flips, out_shape = [], [], [], [], []
    axis = 0
    for item in expanded:
        if item is None:
            out_shape.append(1)
            continue
        n = shape[axis]
        if isinstance(item, int):
            start, size, step = item + n if item < 0 else item, 1, 1
        else:
            r = range(n)[item]
            start, size, step = r.start, len(r), r.step
            out_shape.append(size)
        if step < 0:  # read the reversed axis forwards
            flips.append(axis)
            start, step = n - 1 - start, -step
        starts.append(start)
        sizes.append((size - 1) * step + 1)  # WebNN's size is the window strides walk over
        steps.append(step)
        axis += 1
    if flips:
        x = emit(ctx, "reverse", x, axes=flips)
    # A strided window can span the whole axis ((7 - 1) // 2 * 2 + 1 == 7) and still skip
    # elements: only starts at 0, full sizes and unit steps are no slice at all.
    if starts != [0] * len(shape) or sizes != shape or any(s != 1 for s in steps):
        attrs = dict(starts=starts, sizes=sizes)
        if any(s != 1 for s in steps):
            attrs["strides"] = steps
        x = ctx.emit("slice", [x], attrs)
    if list(x.shape) != out_shape:
        x = reshape(ctx, x, out_shape)
    return x if x.kind == "intermediate" else emit(ctx, "identity", x)


def _moved(ctx: ImportContext) -> tuple[np.ndarray | None, Operand | None]:
    """Input 0 as a known array to index with numpy, or as an operand for the graph."""
    known = ctx.known(0)
    q, qo = ctx.quant(0), ctx.out_quant()
    if known is not None and ((q is None and qo is None) or (q is not None and q.same_as(qo))):
        return known, None
    return None, ctx.passthrough(0)


@tflite_op("STRIDED_SLICE", webnn=("slice", "reverse", "reshape"))
def strided_slice(ctx: ImportContext, op: Operator):
    begin = ctx.require_known(1, "begin").reshape(-1)
    end = ctx.require_known(2, "end").reshape(-1)
    strides = ctx.require_known(3, "strides").reshape(-1) if ctx.has(3) \
        else np.ones_like(begin)
    if not len(begin) == len(end) == len(strides):
        raise Unsupported("its begin, end and strides differ in length")
    index = strided_index(begin, end, strides, op.options)
    empty = _empty_result(ctx, index)
    if empty is not None:
        return [empty]
    known, x = _moved(ctx)
    if known is not None:
        return [known[index]]
    return [apply_index(ctx, x, index)]


def _empty_result(ctx: ImportContext, index: tuple) -> np.ndarray | None:
    """What `index` selects when that is nothing: an empty array known now, refused only where
    an op needs it as an operand (WebNN has no empty tensors)."""
    # Indexing a zero-strided view finds the result's shape without allocating the input.
    view = np.broadcast_to(np.zeros((), np.uint8), ctx.shape(0))
    try:
        shape = view[index].shape
    except IndexError as e:
        raise Unsupported(f"its index is out of range ({e})") from None
    if 0 not in shape:
        return None
    return np.zeros(shape, dtypes.numpy_dtype(ctx.desc(0).data_type))


@tflite_op("SLICE", webnn=("slice",))
def slice_op(ctx: ImportContext, op: Operator):
    shape = ctx.shape(0)
    begin = [int(b) for b in ctx.require_known(1, "begin").reshape(-1)]
    size = [int(s) for s in ctx.require_known(2, "size").reshape(-1)]
    if len(begin) != len(shape) or len(size) != len(shape):
        raise Unsupported(f"its begin {begin} and size {size} do not fit rank {len(shape)}")
    size = [n - b if s == -1 else s for n, b, s in zip(shape, begin, size)]
    if any(b < 0 or s < 0 or b + s > n for b, s, n in zip(begin, size, shape)):
        raise Unsupported(f"begin {begin} and size {size} leave the input {list(shape)}")
    index = tuple(slice(b, b + s) for b, s in zip(begin, size))
    empty = _empty_result(ctx, index)
    if empty is not None:
        return [empty]
    known, x = _moved(ctx)
    if known is not None:
        return [known[index]]
    return [apply_index(ctx, x, index)]


@tflite_op("GATHER", webnn=("gather",))
def gather(ctx: ImportContext, op: Operator):
    o = op.options
    rank = ctx.rank(0)
    axis = axis_of(o.axis if o is not None else 0, rank)
    if o is not None and o.batchDims:
        raise Unsupported(f"batch_dims {o.batchDims}: WebNN's gather has no batch dimensions")
    known, x = _moved(ctx)
    indices = ctx.known(1)
    if known is not None and indices is not None:
        return [np.take(known, indices, axis=axis)]
    return [emit(ctx, "gather", x if x is not None else ctx.operand(0), ctx.operand(1),
                 axis=axis)]


@tflite_op("GATHER_ND", webnn=("gatherND",))
def gather_nd(ctx: ImportContext, op: Operator):
    return [emit(ctx, "gatherND", ctx.passthrough(0), ctx.operand(1))]


@tflite_op("EMBEDDING_LOOKUP", webnn=("gather",))
def embedding_lookup(ctx: ImportContext, op: Operator):
    """Rows of the table (input 1) picked by the ids (input 0)."""
    return [emit(ctx, "gather", ctx.passthrough(1), ctx.operand(0), axis=0)]


@tflite_op("SCATTER_ND", webnn=("scatterND",))
def scatter_nd(ctx: ImportContext, op: Operator):
    """SCATTER_ND(indices, updates, shape) into zeros. TFLite SUMS updates that share an
    index; WebNN's scatterND replaces. So the indices must be known, and must not repeat."""
    shape = [int(d) for d in ctx.require_known(2, "shape").reshape(-1)]
    indices = ctx.require_known(0, "indices")
    rows = indices.reshape(-1, indices.shape[-1]) if indices.ndim else indices.reshape(1, 1)
    if len(np.unique(rows, axis=0)) != len(rows):
        raise Unsupported("its indices repeat: TFLite sums repeated updates, WebNN's scatterND "
                          "keeps one")
    updates = ctx.real(1)
    zeros = ctx.constant(np.broadcast_to(np.zeros((), np.dtype(updates.data_type)), shape),
                         updates.data_type, name=f"{ctx.out_tensor().name}/zeros")
    return [emit(ctx, "scatterND", zeros, ctx.operand(0), updates)]


@tflite_op("ONE_HOT", webnn=("equal", "reshape", "where"))
def one_hot(ctx: ImportContext, op: Operator):
    """where(indices == range(depth), on, off), the range laid along `axis`."""
    depth = int(ctx.require_known(1, "depth").reshape(()))
    if depth < 1:
        raise Unsupported(f"its depth is {depth}")
    indices = ctx.operand(0)
    rank = indices.rank
    # without an options table LiteRT's parser leaves the axis at 0 (not TF's default -1)
    axis = op.options.axis if op.options is not None else 0
    if not -1 <= axis <= rank:  # LiteRT's kernel takes -1 (last) or 0 .. rank, nothing else
        raise Unsupported(f"its axis {axis} is out of range (-1 or 0 to {rank})")
    axis = axis % (rank + 1)
    shape = list(indices.shape)
    ids = reshape(ctx, indices, shape[:axis] + [1] + shape[axis:], "ids")
    lane = [1] * (rank + 1)
    lane[axis] = depth
    ctx.claim([depth], 8)
    positions = ctx.constant(np.arange(depth, dtype=np.dtype(indices.data_type)).reshape(lane),
                             indices.data_type, name=f"{ctx.out_tensor().name}/positions")
    hit = emit(ctx, "equal", ids, positions)
    on, off = ctx.passthrough(2), ctx.passthrough(3)
    return [emit(ctx, "where", hit, reshape(ctx, on, []), reshape(ctx, off, []))]


def _diagonal_mask(ctx: ImportContext, rows: int, cols: int) -> Operand:
    ctx.claim([rows, cols], 1)  # sized by the input's last axis, squared
    return ctx.constant(np.eye(rows, cols, dtype=np.uint8), "uint8",
                        name=f"{ctx.out_tensor().name}/diagonal")


@tflite_op("MATRIX_DIAG", webnn=("reshape", "where"))
def matrix_diag(ctx: ImportContext, op: Operator):
    """[..., N] -> [..., N, N] with the values on the diagonal and zeros elsewhere: stored
    zeros for a quantized tensor too, as LiteRT's kernel writes them (not the zero point)."""
    x = ctx.passthrough(0)
    n = x.shape[-1]
    row = reshape(ctx, x, list(x.shape[:-1]) + [1, n], "row")
    return [emit(ctx, "where", _diagonal_mask(ctx, n, n), row, ctx.scalar(0, x.data_type))]


def _refuse_mixed_types(ctx: ImportContext, what: str) -> None:
    """The operand and input 1 must be stored as the same type (the TFLite schema's rule).
    Compared as stored, before passthrough: it dequantizes a quantized input 1 next to a
    float operand, which would hide an int8 diagonal or update under float32."""
    stored, other = ctx.desc(0).data_type, ctx.desc(1).data_type
    if stored != other:
        raise Unsupported(f"its operand is {stored} but its {what} {other}; "
                          "give both the same type")


@tflite_op("MATRIX_SET_DIAG", webnn=("pad", "reshape", "where"))
def matrix_set_diag(ctx: ImportContext, op: Operator):
    """The input with its main diagonal replaced: diagonal[..., i] lands at [..., i, i]."""
    _refuse_mixed_types(ctx, "diagonal")  # LiteRT copies the bytes: no values to match
    x, diagonal = ctx.passthrough(0), ctx.passthrough(1, 0)
    rows, cols = x.shape[-2:]
    k = min(rows, cols)
    if diagonal.shape[-1] != k:
        raise Unsupported(f"its diagonal has {diagonal.shape[-1]} values, the matrices {k}")
    if k < cols:  # the diagonal is indexed by column: widen it to every column
        diagonal = emit(ctx, "pad", diagonal, beginningPadding=[0] * diagonal.rank,
                        endingPadding=[0] * (diagonal.rank - 1) + [cols - k])
    row = reshape(ctx, diagonal, list(diagonal.shape[:-1]) + [1, cols], "row")
    return [emit(ctx, "where", _diagonal_mask(ctx, rows, cols), row, x)]


@tflite_op("DYNAMIC_UPDATE_SLICE", webnn=("scatterND",))
def dynamic_update_slice(ctx: ImportContext, op: Operator):
    """The operand with a block overwritten by the update, at start indices that must be known
    (clamped so the block fits, as TFLite does): a scatterND over the block's coordinates."""
    _refuse_mixed_types(ctx, "update")  # as LiteRT, which refuses the model
    x = ctx.passthrough(0)
    update = ctx.passthrough(1, 0)
    starts = [int(s) for s in ctx.require_known(2, "start indices").reshape(-1)]
    if len(starts) != x.rank or update.rank != x.rank:
        raise Unsupported(f"its start indices {starts} and update {list(update.shape)} do not "
                          f"fit the operand {list(x.shape)}")
    starts = [min(max(s, 0), n - u) for s, n, u in zip(starts, x.shape, update.shape)]
    grid = np.indices(update.shape, dtype=np.int32)
    coords = np.moveaxis(grid, 0, -1) + np.asarray(starts, np.int32)
    indices = ctx.constant(np.ascontiguousarray(coords), "int32",
                           name=f"{ctx.out_tensor().name}/coordinates")
    return [emit(ctx, "scatterND", x, indices, update)]
