"""ONNX -> WebNN import.

    graph = import_onnx("model.onnx", dims={"batch": 1}, input_shapes={"x": [1, 3, 224, 224]})

Every ONNX node is imported by the rule registered for its op (one module per op family);
values that depend only on constants and static shapes are computed at conversion time, so shape
subgraphs (Shape -> Gather -> Concat -> Reshape) leave no trace in the WebNN graph. What cannot be
imported is collected over the whole model and reported at once, each with its node and reason.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import onnx

from ...budget import MemoryBudget
from ...errors import ConverterError, FormatError, OpenDimsError, UnsupportedError
from ...ir import Graph, Operand
from .. import REFUSAL_FIX
from ..dropped_outputs import announce_dropped, drop_empty_output
from . import rules  # noqa: F401  (each op family's rules, imported as models need them)
from .context import ImportContext, OnnxNode, Value
from .dim_expressions import evaluate as _evaluate_dims
from .dim_limits import check_dim_names, check_input_ranks, explained
from .checks import check_attribute_types, check_known_indices, check_known_top_k, check_model
from ...passes.fills import compact_fills
from .folding import can_fold, fold, fold_unsized, folded_bytes
from .inference import InferenceRun, PendingType, start_inference
from .model_file import ONNX_TO_WEBNN, onnx_dtype_name, read_model
from .node_order import node_order
from .registry import DEFAULT_DOMAINS, Invalid, Unsupported, rule_for
from .tensor_data import resolve_tensors, sparse_array, tensor_array

__all__ = ["import_onnx", "import_model"]


def import_onnx(path: str | Path, *, dims: Mapping[str, int] | None = None,
                input_shapes: Mapping[str, Sequence[int]] | None = None,
                known_inputs: Mapping[str, np.ndarray] | None = None,
                max_tensor_bytes: int | str | None = None,
                max_total_bytes: int | str | None = None) -> Graph:
    """Read an ONNX file and import it as a WebNN graph (see module docstring).

    `max_tensor_bytes` / `max_total_bytes` bound what the import materialises (converter.budget).
    An import at `dims` that fails because a dim passes a position table's rows says so
    (dim_limits.py).
    """
    model, arrays, budget = read_model(path, max_tensor_bytes=max_tensor_bytes,
                                       max_total_bytes=max_total_bytes)
    try:
        return import_model(model, arrays, dims=dims, input_shapes=input_shapes,
                            known_inputs=known_inputs, where=str(path), name=Path(path).stem,
                            budget=budget, isolate=True)
    except ConverterError:
        # A dim past a position table fails far from its cause: name the dim and the table
        # when the import converts with the dim at the table's rows (that import explains
        # nothing itself, so a model of many tables costs at most two more imports).
        def converts_at(smaller: dict[str, int]) -> bool:
            again, arrays_again, budget_again = read_model(
                path, max_tensor_bytes=max_tensor_bytes, max_total_bytes=max_total_bytes)
            try:
                import_model(again, arrays_again, dims=smaller, input_shapes=input_shapes,
                             known_inputs=known_inputs, where=str(path),
                             name=Path(path).stem, budget=budget_again, isolate=True)
            except ConverterError:
                return False
            return True

        better = explained(model, dims, str(path), converts_at, arrays)
        if better is None:
            raise
        raise better from None


def import_model(model: onnx.ModelProto, arrays: dict[str, np.ndarray] | None = None, *,
                 dims: Mapping[str, int] | None = None,
                 input_shapes: Mapping[str, Sequence[int]] | None = None,
                 known_inputs: Mapping[str, np.ndarray] | None = None,
                 where: str = "model", name: str | None = None,
                 budget: MemoryBudget | None = None, isolate: bool = False) -> Graph:
    """Import a ModelProto.

    Args:
        arrays: its initializers as arrays (read_model's output); when omitted they are read
            from the proto, which is left unchanged (external data needs read_model: a proto
            alone has no folder to read it from).
        dims: values of symbolic dimensions; input_shapes: whole input shapes.
        known_inputs: graph inputs whose values are fixed at conversion time (they become
            constants): for inputs WebNN needs as plain values (a Reshape's shape, an If's
            condition), named in the UnsupportedError's `needs_known` when missing.
        budget: the memory budget (read_model's); by default the default limits.
        isolate: run ONNX's shape inference in a child process, so that a model that crashes
            it is refused instead of killing this one (inference.py); import_onnx, the path of
            untrusted files, always does.
    """
    check_model(model, where)
    if arrays is None:
        budget = budget or MemoryBudget()
        resolve_tensors(model, None, where, budget)
        arrays = {t.name: tensor_array(t, where=where, release=False, budget=budget)
                  for t in model.graph.initializer}
        budget.set_weights(sum(a.nbytes for a in arrays.values()))
    budget = budget or MemoryBudget(weights_bytes=sum(a.nbytes for a in arrays.values()))
    known_inputs = dict(known_inputs or {})
    opsets = {("" if o.domain in DEFAULT_DOMAINS else o.domain): o.version
              for o in model.opset_import}
    graph = Graph(model.graph.name or name or "graph")
    ctx = ImportContext(graph, opsets, budget=budget, where=where, isolate=isolate)
    # ONNX's type inference runs in a child meanwhile; values take their types from it when a
    # rule first asks. Its crash is the model's first fault, reported before any other error.
    inferred = start_inference(model, where, isolate)
    try:
        graph = _import_graph(model, ctx, arrays, known_inputs, dims, input_shapes, where,
                              budget, inferred)
    except Exception:
        inferred.finish()  # its crash, if it crashed, is the error reported instead
        raise
    except BaseException:
        # A stop (Ctrl-C, SIGTERM) stays a stop, exit 128+signal: the child is reaped, its
        # crash left unsaid.
        try:
            inferred.finish()
        except FormatError:
            pass
        raise
    inferred.finish()
    return graph


def _import_graph(model: onnx.ModelProto, ctx: ImportContext, arrays: dict[str, np.ndarray],
                  known_inputs: dict, dims, input_shapes, where: str, budget: MemoryBudget,
                  inferred: InferenceRun) -> Graph:
    graph = ctx.graph
    for tensor in model.graph.initializer:
        ctx.set(tensor.name, arrays[tensor.name], tensor.data_type,
                known_shape=tuple(int(d) for d in tensor.dims))
    for sparse in model.graph.sparse_initializer:
        what = f"sparse initializer '{sparse.values.name}'"
        if sparse.values.data_type not in ONNX_TO_WEBNN \
                or sparse.values.data_type in (onnx.TensorProto.INT4, onnx.TensorProto.UINT4):
            raise ConverterError(f"{what} has data type "
                                 f"{onnx_dtype_name(sparse.values.data_type)}; sparse "
                                 f"initializers are read for WebNN's 8-bit and wider types",
                                 where=where)
        ctx.set(sparse.values.name, sparse_array(sparse, what, where, budget),
                sparse.values.data_type)
    initialized = set(arrays) | {s.values.name for s in model.graph.sparse_initializer}
    _set_known_inputs(ctx, model, known_inputs, initialized, where)
    ctx.producers = {out: node for node in model.graph.node for out in node.output if out}
    ctx.graph_inputs = {vi.name for vi in model.graph.input
                        if vi.name not in initialized and vi.name not in known_inputs}
    check_dim_names(model, initialized | set(known_inputs), dims or {}, where)
    shapes = _input_shapes(model, initialized | set(known_inputs), dims or {},
                           input_shapes or {}, where)
    _check_some_input_has_elements(shapes, dims or {}, where)
    for vi in model.graph.input:
        if vi.name in initialized or vi.name in known_inputs:
            continue  # an initializer listed as input (IR < 4), or fixed by the caller
        elem = vi.type.tensor_type.elem_type
        if 0 in shapes[vi.name] and elem in ONNX_TO_WEBNN:
            # No elements, so no values to feed: an empty constant (WebNN has no zero-sized
            # operands). A decoder's first step is one: a past of length 0.
            np_type = np.bool_ if elem == onnx.TensorProto.BOOL else ONNX_TO_WEBNN[elem][1]
            ctx.set(vi.name, np.zeros(shapes[vi.name], np_type), elem)
            ctx.graph_inputs.discard(vi.name)
            continue
        if elem not in ONNX_TO_WEBNN:
            raise ConverterError(f"input '{vi.name}' has data type {onnx_dtype_name(elem)}, "
                                 f"which WebNN does not have", where=where)
        try:
            operand = graph.add_input(vi.name, ONNX_TO_WEBNN[elem][0], shapes[vi.name])
        except ConverterError as e:  # a shape past the spec's or the converter's limits
            raise ConverterError(f"input '{vi.name}': {e.what}", where=where, fix=e.fix) \
                from None
        ctx.set(vi.name, operand, elem)

    problems: list[str] = []
    needs: list[str] = []
    for index in node_order(model.graph, where):
        proto = model.graph.node[index]
        node = OnnxNode(proto, ctx.opsets.get("" if proto.domain in DEFAULT_DOMAINS
                                              else proto.domain, 0), index)
        ctx.node = node
        try:
            import_node(ctx, node, inferred)
        except Invalid as e:
            raise FormatError(f"{node}: {e}", where=where,
                              fix="the model breaks an ONNX rule; fix or re-export it") from None
        except Unsupported as e:
            problems.append(f"{node}: {e}")
            needs.extend(n for n in e.needs if n not in needs)
            _placeholders(ctx, node, inferred)
        except _Skipped:
            _placeholders(ctx, node, inferred)
    ctx.node = None

    for vi in model.graph.output:
        value = ctx.values.get(vi.name)
        if value is None or value is _POISON:
            continue  # its producer was unsupported: already reported
        if value.operand is None and value.known is not None and value.known.size == 0:
            drop_empty_output(graph, vi.name, value.known_shape)
            continue
        try:
            graph.set_output(vi.name, _as_result(ctx, vi.name))
        except Unsupported as e:
            problems.append(f"graph output '{vi.name}': {e}")
    if problems:
        error = UnsupportedError(problems, where=where,
                                 fix=REFUSAL_FIX)
        error.needs_known = needs
        raise error
    announce_dropped(graph, where)
    compact_fills(graph)  # a ConstantOfShape's value stored once, not per element
    return graph.verify()


def _set_known_inputs(ctx: ImportContext, model: onnx.ModelProto,
                      known: Mapping[str, np.ndarray], initializers: set[str], where: str) -> None:
    types = {vi.name: vi.type.tensor_type.elem_type for vi in model.graph.input
             if vi.name not in initializers}
    declared = {vi.name: [d.dim_value if d.HasField("dim_value") else None
                          for d in vi.type.tensor_type.shape.dim]
                for vi in model.graph.input if vi.type.tensor_type.HasField("shape")}
    for name, value in known.items():
        if name not in types:
            raise ConverterError(f"a value is given for '{name}', which is not a graph input",
                                 where=where, fix=f"inputs are: {', '.join(sorted(types))}")
        elem = types[name]
        if elem not in ONNX_TO_WEBNN:
            raise ConverterError(f"input '{name}' has data type {onnx_dtype_name(elem)}, "
                                 f"which WebNN does not have", where=where)
        np_type = np.bool_ if elem == onnx.TensorProto.BOOL else ONNX_TO_WEBNN[elem][1]
        value = np.asarray(value).astype(np_type)
        shape = declared.get(name)
        if shape is not None and None not in shape and list(value.shape) != shape:
            if value.size != int(np.prod(shape, dtype=np.int64)):
                raise ConverterError(f"the value given for '{name}' has {value.size} elements, "
                                     f"its shape {shape} needs {int(np.prod(shape))}", where=where)
            value = value.reshape(shape)  # a flat list for a declared static shape
        ctx.set(name, value, elem)


class _Skipped(Exception):
    """The node reads a value an unsupported node should have produced: not its own fault."""


def import_node(ctx: ImportContext, node: OnnxNode,
                inferred: InferenceRun | dict[str, int]) -> None:
    """Import one node: fold it, or run its rule; record its outputs in `ctx` (If uses this)."""
    domain = "" if node.domain in DEFAULT_DOMAINS else node.domain
    if domain and domain not in ctx.opsets:
        raise Unsupported(f"its domain '{node.domain}' is not imported by the model")
    for name in node.inputs:
        if name is not None and name in ctx.values and ctx.values[name] is _POISON:
            raise _Skipped()
    rule = rule_for(domain, node.op_type, node.opset)
    check_attribute_types(node)
    check_known_indices(ctx, node)
    check_known_top_k(ctx, node)
    if can_fold(ctx, node):
        # Computed here only within the memory budget; past it a node that has a rule stays a
        # WebNN op (its rule keeps big values as graph ops), and one without fails clearly.
        what = f"computing {node} at conversion time"
        need = folded_bytes(ctx, node)  # an upper bound, or exact when near the limits
        results = None
        if need is None:  # nothing tells its size: computed where its memory is capped
            results = fold_unsized(ctx, node, what, keepable=rule is not None)
        elif ctx.budget.fits(need) or rule is None:
            if not ctx.budget.fits(need):
                ctx.budget.claim(need, what, where=ctx.where)  # raises, naming the flag
            results = fold(ctx, node)
            ctx.budget.claim(sum(r.nbytes for r in results), what, where=ctx.where)
        if results is not None:
            for out, arr in zip(node.outputs, results):
                if out is not None:
                    ctx.set(out, arr, _type_of(inferred, out, _onnx_type_of_array, arr))
            return
    if rule is None:
        if domain and domain != "com.microsoft":
            raise Unsupported(f"op from unknown domain '{node.domain}'")
        raise Unsupported("no WebNN equivalent")
    results = rule(ctx, node)
    if len(results) < len([o for o in node.outputs if o]):
        results = list(results) + [None] * (len(node.outputs) - len(results))
    for out, result in zip(node.outputs, results):
        if out is None or result is None:
            continue
        if isinstance(result, Operand):
            _adopt_name(ctx, result, out)
            ctx.set(out, result, _type_of(inferred, out, _onnx_type_of_webnn, result.data_type))
        else:
            arr = np.asarray(result)
            ctx.set(out, arr, _type_of(inferred, out, _onnx_type_of_array, arr))


def _type_of(inferred: InferenceRun | dict[str, int], name: str, fallback, arg
             ) -> int | PendingType:
    """`name`'s ONNX type: the inferred one, else `fallback(arg)` (the type of the result the
    rule gave). From a whole-model inference still running, a PendingType answered later."""
    if isinstance(inferred, InferenceRun):
        return PendingType(inferred, name, fallback, arg)
    return inferred.get(name) or fallback(arg)


_POISON = Value(onnx.TensorProto.UNDEFINED)


def _adopt_name(ctx: ImportContext, operand: Operand, onnx_name: str) -> None:
    """Name a node's result after its ONNX output, so WebNN graphs read like their source."""
    if operand.kind == "intermediate" and operand.name != onnx_name \
            and operand.producer.name.startswith(ctx.node.name) \
            and not ctx.graph.has_operand(onnx_name):
        ctx.graph.rename(operand, onnx_name)


def _placeholders(ctx: ImportContext, node: OnnxNode,
                  inferred: InferenceRun | dict[str, int]) -> None:
    """Mark a failed node's outputs so nodes reading them are skipped, not reported again."""
    for out in node.outputs:
        if out is not None and out not in ctx.values:
            ctx.values[out] = _POISON


def _as_result(ctx: ImportContext, name: str) -> Operand:
    """An operand a graph output can name: the spec forbids outputs that are inputs or constants."""
    operand = ctx.operand(name)
    if operand.kind == "intermediate":
        return operand
    return ctx.emit("identity", [operand], suffix=f"{name}/identity")


def _onnx_type_of_webnn(data_type: str) -> int:
    for elem, (webnn, _) in ONNX_TO_WEBNN.items():
        if webnn == data_type and elem != onnx.TensorProto.BOOL:
            return elem
    raise AssertionError(data_type)


def _onnx_type_of_array(arr: np.ndarray) -> int:
    return onnx.helper.np_dtype_to_tensor_dtype(arr.dtype)


def _check_some_input_has_elements(shapes: Mapping[str, list[int]], dims: Mapping[str, int],
                                   where: str) -> None:
    """A dim of 0 empties the inputs it sizes (a decoder's past at its first step); one that
    empties every input (batch=0) leaves the model nothing to compute: a mistake, said so."""
    if shapes and all(0 in shape for shape in shapes.values()):
        zero = ", ".join(f"{name}=0" for name, value in dims.items() if value == 0)
        raise ConverterError(f"--dim {zero or '...=0'} leaves no input any elements",
                             where=where, fix="0 is for a dim only some inputs carry (a "
                                              "decoder's past_sequence_length); give it a size")


def _expression_value(text: str, dims: Mapping[str, int]) -> int | None:
    """A dim named by an expression of the dims given (`past + new`), when it is one and its
    value is a size."""
    value = _evaluate_dims(text, dims)
    return value if value is not None and value >= 0 else None


def _input_shapes(model, initializers: set[str], dims: Mapping[str, int],
                  overrides: Mapping[str, Sequence[int]], where: str) -> dict[str, list[int]]:
    """Each graph input's static shape; one error lists every dimension that needs a value."""
    names = {vi.name for vi in model.graph.input if vi.name not in initializers}
    for key in overrides:
        if key not in names:
            raise ConverterError(f"--input-shape names '{key}', which is not a graph input",
                                 where=where, fix=f"inputs are: {', '.join(sorted(names))}")
    check_input_ranks(model, overrides, where)
    shapes, missing = {}, []
    for vi in model.graph.input:
        if vi.name in initializers:
            continue
        if vi.name in overrides:
            shapes[vi.name] = [int(d) for d in overrides[vi.name]]
            continue
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            missing.append(f"input '{vi.name}' (unknown rank)")
            continue
        shape = []
        for axis, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                shape.append(int(d.dim_value))
            elif d.HasField("dim_param") and d.dim_param in dims:
                shape.append(int(dims[d.dim_param]))
            elif d.HasField("dim_param") and _expression_value(d.dim_param, dims) is not None:
                shape.append(_expression_value(d.dim_param, dims))  # 'past + new', computed
            else:
                label = f"'{d.dim_param}'" if d.HasField("dim_param") else "unnamed"
                missing.append(f"input '{vi.name}' axis {axis} ({label})")
                shape.append(-1)
        shapes[vi.name] = shape
    if missing:
        raise OpenDimsError("dynamic dimensions need values: " + ", ".join(missing), where=where,
                            fix="give them with --dim NAME=VALUE or --input-shape "
                                "INPUT=d0,d1,... (Python: dims=, input_shapes=)")
    return shapes
