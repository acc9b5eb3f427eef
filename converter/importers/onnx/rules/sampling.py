"""Sampling at computed coordinates: GridSample (2-D, and N-D from opset 20) and AffineGrid.

WebNN has no grid sampler, but a sample is a weighted sum of input elements at integer
positions computed from the grid, so each interpolation tap is one `gatherElements` of the
flattened input (the same position for every channel) times its weight:
  * a coordinate in [-1, 1] is denormalized to pixel units (align_corners: -1 and 1 are the
    centres of the edge pixels; else their outer edges);
  * a coordinate outside the image is first clamped (padding "border") or reflected about
    the edges ("reflection") for nearest and linear sampling; cubic sampling pads each of
    its taps instead (ONNX Runtime's and PyTorch's behaviour, which the reference
    implementation in the onnx package does not share: it pads the coordinate too);
  * taps: "nearest" the coordinate rounded half to even, "linear" floor and floor + 1,
    "cubic" floor - 1 .. floor + 2 with Keys' coefficients (a = -0.75); a tap outside the
    image reads 0 ("zeros"), the nearest edge ("border") or its reflection ("reflection").
Separable per axis: 2**n (linear) or 4**n (cubic) taps for n spatial axes.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ....budget import shape_bytes
from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..registry import Unsupported, onnx_op
from ._emit import emit
from .constants import claim
from .shape_ops import known_ints

_MODES = {"bilinear": "linear", "bicubic": "cubic", "linear": "linear", "cubic": "cubic",
          "nearest": "nearest"}
_CUBIC_A = -0.75


class _Axis:
    """Arithmetic on [N, P] coordinate operands of one spatial axis of length `size`."""

    def __init__(self, ctx: ImportContext, size: int, dtype: str, align: bool):
        self.ctx, self.size, self.dtype = ctx, size, dtype
        self.low, self.high = (0.0, size - 1.0) if align else (-0.5, size - 0.5)

    def c(self, value) -> Operand:
        return self.ctx.scalar(value, self.dtype)

    def op(self, name: str, *inputs, **attrs) -> Operand:
        return emit(self.ctx, name, *inputs, **attrs)

    def reflect(self, x: Operand) -> Operand:
        """x folded back into [low, high] by reflecting about the nearer edge, repeatedly."""
        span = self.high - self.low
        if span <= 0:  # a 1-pixel axis with aligned corners: every coordinate is pixel 0
            return self.op("mul", x, self.c(0.0))
        below = self.op("lesser", x, self.c(self.low))
        above = self.op("greater", x, self.c(self.high))
        distance = self.op("where", below, self.op("sub", self.c(self.low), x),
                           self.op("sub", x, self.c(self.high)))
        turns = self.op("floor", self.op("div", distance, self.c(span)))
        rest = self.op("sub", distance, self.op("mul", turns, self.c(span)))
        half = self.op("mul", turns, self.c(0.5))
        even = self.op("equal", half, self.op("floor", half))
        # below: even turns land at low + rest, odd ones at high - rest; above: the reverse
        from_low = self.op("add", self.c(self.low), rest)
        from_high = self.op("sub", self.c(self.high), rest)
        folded = self.op("where", below, self.op("where", even, from_low, from_high),
                         self.op("where", even, from_high, from_low))
        return self.op("where", self.op("logicalOr", below, above), folded, x)

    def clamp(self, x: Operand) -> Operand:
        return self.op("clamp", x, minValue=0.0, maxValue=float(self.size - 1))

    def padded(self, x: Operand, padding: str) -> Operand:
        """The coordinate moved inside the image, as ONNX does before taking taps."""
        if padding == "border":
            return self.clamp(x)
        if padding == "reflection":
            return self.reflect(x)
        return x

    def tap(self, i: Operand, padding: str) -> tuple[Operand, Operand | None]:
        """(integer index inside the image as float, validity or None) of tap position i."""
        if padding == "zeros":
            inside = self.op("logicalAnd", self.op("greaterOrEqual", i, self.c(0.0)),
                             self.op("lesser", i, self.c(float(self.size))))
            return self.clamp(i), inside
        if padding == "border":
            return self.clamp(i), None
        folded = self.reflect(i)  # then truncated toward zero, as the definition casts it
        truncated = self.op("where", self.op("lesser", folded, self.c(0.0)),
                            self.op("ceil", folded), self.op("floor", folded))
        return self.clamp(truncated), None


def _cubic_weights(axis: _Axis, t: Operand) -> list[Operand]:
    a = _CUBIC_A
    op, c = axis.op, axis.c

    def near(x):  # |x| <= 1: (a + 2)|x|^3 - (a + 3)|x|^2 + 1
        return op("add", op("mul", op("mul", op("sub", op("mul", x, c(a + 2)), c(a + 3)), x),
                            x), c(1.0))

    def far(x):  # 1 < |x| < 2: a|x|^3 - 5a|x|^2 + 8a|x| - 4a
        inner = op("add", op("mul", op("sub", op("mul", x, c(a)), c(5 * a)), x), c(8 * a))
        return op("sub", op("mul", inner, x), c(4 * a))

    one_minus = op("sub", c(1.0), t)
    return [far(op("add", t, c(1.0))), near(t), near(one_minus),
            far(op("sub", c(2.0), t))]


@onnx_op("GridSample", since=16,
         webnn=("slice", "reshape", "mul", "add", "sub", "div", "floor", "ceil", "roundEven",
                "clamp", "lesser", "greater", "greaterOrEqual", "equal", "logicalAnd",
                "logicalOr", "where", "cast", "expand", "gatherElements"))
def grid_sample(ctx: ImportContext, node: OnnxNode):
    x, grid = ctx.operand(node.input(0)), ctx.operand(node.input(1))
    spatial = x.rank - 2
    if spatial < 1 or grid.rank != x.rank or grid.shape[-1] != spatial \
            or grid.shape[0] != x.shape[0]:
        raise Unsupported(f"X {list(x.shape)} and grid {list(grid.shape)} do not fit: the grid "
                          f"must be [N, out..., {spatial}]")
    if node.opset < 20 and spatial != 2:
        raise Unsupported("before opset 20 GridSample takes 4-D input")
    mode = _MODES.get(node.attr("mode", "linear" if node.opset >= 20 else "bilinear"))
    padding = node.attr("padding_mode", "zeros")
    if mode is None or padding not in ("zeros", "border", "reflection"):
        raise Unsupported(f"mode {node.attr('mode')!r} / padding_mode {padding!r}")
    align = bool(node.attr("align_corners", 0))
    n, channels, dims = x.shape[0], x.shape[1], x.shape[2:]
    out = grid.shape[1:-1]
    points = int(np.prod(out, dtype=np.int64))
    dt = grid.data_type
    flat_grid = emit(ctx, "reshape", grid, newShape=[n, points, spatial])
    per_axis = []  # per spatial axis (outermost first): [(index, weight, validity)...] taps
    for d, size in enumerate(dims):
        axis = _Axis(ctx, size, dt, align)
        # The grid's last axis lists coordinates innermost first (x, then y, ...).
        k = spatial - 1 - d
        g = emit(ctx, "reshape", emit(ctx, "slice", flat_grid, starts=[0, 0, k],
                                      sizes=[n, points, 1]), newShape=[n, points])
        if align:
            coord = axis.op("mul", axis.op("add", g, axis.c(1.0)), axis.c((size - 1) / 2))
        else:
            coord = axis.op("div", axis.op("sub", axis.op("mul", axis.op("add", g, axis.c(1.0)),
                                                          axis.c(float(size))), axis.c(1.0)),
                            axis.c(2.0))
        if mode == "nearest":
            coord = axis.padded(axis.op("roundEven", coord), padding)
            truncated = axis.op("where", axis.op("lesser", coord, axis.c(0.0)),
                                axis.op("ceil", coord), axis.op("floor", coord))
            index, valid = axis.tap(truncated, padding)
            per_axis.append([(index, None, valid)])
            continue
        if mode == "linear":  # cubic pads each tap only, as ONNX Runtime (and PyTorch) do
            coord = axis.padded(coord, padding)
        base = axis.op("floor", coord)
        t = axis.op("sub", coord, base)
        if mode == "linear":
            offsets, weights = (0, 1), [axis.op("sub", axis.c(1.0), t), t]
        else:
            offsets, weights = (-1, 0, 1, 2), _cubic_weights(axis, t)
        taps = []
        for offset, weight in zip(offsets, weights):
            index, valid = axis.tap(axis.op("add", base, axis.c(float(offset))), padding)
            taps.append((index, weight, valid))
        per_axis.append(taps)
    strides = [int(np.prod(dims[d + 1:], dtype=np.int64)) for d in range(spatial)]
    flat_x = emit(ctx, "reshape", x, newShape=[n, channels, int(np.prod(dims))])
    total = None
    for combo in itertools.product(*per_axis):
        position, weight = None, None
        for (index, w, valid), stride in zip(combo, strides):
            term = index if stride == 1 else emit(ctx, "mul", index, ctx.scalar(stride, dt))
            position = term if position is None else emit(ctx, "add", position, term)
            if valid is not None:
                mask = emit(ctx, "cast", valid, dataType=dt)
                w = mask if w is None else emit(ctx, "mul", w, mask)
            if w is not None:
                weight = w if weight is None else emit(ctx, "mul", weight, w)
        index = emit(ctx, "reshape", emit(ctx, "cast", position, dataType="int32"),
                     newShape=[n, 1, points])
        index = emit(ctx, "expand", index, newShape=[n, channels, points])
        value = emit(ctx, "gatherElements", flat_x, index, axis=2)
        if weight is not None:
            weight = emit(ctx, "reshape", weight, newShape=[n, 1, points])
            if weight.data_type != x.data_type:
                weight = emit(ctx, "cast", weight, dataType=x.data_type)
            value = emit(ctx, "mul", value, weight)
        total = value if total is None else emit(ctx, "add", total, value)
    return [emit(ctx, "reshape", total, newShape=[n, channels, *out])]


@onnx_op("AffineGrid", since=20, webnn=("transpose", "matmul", "reshape"))
def affine_grid(ctx: ImportContext, node: OnnxNode):
    """The sampling grid of an affine map: the output's pixel centres (or corners) in
    [-1, 1], innermost axis first, with a 1 appended, times theta transposed."""
    theta = ctx.operand(node.input(0))
    size = known_ints(ctx, node, 1, None, "the size input")
    if size is None or len(size) not in (4, 5):
        raise Unsupported("size must be a known [N, C, H, W] or [N, C, D, H, W]")
    spatial = len(size) - 2
    n, dims = size[0], size[2:]
    if tuple(theta.shape) != (n, spatial, spatial + 1):
        raise Unsupported(f"theta has shape {list(theta.shape)}; it must be "
                          f"[{n}, {spatial}, {spatial + 1}]")
    if min(size) < 1:
        raise Unsupported(f"size {size} has a dimension below 1")
    # The mesh (one axis each) and the base (one column more) are float64 [positions, ...].
    claim(ctx, node, shape_bytes([math.prod(dims), 2 * spatial + 1], 8))
    align = bool(node.attr("align_corners", 0))

    def positions(length: int) -> np.ndarray:
        if align:
            return np.linspace(-1.0, 1.0, length) if length > 1 else np.zeros(1)
        return (2 * np.arange(length) + 1) / length - 1

    mesh = np.meshgrid(*[positions(d) for d in dims], indexing="ij")
    # innermost axis first (x, y[, z]), then 1 for the translation column
    base = np.stack([m.reshape(-1) for m in reversed(mesh)] + [np.ones(mesh[0].size)], axis=1)
    from .... import dtypes

    base = ctx.constant(base.astype(dtypes.numpy_dtype(theta.data_type)), theta.data_type)
    grid = emit(ctx, "matmul", base, emit(ctx, "transpose", theta, permutation=[0, 2, 1]))
    return [emit(ctx, "reshape", grid, newShape=[n, *dims, spatial])]
