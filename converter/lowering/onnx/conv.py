"""Lowerings of conv2d and convTranspose2d.

ONNX convolutions take nchw input and one filter layout each (oihw for Conv, iohw for
ConvTranspose), so other layouts are transposed on the way in (and nhwc results on the way
out). A transpose of a constant filter is folded by ONNX Runtime when the session loads.
"""
from __future__ import annotations

from ...ir import Operation
from .context import LoweringContext
from .registry import lowers

NHWC_TO_NCHW = (0, 3, 1, 2)
NCHW_TO_NHWC = (0, 2, 3, 1)

# Permutation that takes each filter layout to the one ONNX expects.
_CONV_FILTER = {"oihw": (0, 1, 2, 3), "hwio": (3, 2, 0, 1), "ohwi": (0, 3, 1, 2),
                "ihwo": (3, 0, 1, 2)}
_CONV_TRANSPOSE_FILTER = {"iohw": (0, 1, 2, 3), "hwoi": (3, 2, 0, 1), "ohwi": (3, 0, 1, 2)}


def onnx_pads(padding) -> list[int]:
    """WebNN [beginH, endH, beginW, endW] -> ONNX [beginH, beginW, endH, endW]."""
    b_h, e_h, b_w, e_w = padding
    return [b_h, b_w, e_h, e_w]


def _inputs(ctx: LoweringContext, op: Operation, layouts: dict[str, tuple[int, ...]]):
    x, w, bias = op.input("input"), op.input("filter"), op.input("bias")
    nhwc = op.attr("inputLayout") == "nhwc"
    xv = ctx.name_of(x)
    if nhwc:
        xv = ctx.transpose(xv, NHWC_TO_NCHW)
    wv = ctx.transpose(ctx.name_of(w), layouts[op.attr("filterLayout")])
    return x, xv, wv, ctx.name_of(bias), nhwc


@lowers("conv2d")
def conv2d(ctx: LoweringContext, op: Operation) -> list[str]:
    x, xv, wv, bv, nhwc = _inputs(ctx, op, _CONV_FILTER)
    y = ctx.typed("Conv", [xv, wv, bv], x.data_type,
                  pads=onnx_pads(op.attr("padding")),
                  strides=list(op.attr("strides")),
                  dilations=list(op.attr("dilations")),
                  group=int(op.attr("groups")))
    return [ctx.transpose(y, NCHW_TO_NHWC) if nhwc else y]


@lowers("convTranspose2d")
def conv_transpose2d(ctx: LoweringContext, op: Operation) -> list[str]:
    x, xv, wv, bv, nhwc = _inputs(ctx, op, _CONV_TRANSPOSE_FILTER)
    padding = list(op.attr("padding"))
    strides = list(op.attr("strides"))
    dilations = list(op.attr("dilations"))
    out_padding = list(op.attr("outputPadding"))
    sizes = op.attr("outputSizes")
    if sizes is not None:
        # Explicit sizes replace outputPadding: the padding is what makes the formula reach them
        # (ONNX's own output_shape attribute would recompute the pads instead).
        in_hw = x.shape[1:3] if nhwc else x.shape[2:4]
        w_desc = op.input("filter").shape
        layout = _CONV_TRANSPOSE_FILTER[op.attr("filterLayout")]
        k_hw = [w_desc[layout[2]], w_desc[layout[3]]]
        out_padding = []
        for i in range(2):
            base = ((in_hw[i] - 1) * strides[i] + (k_hw[i] - 1) * dilations[i] + 1
                    - padding[2 * i] - padding[2 * i + 1])
            # convTranspose2d's shape rule keeps outputSizes within [base, base + stride).
            out_padding.append(int(sizes[i]) - base)
    y = ctx.typed("ConvTranspose", [xv, wv, bv], x.data_type,
                  pads=onnx_pads(padding), strides=strides, dilations=dilations,
                  output_padding=out_padding, group=int(op.attr("groups")))
    return [ctx.transpose(y, NCHW_TO_NHWC) if nhwc else y]
