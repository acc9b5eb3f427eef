"""com.microsoft contrib ops around transformers: (Skip)(Simplified)LayerNormalization (and
ai.onnx SimplifiedLayerNormalization and RMSNormalization), the Gelu family and FusedMatMul. Their semantics are ONNX
Runtime's, which defines them; the tests compare against it."""
from __future__ import annotations

import math

import onnx

from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..registry import Unsupported, onnx_op
from ..tensor_data import onnx_dtype_name
from ._emit import MS, emit, scalar_like, transpose
from .normalization import in_float32


def _rms_normalize(ctx, x: Operand, scale: Operand, axes: list[int], epsilon: float,
                   compute_type: str):
    """x / sqrt(mean(x^2) + epsilon) * scale, computed in compute_type; also 1/sqrt(...)."""
    original = x.data_type
    if original != compute_type:
        x = emit(ctx, "cast", x, dataType=compute_type)
    mean = emit(ctx, "reduceMean", emit(ctx, "mul", x, x), axes=axes, keepDimensions=True)
    inv = emit(ctx, "reciprocal", emit(ctx, "sqrt", emit(ctx, "add", mean, scalar_like(ctx, epsilon, mean))))
    y = emit(ctx, "mul", x, inv)
    if original != compute_type:
        y = emit(ctx, "cast", y, dataType=original)
    return emit(ctx, "mul", y, scale), inv


def _stash_type(node: OnnxNode, x: Operand) -> str:
    stash = int(node.attr("stash_type", 1))
    if stash == onnx.TensorProto.FLOAT:
        return "float32"
    if stash == onnx.TensorProto.FLOAT16 or stash == 0:
        return x.data_type
    raise Unsupported(f"stash_type {onnx_dtype_name(stash)} is not a WebNN type")


def _simplified_layer_norm(ctx: ImportContext, node: OnnxNode):
    x, scale = ctx.operand(node.input(0)), ctx.operand(node.input(1))
    axis = int(node.attr("axis", -1)) % max(x.rank, 1)
    y, inv = _rms_normalize(ctx, x, scale, list(range(axis, x.rank)),
                            float(node.attr("epsilon", 1e-5)), _stash_type(node, x))
    return [y, inv]


_NORM_OPS = ("reduceMean", "mul", "add", "sqrt", "reciprocal", "cast")
onnx_op("SimplifiedLayerNormalization", webnn=_NORM_OPS)(_simplified_layer_norm)
onnx_op("SimplifiedLayerNormalization", domain=MS, webnn=_NORM_OPS)(_simplified_layer_norm)


@onnx_op("RMSNormalization", since=23, webnn=_NORM_OPS)
def rms_normalization(ctx: ImportContext, node: OnnxNode):
    """ONNX's RMSNormalization: the same formula as SimplifiedLayerNormalization (statistics in
    stash_type, normalized value cast back, then times the broadcast scale), one output."""
    x, scale = ctx.operand(node.input(0)), ctx.operand(node.input(1))
    axis = int(node.attr("axis", -1))
    if not -x.rank <= axis < x.rank:
        raise Unsupported(f"axis {axis} is out of range for rank {x.rank}")
    y, _ = _rms_normalize(ctx, x, scale, list(range(axis % x.rank, x.rank)),
                          float(node.attr("epsilon", 1e-5)), _stash_type(node, x))
    return [y]


def _skip_sum(ctx, node: OnnxNode, bias_index: int) -> Operand:
    s = emit(ctx, "add", ctx.operand(node.input(0)), ctx.operand(node.input(1)))
    if node.input(bias_index) is not None:
        s = emit(ctx, "add", s, ctx.operand(node.input(bias_index)))
    return s


@onnx_op("SkipSimplifiedLayerNormalization", domain=MS, webnn=_NORM_OPS)
def skip_simplified_layer_norm(ctx: ImportContext, node: OnnxNode):
    if len(node.outputs) > 1 and node.outputs[1] is not None:
        raise Unsupported("the mean output is not defined for a simplified layer norm")
    s = _skip_sum(ctx, node, 3)
    # ONNX Runtime accumulates float16 inputs in float32.
    y, inv = _rms_normalize(ctx, s, ctx.operand(node.input(2)), [s.rank - 1],
                            float(node.attr("epsilon", 1e-12)), "float32")
    return [y, None, inv, s]


@onnx_op("SkipLayerNormalization", domain=MS,
         webnn=("add", "layerNormalization", "reduceMean", "sub", "mul", "sqrt", "reciprocal",
                "cast"))
def skip_layer_norm(ctx: ImportContext, node: OnnxNode):
    s = _skip_sum(ctx, node, 4)
    epsilon = float(node.attr("epsilon", 1e-12))
    beta = ctx.operand(node.input(3)) if node.input(3) is not None else None
    last = [s.rank - 1]
    # ONNX Runtime normalizes float16 in float32 (float16 would lose an epsilon of 1e-12)
    y = in_float32(ctx, "layerNormalization", s, [ctx.operand(node.input(2)), beta],
                   {"axes": last, "epsilon": epsilon})
    mean = inv = None
    wants = [len(node.outputs) > i and node.outputs[i] is not None for i in (1, 2)]
    if any(wants):  # statistics in float32, as ONNX Runtime gives them
        s32 = s if s.data_type == "float32" else emit(ctx, "cast", s, dataType="float32")
        mean = emit(ctx, "reduceMean", s32, axes=last, keepDimensions=True)
        centered = emit(ctx, "sub", s32, mean)
        var = emit(ctx, "reduceMean", emit(ctx, "mul", centered, centered), axes=last,
                 keepDimensions=True)
        inv = emit(ctx, "reciprocal", emit(ctx, "sqrt", emit(ctx, "add", var, scalar_like(ctx, epsilon, var))))
    return [y, mean, inv, s]


# -- the Gelu family and FusedMatMul ------------------------------------------------------------
@onnx_op("Gelu", domain=MS, webnn=("gelu",))
def ms_gelu(ctx: ImportContext, node: OnnxNode):
    return [emit(ctx, "gelu", ctx.operand(node.input(0)))]


@onnx_op("BiasGelu", domain=MS, webnn=("add", "gelu"))
def bias_gelu(ctx: ImportContext, node: OnnxNode):
    a, b = ctx.operand(node.input(0)), ctx.operand(node.input(1))
    return [emit(ctx, "gelu", emit(ctx, "add", a, b))]


@onnx_op("FastGelu", domain=MS, webnn=("add", "mul", "tanh"))
def fast_gelu(ctx: ImportContext, node: OnnxNode):
    """The tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); WebNN's gelu
    is the exact erf form, so it is written out."""
    x = ctx.operand(node.input(0))
    if node.input(1) is not None:
        x = emit(ctx, "add", x, ctx.operand(node.input(1)))
    cube = emit(ctx, "mul", emit(ctx, "mul", x, x), x)
    inner = emit(ctx, "add", x, emit(ctx, "mul", cube, scalar_like(ctx, 0.044715, x)))
    t = emit(ctx, "tanh", emit(ctx, "mul", inner, scalar_like(ctx, math.sqrt(2 / math.pi), x)))
    return [emit(ctx, "mul", emit(ctx, "mul", x, scalar_like(ctx, 0.5, x)), emit(ctx, "add", t, scalar_like(ctx, 1, x)))]


@onnx_op("QuickGelu", domain=MS, webnn=("mul", "sigmoid"))
def quick_gelu(ctx: ImportContext, node: OnnxNode):
    """x * sigmoid(alpha x)."""
    x = ctx.operand(node.input(0))
    alpha = float(node.attr("alpha", 1.702))
    return [emit(ctx, "mul", x, emit(ctx, "sigmoid", emit(ctx, "mul", x, scalar_like(ctx, alpha, x))))]


@onnx_op("FusedMatMul", domain=MS, webnn=("matmul", "transpose", "mul"))
def fused_matmul(ctx: ImportContext, node: OnnxNode):
    """alpha * op(A) op(B), op transposing the last two axes when transA / transB is set."""
    if node.attr("transBatchA", 0) or node.attr("transBatchB", 0):
        raise Unsupported("transBatchA/transBatchB are not supported")
    a, b = ctx.operand(node.input(0)), ctx.operand(node.input(1))
    if a.rank < 2 or b.rank < 2:
        raise Unsupported("1-D operands: WebNN's matmul takes matrices (rank 2 or more)")

    def last_two_swapped(x: Operand) -> Operand:
        perm = list(range(x.rank))
        perm[-2:] = perm[-1], perm[-2]
        return transpose(ctx, x, perm)

    if node.attr("transA", 0):
        a = last_two_swapped(a)
    if node.attr("transB", 0):
        b = last_two_swapped(b)
    y = emit(ctx, "matmul", a, b)
    alpha = float(node.attr("alpha", 1.0))
    return [y if alpha == 1.0 else emit(ctx, "mul", y, scalar_like(ctx, alpha, y))]
