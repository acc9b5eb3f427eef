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

The global pools reduce every spatial axis at once, so they work at any rank.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

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
    pads = spatial_pads(node, in_sizes, kernel, strides, dilations)
    ceil_mode = bool(node.attr("ceil_mode", 0))
    begins, ends = pads[:spatial], pads[spatial:]
    out = [_onnx_output_size(in_sizes[i], kernel[i], begins[i], ends[i], strides[i],
                             dilations[i], ceil_mode) for i in range(spatial)]
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


@onnx_op("MaxPool", webnn=("maxPool2d", "reshape"))
def max_pool(ctx: ImportContext, node: OnnxNode):
    if len(node.outputs) > 1 and node.outputs[1] is not None:
        raise Unsupported("its Indices output (argmax positions) has no WebNN form; only the "
                          "pooled values can be imported")
    return [_pool(ctx, node, "maxPool2d")]


@onnx_op("AveragePool", webnn=("averagePool2d", "pad", "reshape"))
def average_pool(ctx: ImportContext, node: OnnxNode):
    include = bool(node.attr("count_include_pad", 0))
    return [_pool(ctx, node, "averagePool2d", zero_pad=include)]


@onnx_op("LpPool", webnn=("l2Pool2d", "abs", "pow", "reshape"))
def lp_pool(ctx: ImportContext, node: OnnxNode):
    p = float(node.attr("p", 2))
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
    p = float(node.attr("p", 2))
    if p in (1.0, 2.0):
        return [ctx.emit("reduceL1" if p == 1.0 else "reduceL2", [x],
                         {"axes": axes, "keepDimensions": True})]
    if p <= 0:
        raise Unsupported(f"p={p} is not a norm order (must be positive)")
    # (sum |x|^p)^(1/p), the definition of the Lp norm.
    powered = ctx.emit("pow", [ctx.emit("abs", [x]), ctx.scalar(p, x.data_type)])
    summed = ctx.emit("reduceSum", [powered], {"axes": axes, "keepDimensions": True})
    return [ctx.emit("pow", [summed, ctx.scalar(1.0 / p, x.data_type)])]
