"""MediaPipe's Landmarks2TransformMatrix: the matrix that maps a crop around some landmarks
back to the landmarks' space (kernel: mediapipe/util/tflite/operations/
landmarks_to_transform_matrix.cc, namespaces v1 and v2, chosen by the op's version). Its result
feeds TransformTensorBilinear and TransformLandmarks (mediapipe_geometry.py).

Both versions turn the landmarks by an angle found from two of them, take the box around a
subset of the turned landmarks, and build the matrix from its size and centre. WebNN has no
atan or atan2 and needs neither: the cosine and sine of those angles follow from the vector
between the two landmarks (the kernel's cosf(atan2f(...)) and this differ by float32 rounding).
The subset's indices come in pairs; an odd count pairs the last with itself.
"""
from __future__ import annotations

import math

import numpy as np

from ....ir import Operand
from ..context import ImportContext
from ..model_file import Operator
from ..registry import Unsupported, tflite_op
from ._common import emit, reshape
from ._mediapipe import CustomOptions, float32_input, scalar_op


@tflite_op("CUSTOM:Landmarks2TransformMatrix",
           webnn=("reshape", "slice", "gather", "mul", "add", "sub", "div", "sqrt", "abs",
                  "lesser", "equal", "where", "reduceMax", "reduceMin", "max", "min", "neg",
                  "concat"))
def landmarks_to_transform_matrix(ctx: ImportContext, op: Operator):
    if op.version == 2:
        return [_version_2(ctx, op)]
    if op.version == 1:
        return [_version_1(ctx, op)]
    raise Unsupported(f"version {op.version} of the op; the kernel has versions 1 and 2")


class _Landmarks:
    """The input as [N, 3] points, with the indices the options name checked against N."""

    def __init__(self, ctx: ImportContext, x: Operand, count: int, indices: list[int]):
        bad = [i for i in indices if not 0 <= i < count]
        if bad:
            raise Unsupported(f"its landmark indices {bad} are outside the {count} landmarks")
        self.ctx = ctx
        self.points = reshape(ctx, x, [count, 3], "points")

    def coordinate(self, index: int, axis: int) -> Operand:  # [1, 1]
        return self.ctx.emit("slice", [self.points], {"starts": [index, axis], "sizes": [1, 1]},
                             suffix=f"landmark{index}_{'xy'[axis]}")

    def direction(self, left: int, right: int) -> tuple[Operand, Operand, Operand]:
        """(dx, dy, length) of the vector from landmark `left` to landmark `right`."""
        ctx = self.ctx
        dx = scalar_op(ctx, "sub", self.coordinate(right, 0), self.coordinate(left, 0), "dx")
        dy = scalar_op(ctx, "sub", self.coordinate(right, 1), self.coordinate(left, 1), "dy")
        length = emit(ctx, "sqrt", emit(ctx, "add", scalar_op(ctx, "mul", dx, dx, "dx2"),
                                        scalar_op(ctx, "mul", dy, dy, "dy2")), suffix="length")
        return dx, dy, length

    def turned_box(self, subset: list[int], c: Operand, s: Operand) -> dict[str, Operand]:
        """min and max of x and y of the subset's points turned by the angle whose cosine and
        sine are c and s: (c x - s y, s x + c y), as the kernels' rotation matrices do."""
        ctx = self.ctx
        if len(subset) % 2:
            subset = subset + subset[-1:]
        chosen = emit(ctx, "gather", self.points,
                      ctx.constant(np.array(subset, np.int32), "int32",
                                   name=f"{ctx.out_tensor().name}/subset"), axis=0,
                      suffix="subset")
        px, py = (ctx.emit("slice", [chosen], {"starts": [0, axis], "sizes": [len(subset), 1]},
                           suffix=f"subset_{'xy'[axis]}") for axis in (0, 1))
        turned = {"x": emit(ctx, "sub", emit(ctx, "mul", c, px), emit(ctx, "mul", s, py),
                            suffix="turned_x"),
                  "y": emit(ctx, "add", emit(ctx, "mul", s, px), emit(ctx, "mul", c, py),
                            suffix="turned_y")}
        box = {}
        for axis, v in turned.items():
            box[f"max_{axis}"] = emit(ctx, "reduceMax", v, axes=[0], keepDimensions=True)
            box[f"min_{axis}"] = emit(ctx, "reduceMin", v, axes=[0], keepDimensions=True)
        return box


def _indices(o: CustomOptions, subset_key: str) -> tuple[list[int], int, int]:
    subset = o.integers(subset_key)
    if not subset:
        raise Unsupported(f"its '{subset_key}' is empty, which the kernel refuses")
    return subset, o.integer("left_rotation_idx"), o.integer("right_rotation_idx")


def _matrix(ctx: ImportContext, a00, a01, t0, a10, a11, t1) -> Operand:
    """[1, 4, 4] with rows (a00, a01, 0, t0), (a10, a11, 0, t1), (0, 0, 1, 0), (0, 0, 0, 1)."""
    name = ctx.out_tensor().name
    zero = ctx.constant(np.zeros((1, 1), np.float32), "float32", name=f"{name}/zero")
    rows = [ctx.emit("concat", [a00, a01, zero, t0], {"axis": 1}, suffix="row0"),
            ctx.emit("concat", [a10, a11, zero, t1], {"axis": 1}, suffix="row1"),
            ctx.constant(np.array([[0, 0, 1, 0], [0, 0, 0, 1]], np.float32), "float32",
                         name=f"{name}/rows23")]
    return reshape(ctx, ctx.emit("concat", rows, {"axis": 0}, suffix="matrix"), [1, 4, 4],
                   "matrix_3d")


def _version_2(ctx: ImportContext, op: Operator) -> Operand:
    """Landmarks [1, N, 3]. Turn r = target - atan2(right - left); the box's size (w, h) and
    centre turned back give shift(centre) * rotate(-r) * scale(scale_x w / out_w,
    scale_y h / out_h) * shift(-out_w / 2, -out_h / 2). Landmarks that coincide give
    atan2(0, 0) = 0, as in the kernel."""
    o = CustomOptions(op)
    subset, left, right = _indices(o, "subset_idxs")
    target = o.number("target_rotation_radians")
    out_h, out_w = o.integer("output_height"), o.integer("output_width")
    scale_x, scale_y = o.number("scale_x"), o.number("scale_y")
    if out_h <= 0 or out_w <= 0 or scale_x <= 0 or scale_y <= 0:
        raise Unsupported(f"its options (output {out_h}x{out_w}, scale {scale_x}, {scale_y}) "
                          f"are ones the kernel refuses")
    x = float32_input(ctx, 0, "landmarks", rank=3)
    if x.shape[0] != 1 or x.shape[2] != 3:
        raise Unsupported(f"its landmarks are {list(x.shape)}; version 2 reads [1, N, 3]")
    marks = _Landmarks(ctx, x, x.shape[1], [left, right, *subset])
    dx, dy, length = marks.direction(left, right)
    same = scalar_op(ctx, "equal", length, 0.0, "coincide")
    cos_a = emit(ctx, "where", same, ctx.scalar(1, "float32"),
                 scalar_op(ctx, "div", dx, length, "cos_angle"))
    sin_a = emit(ctx, "where", same, ctx.scalar(0, "float32"),
                 scalar_op(ctx, "div", dy, length, "sin_angle"))
    cos_t, sin_t = np.float32(math.cos(target)), np.float32(math.sin(target))
    # r = target - a: cos r = cos t cos a + sin t sin a, sin r = sin t cos a - cos t sin a.
    c = emit(ctx, "add", scalar_op(ctx, "mul", cos_a, cos_t, "ct_ca"),
             scalar_op(ctx, "mul", sin_a, sin_t, "st_sa"), suffix="cos_r")
    s = emit(ctx, "sub", scalar_op(ctx, "mul", cos_a, sin_t, "st_ca"),
             scalar_op(ctx, "mul", sin_a, cos_t, "ct_sa"), suffix="sin_r")
    box = marks.turned_box(subset, c, s)
    width = emit(ctx, "sub", box["max_x"], box["min_x"], suffix="crop_width")
    height = emit(ctx, "sub", box["max_y"], box["min_y"], suffix="crop_height")
    mid_x = scalar_op(ctx, "mul", emit(ctx, "add", box["min_x"], box["max_x"]), 0.5, "mid_x")
    mid_y = scalar_op(ctx, "mul", emit(ctx, "add", box["min_y"], box["max_y"]), 0.5, "mid_y")
    # rotate(-r) . (mid, 1): (c x + s y, -s x + c y)
    crop_x = emit(ctx, "add", emit(ctx, "mul", c, mid_x), emit(ctx, "mul", s, mid_y),
                  suffix="crop_x")
    crop_y = emit(ctx, "sub", emit(ctx, "mul", c, mid_y), emit(ctx, "mul", s, mid_x),
                  suffix="crop_y")
    sx = scalar_op(ctx, "div", scalar_op(ctx, "mul", width, scale_x, "scaled_w"),
                   float(out_w), "scale_x")
    sy = scalar_op(ctx, "div", scalar_op(ctx, "mul", height, scale_y, "scaled_h"),
                   float(out_h), "scale_y")
    shift_x, shift_y = -out_w / 2.0, -out_h / 2.0
    a00, a01 = emit(ctx, "mul", c, sx), emit(ctx, "mul", s, sy)
    a10, a11 = emit(ctx, "neg", emit(ctx, "mul", s, sx)), emit(ctx, "mul", c, sy)
    t0 = emit(ctx, "add", emit(ctx, "add", scalar_op(ctx, "mul", a00, shift_x, "a00_shift"),
                               scalar_op(ctx, "mul", a01, shift_y, "a01_shift")), crop_x,
              suffix="t0")
    t1 = emit(ctx, "add", emit(ctx, "add", scalar_op(ctx, "mul", a10, shift_x, "a10_shift"),
                               scalar_op(ctx, "mul", a11, shift_y, "a11_shift")), crop_y,
              suffix="t1")
    return _matrix(ctx, a00, a01, t0, a10, a11, t1)


def _version_1(ctx: ImportContext, op: Operator) -> Operand:
    """Landmarks [1, 1, 1, 3N]. Turn a = -atan(slope from left to right); the box of the
    turned subset (its bounds start at -100000 and 100000, as in the kernel), times
    bbox_size_multiplier, gives the inverse transform
    to_absolute(input_hw) * rotate(-a, box centre in [-1, 1]) * scale(box / landmarks_range)
    * to_relative(output_hw), written out here entry by entry.

    cos a = |dx| / length and sin a = -sign(dx) dy / length (atan of dy / dx: -pi/2 to pi/2);
    a vertical pair (dx = 0) is atan(+-inf) = +-pi/2 here and in the kernel (whose cosf of
    it is -4e-8, not 0)."""
    o = CustomOptions(op)
    subset, left, right = _indices(o, "subset")
    input_hw, output_hw = o.integers("input_hw"), o.integers("output_hw")
    dimensions, span = o.integer("dimensions"), o.integer("landmarks_range")
    multiplier = o.number("bbox_size_multiplier")
    if len(input_hw) < 2 or len(output_hw) < 2 or min(*input_hw[:2], *output_hw[:2]) <= 0 \
            or dimensions != 3 or span <= 0 or multiplier == 0:
        raise Unsupported(f"its options (input_hw {input_hw}, output_hw {output_hw}, "
                          f"dimensions {dimensions}, landmarks_range {span}, "
                          f"bbox_size_multiplier {multiplier}) are ones the kernel refuses")
    x = float32_input(ctx, 0, "landmarks", rank=4)
    if list(x.shape[:3]) != [1, 1, 1] or x.shape[3] % 3:
        raise Unsupported(f"its landmarks are {list(x.shape)}; version 1 reads "
                          f"[1, 1, 1, 3N]")
    marks = _Landmarks(ctx, x, x.shape[3] // 3, [left, right, *subset])
    dx, dy, length = marks.direction(left, right)
    c = emit(ctx, "div", emit(ctx, "abs", dx), length, suffix="cos_a")
    sign = emit(ctx, "where", scalar_op(ctx, "lesser", dx, 0.0, "leftward"),
                ctx.scalar(1, "float32"), ctx.scalar(-1, "float32"), suffix="minus_sign_dx")
    s = emit(ctx, "div", emit(ctx, "mul", sign, dy), length, suffix="sin_a")
    box = marks.turned_box(subset, c, s)
    high_x = scalar_op(ctx, "max", box["max_x"], -100000.0, "high_x")
    high_y = scalar_op(ctx, "max", box["max_y"], -100000.0, "high_y")
    low_x = scalar_op(ctx, "min", box["min_x"], 100000.0, "low_x")
    low_y = scalar_op(ctx, "min", box["min_y"], 100000.0, "low_y")
    sx = scalar_op(ctx, "div", scalar_op(ctx, "mul", emit(ctx, "sub", high_x, low_x), multiplier,
                                         "box_w"), float(span), "scale_x")
    sy = scalar_op(ctx, "div", scalar_op(ctx, "mul", emit(ctx, "sub", high_y, low_y), multiplier,
                                         "box_h"), float(span), "scale_y")
    mid_x = scalar_op(ctx, "mul", emit(ctx, "add", high_x, low_x), 0.5, "mid_x")
    mid_y = scalar_op(ctx, "mul", emit(ctx, "add", high_y, low_y), 0.5, "mid_y")
    # rotate(-a) . mid: (c x + s y, -s x + c y), then to [-1, 1]: v / range * 2 - 1
    turned_x = emit(ctx, "add", emit(ctx, "mul", mid_x, c), emit(ctx, "mul", mid_y, s))
    turned_y = emit(ctx, "sub", emit(ctx, "mul", mid_y, c), emit(ctx, "mul", mid_x, s))

    def relative(v: Operand, axis: str) -> Operand:
        scaled = scalar_op(ctx, "mul", scalar_op(ctx, "div", v, float(span), f"r{axis}"), 2.0,
                           f"r{axis}2")
        return scalar_op(ctx, "sub", scaled, 1.0, f"centre_{axis}")

    tx, ty = relative(turned_x, "x"), relative(turned_y, "y")
    # rotation [[c, s, tx], [-s, c, ty]] * diag(sx, sy) * to_relative [[p, 0, -1], [0, q, -1]]
    # then to_absolute [[u, 0, u], [0, v, v]]: row 0 = u (row 0 + row 2), row 1 likewise.
    p, q = 2.0 / (output_hw[1] - 1.0), 2.0 / (output_hw[0] - 1.0)
    u, v = (input_hw[1] - 1.0) / 2.0, (input_hw[0] - 1.0) / 2.0
    c_sx, s_sy = emit(ctx, "mul", c, sx), emit(ctx, "mul", s, sy)
    s_sx, c_sy = emit(ctx, "mul", s, sx), emit(ctx, "mul", c, sy)
    a00 = scalar_op(ctx, "mul", c_sx, u * p, "a00")
    a01 = scalar_op(ctx, "mul", s_sy, u * q, "a01")
    a10 = scalar_op(ctx, "mul", s_sx, -v * p, "a10")
    a11 = scalar_op(ctx, "mul", c_sy, v * q, "a11")
    # translation: u (tx - c sx - s sy + 1) and v (ty + s sx - c sy + 1)
    t0 = scalar_op(ctx, "mul", scalar_op(ctx, "add", emit(ctx, "sub", emit(
        ctx, "sub", tx, c_sx), s_sy), 1.0, "t0_sum"), u, "t0")
    t1 = scalar_op(ctx, "mul", scalar_op(ctx, "add", emit(ctx, "sub", emit(
        ctx, "add", ty, s_sx), c_sy), 1.0, "t1_sum"), v, "t1")
    return _matrix(ctx, a00, a01, t0, a10, a11, t1)
