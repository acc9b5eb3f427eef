"""Lowering of resample2d to ONNX Resize.

The spec maps output coordinate o to input coordinate
    c = clamp((o + 0.5) / scale - 0.5, 0, inputSize - 1),  scale = outputSize / inputSize,
which is Resize's "half_pixel" transform with the scale taken from the output size (so the
lowering passes `sizes`, never `scales`). Nearest-neighbor picks ceil(c - 0.5), i.e. halves
round down: nearest_mode "round_prefer_floor". Linear is bilinear on the clamped coordinate,
which is how ONNX Runtime's half_pixel linear resize treats the border.

ONNX Runtime's linear resize only works on the two innermost axes (or nhwc's 1 and 2), so for
other axes the input is transposed to put them last and transposed back afterwards.
"""
from __future__ import annotations

from ...ir import Operation
from .context import Keep, LoweringContext
from .registry import lowers


@lowers("resample2d")
def resample2d(ctx: LoweringContext, op: Operation) -> list[str]:
    x = op.input("input")
    dt = x.data_type
    axes = [int(a) for a in op.attr("axes")]
    out_shape = list(op.output.shape)
    linear = op.attr("mode") == "linear"
    xv = ctx.name_of(x)
    perm = None
    if linear and sorted(axes) != [2, 3]:
        rest = [a for a in range(4) if a not in axes]
        perm = rest + sorted(axes)
        xv = ctx.transpose(xv, perm)
        out_shape = [out_shape[p] for p in perm]
    attrs = dict(coordinate_transformation_mode="half_pixel")
    if linear:
        attrs["mode"] = "linear"
    else:
        attrs.update(mode="nearest", nearest_mode="round_prefer_floor")
    sizes = Keep(ctx.int64s(out_shape))
    y = ctx.typed("Resize", [xv, "", "", sizes], dt, constraint="T1", **attrs)
    if perm is not None:
        inverse = [perm.index(i) for i in range(4)]
        y = ctx.transpose(y, inverse)
    return [y]
