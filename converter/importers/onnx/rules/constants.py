"""ONNX ops whose results are known at conversion time: Shape, Size, EyeLike (from the static
shape alone), Constant, ConstantOfShape and Range (from known inputs); and RandomNormal /
RandomUniform, which WebNN cannot express. (If, Loop and Scan are in control_flow.py.)

A node whose inputs are all known is folded before any rule runs, so these rules mostly see
the rest: Shape, Size and EyeLike of a run-time value still have a known result (WebNN shapes
are static), while ConstantOfShape and Range of run-time values would need a run-time shape.
(Constant, ConstantOfShape and Range still compute their values, for nodes the folder leaves
alone.) Results are numpy arrays; they become graph constants only where a WebNN op reads them.
"""
from __future__ import annotations

import math

import numpy as np
import onnx

from ....budget import shape_bytes
from ..context import ImportContext, OnnxNode
from ..registry import Invalid, Unsupported, onnx_op
from ..tensor_data import attribute_array, onnx_dtype_name, sparse_array


# -- values from the static shape -----------------------------------------------------------------
@onnx_op("Shape", webnn=())
def shape(ctx: ImportContext, node: OnnxNode):
    dims = ctx.shape(node.input(0))
    # ONNX's start/end (opset 15) follow Python slicing: negative counts from the end, clamped.
    start, end = node.attr("start", 0), node.attr("end", None)
    return [np.array(dims[start:end], dtype=np.int64)]


@onnx_op("Size", webnn=())
def size(ctx: ImportContext, node: OnnxNode):
    return [np.array(math.prod(ctx.shape(node.input(0))), dtype=np.int64)]


@onnx_op("EyeLike", webnn=())
def eye_like(ctx: ImportContext, node: OnnxNode):
    dims = ctx.shape(node.input(0))
    if len(dims) != 2:
        raise Unsupported(f"the input has rank {len(dims)}; EyeLike takes a 2-D input")
    elem = int(node.attr("dtype", ctx.onnx_type(node.input(0))))
    # Any numeric type is fine while the value stays known (a Cast may follow); a WebNN op
    # reading a type WebNN lacks is refused where it reads it.
    try:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
    except (KeyError, ValueError, TypeError):
        raise Invalid(f"its dtype {onnx_dtype_name(elem)} is not a numeric tensor type") from None
    if dtype.kind not in "biuf":
        raise Invalid(f"its dtype {onnx_dtype_name(elem)} is not a numeric tensor type")
    claim(ctx, node, shape_bytes(dims, dtype.itemsize))
    return [np.eye(dims[0], dims[1], k=int(node.attr("k", 0)), dtype=dtype)]


def claim(ctx: ImportContext, node: OnnxNode, nbytes: int) -> None:
    """Count a value this rule is about to compute against the conversion's memory budget."""
    ctx.budget.claim(nbytes, f"computing {node} at conversion time", where=ctx.where)


# -- values from known inputs ---------------------------------------------------------------------
@onnx_op("Constant", webnn=())
def constant(ctx: ImportContext, node: OnnxNode):
    if node.has_attr("value"):
        return [_array(ctx, node, "value")]
    if node.has_attr("sparse_value"):
        return [sparse_array(node.attr("sparse_value"), f"{node} attribute 'sparse_value'",
                             ctx.where, ctx.budget)]
    for name, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                        ("value_int", np.int64), ("value_ints", np.int64)):
        if node.has_attr(name):
            return [np.array(node.attr(name), dtype=dtype)]
    if node.has_attr("value_string") or node.has_attr("value_strings"):
        raise Unsupported("it holds strings; WebNN has no string tensors")
    raise Unsupported("it has no value attribute")


def _array(ctx: ImportContext, node: OnnxNode, attr: str) -> np.ndarray:
    """A tensor attribute's logical values (bool as bool), as ONNX's own reader gives them."""
    tensor = node.attr(attr)
    if tensor.data_type == onnx.TensorProto.STRING:
        raise Unsupported("it holds strings; WebNN has no string tensors")
    return attribute_array(tensor, f"{node} attribute '{attr}'", ctx.where, ctx.budget)


@onnx_op("ConstantOfShape", webnn=())
def constant_of_shape(ctx: ImportContext, node: OnnxNode):
    dims = ctx.require_known(node.input(0), "the shape input")
    fill = np.zeros(1, dtype=np.float32)  # ONNX's default: a float 0
    if node.has_attr("value"):
        fill = _array(ctx, node, "value").reshape(-1)
        if fill.size != 1:
            raise Invalid(f"its value holds {fill.size} elements; ConstantOfShape takes one")
    shape = [int(d) for d in np.asarray(dims).reshape(-1)]
    if any(d < 0 for d in shape):
        raise Invalid(f"the shape {shape} has a negative dimension")
    nbytes = shape_bytes(shape, fill.dtype.itemsize)
    if 0 not in shape and not ctx.budget.fits(nbytes):
        # Too big to hold at conversion time: an expand of the one value computes it at run
        # time instead (and stores one number).
        scalar = ctx.constant(fill.reshape(()))
        return [ctx.emit("expand", [scalar], {"newShape": shape})]
    claim(ctx, node, nbytes)
    return [np.full(shape, fill[0], dtype=fill.dtype)]


@onnx_op("Range", webnn=())
def range_(ctx: ImportContext, node: OnnxNode):
    start, limit, delta = (ctx.require_known(node.input(i), f"the {what} input")
                           for i, what in enumerate(("start", "limit", "delta")))
    dtype = np.asarray(start).dtype
    start, limit, delta = (np.asarray(v).reshape(-1)[0].item() for v in (start, limit, delta))
    if delta == 0:
        raise Unsupported("delta is 0")
    if not all(math.isfinite(v) for v in (start, limit, delta)):
        raise Invalid(f"start {start}, limit {limit} and delta {delta} must be finite")
    count = max(math.ceil((limit - start) / delta), 0)
    claim(ctx, node, shape_bytes([count], dtype.itemsize))
    return [(start + np.arange(count) * delta).astype(dtype)]


@onnx_op("RandomNormal", "RandomUniform", webnn=())
def random(ctx: ImportContext, node: OnnxNode):
    raise Unsupported("it draws new random values on every run; WebNN has no random number "
                      "generator")
