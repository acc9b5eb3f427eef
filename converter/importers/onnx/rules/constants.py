"""ONNX ops whose results are known at conversion time: Shape, Size, EyeLike (from the static
shape alone), Constant, ConstantOfShape and Range (from known inputs); and RandomNormal / RandomUniform, which WebNN cannot express.

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

from ..context import ImportContext, OnnxNode
from ..registry import Unsupported, onnx_op


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
    elem = node.attr("dtype", ctx.onnx_type(node.input(0)))
    dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
    return [np.eye(dims[0], dims[1], k=int(node.attr("k", 0)), dtype=dtype)]


# -- values from known inputs ---------------------------------------------------------------------
@onnx_op("Constant", webnn=())
def constant(ctx: ImportContext, node: OnnxNode):
    if node.has_attr("value"):
        return [_array(node.attr("value"))]
    if node.has_attr("sparse_value"):
        return [_dense(node.attr("sparse_value"))]
    for name, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                        ("value_int", np.int64), ("value_ints", np.int64)):
        if node.has_attr(name):
            return [np.array(node.attr(name), dtype=dtype)]
    if node.has_attr("value_string") or node.has_attr("value_strings"):
        raise Unsupported("it holds strings; WebNN has no string tensors")
    raise Unsupported("it has no value attribute")


def _array(tensor: onnx.TensorProto) -> np.ndarray:
    """A tensor attribute's logical values (bool as bool), as ONNX's own reader gives them."""
    if tensor.data_type == onnx.TensorProto.STRING:
        raise Unsupported("it holds strings; WebNN has no string tensors")
    return onnx.numpy_helper.to_array(tensor)


def _dense(sparse: onnx.SparseTensorProto) -> np.ndarray:
    """A SparseTensorProto as a dense array (indices are flat, or one coordinate per row)."""
    values = _array(sparse.values)
    indices = _array(sparse.indices).astype(np.int64)
    dims = tuple(int(d) for d in sparse.dims)
    dense = np.zeros(math.prod(dims), dtype=values.dtype)
    flat = indices if indices.ndim == 1 else np.ravel_multi_index(indices.T, dims)
    dense[flat] = values.reshape(-1)
    return dense.reshape(dims)


@onnx_op("ConstantOfShape", webnn=())
def constant_of_shape(ctx: ImportContext, node: OnnxNode):
    dims = ctx.require_known(node.input(0), "the shape input")
    fill = np.zeros(1, dtype=np.float32)  # ONNX's default: a float 0
    if node.has_attr("value"):
        fill = _array(node.attr("value")).reshape(-1)
    return [np.full([int(d) for d in np.asarray(dims).reshape(-1)], fill[0], dtype=fill.dtype)]


@onnx_op("Range", webnn=())
def range_(ctx: ImportContext, node: OnnxNode):
    start, limit, delta = (ctx.require_known(node.input(i), f"the {what} input")
                           for i, what in enumerate(("start", "limit", "delta")))
    dtype = np.asarray(start).dtype
    start, limit, delta = (np.asarray(v).reshape(-1)[0].item() for v in (start, limit, delta))
    if delta == 0:
        raise Unsupported("delta is 0")
    count = max(math.ceil((limit - start) / delta), 0)
    return [(start + np.arange(count) * delta).astype(dtype)]


@onnx_op("RandomNormal", "RandomUniform", webnn=())
def random(ctx: ImportContext, node: OnnxNode):
    raise Unsupported("it draws new random values on every run; WebNN has no random number "
                      "generator")
