"""Tensor-shaping ONNX ops: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice,
Pad, Expand, Tile, Trilu, CumSum and Dropout (an identity at inference).

WebNN takes shapes, axes, paddings, slice bounds and repetitions as plain lists, never as
operands, so every ONNX input that carries one must be known at conversion time. Older opsets
give the same values as attributes; each rule reads whichever form the node has. ONNX axes may
be negative; WebNN's are not, so they are normalized here.

WebNN has no empty tensors. A result with a 0 dimension holds no values, so it is returned as a
known (empty) array: a Concat drops it and a Shape reads it, and only a WebNN op that would
have to take it as an operand fails.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import onnx

from .... import dtypes
from ....ir import Operand
from ....ops.registry import broadcast_shapes
from ..context import ImportContext, OnnxNode
from ..registry import Invalid, Unsupported, onnx_op

__all__ = ["normalize_axis", "normalize_axes", "known_ints", "known_scalar", "slice_along",
           "empty_result"]


# -- helpers shared by the rule modules of this family ---------------------------------------
def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """An ONNX axis in [-rank, rank - 1] as WebNN's non-negative axis."""
    axis = int(axis)
    if not -rank <= axis < rank:
        raise Unsupported(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def normalize_axes(axes: Sequence[int], rank: int, what: str = "axes") -> list[int]:
    out = [normalize_axis(a, rank, what) for a in axes]
    if len(set(out)) != len(out):
        raise Unsupported(f"{what} {[int(a) for a in axes]} name an axis twice")
    return out


def known_ints(ctx: ImportContext, node: OnnxNode, index: int, attr: str | None,
               what: str) -> list[int] | None:
    """An integer list given as input `index` (newer opsets) or attribute `attr` (older ones);
    None when the node gives neither. An input must be known at conversion time."""
    name = node.input(index)
    if name is not None:
        return [int(v) for v in np.asarray(ctx.require_known(name, what)).reshape(-1)]
    value = node.attr(attr) if attr else None
    if value is None:
        return None
    return [int(v) for v in np.atleast_1d(value)]


def known_scalar(ctx: ImportContext, name: str, what: str):
    """A one-element input that must be known, as a Python number."""
    value = np.asarray(ctx.require_known(name, what))
    if value.size != 1:
        raise Unsupported(f"{what} must hold one value, it has shape {list(value.shape)}")
    return value.reshape(-1)[0].item()


def slice_along(ctx: ImportContext, x: Operand, axis: int, start: int, size: int,
                stride: int = 1, suffix: str | None = None) -> Operand:
    """x[start : start + size : stride] along one axis, every other axis whole."""
    starts, sizes = [0] * x.rank, list(x.shape)
    starts[axis], sizes[axis] = start, size
    attrs = {"starts": starts, "sizes": sizes}
    if stride != 1:
        attrs["strides"] = [stride if d == axis else 1 for d in range(x.rank)]
    return ctx.emit("slice", [x], attrs, suffix=suffix)


def empty_result(ctx: ImportContext, like: str, shape: Sequence[int]) -> np.ndarray:
    """A result with a 0 dimension, of `like`'s type. It holds no values, so it is known at
    conversion time whatever its input: a Concat drops it, a Shape reads it. Only a WebNN op
    reading it fails, as WebNN has no empty tensors."""
    return np.zeros(tuple(shape), dtype=onnx.helper.tensor_dtype_to_np_dtype(ctx.onnx_type(like)))


# -- Reshape, Flatten, Squeeze, Unsqueeze -----------------------------------------------------
def reshape_target(in_shape: Sequence[int], shape: Sequence[int], allowzero: bool) -> list[int]:
    """ONNX's target shape: 0 copies the input dimension (unless allowzero), -1 is inferred."""
    out, inferred = [], None
    for i, d in enumerate(shape):
        if d == -1:
            if inferred is not None:
                raise Unsupported(f"shape {list(shape)} has more than one -1")
            inferred = i
            out.append(1)
        elif d == 0 and not allowzero:
            if i >= len(in_shape):
                raise Unsupported(f"shape {list(shape)} copies dimension {i} (a 0), which the "
                                  f"rank-{len(in_shape)} input lacks")
            out.append(int(in_shape[i]))
        elif d < 0:
            raise Unsupported(f"shape {list(shape)} has the negative dimension {d}")
        else:
            out.append(int(d))
    total = math.prod(in_shape)
    if inferred is not None:
        rest = math.prod(out)
        if rest == 0 or total % rest:
            raise Unsupported(f"shape {list(shape)}: no -1 dimension makes the input's {total} "
                              f"elements fit")
        out[inferred] = total // rest
    if 0 in out:  # allowzero: a real 0, and the input is not empty (it would be known)
        raise Unsupported(f"the result has shape {out}, with a 0 dimension; WebNN has no "
                          f"empty tensors")
    if math.prod(out) != total:
        raise Unsupported(f"shape {list(shape)} holds {math.prod(out)} elements, the input "
                          f"{list(in_shape)} has {total}")
    return out


@onnx_op("Reshape", webnn=("reshape",))
def reshape(ctx: ImportContext, node: OnnxNode):
    shape = known_ints(ctx, node, 1, "shape", "the shape input")  # an attribute before opset 5
    if shape is None:
        raise Unsupported("it has no shape")
    in_shape = ctx.shape(node.input(0))
    target = reshape_target(in_shape, shape, bool(node.attr("allowzero", 0)))
    return [ctx.emit("reshape", [ctx.operand(node.input(0))], {"newShape": target})]


@onnx_op("Flatten", webnn=("reshape",))
def flatten(ctx: ImportContext, node: OnnxNode):
    shape = ctx.shape(node.input(0))
    axis = int(node.attr("axis", 1))
    if not -len(shape) <= axis <= len(shape):
        raise Unsupported(f"axis {axis} is out of range for rank {len(shape)}")
    axis = axis + len(shape) if axis < 0 else axis
    target = [math.prod(shape[:axis]), math.prod(shape[axis:])]
    return [ctx.emit("reshape", [ctx.operand(node.input(0))], {"newShape": target})]


@onnx_op("Squeeze", webnn=("reshape",))
def squeeze(ctx: ImportContext, node: OnnxNode):
    shape = ctx.shape(node.input(0))
    axes = known_ints(ctx, node, 1, "axes", "the axes input")  # an attribute before opset 13
    if axes is None:  # every dimension of size 1
        axes = [d for d, size in enumerate(shape) if size == 1]
    axes = normalize_axes(axes, len(shape))
    for a in axes:
        if shape[a] != 1:
            raise Unsupported(f"axis {a} has size {shape[a]}; only size-1 axes can be squeezed")
    target = [size for d, size in enumerate(shape) if d not in axes]
    return [ctx.emit("reshape", [ctx.operand(node.input(0))], {"newShape": target})]


@onnx_op("Unsqueeze", webnn=("reshape",))
def unsqueeze(ctx: ImportContext, node: OnnxNode):
    shape = ctx.shape(node.input(0))
    axes = known_ints(ctx, node, 1, "axes", "the axes input")  # an attribute before opset 13
    if axes is None:
        raise Unsupported("it has no axes")
    out_rank = len(shape) + len(axes)
    if out_rank > dtypes.MAX_RANK:  # before the axes are compared one by one
        raise Unsupported(f"{len(axes)} axes make a rank-{out_rank} result; the converter "
                          f"handles at most {dtypes.MAX_RANK} axes")
    axes = set(normalize_axes(axes, out_rank))  # ONNX counts them in the output's rank
    dims = iter(shape)
    target = [1 if d in axes else next(dims) for d in range(out_rank)]
    return [ctx.emit("reshape", [ctx.operand(node.input(0))], {"newShape": target})]


# -- Transpose, Concat, Split -------------------------------------------------------------------
@onnx_op("Transpose", webnn=("transpose",))
def transpose(ctx: ImportContext, node: OnnxNode):
    rank = ctx.rank(node.input(0))
    perm = node.attr("perm")
    perm = list(range(rank))[::-1] if perm is None else [int(p) for p in perm]
    if sorted(perm) != list(range(rank)):
        raise Unsupported(f"perm {perm} is not a permutation of the input's {rank} axes")
    return [ctx.emit("transpose", [ctx.operand(node.input(0))], {"permutation": perm})]


@onnx_op("Concat", webnn=("concat",))
def concat(ctx: ImportContext, node: OnnxNode):
    names = [n for n in node.inputs if n is not None]
    axis = normalize_axis(node.attr("axis", 0), ctx.rank(names[0]))
    # An empty known value (a 0-length shape list, say) adds nothing along the axis.
    kept = [n for n in names if ctx.shape(n)[axis] != 0]
    if not kept:
        out = list(ctx.shape(names[0]))
        out[axis] = 0
        return [empty_result(ctx, names[0], out)]
    return [ctx.emit("concat", [ctx.operand(n) for n in kept], {"axis": axis})]


@onnx_op("Split", webnn=("split",))
def split(ctx: ImportContext, node: OnnxNode):
    shape = ctx.shape(node.input(0))
    axis = normalize_axis(node.attr("axis", 0), len(shape))
    dim = shape[axis]
    sizes = known_ints(ctx, node, 1, "split", "the split input")  # an attribute before 13
    count = len(node.outputs)
    if count == 0:
        raise Invalid("it has no outputs")
    if sizes is None:
        parts = int(node.attr("num_outputs", count))
        if parts != count:
            raise Invalid(f"num_outputs is {parts} but the node has {count} outputs")
        if node.has_attr("num_outputs"):
            # Opset 18: ceil(dim / n) per output, the last one takes what is left.
            chunk = -(-dim // parts)
            sizes = [chunk] * (parts - 1) + [dim - chunk * (parts - 1)]
        else:
            if dim % parts:
                raise Unsupported(f"axis {axis} of size {dim} does not split into {parts} "
                                  f"equal parts")
            sizes = [dim // parts] * parts
    if len(sizes) != count:
        raise Unsupported(f"it splits into {len(sizes)} parts but has {count} outputs")
    if any(s < 0 for s in sizes) or sum(sizes) != dim:
        raise Unsupported(f"split sizes {sizes} do not cut axis {axis} of size {dim}")
    # Size-0 parts are empty results; WebNN splits the rest.
    nonempty = [s for s in sizes if s]
    pieces = iter(ctx.emit("split", [ctx.operand(node.input(0))],
                           {"splits": nonempty, "axis": axis}))
    results = []
    for s in sizes:
        out = list(shape)
        out[axis] = s
        results.append(next(pieces) if s else empty_result(ctx, node.input(0), out))
    return results


# -- Slice --------------------------------------------------------------------------------------
def slice_range(dim: int, start: int, end: int, step: int) -> tuple[int, int]:
    """ONNX Slice along one axis: (first index, element count) after its clamping rules."""
    if step == 0:
        raise Unsupported("a step is 0")
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        return start, max(0, -(-(end - start) // step))
    start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return start, max(0, -(-(start - end) // -step))


@onnx_op("Slice", webnn=("slice", "reverse"))
def slice_(ctx: ImportContext, node: OnnxNode):
    shape = ctx.shape(node.input(0))
    rank = len(shape)
    # Before opset 10 starts, ends and axes are attributes and there are no steps.
    starts = known_ints(ctx, node, 1, "starts", "the starts input")
    ends = known_ints(ctx, node, 2, "ends", "the ends input")
    axes = known_ints(ctx, node, 3, "axes", "the axes input")
    steps = known_ints(ctx, node, 4, None, "the steps input")
    if starts is None or ends is None:
        raise Unsupported("it has no starts or ends")
    axes = normalize_axes(list(range(len(starts))) if axes is None else axes, rank)
    steps = [1] * len(axes) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise Unsupported(f"starts, ends, axes and steps have different lengths "
                          f"({len(starts)}, {len(ends)}, {len(axes)}, {len(steps)})")
    begin, sizes, strides, flipped = [0] * rank, list(shape), [1] * rank, []
    counts = list(shape)
    for axis, start, end, step in zip(axes, starts, ends, steps):
        first, count = slice_range(shape[axis], start, end, step)
        counts[axis] = count
        if count == 0:
            continue  # an empty result: see below
        span = (count - 1) * abs(step) + 1
        # A negative step takes first, first - |step|, ...: slice that window ascending, then
        # reverse it.
        begin[axis] = first if step > 0 else first - (count - 1) * abs(step)
        sizes[axis], strides[axis] = span, abs(step)
        if step < 0 and count > 1:
            flipped.append(axis)
    if 0 in counts:
        return [empty_result(ctx, node.input(0), counts)]
    attrs = {"starts": begin, "sizes": sizes}
    if any(s != 1 for s in strides):
        attrs["strides"] = strides
    result = ctx.emit("slice", [ctx.operand(node.input(0))], attrs)
    if flipped:
        result = ctx.emit("reverse", [result], {"axes": sorted(flipped)})
    return [result]


# -- Pad ----------------------------------------------------------------------------------------
_PAD_MODES = {"constant": "constant", "reflect": "reflection", "edge": "edge"}


def _pad_arguments(ctx: ImportContext, node: OnnxNode, rank: int):
    """(per-axis begin pads, per-axis end pads, constant value) in every opset's form; the
    value is a number, or an operand when it is computed at run time."""
    if node.opset < 11:  # attributes: `paddings` (opset 1) or `pads`, and `value`
        pads = node.attr("pads", node.attr("paddings"))
        value = node.attr("value", 0.0)
        axes = None
    else:
        pads = known_ints(ctx, node, 1, None, "the pads input")
        value = 0
        if ctx.is_known(node.input(2)):
            value = known_scalar(ctx, node.input(2), "the constant_value input")
        elif node.input(2) is not None:
            value = ctx.operand(node.input(2))
        axes = known_ints(ctx, node, 3, None, "the axes input")  # opset 18
    if pads is None:
        raise Unsupported("it has no pads")
    pads = [int(p) for p in pads]
    if isinstance(value, bool):  # a bool tensor's value; WebNN's is a number
        value = int(value)
    axes = list(range(rank)) if axes is None else normalize_axes(axes, rank)
    if len(pads) != 2 * len(axes):
        raise Unsupported(f"pads has {len(pads)} values; it needs 2 per padded axis "
                          f"({2 * len(axes)})")
    begin, end = [0] * rank, [0] * rank
    for i, axis in enumerate(axes):
        begin[axis], end[axis] = pads[i], pads[len(axes) + i]
    return begin, end, value


@onnx_op("Pad", webnn=("pad", "slice", "concat", "where", "reshape"))
def pad(ctx: ImportContext, node: OnnxNode):
    shape = ctx.shape(node.input(0))
    mode = node.attr("mode", "constant")
    if mode not in (*_PAD_MODES, "wrap"):
        raise Unsupported(f"mode '{mode}' is not an ONNX padding mode")
    begin, end, value = _pad_arguments(ctx, node, len(shape))
    x = ctx.operand(node.input(0))
    cropped = any(p < 0 for p in (*begin, *end))
    # Negative pads remove elements; like ONNX Runtime, crop first, then pad what is left.
    if cropped:
        starts = [max(0, -b) for b in begin]
        sizes = [d - max(0, -b) - max(0, -e) for d, b, e in zip(shape, begin, end)]
        if any(s <= 0 for s in sizes):
            final = [s + max(0, b) + max(0, e) for s, b, e in zip(sizes, begin, end)]
            if any(f <= 0 for f in final):
                return [empty_result(ctx, node.input(0), [max(f, 0) for f in final])]
            raise Unsupported(f"negative pads remove every element of an axis ({sizes}) that "
                              f"is then padded again, from nothing")
        x = ctx.emit("slice", [x], {"starts": starts, "sizes": sizes}, suffix="crop")
        begin, end = [max(0, b) for b in begin], [max(0, e) for e in end]
    if not any((*begin, *end)):
        return [x if cropped else ctx.emit("identity", [x])]
    if mode == "wrap":
        return [_wrap_pad(ctx, x, begin, end)]
    attrs = {"beginningPadding": begin, "endingPadding": end, "mode": _PAD_MODES[mode]}
    if isinstance(value, Operand) and mode == "constant":
        return [_pad_with_operand(ctx, x, attrs, value)]
    if mode == "constant":
        attrs["value"] = value
    return [ctx.emit("pad", [x], attrs)]


def _pad_with_operand(ctx: ImportContext, x: Operand, attrs: dict, value: Operand) -> Operand:
    """Constant padding with a value computed at run time (WebNN's `value` is a number): pad
    with 0, pad a ones mask the same way, and take `value` where the mask is 0."""
    if value.size != 1 or value.data_type != x.data_type:
        raise Unsupported(f"constant_value {value.desc} must be one {x.data_type} value")
    if value.rank:
        value = ctx.emit("reshape", [value], {"newShape": []}, suffix="value")
    padded = ctx.emit("pad", [x], attrs)
    ones = ctx.constant(np.broadcast_to(np.ones((), np.uint8), x.shape))
    inside = ctx.emit("pad", [ones], attrs, suffix="mask")
    return ctx.emit("where", [inside, padded, value])


def _wrap_pad(ctx: ImportContext, x: Operand, begin: list[int], end: list[int]) -> Operand:
    """ONNX 'wrap' (circular) padding, one axis at a time: the axis' last `b` elements go in
    front and its first `e` elements behind. Padding more than the axis holds would wrap round
    more than once, which this does not build."""
    for axis, (b, e) in enumerate(zip(begin, end)):
        dim = x.shape[axis]
        if b > dim or e > dim:
            raise Unsupported(f"'wrap' pads ({b}, {e}) exceed axis {axis}'s size {dim}")
        parts = []
        if b:
            parts.append(slice_along(ctx, x, axis, dim - b, b, suffix="wrap_begin"))
        parts.append(x)
        if e:
            parts.append(slice_along(ctx, x, axis, 0, e, suffix="wrap_end"))
        if len(parts) > 1:
            x = ctx.emit("concat", parts, {"axis": axis})
    return x


# -- Expand, Tile, Trilu, CumSum ----------------------------------------------------------------
@onnx_op("Expand", webnn=("expand",))
def expand(ctx: ImportContext, node: OnnxNode):
    shape = known_ints(ctx, node, 1, None, "the shape input")
    in_shape = ctx.shape(node.input(0))
    # ONNX broadcasts both ways (a 1 in `shape` keeps the input's size); WebNN's expand takes
    # the final shape.
    target = broadcast_shapes(in_shape, shape)
    if target is None:
        raise Unsupported(f"input shape {list(in_shape)} and shape {shape} do not broadcast")
    if 0 in target:
        return [empty_result(ctx, node.input(0), target)]
    return [ctx.emit("expand", [ctx.operand(node.input(0))], {"newShape": list(target)})]


@onnx_op("Tile", webnn=("tile",))
def tile(ctx: ImportContext, node: OnnxNode):
    repeats = known_ints(ctx, node, 1, None, "the repeats input")
    if any(r == 0 for r in repeats):
        in_shape = ctx.shape(node.input(0))
        return [empty_result(ctx, node.input(0), [d * r for d, r in zip(in_shape, repeats)])]
    return [ctx.emit("tile", [ctx.operand(node.input(0))], {"repetitions": repeats})]


@onnx_op("Trilu", webnn=("triangular",))
def trilu(ctx: ImportContext, node: OnnxNode):
    k = 0
    if node.input(1) is not None:
        k = int(known_scalar(ctx, node.input(1), "the k input"))
    upper = bool(node.attr("upper", 1))
    return [ctx.emit("triangular", [ctx.operand(node.input(0))],
                     {"upper": upper, "diagonal": k})]


@onnx_op("CumSum", webnn=("cumulativeSum",))
def cumsum(ctx: ImportContext, node: OnnxNode):
    rank = ctx.rank(node.input(0))
    axis = normalize_axis(known_scalar(ctx, node.input(1), "the axis input"), rank)
    attrs = {"exclusive": bool(node.attr("exclusive", 0)),
             "reversed": bool(node.attr("reverse", 0))}
    return [ctx.emit("cumulativeSum", [ctx.operand(node.input(0))], {"axis": axis, **attrs})]


# -- Dropout --------------------------------------------------------------------------------------
@onnx_op("Dropout", webnn=("identity",))
def dropout(ctx: ImportContext, node: OnnxNode):
    """At inference Dropout passes its input through and its mask is all ones.

    Opset 12 made training a run-time input: it must be known false, or the ratio known 0
    (then training changes nothing either). Before opset 7, `is_test=0` meant training.
    """
    if node.opset < 7 and not node.attr("is_test", 0):
        raise Unsupported("is_test is 0 (training mode), which drops values at random")
    if node.opset >= 12 and node.input(2) is not None:
        training = bool(known_scalar(ctx, node.input(2), "the training_mode input"))
        ratio = 0.5
        if node.input(1) is not None:
            ratio = float(known_scalar(ctx, node.input(1), "the ratio input"))
        if training and ratio != 0:
            raise Unsupported(f"training_mode is true with ratio {ratio}, which drops values "
                              f"at random")
    x = ctx.operand(node.input(0))
    results = [ctx.emit("identity", [x])]
    if len(node.outputs) > 1 and node.outputs[1] is not None:
        # The mask is bool from opset 10, the input's type before.
        dtype = np.bool_ if node.opset >= 10 else np.dtype(x.data_type)
        results.append(np.ones(x.shape, dtype=dtype))
    return results
