"""Indexing ONNX ops: Gather, GatherElements, GatherND, ScatterElements (and the older Scatter),
ScatterND, OneHot, ArgMax, ArgMin, TopK, Compress and NonZero.

WebNN's gather and scatter ops take negative indices as ONNX does (counting from the end), so
indices pass through unchanged. Ops whose result shape depends on input values (NonZero, and
Compress with a condition computed at run time) cannot have a static WebNN shape; they import
only when their values are known (folded before any rule runs) or, for Compress, when the
condition is known and becomes a constant gather.
"""
from __future__ import annotations

import numpy as np

from .... import dtypes
from ....budget import shape_bytes
from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..registry import Unsupported, onnx_op
from .constants import claim
from .shape_ops import empty_result, known_scalar, normalize_axis, slice_along


@onnx_op("Gather", webnn=("gather",))
def gather(ctx: ImportContext, node: OnnxNode):
    data, indices = ctx.operand(node.input(0)), ctx.operand(node.input(1))
    axis = normalize_axis(node.attr("axis", 0), data.rank)
    return [ctx.emit("gather", [data, indices], {"axis": axis})]


@onnx_op("GatherElements", webnn=("gatherElements",))
def gather_elements(ctx: ImportContext, node: OnnxNode):
    data, indices = ctx.operand(node.input(0)), ctx.operand(node.input(1))
    axis = normalize_axis(node.attr("axis", 0), data.rank)
    return [ctx.emit("gatherElements", [data, indices], {"axis": axis})]


@onnx_op("GatherND", webnn=("gatherND", "concat"))
def gather_nd(ctx: ImportContext, node: OnnxNode):
    """batch_dims = b: the first b axes of data and indices pair up. WebNN's gatherND has no
    batch axes, so each index tuple gets its own batch coordinates prepended; the output shape
    indices.shape[:-1] + data.shape[b + k:] is then the same."""
    data, indices = ctx.operand(node.input(0)), ctx.operand(node.input(1))
    b = int(node.attr("batch_dims", 0))
    if b:
        if b >= indices.rank or b >= data.rank or data.shape[:b] != indices.shape[:b]:
            raise Unsupported(f"batch_dims {b} does not fit data {list(data.shape)} and "
                              f"indices {list(indices.shape)}")
        outer = indices.shape[:-1]
        grid = np.indices(outer[:b], dtype=np.dtype(indices.data_type))  # [b, *batch shape]
        grid = np.moveaxis(grid, 0, -1).reshape(outer[:b] + (1,) * (len(outer) - b) + (b,))
        prefix = np.ascontiguousarray(np.broadcast_to(grid, outer + (b,)))
        indices = ctx.emit("concat", [ctx.constant(prefix), indices], {"axis": indices.rank - 1},
                           suffix="batch_indices")
    return [ctx.emit("gatherND", [data, indices])]


_REDUCE = {"add": "add", "mul": "mul", "max": "max", "min": "min"}
_SCATTER_OPS = ("scatterElements", "scatterND", "gatherND", "gather", "reshape", "add", "mul",
                "max", "min")


def _reduction(node: OnnxNode) -> str | None:
    reduction = node.attr("reduction", "none")
    if reduction != "none" and reduction not in _REDUCE:
        raise Unsupported(f"reduction '{reduction}' is not one ONNX defines")
    return None if reduction == "none" else reduction


def _scatter_in_rounds(ctx: ImportContext, data: Operand, rows: np.ndarray, updates: Operand,
                       reduction: str) -> Operand:
    """Scatter with a reduction, for indices known at conversion time: WebNN's scatter only
    replaces, so the updates go in rounds, each holding at most one update per target (the
    r-th update of every target in round r, in ONNX's order): read the targets (gatherND),
    combine, write back (scatterND). `rows` [M, k] are the targets' leading coordinates,
    `updates` [M, ...] their values."""
    flat = [tuple(int(v) for v in r) for r in rows]
    seen: dict[tuple, int] = {}
    occurrence = []
    for target in flat:
        occurrence.append(seen.get(target, 0))
        seen[target] = occurrence[-1] + 1
    occurrence = np.array(occurrence)
    result = data
    # never empty: both callers read `updates` first, and a 0-sized operand is refused there
    for r in range(int(occurrence.max()) + 1):
        picked = np.nonzero(occurrence == r)[0]
        index = ctx.constant(rows[picked].astype(np.int32), "int32")
        values = updates if len(picked) == len(flat) else ctx.emit(
            "gather", [updates, ctx.constant(picked.astype(np.int32), "int32")], {"axis": 0})
        current = ctx.emit("gatherND", [result, index])
        combined = ctx.emit(_REDUCE[reduction], [current, values])
        result = ctx.emit("scatterND", [result, index, combined])
    return result


def _known_indices(ctx: ImportContext, node: OnnxNode, reduction: str) -> np.ndarray:
    value = ctx.known(node.input(1))
    if value is None:
        ctx.require_known(node.input(1), f"with reduction '{reduction}', the indices "
                          f"(WebNN's scatter only replaces values, so updates to one target "
                          f"are combined in rounds planned from the indices)")
    return np.asarray(value).astype(np.int64)


@onnx_op("ScatterElements", webnn=_SCATTER_OPS)
def scatter_elements(ctx: ImportContext, node: OnnxNode):
    data, updates = ctx.operand(node.input(0)), ctx.operand(node.input(2))
    axis = normalize_axis(node.attr("axis", 0), data.rank)
    reduction = _reduction(node) if node.opset >= 16 else None
    if reduction is None:
        indices = ctx.operand(node.input(1))
        return [ctx.emit("scatterElements", [data, indices, updates], {"axis": axis})]
    indices = _known_indices(ctx, node, reduction)
    # Each update's full target coordinates: its own position, the axis one replaced.
    positions = np.indices(indices.shape).reshape(indices.ndim, -1).T
    positions[:, axis] = np.where(indices.reshape(-1) < 0,
                                  indices.reshape(-1) + data.shape[axis], indices.reshape(-1))
    flat_updates = ctx.emit("reshape", [updates], {"newShape": [int(indices.size)]})
    return [_scatter_in_rounds(ctx, data, positions, flat_updates, reduction)]


# Scatter (opsets 9-10) is ScatterElements under its old name.
onnx_op("Scatter", since=9, webnn=("scatterElements",))(scatter_elements)


@onnx_op("ScatterND", webnn=_SCATTER_OPS)
def scatter_nd(ctx: ImportContext, node: OnnxNode):
    data, updates = ctx.operand(node.input(0)), ctx.operand(node.input(2))
    reduction = _reduction(node) if node.opset >= 16 else None
    if reduction is None:
        indices = ctx.operand(node.input(1))
        return [ctx.emit("scatterND", [data, indices, updates])]
    indices = _known_indices(ctx, node, reduction)
    k = indices.shape[-1]
    rows = indices.reshape(-1, k)
    rows = np.where(rows < 0, rows + np.array(data.shape[:k]), rows)
    flat_updates = ctx.emit("reshape", [updates], {"newShape": [rows.shape[0],
                                                                *data.shape[k:]]})
    return [_scatter_in_rounds(ctx, data, rows, flat_updates, reduction)]


@onnx_op("ReverseSequence", since=10, webnn=("gatherElements",))
def reverse_sequence(ctx: ImportContext, node: OnnxNode):
    """With sequence_lens known, every output element reads one fixed input element: the
    first len[b] steps of batch b reversed, the rest in place; one gatherElements along the
    time axis with constant indices."""
    x = ctx.operand(node.input(0))
    lens = np.asarray(ctx.require_known(node.input(1), "sequence_lens")).reshape(-1)
    time_axis, batch_axis = int(node.attr("time_axis", 0)), int(node.attr("batch_axis", 1))
    if x.rank < 2 or {time_axis, batch_axis} != {0, 1}:
        raise Unsupported("time_axis and batch_axis must be 0 and 1 of an input of rank >= 2")
    steps, batch = x.shape[time_axis], x.shape[batch_axis]
    if lens.size != batch or np.any(lens < 0) or np.any(lens > steps):
        raise Unsupported(f"sequence_lens {lens.tolist()} do not fit {batch} sequences of "
                          f"{steps} steps")
    t = np.arange(steps)[:, None]
    source = np.where(t < lens[None, :], lens[None, :] - 1 - t, t)  # [steps, batch]
    if time_axis == 1:
        source = source.T
    source = source.reshape(source.shape + (1,) * (x.rank - 2))
    index = np.broadcast_to(source, x.shape).astype(np.int32)
    return [ctx.emit("gatherElements", [x, ctx.constant(np.ascontiguousarray(index), "int32")],
                     {"axis": time_axis})]


@onnx_op("TensorScatter", since=24, webnn=("gatherElements", "sub", "div", "mul", "add",
                                          "lesser", "greater", "greaterOrEqual", "logicalAnd",
                                          "logicalOr", "logicalNot", "where", "reshape",
                                          "expand", "cast"))
def tensor_scatter(ctx: ImportContext, node: OnnxNode):
    """A KV-cache write: cache position s of batch b takes update[s - w[b]] when that lies in
    the update (s - w[b] taken modulo the cache length in "circular" mode), else keeps the
    past value. The write indices may be run-time values: the source position of every
    cache element is computed in the graph and read with one gatherElements."""
    past, update = ctx.operand(node.input(0)), ctx.operand(node.input(1))
    axis = normalize_axis(node.attr("axis", -2), past.rank)
    mode = node.attr("mode", "linear")
    if axis == 0 or mode not in ("linear", "circular"):
        raise Unsupported(f"axis {axis} / mode {mode!r}: the axis cannot be the batch axis, "
                          f"the mode is linear or circular")
    cache, length, batch = past.shape[axis], update.shape[axis], past.shape[0]
    positions = ctx.constant(np.arange(cache, dtype=np.int64).reshape(1, cache), "int64")
    if node.input(2) is not None:
        write = ctx.operand(node.input(2))
        if write.data_type != "int64":
            write = ctx.emit("cast", [write], {"dataType": "int64"})
        source = ctx.emit("sub", [positions, ctx.emit("reshape", [write],
                                                      {"newShape": [batch, 1]})])
    else:
        source = ctx.emit("expand", [positions], {"newShape": [batch, cache]})
    if mode == "circular":
        from .integer_math import integer_mod

        source = integer_mod(ctx, source, ctx.scalar(cache, "int64"), fmod=False)
    inside = ctx.emit("logicalAnd", [
        ctx.emit("greaterOrEqual", [source, ctx.scalar(0, "int64")]),
        ctx.emit("lesser", [source, ctx.scalar(length, "int64")])])
    safe = ctx.emit("where", [inside, source, ctx.scalar(0, "int64")])
    along = [1] * past.rank
    along[0], along[axis] = batch, cache
    safe = ctx.emit("expand", [ctx.emit("reshape", [safe], {"newShape": along})],
                    {"newShape": list(past.shape[:axis]) + [cache] + list(past.shape[axis + 1:])})
    picked = ctx.emit("gatherElements", [update, safe], {"axis": axis})
    inside = ctx.emit("reshape", [inside], {"newShape": along})
    return [ctx.emit("where", [inside, picked, past])]


# -- OneHot --------------------------------------------------------------------------------------
@onnx_op("OneHot", webnn=("equal", "logicalOr", "where", "cast", "slice", "reshape"))
def one_hot(ctx: ImportContext, node: OnnxNode):
    """on where index == position along the new axis, else off.

    ONNX counts an index in [-depth, -1] from the end and leaves any other index matching
    nothing, so an index matches position p when it equals p or p - depth. Indices of other
    types are cast to int64 first: ONNX does so for non-integer indices, and an 8-bit type could
    not hold every position.
    """
    depth = known_scalar(ctx, node.input(1), "the depth input")
    if depth != int(depth) or depth < 1:
        raise Unsupported(f"depth {depth} is not a positive integer")
    depth = int(depth)
    indices = ctx.operand(node.input(0))
    axis = normalize_axis(node.attr("axis", -1), indices.rank + 1)
    if indices.data_type not in ("int32", "int64"):
        indices = ctx.emit("cast", [indices], {"dataType": "int64"})
    dt = np.dtype(indices.data_type)
    # Indices get a size-1 axis at `axis`; positions run along that axis.
    expanded = list(indices.shape)
    expanded.insert(axis, 1)
    indices = ctx.emit("reshape", [indices], {"newShape": expanded})
    positions = [1] * len(expanded)
    positions[axis] = depth
    claim(ctx, node, 2 * shape_bytes([depth], 8))  # iota and iota - depth, before np.arange
    iota = np.arange(depth, dtype=np.int64).reshape(positions)
    match = ctx.emit("equal", [indices, ctx.constant(iota.astype(dt))])
    from_end = ctx.emit("equal", [indices, ctx.constant((iota - depth).astype(dt))])
    match = ctx.emit("logicalOr", [match, from_end])
    off, on = _off_on(ctx, node.input(2))
    return [ctx.emit("where", [match, on, off])]


def _off_on(ctx: ImportContext, name: str) -> tuple[Operand, Operand]:
    """OneHot's values [off, on] as two scalars: constants when known, else sliced out."""
    known = ctx.known(name)
    if known is not None:
        flat = np.asarray(known).reshape(-1)
        if flat.size != 2:
            raise Unsupported(f"values must hold [off, on], it has {flat.size} elements")
        return ctx.constant(flat[0:1].reshape(())), ctx.constant(flat[1:2].reshape(()))
    values = ctx.operand(name)
    if values.shape != (2,):
        raise Unsupported(f"values must have shape [2], it has {list(values.shape)}")
    return tuple(ctx.emit("reshape", [slice_along(ctx, values, 0, i, 1)], {"newShape": []})
                 for i in (0, 1))


# -- ArgMax, ArgMin ------------------------------------------------------------------------------
def _arg_rule(webnn: str):
    def rule(ctx: ImportContext, node: OnnxNode):
        """select_last_index: the first extreme of the reversed axis is the last one of the
        original, at index (size - 1) - i. (Ties are otherwise left to the implementation by
        WebNN; first-index backends give ONNX's default.)"""
        x = ctx.operand(node.input(0))
        axis = normalize_axis(node.attr("axis", 0), x.rank)
        attrs = {"axis": axis, "keepDimensions": bool(node.attr("keepdims", 1)),
                 "outputDataType": "int64"}
        if not node.attr("select_last_index", 0):
            return [ctx.emit(webnn, [x], attrs)]
        reversed_x = ctx.emit("reverse", [x], {"axes": [axis]})
        index = ctx.emit(webnn, [reversed_x], attrs)
        return [ctx.emit("sub", [ctx.scalar(x.shape[axis] - 1, "int64"), index])]
    return rule


onnx_op("ArgMax", webnn=("argMax", "reverse", "sub"))(_arg_rule("argMax"))
onnx_op("ArgMin", webnn=("argMin", "reverse", "sub"))(_arg_rule("argMin"))


# -- Compress, NonZero ---------------------------------------------------------------------------
@onnx_op("Compress", webnn=("gather", "reshape"))
def compress(ctx: ImportContext, node: OnnxNode):
    """With the condition known, Compress keeps fixed positions: a gather of constant indices.
    Without an axis it works on the flattened input."""
    condition = ctx.known(node.input(1))
    if condition is None:
        raise Unsupported("its condition is computed from graph inputs, so its output shape "
                          "depends on run-time values; WebNN shapes are static")
    x = ctx.operand(node.input(0))
    if node.has_attr("axis"):
        axis = normalize_axis(node.attr("axis"), x.rank)
    else:
        x, axis = ctx.emit("reshape", [x], {"newShape": [x.size]}), 0
    condition = np.asarray(condition).reshape(-1)
    if condition.size > x.shape[axis] and condition[x.shape[axis]:].any():
        raise Unsupported(f"condition selects positions past axis {axis}'s size "
                          f"{x.shape[axis]}")
    kept = np.flatnonzero(condition[:x.shape[axis]])
    if kept.size == 0:
        out = list(x.shape)
        out[axis] = 0
        return [empty_result(ctx, node.input(0), out)]
    index_type = np.int32 if x.shape[axis] <= np.iinfo(np.int32).max else np.int64
    return [ctx.emit("gather", [x, ctx.constant(kept.astype(index_type))], {"axis": axis})]


@onnx_op("NonZero", webnn=())
def non_zero(ctx: ImportContext, node: OnnxNode):
    # Reached only when the input is not known (known inputs are folded before rules run).
    raise Unsupported("its output shape is the number of nonzero elements of a value computed "
                      "at run time; WebNN shapes are static")


# -- TopK ----------------------------------------------------------------------------------------
# Each of the k results is one argMax (argMin) step, so k is bounded to keep graphs small.
TOPK_LIMIT = 256


@onnx_op("TopK", webnn=("argMax", "argMin", "gatherElements", "equal", "where", "concat",
                        "reshape", "cast"))
def top_k(ctx: ImportContext, node: OnnxNode):
    """The k largest (smallest) values along an axis and their indices, in order, with k known
    at conversion time: k rounds of argMax (argMin), each reading its value with
    gatherElements and then masking the chosen position with -inf (+inf; the type's extreme
    for integers). Equal values come out lowest index first where argMax picks the first
    extreme (ONNX's order; WebNN leaves ties to the backend, as for ArgMax). A value equal
    to the mask itself is still output correctly, though its index may repeat."""
    x = ctx.operand(node.input(0))
    axis = normalize_axis(node.attr("axis", -1), x.rank)
    if node.opset < 10:
        k = int(node.attr("k"))
    else:
        given = np.asarray(ctx.require_known(node.input(1), "K")).reshape(-1)
        if given.size != 1:
            raise Unsupported(f"K holds {given.size} values; it must hold one")
        k = int(given[0])
    size = x.shape[axis]
    if not 0 < k <= size:
        raise Unsupported(f"k={k} is outside 1..{size}, the length of axis {axis}")
    if k > TOPK_LIMIT:
        raise Unsupported(f"k={k} is more than {TOPK_LIMIT}: TopK is unrolled into one "
                          f"argMax step per result")
    largest = bool(node.attr("largest", 1))
    np_type = np.dtype(dtypes.numpy_dtype(x.data_type))
    if np_type.kind == "f":
        mask_value = -np.inf if largest else np.inf
    else:
        info = np.iinfo(np_type)
        mask_value = info.min if largest else info.max
    mask = ctx.scalar(mask_value, x.data_type)
    along = [1] * x.rank
    along[axis] = size
    # int32 inside (the type every backend compares and selects), int64 only at the end
    positions = ctx.constant(np.arange(size, dtype=np.int32).reshape(along), "int32")
    rest, values, indices = x, [], []
    for step in range(k):
        index = ctx.emit("argMax" if largest else "argMin", [rest],
                         {"axis": axis, "keepDimensions": True, "outputDataType": "int32"},
                         suffix=f"pick_{step}")
        values.append(ctx.emit("gatherElements", [x, index], {"axis": axis}))
        indices.append(index)
        if step + 1 < k:
            chosen = ctx.emit("equal", [positions, index])
            rest = ctx.emit("where", [chosen, mask, rest])

    def joined(parts):
        return parts[0] if len(parts) == 1 else ctx.emit("concat", parts, {"axis": axis})

    return [joined(values), ctx.emit("cast", [joined(indices)], {"dataType": "int64"})]
