"""Pooling: MaxPool, AveragePool, LpPool and the global poolings.

WebNN pools exactly two spatial axes, so 1-D pools run on [N, C, L, 1] and are reshaped back,
and 3-D (or higher) pools run as a 2-D pool over the last two axes followed by a pool over
each earlier axis (see _pool_separably for why that is exact).
Padding never counts in WebNN's pools (averagePool2d divides by the number of input elements
in the window), which is ONNX's count_include_pad=0; count_include_pad=1 pads the input with
zeros first, so the zeros are input elements.

ONNX's ceil_mode keeps a last partial window unless it would start in the end padding (the
PyTorch rule), while WebNN's "ceil" rounding keeps it always. So the output size is computed
here by ONNX's rule, and the end padding widened until WebNN's floor rounding gives it: the
widening adds only padding, which no WebNN pool counts.

auto_pad SAME_* uses ONNX's pad_shape formula, which has no floor at zero: when the stride is
larger than the window, the total "padding" is negative and the windows start inside the input.
ONNX Runtime splits it as C++ integer division does (toward zero) and so do we; a negative
pad is a crop, made by a slice before the pool (WebNN padding is never negative). ONNX Runtime
refuses such a MaxPool, so it is refused here too.

The global pools reduce every spatial axis at once, so they work at any rank.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .... import dtypes
from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..registry import Invalid, Unsupported, onnx_op
from .conv import reshape, spatial_pads, window_steps


def _onnx_output_size(size: int, kernel: int, begin: int, end: int, stride: int,
                      dilation: int, ceil_mode: bool) -> int:
    effective = (kernel - 1) * dilation + 1
    numerator = size + begin + end - effective
    if numerator < 0:
        raise Unsupported(f"the window ({effective} with dilation) is larger than the padded "
                          f"input ({size + begin + end})")
    if not ceil_mode:
        return numerator // stride + 1
    out = -(-numerator // stride) + 1
    if (out - 1) * stride >= size + begin:  # the last window would start in the end padding
        out -= 1
    return out


def _half_toward_zero(value: int) -> int:
    return -(-value // 2) if value < 0 else value // 2


def _pool_pads(node: OnnxNode, in_sizes: list[int], kernel, strides: list[int],
               dilations: list[int]) -> list[int]:
    """The pool's ONNX pads [b1, b2, ..., e1, e2, ...], which auto_pad SAME_* may make
    negative (see the module docstring); other auto_pad values as for a convolution."""
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        return spatial_pads(node, in_sizes, kernel, strides, dilations)
    begins, ends = [], []
    for size, k, s, d in zip(in_sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = (out - 1) * s + (int(k) - 1) * d + 1 - size
        # SAME_LOWER puts the odd pixel first: half of total + 1, rounded the same way
        begin = _half_toward_zero(total if auto_pad == "SAME_UPPER" else total + 1)
        begins.append(begin)
        ends.append(total - begin)
    return begins + ends


class _Axis(NamedTuple):
    """One spatial axis's window: size, stride, dilation and WebNN begin / end padding."""
    kernel: int
    stride: int
    dilation: int
    begin: int
    end: int


_UNIT = _Axis(1, 1, 1, 0, 0)  # the added width of a 1-D pool: a window of one element


def _pool(ctx: ImportContext, node: OnnxNode, webnn_op: str, *, zero_pad: bool = False,
          x: Operand | None = None):
    """Emit `webnn_op` for an ONNX MaxPool / AveragePool / LpPool node (on `x`, by default the
    node's input); zero_pad pads the input with explicit zeros first (count_include_pad=1)."""
    x = ctx.operand(node.input(0)) if x is None else x
    spatial = x.rank - 2
    if spatial < 1:
        raise Unsupported(f"input rank {x.rank} has no spatial axes (pooling needs "
                          f"[N, C, spatial...])")
    kernel = node.attr("kernel_shape")
    if kernel is None or len(kernel) != spatial:
        raise Unsupported(f"kernel_shape {kernel} must have one value per spatial axis "
                          f"({spatial})")
    if any(int(k) < 1 for k in kernel):
        raise Invalid(f"kernel_shape {list(kernel)} must hold positive values")
    strides, dilations = window_steps(node, spatial)
    in_sizes = list(x.shape[2:])
    pads = _pool_pads(node, in_sizes, kernel, strides, dilations)
    ceil_mode = bool(node.attr("ceil_mode", 0))
    begins, ends = pads[:spatial], pads[spatial:]
    out = [_onnx_output_size(in_sizes[i], kernel[i], begins[i], ends[i], strides[i],
                             dilations[i], ceil_mode) for i in range(spatial)]
    if min(pads) < 0 and node.attr("auto_pad", "NOTSET") != "NOTSET":
        if webnn_op == "maxPool2d":
            raise Unsupported(f"auto_pad {node.attr('auto_pad')} with a stride larger than the "
                              f"window gives negative pads {pads}, which ONNX Runtime refuses "
                              f"for MaxPool; give explicit pads instead")
        x = _crop(ctx, x, begins, ends)
        in_sizes = list(x.shape[2:])
        begins, ends = [max(0, b) for b in begins], [max(0, e) for e in ends]
    if zero_pad and any(pads):
        x = ctx.emit("pad", [x], {"beginningPadding": [0, 0, *begins],
                                  "endingPadding": [0, 0, *ends], "mode": "constant",
                                  "value": 0}, suffix="pad")
        in_sizes = [s + b + e for s, b, e in zip(in_sizes, begins, ends)]
        begins, ends = [0] * spatial, [0] * spatial
    axes = []
    for i in range(spatial):
        effective = (kernel[i] - 1) * dilations[i] + 1
        needed = (out[i] - 1) * strides[i] + effective - in_sizes[i] - begins[i]
        axes.append(_Axis(kernel[i], strides[i], dilations[i], begins[i],
                          max(ends[i], needed)))
    if spatial == 2:
        return _pool2d(ctx, webnn_op, x, axes[0], axes[1])
    if spatial == 1:
        y = _pool2d(ctx, webnn_op, reshape(ctx, x, (*x.shape, 1), "reshape_input"),
                    axes[0], _UNIT)
        return reshape(ctx, y, y.shape[:3], "reshape_output")
    return _pool_separably(ctx, webnn_op, x, axes)


def _crop(ctx: ImportContext, x: Operand, begins: list[int], ends: list[int]) -> Operand:
    """x without the elements negative pads remove from each spatial axis's ends."""
    starts = [0, 0, *(max(0, -b) for b in begins)]
    sizes = [*x.shape[:2], *(size - max(0, -b) - max(0, -e)
                             for size, b, e in zip(x.shape[2:], begins, ends))]
    return ctx.emit("slice", [x], {"starts": starts, "sizes": sizes}, suffix="crop")


def _pool2d(ctx: ImportContext, webnn_op: str, x: Operand, h: _Axis, w: _Axis) -> Operand:
    return ctx.emit(webnn_op, [x], {
        "windowDimensions": [h.kernel, w.kernel], "padding": [h.begin, h.end, w.begin, w.end],
        "strides": [h.stride, w.stride], "dilations": [h.dilation, w.dilation],
        "outputShapeRounding": "floor"})


def _pool_separably(ctx: ImportContext, webnn_op: str, x: Operand, axes: list[_Axis]):
    """Pool 3 or more spatial axes as 2-D pools: the last two first, then each earlier axis
    alone (a [k, 1] window over it, the axes after it flattened into the width).

    A box window is the product of its per-axis windows, so this is exact for each op: the
    max of maxes is the max; L2 of L2 norms is the L2 norm; and the mean of means is the mean,
    because padding excluded on one axis leaves the same count of elements in every slice
    along the others.
    """
    n, c, *sizes = x.shape
    lead = c * int(np.prod(sizes[:-2], dtype=np.int64))
    y = reshape(ctx, x, (n, lead, sizes[-2], sizes[-1]), "fold_leading_axes")
    y = _pool2d(ctx, webnn_op, y, axes[-2], axes[-1])
    sizes[-2:] = y.shape[2:]
    for i in range(len(sizes) - 3, -1, -1):
        before = n * c * int(np.prod(sizes[:i], dtype=np.int64))
        after = int(np.prod(sizes[i + 1:], dtype=np.int64))
        y = reshape(ctx, y, (before, 1, sizes[i], after), f"axis{i}")
        y = _pool2d(ctx, webnn_op, y, axes[i], _UNIT)
        sizes[i] = y.shape[2]
    return reshape(ctx, y, (n, c, *sizes), "unfold")


@onnx_op("MaxPool", webnn=("maxPool2d", "reshape", "pad", "slice", "concat", "argMax",
                           "equal", "where", "reduceSum", "add"))
def max_pool(ctx: ImportContext, node: OnnxNode):
    y = _pool(ctx, node, "maxPool2d")
    if len(node.outputs) > 1 and node.outputs[1] is not None:
        return [y, _max_pool_indices(ctx, node, y)]
    return [y]


def _max_pool_indices(ctx: ImportContext, node: OnnxNode, y: Operand) -> Operand:
    """MaxPool's Indices output for 2-D pooling: the flat position in X of each window's
    (first) largest element. The K window taps are K strided slices of X padded with its
    type's lowest value, stacked; argMax over them picks the tap, and the tap's position
    (a constant per output pixel) is summed out of a one-hot selection."""
    x = ctx.operand(node.input(0))
    if x.rank != 4:
        raise Unsupported("the Indices output is imported for 2-D pooling ([N, C, H, W])")
    n, c, height, width = x.shape
    kernel = list(node.attr("kernel_shape"))
    strides = list(node.attr("strides", [1, 1]))
    dilations = list(node.attr("dilations", [1, 1]))
    pads = spatial_pads(node, [height, width], kernel, strides, dilations)
    out_h, out_w = y.shape[2:]
    begins = pads[:2]
    reach = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in
             zip((out_h, out_w), strides, kernel, dilations)]
    ends = [max(0, r - size - b) for r, size, b in zip(reach, (height, width), begins)]
    np_type = np.dtype(dtypes.numpy_dtype(x.data_type))
    lowest = float("-inf") if np_type.kind == "f" else int(np.iinfo(np_type).min)
    padded = ctx.emit("pad", [x], {"beginningPadding": [0, 0, *begins],
                                   "endingPadding": [0, 0, *ends], "mode": "constant",
                                   "value": lowest})
    taps, positions = [], []
    rows = np.arange(out_h)[:, None] * strides[0] - begins[0]
    cols = np.arange(out_w)[None, :] * strides[1] - begins[1]
    column_major = int(node.attr("storage_order", 0)) == 1
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            tap = ctx.emit("slice", [padded], {
                "starts": [0, 0, i * dilations[0], j * dilations[1]],
                "sizes": [n, c, (out_h - 1) * strides[0] + 1, (out_w - 1) * strides[1] + 1],
                "strides": [1, 1, strides[0], strides[1]]})
            taps.append(reshape(ctx, tap, (1, n, c, out_h, out_w), "tap"))
            h, w = rows + i * dilations[0], cols + j * dilations[1]
            positions.append(h + w * height if column_major else h * width + w)
    stacked = taps[0] if len(taps) == 1 else ctx.emit("concat", taps, {"axis": 0})
    best = ctx.emit("argMax", [stacked], {"axis": 0, "keepDimensions": True,
                                          "outputDataType": "int64"})
    count = len(taps)
    tap_ids = ctx.constant(np.arange(count, dtype=np.int64).reshape(count, 1, 1, 1, 1), "int64")
    where_at = ctx.constant(np.stack(positions).astype(np.int64)[:, None, None], "int64")
    picked = ctx.emit("where", [ctx.emit("equal", [tap_ids, best]), where_at,
                                ctx.scalar(0, "int64")])
    within = ctx.emit("reduceSum", [picked], {"axes": [0], "keepDimensions": False})
    planes = (np.arange(n * c, dtype=np.int64) * height * width).reshape(n, c, 1, 1)
    return ctx.emit("add", [within, ctx.constant(planes, "int64")])


@onnx_op("AveragePool", webnn=("averagePool2d", "pad", "reshape", "slice"))
def average_pool(ctx: ImportContext, node: OnnxNode):
    include = bool(node.attr("count_include_pad", 0))
    return [_pool(ctx, node, "averagePool2d", zero_pad=include)]


@onnx_op("LpPool", webnn=("l2Pool2d", "abs", "pow", "reshape", "slice"))
def lp_pool(ctx: ImportContext, node: OnnxNode):
    p = float(node.attr("p", 2))  # an INT: its schema's type is checked before the rule
    if p == 2.0:
        return [_pool(ctx, node, "l2Pool2d")]
    if p <= 0:
        raise Unsupported(f"p={p} is not a norm order (must be positive)")
    # (sum |x|^p)^(1/p) = (sqrt(sum (|x|^(p/2))^2))^(2/p): an L2 pool of |x|^(p/2). Padding
    # zeros stay zeros under the powers, so they add nothing, as in ONNX.
    x = ctx.operand(node.input(0))
    dt = x.data_type
    lifted = ctx.emit("pow", [ctx.emit("abs", [x]), ctx.scalar(p / 2, dt)], suffix="pow_in")
    pooled = _pool(ctx, node, "l2Pool2d", x=lifted)
    return [ctx.emit("pow", [pooled, ctx.scalar(2 / p, dt)], suffix="pow_out")]


def _spatial_axes(ctx: ImportContext, x: Operand) -> list[int]:
    if x.rank < 3:
        raise Unsupported(f"input rank {x.rank} has no spatial axes (global pooling needs "
                          f"[N, C, spatial...])")
    return list(range(2, x.rank))


@onnx_op("GlobalAveragePool", webnn=("reduceMean",))
def global_average_pool(ctx: ImportContext, node: OnnxNode):
    x = ctx.operand(node.input(0))
    return [ctx.emit("reduceMean", [x], {"axes": _spatial_axes(ctx, x),
                                         "keepDimensions": True})]


@onnx_op("GlobalMaxPool", webnn=("reduceMax",))
def global_max_pool(ctx: ImportContext, node: OnnxNode):
    x = ctx.operand(node.input(0))
    return [ctx.emit("reduceMax", [x], {"axes": _spatial_axes(ctx, x),
                                        "keepDimensions": True})]


@onnx_op("GlobalLpPool", webnn=("reduceL1", "reduceL2", "abs", "pow", "reduceSum"))
def global_lp_pool(ctx: ImportContext, node: OnnxNode):
    x = ctx.operand(node.input(0))
    axes = _spatial_axes(ctx, x)
    p = float(node.attr("p", 2))  # an INT: its schema's type is checked before the rule
    if p in (1.0, 2.0):
        return [ctx.emit("reduceL1" if p == 1.0 else "reduceL2", [x],
                         {"axes": axes, "keepDimensions": True})]
    if p <= 0:
        raise Unsupported(f"p={p} is not a norm order (must be positive)")
    # (sum |x|^p)^(1/p), the definition of the Lp norm.
    powered = ctx.emit("pow", [ctx.emit("abs", [x]), ctx.scalar(p, x.data_type)])
    summed = ctx.emit("reduceSum", [powered], {"axes": axes, "keepDimensions": True})
    return [ctx.emit("pow", [summed, ctx.scalar(1.0 / p, x.data_type)])]


@onnx_op("MaxUnpool", since=9, webnn=("reshape", "scatterND", "pad"))
def max_unpool(ctx: ImportContext, node: OnnxNode):
    """Zeros with each value of X put back at its flat index I (MaxPool's Indices output):
    one scatterND into the flattened output."""
    x, indices = ctx.operand(node.input(0)), ctx.operand(node.input(1))
    spatial = x.rank - 2
    kernel = list(node.attr("kernel_shape"))
    strides = list(node.attr("strides", [1] * spatial))
    pads = list(node.attr("pads", [0] * 2 * spatial))
    shape = list(x.shape[:2]) + [(x.shape[2 + i] - 1) * strides[i] - pads[i]
                                 - pads[i + spatial] + kernel[i] for i in range(spatial)]
    if tuple(indices.shape) != tuple(x.shape):
        raise Unsupported(f"I {list(indices.shape)} does not match X {list(x.shape)}")
    total = int(np.prod(shape, dtype=np.int64))
    zeros = ctx.constant(np.broadcast_to(np.zeros((), dtypes.numpy_dtype(x.data_type)),
                                         (total,)), x.data_type)
    flat = ctx.emit("scatterND", [zeros, reshape(ctx, indices, (x.size, 1), "indices"),
                                  reshape(ctx, x, (x.size,), "values")])
    y = reshape(ctx, flat, shape, "unflatten")
    if node.input(2) is None:
        return [y]
    # I indexes the shape the attributes give; a larger output_shape pads it at the end.
    wanted = [int(v) for v in np.asarray(ctx.require_known(node.input(2), "output_shape"))]
    if len(wanted) != x.rank or any(w < s for w, s in zip(wanted, shape)):
        raise Unsupported(f"output_shape {wanted} is smaller than the unpooled {shape}")
    return [ctx.emit("pad", [y], {"beginningPadding": [0] * x.rank,
                                  "endingPadding": [w - s for w, s in zip(wanted, shape)]})]
