"""Computing at conversion time what depends only on constants and static shapes.

A node whose inputs are all known is evaluated by the onnx package's reference evaluator (an
implementation of the ONNX spec that we did not write), at the model's own opset, so folded
shape arithmetic follows ONNX's semantics exactly; the few ops whose numpy form is that
semantics exactly (simple_ops.py: comparisons, logic, add/sub/mul...) are computed directly,
as unrolled loops fold them thousands of times.
"""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import onnx

from ...budget import shape_bytes
from ...errors import ConverterError
from .capped_fold import can_cap, fold_capped
from .context import ImportContext, OnnxNode, unpack_known
from .inference import isolated
from .registry import DEFAULT_DOMAINS, Unsupported
from .simple_ops import SIMPLE_OPS, computed

__all__ = ["can_fold", "fold", "fold_unsized", "folded_bytes"]

# Never folded: their value differs run to run, or they hold subgraphs (If has its own rule).
_NEVER = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
          "Multinomial", "Bernoulli", "If", "Loop", "Scan", "SequenceConstruct"}
# Kept as WebNN ops when their input is big, so quantized weights stay quantized in the graph.
_KEEP_WHEN_LARGE = {"DequantizeLinear"}
_LARGE = 4096


def can_fold(ctx: ImportContext, node: OnnxNode) -> bool:
    if node.domain not in DEFAULT_DOMAINS or node.op_type in _NEVER:
        return False
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
           for a in node.proto.attribute):
        return False
    names = [n for n in node.inputs if n is not None]
    if not all(n in ctx.values and ctx.values[n].known is not None for n in names):
        return False
    if node.op_type in _KEEP_WHEN_LARGE and names and ctx.values[names[0]].known.size > _LARGE:
        return False
    return not _block_past_input(ctx, node)


def _block_past_input(ctx: ImportContext, node: OnnxNode) -> bool:
    """A (De)QuantizeLinear block longer than every axis of its input. ONNX's reference
    implementation repeats the scale block_size times, so block_size = 2**31 in a tiny file
    would make it ask for gigabytes; the node's rule repeats no further than the axis."""
    if node.op_type not in ("DequantizeLinear", "QuantizeLinear") or not node.inputs:
        return False
    shape = ctx.values[node.inputs[0]].known_shape
    return int(node.attr("block_size", 0) or 0) > max(shape, default=1)


# Known inputs up to this many elements are shown to shape inference as values (they are the
# shapes, repeats, pads and limits that decide how big a result is); bigger ones by shape only.
_INFER_WITH_VALUES = 1024


# Ops whose results have as many elements as their first input, or as the broadcast of all
# their inputs, or as all inputs together: their size is bounded without shape inference.
_SAME_COUNT = {"Identity", "Cast", "CastLike", "Reshape", "Squeeze", "Unsqueeze", "Flatten",
               "Transpose", "Neg", "Abs", "Not", "Floor", "Ceil", "Round", "Sign", "Sqrt",
               "Reciprocal", "Exp", "Log", "Relu", "Sigmoid", "Tanh", "Erf", "IsNaN", "IsInf",
               "Slice", "ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd", "ReduceMean",
               "Softmax", "Clip", "Dropout", "BitwiseNot", "Shape", "Size", "Cos", "Sin",
               "Tan", "Acos", "Asin", "Atan", "Cosh", "Sinh", "Acosh", "Asinh", "Atanh",
               "Softplus", "Softsign", "Selu", "Elu", "LeakyRelu", "HardSigmoid", "HardSwish",
               "Mish", "Gelu", "ThresholdedRelu", "Celu", "Shrink", "LogSoftmax", "Hardmax",
               "Split", "CumSum", "LpNormalization", "MeanVarianceNormalization",
               "InstanceNormalization", "LayerNormalization", "BatchNormalization",
               "QuantizeLinear", "DequantizeLinear", "Trilu", "ReverseSequence",
               "ScatterElements", "ScatterND", "ArgMax", "ArgMin", "TopK", "GlobalAveragePool",
               "GlobalMaxPool", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
               "ReduceSumSquare", "IsInf", "Det", "Compress", "Unique"}
_BROADCAST = {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean", "Equal",
              "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Where",
              "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "PRelu"}
_JOINED = {"Concat"}
_WIDEST = 8  # bytes per element of the widest numeric type a fold may produce


def _quick_bound(ctx: ImportContext, node: OnnxNode) -> int | None:
    """An upper bound of folded_bytes from input shapes alone, for common ops; else None."""
    shapes = [ctx.values[n].known_shape for n in node.inputs if n is not None]
    if node.op_type == "Constant":  # its value is in the file, checked against its dims
        for a in node.proto.attribute:
            if a.HasField("t"):
                return max(math.prod(a.t.dims), 1) * _WIDEST
            if a.HasField("sparse_tensor"):
                return max(math.prod(a.sparse_tensor.dims), 1) * _WIDEST
            return max(len(a.floats), len(a.ints), 1) * _WIDEST
        return None
    if not shapes:
        return None
    outputs = len([o for o in node.outputs if o])
    if node.op_type in _SAME_COUNT:  # (Shape gives rank elements, Size one: fewer still)
        return outputs * max(math.prod(shapes[0]), len(shapes[0]), 1) * _WIDEST
    if node.op_type == "NonZero":  # at most one coordinate per element and axis
        return max(math.prod(shapes[0]), 1) * max(len(shapes[0]), 1) * _WIDEST
    if node.op_type in _BROADCAST:
        try:
            return math.prod(np.broadcast_shapes(*shapes)) * _WIDEST
        except ValueError:
            return None
    if node.op_type in _JOINED:
        return sum(math.prod(s) for s in shapes) * _WIDEST
    if node.op_type in ("MatMul", "Gemm", "MatMulInteger") and len(shapes) >= 2:
        return (max(math.prod(shapes[0]), 1) * max(math.prod(shapes[1]), 1)
                + sum(math.prod(s) for s in shapes[2:])) * _WIDEST
    if node.op_type in ("Gather", "GatherElements") and len(shapes) == 2:
        return max(math.prod(shapes[1]), 1) * max(math.prod(shapes[0]), 1) * _WIDEST
    # Shape-making ops: the size follows from a small known input's values.
    values = [ctx.known(n) for n in node.inputs[1:2] if n is not None]
    first = ctx.known(node.inputs[0]) if node.inputs and node.inputs[0] else None
    try:
        if node.op_type == "ConstantOfShape" and first is not None and first.size <= 64:
            return math.prod(abs(int(d)) for d in first.reshape(-1)) * _WIDEST
        if node.op_type == "Range" and len(node.inputs) == 3:
            start, limit, delta = (float(ctx.known(n).reshape(-1)[0]) for n in node.inputs)
            if delta == 0 or not all(map(math.isfinite, (start, limit, delta))):
                return None
            return max(math.ceil((limit - start) / delta), 1) * _WIDEST
        if node.op_type in ("Expand", "Tile") and values and values[0].size <= 64:
            wanted = [abs(int(d)) for d in values[0].reshape(-1)]
            if node.op_type == "Tile":
                return math.prod(shapes[0]) * math.prod(wanted) * _WIDEST
            rank = max(len(wanted), len(shapes[0]))
            padded = [1] * (rank - len(shapes[0])) + list(shapes[0])
            wanted = [1] * (rank - len(wanted)) + wanted
            return math.prod(max(a, b) for a, b in zip(padded, wanted)) * _WIDEST
    except (TypeError, ValueError, OverflowError, IndexError, AttributeError):
        return None  # malformed inputs: shape inference or the fold itself reports them
    return None


def folded_bytes(ctx: ImportContext, node: OnnxNode) -> int | None:
    """What folding `node` would allocate for its results (before anything is computed): a
    quick upper bound from input shapes when it fits the budget, otherwise the shapes ONNX's
    shape inference gives the results; None when neither can tell."""
    bound = _quick_bound(ctx, node)
    if bound is not None and ctx.budget.fits(bound):
        return bound
    inputs, inits = [], []
    for name in dict.fromkeys(n for n in node.inputs if n is not None):
        v = ctx.values[name]
        if v.known.size <= _INFER_WITH_VALUES and v.onnx_type != onnx.TensorProto.UNDEFINED:
            arr = unpack_known(v)
            if v.onnx_type == onnx.TensorProto.BOOL:
                arr = arr.view(np.bool_)
            try:
                inits.append(onnx.numpy_helper.from_array(np.asarray(arr), name))
            except (TypeError, ValueError, KeyError):
                pass
        inputs.append(onnx.helper.make_tensor_value_info(name, v.onnx_type, v.known_shape))
    outputs = [onnx.helper.make_empty_tensor_value_info(o) for o in node.outputs if o]
    graph = onnx.helper.make_graph([node.proto], "size", inputs, outputs, initializer=inits)
    opsets = [onnx.helper.make_opsetid(d, v) for d, v in ctx.opsets.items()]
    model = onnx.helper.make_model(graph, opset_imports=opsets)
    shapes = isolated(lambda: _output_shapes(model), ctx.where, ctx.isolate)
    if not shapes:
        return None
    total = 0
    for dims, elem in shapes:
        try:
            size = onnx.helper.tensor_dtype_to_np_dtype(elem).itemsize
        except (KeyError, ValueError, TypeError):
            return None
        total += shape_bytes(dims, size)
    return total


def _output_shapes(model: onnx.ModelProto) -> list | None:
    """[(dims, element type)] of the model's outputs by ONNX's shape inference; None when any
    is not fully known or has a negative dimension."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:  # inference is only an estimate here; folding itself reports errors
        return None
    shapes = []
    for vi in inferred.graph.output:
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type") or not tt.HasField("shape") or not tt.elem_type:
            return None
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        # A negative dimension (STFT's frame count when a frame is longer than the signal)
        # tells nothing: one would make the product negative, a size that fits any budget.
        if None in dims or any(d < 0 for d in dims):
            return None
        shapes.append((dims, tt.elem_type))
    return shapes


def _gather_elements(data: np.ndarray, index: np.ndarray, axis: int) -> np.ndarray:
    """GatherElements by numpy: the reference evaluator's np.choose takes at most 64 choices,
    so it fails on any axis longer than that (a 512-row token-type table in BERT exports)."""
    axis = axis + data.ndim if axis < 0 else axis
    if not 0 <= axis < data.ndim or index.ndim != data.ndim or any(
            i > d for a, (i, d) in enumerate(zip(index.shape, data.shape)) if a != axis):
        raise Unsupported(f"GatherElements index {list(index.shape)} on axis {axis} does not "
                          f"fit data {list(data.shape)}")
    size = data.shape[axis]
    if index.size and (index.min() < -size or index.max() >= size):
        raise Unsupported(f"GatherElements index outside -{size}..{size - 1}")
    index = np.where(index < 0, index + size, index)
    # ONNX gathers only where the index has entries: data is cut to the index's extent on the
    # other axes, as the operator's definition reads data[i][j][index[i][j]].
    corner = tuple(slice(0, n) if a != axis else slice(None) for a, n in enumerate(index.shape))
    return np.take_along_axis(data[corner], index.astype(np.int64), axis=axis)


def fold(ctx: ImportContext, node: OnnxNode) -> list[np.ndarray]:
    """`node`'s results computed here by ONNX's reference evaluator (Unsupported when it
    fails); the caller has bounded what it allocates (folded_bytes)."""
    try:
        return _evaluate(ctx, node)
    except MemoryError as e:
        raise _failed(e) from None


def fold_unsized(ctx: ImportContext, node: OnnxNode, what: str, keepable: bool
                 ) -> list[np.ndarray] | None:
    """`node`'s results when nothing tells their size beforehand (folded_bytes is None):
    computed in a child whose memory is capped at what the budget has left (capped_fold.py),
    and claimed. Past the cap, None when the node is `keepable` (its rule keeps it a graph
    op), else a ConverterError naming the flag; likewise where no cap can be set."""
    if not can_cap():
        if keepable:
            return None
        raise ConverterError(f"{what}: its size depends on the model's values, and only on "
                             f"Linux can the converter cap the memory of computing it",
                             where=ctx.where, fix="convert the model on Linux")
    results = fold_capped(lambda: _evaluate(ctx, node), ctx.budget, what, ctx.where)
    if results is None and not keepable:
        ctx.budget.refuse_unsized(what, where=ctx.where)
    return results


def _evaluate(ctx: ImportContext, node: OnnxNode) -> list[np.ndarray]:
    """fold()'s work; running out of memory is left a MemoryError (capped_fold reports it)."""
    if node.op_type == "GatherElements" and len(node.inputs) == 2:
        data, index = (unpack_known(ctx.values[n]) for n in node.inputs)
        return [_gather_elements(data, index, node.attr("axis", 0))]
    feeds, inputs = {}, []
    for name in node.inputs:
        if name is None:
            continue
        v = ctx.values[name]
        arr = unpack_known(v)
        if v.onnx_type == onnx.TensorProto.BOOL:
            arr = arr.view(np.bool_)
        feeds[name] = arr
        inputs.append(onnx.helper.make_tensor_value_info(name, v.onnx_type, v.known_shape))
    if node.domain in DEFAULT_DOMAINS and node.op_type in SIMPLE_OPS:
        # numpy's result is ONNX's for these (simple_ops.py): no one-node model to build
        direct = computed(node.proto, [feeds.get(n) if n else None for n in node.inputs])
        if direct is not None:
            return [np.asarray(direct)]
    try:
        # IEEE results (T5's relative buckets take log(0) = -inf on a branch a Where drops)
        # are the model's values, which ONNX Runtime computes silently too: numpy's warnings
        # about them would be noise on the user's terminal
        with np.errstate(all="ignore"):
            return [np.asarray(r) for r in _evaluator(ctx, node, inputs).run(None, feeds)]
    except MemoryError:
        raise
    except Exception as e:  # the reference evaluator rejects what ONNX itself rejects
        raise _failed(e) from None


# Reference evaluators built, by their one-node model: an unrolled loop folds the same node
# (each copy of its body binds the same names) thousands of times, and building the evaluator
# is most of a fold's cost. Only nodes of a few KB are kept (a Constant's attribute can be big).
_EVALUATORS: OrderedDict = OrderedDict()
_EVALUATORS_KEPT = 256
_KEEPABLE_NODE = 4096


def _evaluator(ctx: ImportContext, node: OnnxNode, inputs: list):
    """The reference evaluator of `node`'s one-node model with `inputs`, built or reused."""
    from onnx.reference import ReferenceEvaluator  # heavy: imported when first folding

    outputs = [onnx.helper.make_empty_tensor_value_info(o) for o in node.outputs if o]
    opsets = _evaluator_opsets(ctx, node)
    key = None
    if node.proto.ByteSize() <= _KEEPABLE_NODE:
        key = (node.proto.SerializeToString(deterministic=True),
               tuple(vi.SerializeToString() for vi in inputs),
               tuple(o.SerializeToString() for o in opsets))
        if key in _EVALUATORS:
            _EVALUATORS.move_to_end(key)
            return _EVALUATORS[key]
    graph = onnx.helper.make_graph([node.proto], "fold", inputs, outputs)
    evaluator = ReferenceEvaluator(onnx.helper.make_model(graph, opset_imports=opsets))
    if key is not None:
        _EVALUATORS[key] = evaluator
        if len(_EVALUATORS) > _EVALUATORS_KEPT:
            _EVALUATORS.popitem(last=False)
    return evaluator


# Ops whose older versions the reference evaluator does not implement, and the version it is
# run at instead. DequantizeLinear 10 and 13 are 19 on fewer types (13 added `axis`, 19 the
# float8 inputs and float16 scales), so 19's kernel computes them exactly; without this,
# folding one in a model of opset 10 to 18 (ORT's quantize_dynamic at opset 18, for one)
# failed with "No implementation for operator 'DequantizeLinear' ... version 18".
_EVALUATED_FROM = {"DequantizeLinear": 19}


def _evaluator_opsets(ctx: ImportContext, node: OnnxNode) -> list:
    """The opset imports the fold's one-node model runs at: the model's own, but for an op in
    _EVALUATED_FROM the default domain raised to the first version the evaluator has."""
    opsets = dict(ctx.opsets)
    since = _EVALUATED_FROM.get(node.op_type) if node.domain in DEFAULT_DOMAINS else None
    if since is not None:
        key = next((d for d in DEFAULT_DOMAINS if d in opsets), "")
        opsets[key] = max(int(opsets.get(key, since)), since)
    return [onnx.helper.make_opsetid(d, v) for d, v in opsets.items()]


def _failed(e: Exception) -> Unsupported:
    return Unsupported(f"computing it at conversion time failed: {type(e).__name__}: "
                       f"{str(e).splitlines()[0] if str(e) else ''}")
