"""Ops that move values without changing them: RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE,
CONCATENATION, SPLIT, SPLIT_V, PACK, UNPACK, TILE, BROADCAST_TO, PAD, PADV2, MIRROR_PAD,
DEPTH_TO_SPACE, SPACE_TO_DEPTH, REVERSE_V2, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND.

Quantized tensors pass as stored, as LiteRT's kernels copy them (the converter keeps input and
output parameters equal across these ops), so no dequantize/quantize pair is added. Values
known at conversion time are moved with numpy: a constant reshaped or transposed stays a
constant.
"""
from __future__ import annotations

import numpy as np

from .... import dtypes
from ....ir import Operand
from ....ir.graph import shape_problem
from ..context import ImportContext
from ..model_file import Operator
from ..registry import Unsupported, tflite_op
from ._common import axes_of, axis_of, emit, options, reshape, resolve_shape, transpose


def _known_moved(ctx: ImportContext, *ks: int) -> list[np.ndarray] | None:
    """The known values of inputs `ks` when they can be moved as stored, else None."""
    values = [ctx.known(k) for k in ks]
    if any(v is None for v in values):
        return None
    qo = ctx.out_quant()
    for k in ks:
        q = ctx.quant(k)
        if (q is None) != (qo is None) or (q is not None and not q.same_as(qo)):
            return None
    return values


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


@tflite_op("RESHAPE", webnn=("reshape",))
def reshape_op(ctx: ImportContext, op: Operator):
    """The new shape comes from the shape input when there is one, else from the options, else
    from the output tensor; one -1 takes the remaining size."""
    if ctx.has(1):
        target = ctx.require_known(1, "shape").reshape(-1)
    elif op.options is not None and op.options.newShape is not None:
        target = np.asarray(op.options.newShape).reshape(-1)
    else:
        target = np.asarray(ctx.out_tensor().shape)
    shape = resolve_shape(target, _size(ctx.shape(0)), "new shape")
    known = _known_moved(ctx, 0)
    if known is not None:
        return [known[0].reshape(shape)]
    return [reshape(ctx, ctx.passthrough(0), shape)]


@tflite_op("SQUEEZE", webnn=("reshape",))
def squeeze(ctx: ImportContext, op: Operator):
    shape = ctx.shape(0)
    dims = op.options.squeezeDims if op.options is not None else None
    if dims is None or len(dims) == 0:
        drop = {i for i, d in enumerate(shape) if d == 1}
    else:
        drop = set(axes_of(dims, len(shape), "squeeze dimension"))
        if any(shape[i] != 1 for i in drop):
            raise Unsupported(f"it squeezes dimensions {sorted(drop)} of {list(shape)}, which "
                              f"are not all 1")
    new = [d for i, d in enumerate(shape) if i not in drop]
    known = _known_moved(ctx, 0)
    if known is not None:
        return [known[0].reshape(new)]
    return [reshape(ctx, ctx.passthrough(0), new, "squeeze")]


@tflite_op("EXPAND_DIMS", webnn=("reshape",))
def expand_dims(ctx: ImportContext, op: Operator):
    shape = list(ctx.shape(0))
    axis = axis_of(ctx.require_known(1, "axis"), len(shape) + 1)
    new = shape[:axis] + [1] + shape[axis:]
    known = _known_moved(ctx, 0)
    if known is not None:
        return [known[0].reshape(new)]
    return [reshape(ctx, ctx.passthrough(0), new, "expand_dims")]


@tflite_op("TRANSPOSE", webnn=("transpose",))
def transpose_op(ctx: ImportContext, op: Operator):
    rank = ctx.rank(0)
    perm = [axis_of(p, rank, "permutation") for p in ctx.require_known(1, "permutation")
            .reshape(-1)]
    if sorted(perm) != list(range(rank)):
        raise Unsupported(f"its permutation {perm} is not a permutation of rank {rank}")
    known = _known_moved(ctx, 0)
    if known is not None:
        return [np.ascontiguousarray(known[0].transpose(perm))]
    x = ctx.passthrough(0)
    y = transpose(ctx, x, perm)
    return [y if y is not x else emit(ctx, "identity", x)]


def _stored_or_real(ctx: ImportContext, ks) -> list[Operand]:
    """Inputs as stored when all share the output's quantization, else all real."""
    qo = ctx.out_quant()
    same = all((ctx.quant(k) is None and qo is None) or
               (ctx.quant(k) is not None and ctx.quant(k).same_as(qo)) for k in ks)
    return [ctx.operand(k) if same else ctx.real(k) for k in ks]


@tflite_op("CONCATENATION", webnn=("concat",))
def concatenation(ctx: ImportContext, op: Operator):
    o = options(op)
    if o.fusedActivationFunction:
        # The schema has the field, but LiteRT's kernel refuses it (and its XNNPACK delegate
        # drops it), so such a model has no agreed meaning.
        raise Unsupported("a fused activation on CONCATENATION, which LiteRT's kernel rejects")
    ks = [k for k in range(len(op.inputs)) if ctx.has(k)]
    axis = axis_of(o.axis, ctx.rank(0))
    # Empty inputs (an empty split part, a slice of nothing) add nothing: left out.
    filled = [k for k in ks if ctx.known(k) is None or ctx.known(k).size]
    if not filled:
        return [np.concatenate([ctx.known(k) for k in ks], axis=axis)]
    ks = filled
    known = _known_moved(ctx, *ks)
    if known is not None:
        return [np.concatenate(known, axis=axis)]
    return [_concat(ctx, _stored_or_real(ctx, ks), axis)]


def _concat(ctx: ImportContext, inputs: list[Operand], axis: int) -> Operand:
    # concat takes its operands as one list: they are the operation's inputs, in order.
    return ctx.emit("concat", inputs, {"axis": axis})


def _split(ctx: ImportContext, x: Operand, sizes: list[int], axis: int) -> list[Operand]:
    if len(sizes) == 1:
        return [emit(ctx, "identity", x)]
    parts = ctx.emit("split", [x], {"splits": sizes, "axis": axis})
    return parts if isinstance(parts, list) else [parts]


@tflite_op("SPLIT", webnn=("split",))
def split(ctx: ImportContext, op: Operator):
    """SPLIT(axis, value) into num_splits equal parts."""
    shape = ctx.shape(1)
    axis = axis_of(ctx.require_known(0, "axis"), len(shape))
    count = op.options.numSplits if op.options is not None else len(op.outputs)
    if count < 1 or shape[axis] % count:
        raise Unsupported(f"it splits a dimension of {shape[axis]} into {count} equal parts")
    sizes = [shape[axis] // count] * count
    known = _known_moved(ctx, 1)
    if known is not None:
        return np.split(known[0], count, axis=axis)
    return _split(ctx, ctx.passthrough(1), sizes, axis)


@tflite_op("SPLIT_V", webnn=("split",))
def split_v(ctx: ImportContext, op: Operator):
    """SPLIT_V(value, size_splits, axis): one size may be -1, the rest of the dimension.

    A part of size 0 (audio front ends split off an empty remainder) is an empty array known
    now: nothing to compute, so it costs nothing unless an op needs it as an operand, which
    is refused there by name (WebNN has no empty tensors)."""
    shape = ctx.shape(0)
    axis = axis_of(ctx.require_known(2, "axis"), len(shape))
    sizes = [int(s) for s in ctx.require_known(1, "size_splits").reshape(-1)]
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = shape[axis] - (sum(sizes) + 1)
    if sum(sizes) != shape[axis] or any(s < 0 for s in sizes):
        raise Unsupported(f"its sizes {sizes} do not split a dimension of {shape[axis]}")
    known = _known_moved(ctx, 0)
    if known is not None:
        return np.split(known[0], np.cumsum(sizes)[:-1], axis=axis)
    filled = [s for s in sizes if s > 0]
    parts = iter(_split(ctx, ctx.passthrough(0), filled, axis)) if filled else iter(())
    empty = np.zeros([0 if d == axis else n for d, n in enumerate(shape)],
                     dtypes.numpy_dtype(ctx.desc(0).data_type))
    return [next(parts) if s > 0 else empty for s in sizes]


@tflite_op("PACK", webnn=("reshape", "concat"))
def pack(ctx: ImportContext, op: Operator):
    """Stack the inputs along a new axis: each gains a 1 there, then they are concatenated."""
    ks = list(range(len(op.inputs)))
    shape = list(ctx.shape(0))
    axis = axis_of(op.options.axis if op.options is not None else 0, len(shape) + 1)
    known = _known_moved(ctx, *ks)
    if known is not None:
        return [np.stack(known, axis=axis)]
    new = shape[:axis] + [1] + shape[axis:]
    parts = [reshape(ctx, x, new, "expand") for x in _stored_or_real(ctx, ks)]
    if len(parts) == 1:
        return [parts[0] if parts[0].kind == "intermediate" else emit(ctx, "identity", parts[0])]
    return [_concat(ctx, parts, axis)]


@tflite_op("UNPACK", webnn=("split", "reshape"))
def unpack(ctx: ImportContext, op: Operator):
    shape = list(ctx.shape(0))
    axis = axis_of(op.options.axis if op.options is not None else 0, len(shape))
    count = shape[axis]
    new = shape[:axis] + shape[axis + 1:]
    known = _known_moved(ctx, 0)
    if known is not None:
        return [np.take(known[0], i, axis=axis) for i in range(count)]
    x = ctx.passthrough(0)
    if count == 1:
        return [reshape(ctx, x, new)]
    parts = ctx.emit("split", [x], {"splits": count, "axis": axis})
    return [reshape(ctx, p, new) for p in parts]


@tflite_op("TILE", webnn=("tile",))
def tile(ctx: ImportContext, op: Operator):
    reps = [int(r) for r in ctx.require_known(1, "multiples").reshape(-1)]
    if len(reps) != ctx.rank(0) or any(r < 1 for r in reps):
        raise Unsupported(f"its multiples {reps} do not fit rank {ctx.rank(0)}")
    known = _known_moved(ctx, 0)
    if known is not None:
        ctx.claim([known[0].size, *reps], known[0].itemsize)
        return [np.tile(known[0], reps)]
    return [emit(ctx, "tile", ctx.passthrough(0), repetitions=reps)]


@tflite_op("BROADCAST_TO", webnn=("expand",))
def broadcast_to(ctx: ImportContext, op: Operator):
    shape = [int(d) for d in ctx.require_known(1, "shape").reshape(-1)]
    known = _known_moved(ctx, 0)
    if known is not None:
        problem = shape_problem(shape) if 0 not in shape else None  # (empty: nothing to hold)
        if problem:  # before numpy is asked for a view of that many elements
            raise Unsupported(f"its shape {shape} is not a WebNN shape: {problem}")
        return [np.broadcast_to(known[0], shape)]
    return [emit(ctx, "expand", ctx.passthrough(0), newShape=shape)]


def _paddings(ctx: ImportContext, k: int) -> tuple[list[int], list[int]]:
    pads = ctx.require_known(k, "paddings").reshape(-1, 2)
    if pads.shape[0] != ctx.rank(0) or (pads < 0).any():
        raise Unsupported(f"its paddings {pads.tolist()} do not fit rank {ctx.rank(0)}")
    return [int(p) for p in pads[:, 0]], [int(p) for p in pads[:, 1]]


@tflite_op("PAD", "PADV2", webnn=("pad",))
def pad(ctx: ImportContext, op: Operator):
    """Constant padding: 0 (PAD) or the given value (PADV2). A quantized tensor padded as
    stored is padded with the stored form of that value (the zero point for 0)."""
    begin, end = _paddings(ctx, 1)
    x = ctx.passthrough(0)
    stored = ctx.quant(0) is not None and x.data_type != "float32"
    if op.name == "PADV2" and ctx.has(2):
        value = ctx.require_known(2, "constant value").reshape(-1)[0]
        if ctx.quant(2) is not None and not stored:
            q = ctx.quant(2)
            value = (float(value) - float(q.zero_point[0])) * float(q.scale[0])
    else:  # LiteRT pads stored values with the output's zero point
        value = ctx.out_quant().zero_point[0] if stored else 0
    value = value.item() if isinstance(value, np.generic) else value
    return [emit(ctx, "pad", x, beginningPadding=begin, endingPadding=end, mode="constant",
                 value=value)]


@tflite_op("MIRROR_PAD", webnn=("pad", "slice", "reverse", "concat"))
def mirror_pad(ctx: ImportContext, op: Operator):
    """REFLECT excludes the edge (WebNN's "reflection"); SYMMETRIC repeats it, which WebNN has
    no mode for: each side is the reversed slice of that many edge rows, concatenated."""
    begin, end = _paddings(ctx, 1)
    x = ctx.passthrough(0)
    if op.options is None or op.options.mode == 0:
        return [emit(ctx, "pad", x, beginningPadding=begin, endingPadding=end,
                     mode="reflection")]
    for axis, (b, e) in enumerate(zip(begin, end)):
        size = x.shape[axis]
        if b > size or e > size:
            raise Unsupported(f"SYMMETRIC padding {b}, {e} exceeds dimension {axis} of {size}")
        parts = []
        if b:
            parts.append(_reversed_slice(ctx, x, axis, 0, b))
        parts.append(x)
        if e:
            parts.append(_reversed_slice(ctx, x, axis, size - e, e))
        if len(parts) > 1:
            x = _concat(ctx, parts, axis)
    return [x if x.kind == "intermediate" else emit(ctx, "identity", x)]


def _reversed_slice(ctx: ImportContext, x: Operand, axis: int, start: int, size: int
                    ) -> Operand:
    starts = [0] * x.rank
    sizes = list(x.shape)
    starts[axis], sizes[axis] = start, size
    part = x if size == x.shape[axis] else emit(ctx, "slice", x, starts=starts, sizes=sizes)
    return emit(ctx, "reverse", part, axes=[axis]) if size > 1 else part


@tflite_op("DEPTH_TO_SPACE", webnn=("reshape", "transpose"))
def depth_to_space(ctx: ImportContext, op: Operator):
    """[N, H, W, b*b*C] -> [N, H*b, W*b, C], depth taken row of block first (TF's DCR)."""
    n, h, w, c = _nhwc(ctx)
    b = options(op).blockSize
    if b < 1 or c % (b * b):
        raise Unsupported(f"block size {b} does not divide depth {c} into b * b parts")
    x = reshape(ctx, ctx.passthrough(0), [n, h, w, b, b, c // (b * b)], "blocks")
    x = transpose(ctx, x, [0, 1, 3, 2, 4, 5])
    return [reshape(ctx, x, [n, h * b, w * b, c // (b * b)])]


@tflite_op("SPACE_TO_DEPTH", webnn=("reshape", "transpose"))
def space_to_depth(ctx: ImportContext, op: Operator):
    n, h, w, c = _nhwc(ctx)
    b = options(op).blockSize
    if b < 1 or h % b or w % b:
        raise Unsupported(f"block size {b} does not divide height {h} and width {w}")
    x = reshape(ctx, ctx.passthrough(0), [n, h // b, b, w // b, b, c], "blocks")
    x = transpose(ctx, x, [0, 1, 3, 2, 4, 5])
    return [reshape(ctx, x, [n, h // b, w // b, b * b * c])]


def _nhwc(ctx: ImportContext) -> list[int]:
    shape = list(ctx.shape(0))
    if len(shape) != 4:
        raise Unsupported(f"its input has rank {len(shape)}; it must be 4 (NHWC)")
    return shape


@tflite_op("REVERSE_V2", webnn=("reverse",))
def reverse_v2(ctx: ImportContext, op: Operator):
    axes = axes_of(ctx.require_known(1, "axes"), ctx.rank(0))
    known = _known_moved(ctx, 0)
    if known is not None:
        return [np.flip(known[0], axis=tuple(axes)) if axes else known[0]]
    x = ctx.passthrough(0)
    return [emit(ctx, "reverse", x, axes=axes)]


def _block(ctx: ImportContext, k_block: int, k_pads: int, what: str):
    block = [int(b) for b in ctx.require_known(k_block, "block shape").reshape(-1)]
    pads = ctx.require_known(k_pads, what).reshape(-1, 2)
    shape = list(ctx.shape(0))
    m = len(block)
    if pads.shape[0] != m or len(shape) < m + 1 or any(b < 1 for b in block) or (pads < 0).any():
        raise Unsupported(f"its block shape {block} and {what} {pads.tolist()} do not fit "
                          f"input {shape}")
    return shape, block, [int(p) for p in pads[:, 0]], [int(p) for p in pads[:, 1]]


@tflite_op("SPACE_TO_BATCH_ND", webnn=("pad", "reshape", "transpose"))
def space_to_batch_nd(ctx: ImportContext, op: Operator):
    """Pad the M spatial dimensions, cut each into (size / block, block), move the block
    offsets in front of the batch, and merge them into it."""
    shape, block, begin, end = _block(ctx, 1, 2, "paddings")
    m, rest = len(block), shape[len(block) + 1:]
    x = ctx.real(0)
    if any(begin) or any(end):
        x = emit(ctx, "pad", x, beginningPadding=[0] + begin + [0] * len(rest),
                 endingPadding=[0] + end + [0] * len(rest))
    padded = list(x.shape[1:m + 1])
    if any(p % b for p, b in zip(padded, block)):
        raise Unsupported(f"padded sizes {padded} are not multiples of block {block}")
    split = [shape[0]]
    for p, b in zip(padded, block):
        split += [p // b, b]
    x = reshape(ctx, x, split + rest, "blocks")
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] \
        + list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
    x = transpose(ctx, x, perm)
    batch = shape[0] * int(np.prod(block))
    return [reshape(ctx, x, [batch] + [p // b for p, b in zip(padded, block)] + rest)]


@tflite_op("BATCH_TO_SPACE_ND", webnn=("reshape", "transpose", "slice"))
def batch_to_space_nd(ctx: ImportContext, op: Operator):
    """The inverse: split the batch into block offsets, interleave them with the spatial
    dimensions, merge, and crop."""
    shape, block, crop_begin, crop_end = _block(ctx, 1, 2, "crops")
    m, rest = len(block), shape[len(block) + 1:]
    prod = int(np.prod(block))
    if shape[0] % prod:
        raise Unsupported(f"batch {shape[0]} is not a multiple of the block size {prod}")
    x = ctx.real(0)
    spatial = shape[1:m + 1]
    x = reshape(ctx, x, block + [shape[0] // prod] + spatial + rest, "blocks")
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    x = transpose(ctx, x, perm)
    full = [s * b for s, b in zip(spatial, block)]
    x = reshape(ctx, x, [shape[0] // prod] + full + rest)
    sizes = [f - b - e for f, b, e in zip(full, crop_begin, crop_end)]
    if any(s <= 0 for s in sizes):
        raise Unsupported(f"its crops leave sizes {sizes}")
    if any(crop_begin) or any(crop_end):
        x = emit(ctx, "slice", x, starts=[0] + crop_begin + [0] * len(rest),
                 sizes=[x.shape[0]] + sizes + rest)
    return [x]
