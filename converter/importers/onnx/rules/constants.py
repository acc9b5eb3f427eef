"""ONNX ops whose results are known at conversion time: Shape, Size, EyeLike (from the static
shape alone), Constant, ConstantOfShape and Range (from known inputs); If (its branch is chosen
at conversion time); and RandomNormal / RandomUniform, which WebNN cannot express.

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
from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..inference import inferred_types
from ..registry import DEFAULT_DOMAINS, Invalid, Unsupported, onnx_op
from ..tensor_data import attribute_array, onnx_dtype_name, sparse_array, tensor_array
from .shape_ops import known_scalar


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


# -- If ----------------------------------------------------------------------------------------
@onnx_op("If", webnn=("where",))
def if_(ctx: ImportContext, node: OnnxNode):
    """A known condition imports only the chosen branch, inline. An unknown one imports both
    branches and picks each output with `where`: the same values, as long as both branches
    give their outputs one shape and type (and neither has side effects: ONNX ops have none)."""
    cond = ctx.known(node.input(0))
    if cond is not None:
        taken = bool(known_scalar(ctx, node.input(0), "the condition"))
        return _import_branch(ctx, node, "then_branch" if taken else "else_branch")
    then_out = _import_branch(ctx, node, "then_branch")
    else_out = _import_branch(ctx, node, "else_branch")
    selector = ctx.operand(node.input(0))
    if selector.size != 1:
        raise Unsupported(f"the condition has shape {list(selector.shape)}; it must hold one "
                          f"value")
    if selector.rank:  # a [1] condition must not add an axis to the outputs
        selector = ctx.emit("reshape", [selector], {"newShape": []}, suffix="cond")
    results = []
    for i, (a, b) in enumerate(zip(then_out, else_out)):
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) \
                and a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b):
            results.append(a)
            continue
        a, b = _as_operand(ctx, a), _as_operand(ctx, b)
        if a.desc != b.desc:
            raise Unsupported(f"the condition is computed at run time and output {i} differs "
                              f"between branches ({a.desc} vs {b.desc}); WebNN shapes are "
                              f"static")
        results.append(ctx.emit("where", [selector, a, b], suffix=f"select_{i}"))
    return results


def _as_operand(ctx: ImportContext, value) -> Operand:
    return value if isinstance(value, Operand) else ctx.constant(value)


def _import_branch(ctx: ImportContext, node: OnnxNode, attr: str) -> list:
    """Import a branch's nodes into the current graph, as if they stood in place of the If.

    Branch nodes may read any value of the enclosing graph (ONNX names are unique across
    scopes, so the branch's own names cannot shadow outer ones). Returns the branch outputs as
    operands or known arrays.
    """
    from .. import import_node  # the importer's per-node step (imported late: it imports us)

    branch = node.attr(attr)
    if branch is None:
        raise Unsupported(f"it has no {attr}")
    for t in branch.initializer:  # self-contained: read_model resolved any external data
        ctx.set(t.name, tensor_array(t, where=ctx.where, what=f"{node} {attr} initializer "
                                                             f"'{t.name}'", budget=ctx.budget,
                                     release=False), t.data_type,
                known_shape=tuple(int(d) for d in t.dims))
    for sparse in branch.sparse_initializer:
        what = f"{node} {attr} sparse initializer '{sparse.values.name}'"
        ctx.set(sparse.values.name, sparse_array(sparse, what, ctx.where, ctx.budget),
                sparse.values.data_type)
    types = _branch_types(ctx, branch)
    outer = ctx.node
    try:
        for index, proto in enumerate(branch.node):
            domain = "" if proto.domain in DEFAULT_DOMAINS else proto.domain
            inner = OnnxNode(proto, ctx.opsets.get(domain, 0), index)
            ctx.node = inner
            try:
                import_node(ctx, inner, types)
            except Unsupported as e:
                raise Unsupported(f"in its {attr}, {inner}: {e}") from None
    finally:
        ctx.node = outer
    results = []
    for vi in branch.output:
        value = ctx.value(vi.name)
        results.append(value.operand if value.operand is not None else ctx.known(vi.name))
    return results


def _branch_types(ctx: ImportContext, branch: onnx.GraphProto) -> dict[str, int]:
    """ONNX element types of the branch's values (so bool results stay bool), by running ONNX
    type inference on the branch with the outer values it reads as inputs."""
    made = {o for n in branch.node for o in n.output} | {t.name for t in branch.initializer}
    read = [n for node in branch.node for n in node.input
            if n and n not in made and n in ctx.values]
    inputs = []
    for n in dict.fromkeys(read):
        v = ctx.values[n]
        if v.onnx_type == onnx.TensorProto.UNDEFINED:  # an unsupported node's placeholder
            continue
        dims = v.known_shape if v.known is not None else v.operand.shape
        inputs.append(onnx.helper.make_tensor_value_info(n, v.onnx_type, dims))
    graph = onnx.helper.make_graph(branch.node, "branch", inputs, branch.output,
                                   initializer=branch.initializer)
    opsets = [onnx.helper.make_opsetid(d, v) for d, v in ctx.opsets.items()]
    # In a child process: ONNX's C++ inference can crash on a hostile branch (inference.py).
    return inferred_types(onnx.helper.make_model(graph, opset_imports=opsets), ctx.where,
                          ctx.isolate)
