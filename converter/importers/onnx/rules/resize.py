"""Resize and Upsample; SpaceToDepth and DepthToSpace as reshape/transpose.

ONNX's Resize is separable: along each resized axis, output element o is a weighted sum of a
few input elements along that axis (its taps), with weights that depend on o only. Every shape
is static, so this module computes the taps and weights now from ONNX's Resize definition:
the coordinate transform, nearest_mode's rounding, the linear and cubic kernels (cubic_coeff_a),
antialias, exclude_outside, and tf_crop_and_resize's region of interest. Positions are exact
rationals (a float32 scale is one), so ties and integral positions round as ONNX defines;
weights are float64.

WebNN's resample2d samples output o of an axis at (spec, MLResample2dOptions/mode)
    c = clamp((o + 0.5) / scale - 0.5, 0, inputSize - 1),   scale = outputSize / inputSize,
halves rounding down for nearest-neighbor, linear between floor(c) and ceil(c). When every
resized axis (two at most) gets the same taps and weights from that formula, the node becomes
one resample2d: the op backends implement natively. Otherwise each resized axis becomes
    reduceSum(gather(x, indices [out, taps]) * weights [out, taps, 1, ...], taps axis),
or the gather alone when each output reads one element with weight 1 (nearest, or positions
that land on input elements). Indices and weights are constants. Outputs tf_crop_and_resize
places outside the input become extrapolation_value (where).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..registry import Unsupported, onnx_op
from .activation import normalized_axis
from .conv import reshape

_TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
               "tf_half_pixel_for_nn", "half_pixel_symmetric", "tf_crop_and_resize")
_ROUNDING = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
# Weights in [0, 1] at most this far apart are taken as the same once rounded to float32, as
# backends hold them (half of float32's step just below 1).
_SAME_WEIGHT = 2.0 ** -25
# Weighted sums run in float32, which holds every int8 / uint8 value (and float16) exactly.
_VIA_FLOAT32 = {"float16": None, "int8": (-128, 127), "uint8": (0, 255)}
_WEBNN_RANKS = 5  # the ranks every backend must take; gather adds one
_NO_CROP = (Fraction(0), Fraction(1))
_RESAMPLE2D_TYPES = ("float32", "float16", "int8", "uint8")  # the spec's input data types
# Output positions whose taps are computed, over all resized axes: exact rational arithmetic
# costs about 15 us a position, so this bounds a node to about a second; a file asking for
# 2**31 positions would otherwise run for hours.
_MAX_POSITIONS = 1 << 16


@dataclass(frozen=True)
class _Method:
    """How ONNX samples, whatever the sizes: the node's attributes."""
    mode: str
    transform: str
    rounding: str = "round_prefer_floor"
    cubic_a: float = -0.75
    antialias: bool = False
    exclude_outside: bool = False
    extrapolation: float = 0.0

    def check(self) -> None:
        if self.mode not in ("nearest", "linear", "cubic"):
            raise Unsupported(f"mode '{self.mode}' is not an ONNX Resize mode")
        if self.transform not in _TRANSFORMS:
            raise Unsupported(f"coordinate_transformation_mode '{self.transform}' is unknown")
        if self.mode == "nearest" and self.rounding not in _ROUNDING:
            raise Unsupported(f"nearest_mode '{self.rounding}' is unknown")


@dataclass
class _Taps:
    """One axis: output o = sum over j of weight[o, j] * input[index[o, j]], except where
    outside[o] (tf_crop_and_resize), which is extrapolation_value."""
    index: np.ndarray  # int64 [out, taps], within the axis
    weight: np.ndarray  # float64 [out, taps]
    outside: np.ndarray | None = None  # bool [out]

    @property
    def one_element(self) -> bool:
        return self.index.shape[1] == 1 and bool(np.all(self.weight == 1))


def _positions(transform: str, out: int, size: int, scale: Fraction,
               roi: tuple[Fraction, Fraction]) -> list[Fraction]:
    """The input coordinate ONNX samples for each output index, exactly. `width` is the
    fractional output length scale * size: ONNX's reference implementation, whose values the
    ONNX test cases hold, divides by it in align_corners and tf_crop_and_resize (ONNX Runtime
    uses the integer length there)."""
    half, width = Fraction(1, 2), scale * size
    if transform == "half_pixel":
        return [(o + half) / scale - half for o in range(out)]
    if transform == "pytorch_half_pixel":  # the operator text: 0 for a single output
        return [(o + half) / scale - half if out > 1 else Fraction(0) for o in range(out)]
    if transform == "align_corners":
        return [Fraction(0) if width == 1 else o * (size - 1) / (width - 1)
                for o in range(out)]
    if transform == "asymmetric":
        return [o / scale for o in range(out)]
    if transform == "tf_half_pixel_for_nn":
        return [(o + half) / scale for o in range(out)]
    if transform == "half_pixel_symmetric":  # centres the rounded output on the input
        offset = Fraction(size, 2) * (1 - out / width)
        return [offset + (o + half) / scale - half for o in range(out)]
    start, end = roi  # tf_crop_and_resize
    if width == 1:
        return [(start + end) / 2 * (size - 1)] * out
    return [start * (size - 1) + o * (end - start) * (size - 1) / (width - 1)
            for o in range(out)]


def _cubic(distance: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel with coefficient a (ONNX's cubic_coeff_a)."""
    d = distance
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _axis_taps(method: _Method, size: int, out: int, scale: Fraction,
               roi: tuple[Fraction, Fraction]) -> _Taps:
    xs = _positions(method.transform, out, size, scale, roi)
    outside = None
    if method.transform == "tf_crop_and_resize":
        outside = np.array([x < 0 or x > size - 1 for x in xs])
    # ONNX reads from the element left of x, taking x itself as the right one when x is
    # integral, so the fraction `ratio` past `left` is in (0, 1]. Exact arithmetic keeps
    # ties (ratio 1/2) and integral positions exact for the rounding modes.
    lefts = [math.ceil(x) - 1 for x in xs]
    ratios = [x - left for x, left in zip(xs, lefts)]
    left = np.array(lefts, np.int64)
    if method.mode == "nearest":
        right = {"round_prefer_floor": lambda r: r > Fraction(1, 2),
                 "round_prefer_ceil": lambda r: r >= Fraction(1, 2),
                 "floor": lambda r: r == 1, "ceil": lambda r: True}[method.rounding]
        index = (left + np.array([right(r) for r in ratios], np.int64))[:, None]
        weight = np.ones(index.shape)
        beyond = np.any((index < 0) | (index >= size), axis=1)
        if outside is not None:  # extrapolated outputs read nothing
            beyond &= ~outside
        if method.exclude_outside and beyond.any():
            o = int(np.argmax(beyond))
            raise Unsupported(f"exclude_outside=1: nearest output {o} of an axis of {size} "
                              f"reads input index {int(index[o, 0])}, outside the axis, and "
                              f"its one weight cannot be renormalized to 1")
    else:
        support = 1 if method.mode == "linear" else 2
        # antialias stretches the kernel by 1 / scale when downsampling
        stretch = min(scale, Fraction(1)) if method.antialias else Fraction(1)
        start = math.floor(-support / stretch) + 1
        offsets = np.arange(start, 2 - start)
        index = left[:, None] + offsets
        ratio = np.array([float(r) for r in ratios])
        distance = np.abs(offsets[None, :] - ratio[:, None]) * float(stretch)
        weight = (np.clip(1 - distance, 0, 1) if method.mode == "linear"
                  else _cubic(distance, method.cubic_a))
        if method.antialias:
            weight = weight / weight.sum(axis=1, keepdims=True)
        if method.exclude_outside:
            weight = np.where((index < 0) | (index >= size), 0.0, weight)
            total = weight.sum(axis=1, keepdims=True)
            if outside is not None:  # those outputs are extrapolated: nothing to renormalize
                total[outside] = 1
            if np.any(total == 0):
                raise Unsupported(f"exclude_outside=1 leaves an output of an axis of {size} "
                                  f"with no sample inside the input to renormalize")
            weight = weight / total
    index = np.clip(index, 0, size - 1)  # edge elements repeat outward
    if outside is not None:  # extrapolation_value replaces them: read one element, weight 1
        index = np.where(outside[:, None], 0, index)
        weight = np.where(outside[:, None], np.arange(index.shape[1]) == 0, weight)
    return _compact(index, weight, outside)


def _compact(index: np.ndarray, weight: np.ndarray, outside: np.ndarray | None) -> _Taps:
    """The same sampling with taps reading one element merged and zero weights dropped (rows
    with fewer taps are padded with weight-0 repeats of their lowest index)."""
    rows = []
    for idx_row, w_row in zip(index.tolist(), weight.tolist()):
        merged: dict[int, float] = {}
        for i, w in zip(idx_row, w_row):
            merged[i] = merged.get(i, 0.0) + w
        # never empty: every row's weights sum to 1 (the kernels are partitions of unity,
        # antialias and exclude_outside renormalize, an extrapolated row reads one tap of 1)
        rows.append([(i, w) for i, w in merged.items() if w != 0])
    n = max(len(r) for r in rows)
    padded = [r + [(min(i for i, _ in r), 0.0)] * (n - len(r)) for r in rows]
    return _Taps(np.array([[i for i, _ in r] for r in padded], np.int64),
                 np.array([[w for _, w in r] for r in padded], np.float64),
                 outside if outside is not None and outside.any() else None)


def _same_sampling(a: _Taps, b: _Taps, size: int) -> bool:
    """Whether two samplings give every output the same weight on every input element."""
    keys, weights = [], []
    for taps, sign in ((a, 1.0), (b, -1.0)):
        rows = np.arange(taps.index.shape[0])[:, None]
        keys.append((rows * size + taps.index).ravel())
        weights.append(sign * taps.weight.ravel())
    _, which = np.unique(np.concatenate(keys), return_inverse=True)
    difference = np.bincount(which.ravel(), weights=np.concatenate(weights))
    return bool(np.all(np.abs(difference) <= _SAME_WEIGHT))


def _resample2d_mode(x: Operand, plan: list[tuple[int, _Taps]],
                     out_shape: Sequence[int]) -> str | None:
    """resample2d's mode when it samples every resized axis exactly as ONNX does, else None."""
    if len(plan) > 2 or x.rank > 4 or any(t.outside is not None for _, t in plan):
        return None
    if x.data_type not in _RESAMPLE2D_TYPES:
        return None
    for webnn, onnx_mode in (("nearest-neighbor", "nearest"), ("linear", "linear")):
        if webnn == "linear" and x.data_type not in ("float32", "float16"):
            continue  # how integers are rounded after interpolating is not specified
        method = _Method(onnx_mode, "half_pixel")
        if all(_same_sampling(taps, _axis_taps(method, x.shape[a], out_shape[a],
                                               Fraction(out_shape[a], x.shape[a]), _NO_CROP),
                              x.shape[a])
               for a, taps in plan):
            return webnn
    return None


def _resample2d(ctx: ImportContext, x: Operand, axes: list[int], out_shape: Sequence[int],
                mode: str) -> Operand:
    rank = x.rank
    if rank < 4:  # trailing unit axes make it 4-D without moving data
        x = reshape(ctx, x, (*x.shape, *([1] * (4 - rank))), "as_4d")
        out_shape = (*out_shape, *([1] * (4 - rank)))
    if len(axes) == 1:  # resample2d takes two axes: pair it with an unchanged one
        partner = next(a for a in (3, 2, 1, 0) if a not in axes)
        axes = sorted(axes + [partner])
    y = ctx.emit("resample2d", [x], {"mode": mode, "sizes": [int(out_shape[a]) for a in axes],
                                     "axes": axes})
    return reshape(ctx, y, y.shape[:rank], "from_4d") if rank < 4 else y


def _gathered_sum(ctx: ImportContext, x: Operand, axis: int, taps: _Taps) -> Operand:
    """sum over j of weight[o, j] * x[.., index[o, j], ..] along `axis`."""
    shape, out = x.shape, taps.index.shape[0]
    if taps.one_element:
        return ctx.emit("gather", [x, ctx.constant(taps.index[:, 0].astype(np.int32))],
                        {"axis": axis})
    if len(shape) + 1 > _WEBNN_RANKS:  # fold the other axes so the gathered taps fit rank 4
        before, after = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
        folded = reshape(ctx, x, (before, shape[axis], after), "fold")
        y = _gathered_sum(ctx, folded, 1, taps)
        return reshape(ctx, y, (*shape[:axis], out, *shape[axis + 1:]), "unfold")
    gathered = ctx.emit("gather", [x, ctx.constant(taps.index.astype(np.int32))],
                        {"axis": axis})
    weight = taps.weight.astype(np.float32).reshape(
        taps.weight.shape + (1,) * (len(shape) - 1 - axis))
    products = ctx.emit("mul", [gathered, ctx.constant(weight, "float32")])
    return ctx.emit("reduceSum", [products], {"axes": [axis + 1]})


def _separable(ctx: ImportContext, x: Operand, plan: list[tuple[int, _Taps]],
               method: _Method) -> Operand:
    """Each resized axis in turn: gathers, weighted sums and extrapolation."""
    dtype = x.data_type
    arithmetic = any(not t.one_element or t.outside is not None for _, t in plan)
    y = x
    if arithmetic and dtype != "float32":
        if dtype not in _VIA_FLOAT32:
            raise Unsupported(f"input is {dtype}: its interpolated values would be computed in "
                              f"float32, which does not hold every {dtype} value exactly")
        y = ctx.emit("cast", [y], {"dataType": "float32"})
    for axis, taps in plan:
        y = _gathered_sum(ctx, y, axis, taps)
        if taps.outside is not None:
            mask = taps.outside.astype(np.uint8).reshape((-1,) + (1,) * (x.rank - 1 - axis))
            y = ctx.emit("where", [ctx.constant(mask, "uint8"),
                                   ctx.scalar(method.extrapolation, y.data_type), y])
    if y.data_type != dtype:
        bounds = _VIA_FLOAT32[dtype]
        if bounds is not None:  # ONNX rounds half to even and saturates
            y = ctx.emit("roundEven", [y])
            y = ctx.emit("clamp", [y], {"minValue": bounds[0], "maxValue": bounds[1]})
        y = ctx.emit("cast", [y], {"dataType": dtype})
    return y


def _resize(ctx: ImportContext, x: Operand, out_shape: Sequence[int],
            scales: Sequence[Fraction], method: _Method,
            roi: Sequence[tuple[Fraction, Fraction]] | None = None) -> Operand:
    """`method` is checked (Resize) or fixed (Resize-10, Upsample) by the caller."""
    if any(d <= 0 for d in out_shape):
        raise Unsupported(f"output shape {list(out_shape)} has a 0 dimension; WebNN has no "
                          f"empty tensors")
    roi = roi or [_NO_CROP] * x.rank
    resized = []
    for a, (size, out, scale) in enumerate(zip(x.shape, out_shape, scales)):
        cropping = method.transform == "tf_crop_and_resize" and roi[a] != _NO_CROP
        if out != size or scale != 1 or cropping:  # else ONNX leaves this axis as it is
            resized.append(a)
    positions = sum(out_shape[a] for a in resized)
    if positions > _MAX_POSITIONS:  # before the exact arithmetic runs through them one by one
        raise Unsupported(f"it resizes to {positions} positions along its resized axes "
                          f"(output shape {list(out_shape)}); the converter computes at most "
                          f"{_MAX_POSITIONS}")
    plan = [(a, _axis_taps(method, x.shape[a], out_shape[a], scales[a], roi[a]))
            for a in resized]
    if not plan:
        return ctx.emit("identity", [x])
    mode = _resample2d_mode(x, plan, out_shape)
    if mode is not None:
        return _resample2d(ctx, x, [a for a, _ in plan], out_shape, mode)
    return _separable(ctx, x, plan, method)


def _known_list(ctx: ImportContext, name: str | None, what: str) -> np.ndarray | None:
    """An optional Resize input given as a non-empty constant, or None when absent/empty."""
    if name is None:
        return None
    if ctx.is_known(name) and ctx.known(name).size == 0:
        return None
    return ctx.require_known(name, what).reshape(-1)


def _output_geometry(node: OnnxNode, shape: Sequence[int], scales, sizes, axes):
    """ONNX's output shape and per-axis scale (the one its coordinate transforms divide by),
    exactly: a given scale is the float32 ONNX stores, one derived from sizes a quotient."""
    rank = len(shape)
    out, factors = list(shape), [Fraction(1)] * rank
    if scales is not None:
        if len(scales) != len(axes):
            raise Unsupported(f"scales has {len(scales)} values for {len(axes)} axes")
        for a, s in zip(axes, scales):
            if s <= 0:
                raise Unsupported(f"scale {s} is not positive")
            if not math.isfinite(s):  # an exact rational has no infinity
                raise Unsupported(f"scale {s} is not a finite number")
            factors[a] = Fraction(float(np.float32(s)))
            out[a] = math.floor(shape[a] * factors[a])
        return out, factors
    if sizes is None:
        raise Unsupported("neither scales nor sizes is given")
    if len(sizes) != len(axes):
        raise Unsupported(f"sizes has {len(sizes)} values for {len(axes)} axes")
    policy = node.attr("keep_aspect_ratio_policy", "stretch")
    if policy == "stretch":
        for a, size in zip(axes, sizes):
            out[a] = int(size)
            factors[a] = Fraction(int(size), shape[a])
        return out, factors
    if policy not in ("not_larger", "not_smaller"):
        raise Unsupported(f"keep_aspect_ratio_policy '{policy}' is unknown")
    ratios = [Fraction(int(size), shape[a]) for a, size in zip(axes, sizes)]
    common = min(ratios) if policy == "not_larger" else max(ratios)
    for a in axes:
        factors[a] = common
        out[a] = math.floor(shape[a] * common + Fraction(1, 2))  # ONNX rounds half up
    return out, factors


def _region(ctx: ImportContext, node: OnnxNode, rank: int, axes: list[int]):
    """tf_crop_and_resize's region of interest per axis as (start, end), normalized."""
    roi = _known_list(ctx, node.input(1), "roi")
    if roi is None:
        raise Unsupported("coordinate_transformation_mode 'tf_crop_and_resize' needs roi")
    if len(roi) != 2 * len(axes):
        raise Unsupported(f"roi has {len(roi)} values for {len(axes)} axes (starts, then ends)")
    region = [_NO_CROP] * rank
    if not np.all(np.isfinite(roi)):  # an exact rational has no infinity
        raise Unsupported(f"roi {[float(v) for v in roi]} holds a value that is not finite")
    for i, a in enumerate(axes):
        region[a] = (Fraction(float(roi[i])), Fraction(float(roi[len(axes) + i])))
    return region


@onnx_op("Resize", since=10, webnn=("resample2d", "reshape", "identity", "gather", "mul",
                                    "reduceSum", "cast", "roundEven", "clamp"))
def resize_10(ctx: ImportContext, node: OnnxNode):
    # Opset 10: scales only, asymmetric coordinates, and (ONNX Runtime's reading of the
    # unspecified rounding) floor when upsampling, as Upsample does.
    x = ctx.operand(node.input(0))
    scales = _known_list(ctx, node.input(1), "scales")
    out, factors = _output_geometry(node, x.shape, scales, None, list(range(x.rank)))
    rounding = "floor" if all(f >= 1 for f in factors) else "ceil"
    mode = node.attr("mode", "nearest")
    if mode not in ("nearest", "linear"):  # cubic (and its cubic_coeff_a) came in opset 11
        raise Unsupported(f"mode '{mode}' is not a Resize-10 mode (nearest or linear)")
    method = _Method(mode, "asymmetric", rounding)
    return [_resize(ctx, x, out, factors, method)]


@onnx_op("Resize", since=11, webnn=("resample2d", "reshape", "identity", "gather", "mul",
                                    "reduceSum", "where", "cast", "roundEven", "clamp"))
def resize(ctx: ImportContext, node: OnnxNode):
    x = ctx.operand(node.input(0))
    method = _Method(
        mode=node.attr("mode", "nearest"),
        transform=node.attr("coordinate_transformation_mode", "half_pixel"),
        rounding=node.attr("nearest_mode", "round_prefer_floor"),
        cubic_a=float(node.attr("cubic_coeff_a", -0.75)),
        antialias=bool(node.attr("antialias", 0)),
        exclude_outside=bool(node.attr("exclude_outside", 0)),
        extrapolation=float(node.attr("extrapolation_value", 0.0)))
    method.check()  # before asking for inputs that would not help
    axes = node.attr("axes")
    axes = list(range(x.rank)) if axes is None else \
        [normalized_axis(a, x.rank, "axes item") for a in axes]
    roi = (_region(ctx, node, x.rank, axes) if method.transform == "tf_crop_and_resize"
           else None)
    scales = _known_list(ctx, node.input(2), "scales")
    sizes = _known_list(ctx, node.input(3), "sizes")
    out, factors = _output_geometry(node, x.shape, scales, sizes, axes)
    return [_resize(ctx, x, out, factors, method, roi)]


@onnx_op("Upsample", webnn=("resample2d", "reshape", "identity", "gather", "mul", "reduceSum",
                            "cast", "roundEven", "clamp"))
def upsample(ctx: ImportContext, node: OnnxNode):
    # Asymmetric coordinates, floor rounding (Upsample only enlarges).
    x = ctx.operand(node.input(0))
    if node.opset >= 9:
        scales = _known_list(ctx, node.input(1), "scales")
    else:  # opsets 7 and 8 (a model of an older opset with Upsample is refused when read)
        scales = node.attr("scales")
    out, factors = _output_geometry(node, x.shape, scales, None, list(range(x.rank)))
    mode = node.attr("mode", "nearest")
    if mode == "bilinear":  # the opset-1 spelling
        mode = "linear"
    if mode not in ("nearest", "linear"):
        raise Unsupported(f"mode '{mode}' is not an Upsample mode")
    return [_resize(ctx, x, out, factors, _Method(mode, "asymmetric", "floor"))]


# -- SpaceToDepth, DepthToSpace ------------------------------------------------------------
def _blocks(ctx: ImportContext, node: OnnxNode) -> tuple[Operand, int]:
    x = ctx.operand(node.input(0))
    if x.rank != 4:
        raise Unsupported(f"input rank {x.rank}: ONNX defines it for [N, C, H, W]")
    block = int(node.attr("blocksize"))
    if block <= 0:
        raise Unsupported(f"blocksize {block} is not positive")
    return x, block


@onnx_op("SpaceToDepth", webnn=("reshape", "transpose"))
def space_to_depth(ctx: ImportContext, node: OnnxNode):
    x, b = _blocks(ctx, node)
    n, c, h, w = x.shape
    if h % b or w % b:
        raise Unsupported(f"height {h} and width {w} must be multiples of blocksize {b}")
    mode = node.attr("mode", "DCR")
    blocks = reshape(ctx, x, (n, c, h // b, b, w // b, b), "blocks")
    # DCR: output channel = (row offset * b + column offset) * C + c;
    # CRD: output channel = c * b * b + row offset * b + column offset.
    if mode == "DCR":
        permutation = [0, 3, 5, 1, 2, 4]
    elif mode == "CRD":
        permutation = [0, 1, 3, 5, 2, 4]
    else:
        raise Unsupported(f"mode '{mode}' is not DCR or CRD")
    moved = ctx.emit("transpose", [blocks], {"permutation": permutation})
    return [reshape(ctx, moved, (n, c * b * b, h // b, w // b), "output")]


@onnx_op("DepthToSpace", webnn=("reshape", "transpose"))
def depth_to_space(ctx: ImportContext, node: OnnxNode):
    x, b = _blocks(ctx, node)
    n, c, h, w = x.shape
    if c % (b * b):
        raise Unsupported(f"{c} channels are not a multiple of blocksize^2 = {b * b}")
    mode = node.attr("mode", "DCR")
    depth = c // (b * b)
    # DCR reads channel (row offset * b + column offset) * depth + d; CRD reads
    # d * b * b + row offset * b + column offset.
    if mode == "DCR":
        blocks = reshape(ctx, x, (n, b, b, depth, h, w), "blocks")
        permutation = [0, 3, 4, 1, 5, 2]
    elif mode == "CRD":
        blocks = reshape(ctx, x, (n, depth, b, b, h, w), "blocks")
        permutation = [0, 1, 4, 2, 5, 3]
    else:
        raise Unsupported(f"mode '{mode}' is not DCR or CRD")
    moved = ctx.emit("transpose", [blocks], {"permutation": permutation})
    return [reshape(ctx, moved, (n, depth, h * b, w * b), "output")]
