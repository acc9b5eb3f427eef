"""MediaPipe's geometry custom ops, as in its face landmark model with attention: a crop of a
feature map through a transform matrix by bilinear sampling (TransformTensorBilinear, and its
version 1 TransformTensor) and landmarks mapped through one (TransformLandmarks); the matrix
comes from Landmarks2TransformMatrix (mediapipe_matrix.py).

The kernels are mediapipe/util/tflite/operations/{transform_tensor_bilinear,
transform_landmarks}.cc; their options are flexbuffer maps, read as TensorFlow's GPU delegate
(tensorflow/lite/delegates/gpu/common/mediapipe/) reads them for the kernels. Each kernel reads
the first two rows of a 4x4 row-major matrix; an input point (x, y, 0, 1) maps to
(row0 . p, row1 . p). The compositions follow the kernels' float32 arithmetic in the same
order; where the kernels compute in double, that is said below.
"""
from __future__ import annotations

import numpy as np

from ....ir import Operand
from ..context import ImportContext
from ..model_file import Operator
from ..registry import Unsupported, tflite_op
from ._common import emit, reshape
from ._mediapipe import CustomOptions, float32_input, matrix_entries, scalar_op


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
        o = CustomOptions(op)
        if o.has("mode") and o.text("mode") != "bilinear":
            raise Unsupported(f"its mode is '{o.text('mode')}'; the kernel has 'bilinear' only")
    data = float32_input(ctx, 0, "input", rank=4)
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
    if out_h * out_w > 1 << 24:  # the sampling grid is two constants of that size
        raise Unsupported(f"its output has {out_h * out_w} pixels; the sampling grid is built "
                          f"for up to 2^24")
    m = matrix_entries(ctx, 1)
    shift_x, shift_y = m[3], m[7]
    if align_centres:
        def centred(a: Operand, b: Operand, t: Operand, axis: str) -> Operand:
            half = scalar_op(ctx, "mul", emit(ctx, "add", a, b), 0.5, f"half_{axis}")
            return emit(ctx, "add", t, scalar_op(ctx, "sub", half, 0.5, f"centre_{axis}"),
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
                   emit(ctx, "logicalOr", scalar_op(ctx, "lesser", tx, 0.0, "left_of"),
                        scalar_op(ctx, "greater", tx, float(width - 1), "right_of")),
                   emit(ctx, "logicalOr", scalar_op(ctx, "lesser", ty, 0.0, "above"),
                        scalar_op(ctx, "greater", ty, float(height - 1), "below")),
                   suffix="outside")
    fx, fy = emit(ctx, "floor", tx, suffix="floor_x"), emit(ctx, "floor", ty, suffix="floor_y")
    right = emit(ctx, "sub", tx, fx, suffix="right_weight")
    lower = emit(ctx, "sub", ty, fy, suffix="lower_weight")
    # Inside, fx is in [0, W - 1]: only the neighbour at fx + 1 can fall off (fx = W - 1).
    has_right = scalar_op(ctx, "lesser", fx, float(width - 1), "has_right")
    has_lower = scalar_op(ctx, "lesser", fy, float(height - 1), "has_lower")
    flat = reshape(ctx, data, [height * width, channels], "pixels")
    lane = [out_h, out_w, 1]

    def column(f: Operand, step: int, size: int, axis: str) -> Operand:
        moved = f if step == 0 else scalar_op(ctx, "add", f, float(step), f"{axis}_plus1")
        return emit(ctx, "clamp", moved, minValue=0.0, maxValue=float(size - 1),
                    suffix=f"{axis}{step}_clamped")

    xs = [column(fx, 0, width, "x"), column(fx, 1, width, "x")]
    ys = [column(fy, 0, height, "y"), column(fy, 1, height, "y")]
    zero = ctx.scalar(0, "float32")
    q = {}
    for dy in (0, 1):
        row = scalar_op(ctx, "mul", ys[dy], float(width), f"row{dy}")
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
    landmarks = float32_input(ctx, 0, "landmarks")
    shape = list(landmarks.shape)
    if op.version == 1:
        o = CustomOptions(op)
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
    m = matrix_entries(ctx, 1)
    shift_x, shift_y = m[3], m[7]
    if scale != 1.0:
        shift_x = scalar_op(ctx, "mul", shift_x, float(scale), "scaled_shift_x")
        shift_y = scalar_op(ctx, "mul", shift_y, float(scale), "scaled_shift_y")
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

