"""MediaPipe's geometry custom ops, as in its face landmark model with attention: a transform
matrix from landmarks (Landmarks2TransformMatrix), a crop of a feature map through it by
bilinear sampling (TransformTensorBilinear, and its version 1 TransformTensor), and landmarks
mapped back through it (TransformLandmarks).

The kernels are mediapipe/util/tflite/operations/{landmarks_to_transform_matrix,
transform_tensor_bilinear, transform_landmarks}.cc; their options are flexbuffer maps, read as
TensorFlow's GPU delegate (tensorflow/lite/delegates/gpu/common/mediapipe/) reads them for the
kernels. Each kernel reads the first two rows of a 4x4 row-major matrix; an input point
(x, y, 0, 1) maps to (row0 . p, row1 . p). The compositions follow the kernels' float32
arithmetic in the same order where WebNN has the same ops; where it has not (atan2, double
intermediates) they are said so below.
"""
from __future__ import annotations

import math

import numpy as np
from flatbuffers import flexbuffers

from ....ir import Operand
from ..context import ImportContext
from ..model_file import Operator
from ..registry import Unsupported, tflite_op
from ._common import emit, reshape


class _Options:
    """A custom op's flexbuffer map, read one key at a time (nothing is built from the
    buffer beyond what is asked for, and every failure is one reason)."""

    def __init__(self, op: Operator):
        raw = bytes(op.custom_options or b"")
        self._size = len(raw)
        try:
            self._map = flexbuffers.GetRoot(raw).AsMap if raw else None
        except Exception:  # a malformed buffer fails in many ways inside the reader
            self._map = None
        if self._map is None:
            raise Unsupported("its custom options are not a flexbuffer map")

    def _ref(self, key: str):
        try:
            return self._map[key]
        except KeyError:
            raise Unsupported(f"its custom options have no '{key}'") from None
        except Exception:
            raise Unsupported(f"its custom option '{key}' cannot be read") from None

    def has(self, key: str) -> bool:
        try:
            self._map[key]
            return True
        except Exception:
            return False

    def text(self, key: str) -> str:
        try:
            return str(self._ref(key).AsString)
        except Unsupported:
            raise
        except Exception:
            raise Unsupported(f"its custom option '{key}' is not a string") from None

    def number(self, key: str) -> float:
        ref = self._ref(key)
        try:
            if ref.IsFloat:
                return float(ref.AsFloat)
            if ref.IsInt:
                return int(ref.AsInt)
        except Exception:
            pass
        raise Unsupported(f"its custom option '{key}' is not a number")

    def integer(self, key: str) -> int:
        value = self.number(key)
        return int(value)  # the kernels read AsInt32, which truncates a float

    def integers(self, key: str) -> list[int]:
        ref = self._ref(key)
        try:
            vector = ref.AsTypedVector if ref.IsTypedVector else ref.AsVector
            if len(vector) > self._size:
                raise ValueError
            return [int(vector[i].AsInt) for i in range(len(vector))]
        except Exception:
            raise Unsupported(f"its custom option '{key}' is not a list of integers") from None


def _float32(ctx: ImportContext, k: int, what: str, rank: int | None = None) -> Operand:
    x = ctx.operand(k)
    if x.data_type != "float32" or (rank is not None and x.rank != rank):
        raise Unsupported(f"its {what} is {x.data_type} {list(x.shape)}; the kernel takes "
                          f"float32{f' of rank {rank}' if rank else ''}")
    return x


def _matrix_entries(ctx: ImportContext, k: int) -> list[Operand]:
    """The first two rows of the 4x4 matrix at input k, as eight [1] operands (the kernels
    read its first 8 floats, whatever its shape)."""
    m = _float32(ctx, k, "matrix")
    if m.size < 8:
        raise Unsupported(f"its matrix {list(m.shape)} has fewer than 8 values")
    flat = reshape(ctx, m, [m.size], "matrix_flat")
    return [ctx.emit("slice", [flat], {"starts": [i], "sizes": [1]}, suffix=f"m{i}")
            for i in range(8)]


def _scalar_op(ctx: ImportContext, op_type: str, a: Operand, b, suffix: str) -> Operand:
    if not isinstance(b, Operand):
        b = ctx.scalar(b, "float32")
    return emit(ctx, op_type, a, b, suffix=suffix)


# -- Landmarks2TransformMatrix -------------------------------------------------------------------
@tflite_op("CUSTOM:Landmarks2TransformMatrix",
           webnn=("reshape", "slice", "gather", "mul", "add", "sub", "div", "sqrt", "equal",
                  "where", "reduceMax", "reduceMin", "neg", "concat"))
def landmarks_to_transform_matrix(ctx: ImportContext, op: Operator):
    """Version 2 of the kernel: landmarks [1, N, 3] give the [1, 4, 4] matrix that maps an
    output_width x output_height crop back to the landmarks' space.

    rotation r = target - atan2(right - left) between two landmarks; the subset's points,
    rotated by r, give a box (size w, h and centre, rotated back); the matrix is
    shift(centre) * rotate(-r) * scale(scale_x w / out_w, scale_y h / out_h) * shift(-out / 2).
    WebNN has no atan2, and needs none: cos r and sin r follow from the unit vector between
    the two landmarks and the constants cos(target), sin(target) (the kernel's cosf(atan2f)
    and this differ by float32 rounding only). Landmarks that coincide give atan2(0, 0) = 0,
    as in the kernel.
    """
    if op.version != 2:
        raise Unsupported(f"version {op.version} of the op; version 2 is imported (version 1, "
                          f"which builds the matrix from atan of a slope, is not)")
    o = _Options(op)
    subset = o.integers("subset_idxs")
    left, right = o.integer("left_rotation_idx"), o.integer("right_rotation_idx")
    target = o.number("target_rotation_radians")
    out_h, out_w = o.integer("output_height"), o.integer("output_width")
    scale_x, scale_y = o.number("scale_x"), o.number("scale_y")
    if out_h <= 0 or out_w <= 0 or scale_x <= 0 or scale_y <= 0 or not subset:
        raise Unsupported(f"its options (output {out_h}x{out_w}, scale {scale_x}, {scale_y}, "
                          f"{len(subset)} subset indices) are ones the kernel refuses")
    landmarks = _float32(ctx, 0, "landmarks", rank=3)
    _, count, coords = landmarks.shape
    if landmarks.shape[0] != 1 or coords != 3:
        raise Unsupported(f"its landmarks are {list(landmarks.shape)}; the kernel reads "
                          f"[1, N, 3]")
    if len(subset) % 2:  # an odd count pairs the last index with itself
        subset = subset + subset[-1:]
    bad = [i for i in [left, right, *subset] if not 0 <= i < count]
    if bad:
        raise Unsupported(f"its landmark indices {bad} are outside the {count} landmarks")

    points = reshape(ctx, landmarks, [count, 3], "points")

    def coordinate(index: int, axis: int) -> Operand:  # [1, 1]
        return ctx.emit("slice", [points], {"starts": [index, axis], "sizes": [1, 1]},
                        suffix=f"landmark{index}_{'xy'[axis]}")

    dx = _scalar_op(ctx, "sub", coordinate(right, 0), coordinate(left, 0), "dx")
    dy = _scalar_op(ctx, "sub", coordinate(right, 1), coordinate(left, 1), "dy")
    length = emit(ctx, "sqrt", emit(ctx, "add", _scalar_op(ctx, "mul", dx, dx, "dx2"),
                                    _scalar_op(ctx, "mul", dy, dy, "dy2")), suffix="length")
    same = _scalar_op(ctx, "equal", length, 0.0, "coincide")
    cos_a = emit(ctx, "where", same, ctx.scalar(1, "float32"),
                 _scalar_op(ctx, "div", dx, length, "cos_angle"))
    sin_a = emit(ctx, "where", same, ctx.scalar(0, "float32"),
                 _scalar_op(ctx, "div", dy, length, "sin_angle"))
    cos_t, sin_t = np.float32(math.cos(target)), np.float32(math.sin(target))
    # r = target - angle: cos r = cos t cos a + sin t sin a, sin r = sin t cos a - cos t sin a.
    c = emit(ctx, "add", _scalar_op(ctx, "mul", cos_a, cos_t, "ct_ca"),
             _scalar_op(ctx, "mul", sin_a, sin_t, "st_sa"), suffix="cos_r")
    s = emit(ctx, "sub", _scalar_op(ctx, "mul", cos_a, sin_t, "st_ca"),
             _scalar_op(ctx, "mul", sin_a, cos_t, "ct_sa"), suffix="sin_r")

    chosen = emit(ctx, "gather", points, ctx.constant(np.array(subset, np.int32), "int32",
                                                      name=f"{ctx.out_tensor().name}/subset"),
                  axis=0, suffix="subset")
    px = ctx.emit("slice", [chosen], {"starts": [0, 0], "sizes": [len(subset), 1]},
                  suffix="subset_x")
    py = ctx.emit("slice", [chosen], {"starts": [0, 1], "sizes": [len(subset), 1]},
                  suffix="subset_y")
    # rotate(r) . (x, y, 1): (c x - s y, s x + c y)
    xr = emit(ctx, "sub", emit(ctx, "mul", c, px), emit(ctx, "mul", s, py), suffix="rotated_x")
    yr = emit(ctx, "add", emit(ctx, "mul", s, px), emit(ctx, "mul", c, py), suffix="rotated_y")
    box = {}
    for name, v in (("x", xr), ("y", yr)):
        box[f"max_{name}"] = emit(ctx, "reduceMax", v, axes=[0], keepDimensions=True)
        box[f"min_{name}"] = emit(ctx, "reduceMin", v, axes=[0], keepDimensions=True)
    width = emit(ctx, "sub", box["max_x"], box["min_x"], suffix="crop_width")
    height = emit(ctx, "sub", box["max_y"], box["min_y"], suffix="crop_height")
    mid_x = _scalar_op(ctx, "mul", emit(ctx, "add", box["min_x"], box["max_x"]), 0.5, "mid_x")
    mid_y = _scalar_op(ctx, "mul", emit(ctx, "add", box["min_y"], box["max_y"]), 0.5, "mid_y")
    # rotate(-r) . (mid, 1): (c x + s y, -s x + c y)
    crop_x = emit(ctx, "add", emit(ctx, "mul", c, mid_x), emit(ctx, "mul", s, mid_y),
                  suffix="crop_x")
    crop_y = emit(ctx, "sub", emit(ctx, "mul", c, mid_y), emit(ctx, "mul", s, mid_x),
                  suffix="crop_y")
    sx = _scalar_op(ctx, "div", _scalar_op(ctx, "mul", width, scale_x, "scaled_w"),
                    float(out_w), "scale_x")
    sy = _scalar_op(ctx, "div", _scalar_op(ctx, "mul", height, scale_y, "scaled_h"),
                    float(out_h), "scale_y")
    shift_x, shift_y = -out_w / 2.0, -out_h / 2.0
    a00, a01 = emit(ctx, "mul", c, sx), emit(ctx, "mul", s, sy)
    a10, a11 = emit(ctx, "neg", emit(ctx, "mul", s, sx)), emit(ctx, "mul", c, sy)
    t0 = emit(ctx, "add", emit(ctx, "add", _scalar_op(ctx, "mul", a00, shift_x, "a00_shift"),
                               _scalar_op(ctx, "mul", a01, shift_y, "a01_shift")), crop_x,
              suffix="t0")
    t1 = emit(ctx, "add", emit(ctx, "add", _scalar_op(ctx, "mul", a10, shift_x, "a10_shift"),
                               _scalar_op(ctx, "mul", a11, shift_y, "a11_shift")), crop_y,
              suffix="t1")
    zero = ctx.constant(np.zeros((1, 1), np.float32), "float32",
                        name=f"{ctx.out_tensor().name}/zero")
    rows = [ctx.emit("concat", [a00, a01, zero, t0], {"axis": 1}, suffix="row0"),
            ctx.emit("concat", [a10, a11, zero, t1], {"axis": 1}, suffix="row1"),
            ctx.constant(np.array([[0, 0, 1, 0], [0, 0, 0, 1]], np.float32), "float32",
                         name=f"{ctx.out_tensor().name}/rows23")]
    matrix = ctx.emit("concat", rows, {"axis": 0}, suffix="matrix")
    return [reshape(ctx, matrix, [1, 4, 4], "matrix_3d")]


# -- TransformTensorBilinear ---------------------------------------------------------------------
@tflite_op("CUSTOM:TransformTensorBilinear", "CUSTOM:TransformTensor",
           webnn=("reshape", "slice", "mul", "add", "sub", "floor", "lesser", "greater",
                  "logicalOr", "clamp", "cast", "gather", "where"))
def transform_tensor_bilinear(ctx: ImportContext, op: Operator):
    """Output pixel (x, y) samples the input at (row0 . (x, y, 0, 1), row1 . (x, y, 0, 1)),
    bilinearly; zero where that point leaves [0, W - 1] x [0, H - 1], and a neighbour past the
    last row or column reads as zero. The four neighbours are gathers from the input flattened
    to [H * W, C] at indices computed from the floored coordinates (clamped, so that every
    gather reads inside; the masks then zero what the kernel reads as zero).

    TransformTensorBilinear (version 2) first moves the matrix's translation by
    (m0 + m1 - 1) / 2 to align pixel centres; the kernel adds it in double, this in float32.
    Its blend mixes double and float too; here it is float32 throughout (a few ULPs apart).
    Only batch 0 is read and written, as in the kernel, so the batch must be 1."""
    align_centres = op.custom_code == "TransformTensorBilinear"
    if not align_centres:  # version 1 checks its mode; both take the output tensor's size
        o = _Options(op)
        if o.has("mode") and o.text("mode") != "bilinear":
            raise Unsupported(f"its mode is '{o.text('mode')}'; the kernel has 'bilinear' only")
    data = _float32(ctx, 0, "input", rank=4)
    batch, height, width, channels = data.shape
    out = ctx.out_tensor()
    if len(out.shape) != 4 or out.shape[0] != 1 or batch != 1 or out.shape[3] != channels:
        raise Unsupported(f"its input {list(data.shape)} and output {list(out.shape)} are not "
                          f"[1, H, W, C] and [1, h, w, C]: the kernel reads and writes batch "
                          f"0 only")
    if height * width >= 1 << 24:
        raise Unsupported(f"its input has {height * width} pixels; the sampling indices are "
                          f"computed in float32, exact below 2^24")
    out_h, out_w = int(out.shape[1]), int(out.shape[2])
    m = _matrix_entries(ctx, 1)
    shift_x, shift_y = m[3], m[7]
    if align_centres:
        def centred(a: Operand, b: Operand, t: Operand, axis: str) -> Operand:
            half = _scalar_op(ctx, "mul", emit(ctx, "add", a, b), 0.5, f"half_{axis}")
            return emit(ctx, "add", t, _scalar_op(ctx, "sub", half, 0.5, f"centre_{axis}"),
                        suffix=f"shift_{axis}")
        shift_x, shift_y = centred(m[0], m[1], m[3], "x"), centred(m[4], m[5], m[7], "y")
    grid_y, grid_x = np.meshgrid(np.arange(out_h, dtype=np.float32),
                                 np.arange(out_w, dtype=np.float32), indexing="ij")
    gx = ctx.constant(grid_x, "float32", name=f"{out.name}/grid_x")
    gy = ctx.constant(grid_y, "float32", name=f"{out.name}/grid_y")

    def mapped(a: Operand, b: Operand, t: Operand, axis: str) -> Operand:  # a x + b y + t
        return emit(ctx, "add", emit(ctx, "add", emit(ctx, "mul", a, gx),
                                     emit(ctx, "mul", b, gy)), t, suffix=f"source_{axis}")

    tx, ty = mapped(m[0], m[1], shift_x, "x"), mapped(m[4], m[5], shift_y, "y")
    outside = emit(ctx, "logicalOr",
                   emit(ctx, "logicalOr", _scalar_op(ctx, "lesser", tx, 0.0, "left_of"),
                        _scalar_op(ctx, "greater", tx, float(width - 1), "right_of")),
                   emit(ctx, "logicalOr", _scalar_op(ctx, "lesser", ty, 0.0, "above"),
                        _scalar_op(ctx, "greater", ty, float(height - 1), "below")),
                   suffix="outside")
    fx, fy = emit(ctx, "floor", tx, suffix="floor_x"), emit(ctx, "floor", ty, suffix="floor_y")
    right = emit(ctx, "sub", tx, fx, suffix="right_weight")
    lower = emit(ctx, "sub", ty, fy, suffix="lower_weight")
    # Inside, fx is in [0, W - 1]: only the neighbour at fx + 1 can fall off (fx = W - 1).
    has_right = _scalar_op(ctx, "lesser", fx, float(width - 1), "has_right")
    has_lower = _scalar_op(ctx, "lesser", fy, float(height - 1), "has_lower")
    flat = reshape(ctx, data, [height * width, channels], "pixels")
    lane = [out_h, out_w, 1]

    def column(f: Operand, step: int, size: int, axis: str) -> Operand:
        moved = f if step == 0 else _scalar_op(ctx, "add", f, float(step), f"{axis}_plus1")
        return emit(ctx, "clamp", moved, minValue=0.0, maxValue=float(size - 1),
                    suffix=f"{axis}{step}_clamped")

    xs = [column(fx, 0, width, "x"), column(fx, 1, width, "x")]
    ys = [column(fy, 0, height, "y"), column(fy, 1, height, "y")]
    zero = ctx.scalar(0, "float32")
    q = {}
    for dy in (0, 1):
        row = _scalar_op(ctx, "mul", ys[dy], float(width), f"row{dy}")
        for dx in (0, 1):
            index = emit(ctx, "cast", emit(ctx, "add", row, xs[dx], suffix=f"pixel{dy}{dx}"),
                         dataType="int32")
            value = emit(ctx, "gather", flat, index, axis=0, suffix=f"q{dy}{dx}")
            keep = [k for k, use in ((has_right, dx), (has_lower, dy)) if use]
            if keep:
                mask = keep[0] if len(keep) == 1 else emit(ctx, "logicalAnd", *keep)
                value = emit(ctx, "where", reshape(ctx, mask, lane, f"mask{dy}{dx}"), value,
                             zero)
            q[dy, dx] = value
    right3 = reshape(ctx, right, lane, "right_weight_3d")
    lower3 = reshape(ctx, lower, lane, "lower_weight_3d")
    left3 = emit(ctx, "sub", ctx.scalar(1, "float32"), right3, suffix="left_weight")
    upper3 = emit(ctx, "sub", ctx.scalar(1, "float32"), lower3, suffix="upper_weight")

    def blend(a: Operand, b: Operand, wa: Operand, wb: Operand, name: str) -> Operand:
        return emit(ctx, "add", emit(ctx, "mul", wa, a), emit(ctx, "mul", wb, b), suffix=name)

    upper_row = blend(q[0, 0], q[0, 1], left3, right3, "upper")
    lower_row = blend(q[1, 0], q[1, 1], left3, right3, "lower")
    value = blend(lower_row, upper_row, lower3, upper3, "bilinear")
    value = emit(ctx, "where", reshape(ctx, outside, lane, "outside_3d"), zero, value)
    return [reshape(ctx, value, [1, out_h, out_w, channels], "sampled")]


# -- TransformLandmarks --------------------------------------------------------------------------
@tflite_op("CUSTOM:TransformLandmarks",
           webnn=("reshape", "slice", "mul", "add", "concat"))
def transform_landmarks(ctx: ImportContext, op: Operator):
    """Each landmark's (x, y) mapped through the matrix: (m0 x + m1 y + m3, m4 x + m5 y + m7),
    z (if any) kept. Version 1 takes [1, H, W, C] with C a multiple of the `dimensions` option
    (2 or 3) and multiplies the translation by its `scale` option; version 2 takes [1, N, D]
    with D = 2 or 3. The kernel's third column meets the point's z = 0, so it drops out. Only
    batch 0 is written, as in the kernel, so the batch must be 1."""
    landmarks = _float32(ctx, 0, "landmarks")
    shape = list(landmarks.shape)
    if op.version == 1:
        o = _Options(op)
        dims = o.integer("dimensions") if o.has("dimensions") else 3
        scale = o.number("scale") if o.has("scale") else 1.0
        if len(shape) != 4 or scale == 0:
            raise Unsupported(f"version 1 takes [1, H, W, C] landmarks and a nonzero scale, "
                              f"not {shape} and {scale}")
    elif op.version == 2:
        if len(shape) != 3:
            raise Unsupported(f"version 2 takes [1, N, D] landmarks, not {shape}")
        dims, scale = shape[-1], 1.0
    else:
        raise Unsupported(f"version {op.version} of the op; versions 1 and 2 are imported")
    if dims not in (2, 3) or shape[-1] % dims or shape[0] != 1:
        raise Unsupported(f"its landmarks {shape} do not hold [1, ..., {dims}]-coordinate "
                          f"points (dimensions must be 2 or 3; the kernel writes batch 0 only)")
    m = _matrix_entries(ctx, 1)
    shift_x, shift_y = m[3], m[7]
    if scale != 1.0:
        shift_x = _scalar_op(ctx, "mul", shift_x, float(scale), "scaled_shift_x")
        shift_y = _scalar_op(ctx, "mul", shift_y, float(scale), "scaled_shift_y")
    points = reshape(ctx, landmarks, shape[:-1] + [shape[-1] // dims, dims], "points")
    rank = len(shape) + 1
    lead = shape[:-1] + [shape[-1] // dims]

    def coordinate(axis: int) -> Operand:
        return ctx.emit("slice", [points], {"starts": [0] * (rank - 1) + [axis],
                                            "sizes": lead + [1]}, suffix=f"coordinate{axis}")

    x, y = coordinate(0), coordinate(1)

    def mapped(a: Operand, b: Operand, t: Operand, axis: str) -> Operand:
        return emit(ctx, "add", emit(ctx, "add", emit(ctx, "mul", a, x), emit(ctx, "mul", b, y)),
                    t, suffix=f"mapped_{axis}")

    parts = [mapped(m[0], m[1], shift_x, "x"), mapped(m[4], m[5], shift_y, "y")]
    if dims == 3:
        parts.append(coordinate(2))
    moved = ctx.emit("concat", parts, {"axis": rank - 1})
    return [reshape(ctx, moved, shape, "landmarks")]

