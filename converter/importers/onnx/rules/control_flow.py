"""Control flow: If, Loop and Scan, whose bodies are subgraphs.

WebNN graphs have no control flow, so a body is imported inline, into the enclosing graph,
as often as it runs:
  * If: a condition known at conversion time imports only the chosen branch (at any nesting
    depth: a branch's own If nodes go through this rule too); a run-time condition imports
    both branches and picks each output with `where`, which needs the two branches to give
    an output one shape and type.
  * Loop and Scan: unrolled, one copy of the body per iteration, so the trip count must be
    known: Scan's is its sequence length; Loop's is its trip-count input, its condition
    (which must be known at every iteration, as for a loop over a fixed range), or both.
    Unrolling stops with an error past MAX_UNROLLED_NODES body nodes in all, for the whole
    model: every copy a loop makes of a body counts, a loop inside a loop's body (and an If's
    branch there) in each of its copies (unroll_budget.py). A trip count that takes the
    unrolling past it, with a condition that cannot end the loop sooner, is refused before the
    first copy; so is a loop whose condition is computed, when the condition's own nodes can
    be run here to count its iterations (loop_trips.py).

A body reads outer values by name (ONNX names are unique across scopes); its own values are
rebound on every iteration, each copy's results read out before the next copy replaces them.
"""
from __future__ import annotations

import numpy as np
import onnx

from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..inference import inferred_types
from ..tensor_data import sparse_array, tensor_array
from ..registry import DEFAULT_DOMAINS, Invalid, Unsupported, onnx_op
from .unroll_budget import (MAX_UNROLLED_NODES, check_predicted, check_size,  # noqa: F401
                            condition_fixed, count_unrolled)
from .shape_ops import known_scalar, normalize_axis


# -- importing a subgraph inline ------------------------------------------------------------
def import_body(ctx: ImportContext, node: OnnxNode, body: onnx.GraphProto, what: str,
                bound: dict | None = None, types: dict[str, int] | None = None) -> list:
    """Import `body`'s nodes into the current graph, with its graph inputs bound to `bound`
    (name -> operand or array); returns its outputs as operands or known arrays."""
    from .. import import_node  # the importer's per-node step (imported late: it imports us)

    declared = {vi.name: vi.type.tensor_type.elem_type for vi in body.input}
    for name, value in (bound or {}).items():
        ctx.set(name, value, declared.get(name) or _onnx_type(value))
    for t in body.initializer:  # self-contained: read_model resolved any external data
        ctx.set(t.name, tensor_array(t, where=ctx.where, what=f"{node} {what} initializer "
                                                              f"'{t.name}'", budget=ctx.budget,
                                     release=False), t.data_type,
                known_shape=tuple(int(d) for d in t.dims))
    for sparse in body.sparse_initializer:
        ctx.set(sparse.values.name, sparse_array(sparse, f"{node} {what} sparse initializer "
                                                         f"'{sparse.values.name}'", ctx.where,
                                                 ctx.budget), sparse.values.data_type)
    if types is None:
        types = body_types(ctx, body)
    if ctx.unrolling:  # a copy made by unrolling (or a branch inside one): it counts
        count_unrolled(ctx, body, what)
    outer = ctx.node
    try:
        for index, proto in enumerate(body.node):
            domain = "" if proto.domain in DEFAULT_DOMAINS else proto.domain
            inner = OnnxNode(proto, ctx.opsets.get(domain, 0), index)
            ctx.node = inner
            try:
                import_node(ctx, inner, types)
            except Unsupported as e:
                raise Unsupported(f"in its {what}, {inner}: {e}", needs=e.needs) from None
    finally:
        ctx.node = outer
    results = []
    for vi in body.output:
        value = ctx.value(vi.name)
        results.append(value.operand if value.operand is not None else ctx.known(vi.name))
    return results


def _onnx_type(value) -> int:
    if isinstance(value, Operand):
        from .. import _onnx_type_of_webnn

        return _onnx_type_of_webnn(value.data_type)
    return onnx.helper.np_dtype_to_tensor_dtype(np.asarray(value).dtype)


def body_types(ctx: ImportContext, body: onnx.GraphProto) -> dict[str, int]:
    """ONNX element types of the body's values (so bool results stay bool), by running ONNX
    type inference on the body with the outer values it reads as inputs; once for each body
    and set of input types."""
    made = {o for n in body.node for o in n.output} | {t.name for t in body.initializer}
    own = [vi for vi in body.input]
    read = [n for node in body.node for n in node.input
            if n and n not in made and n in ctx.values and n not in {vi.name for vi in own}]
    inputs = list(own)
    for n in dict.fromkeys(read):
        v = ctx.values[n]
        if v.onnx_type == onnx.TensorProto.UNDEFINED:  # an unsupported node's placeholder
            continue
        dims = v.known_shape if v.known is not None else v.operand.shape
        inputs.append(onnx.helper.make_tensor_value_info(n, v.onnx_type, dims))
    # By the body's id: protobuf gives one Python object for a message as long as one is held
    # (the cache holds it), so the id stays the body's and is never another object's.
    key = (id(body), tuple(vi.SerializeToString() for vi in inputs))
    if key in ctx.body_types:
        return ctx.body_types[key][1]
    graph = onnx.helper.make_graph(body.node, "body", inputs, body.output,
                                   initializer=body.initializer)
    opsets = [onnx.helper.make_opsetid(d, v) for d, v in ctx.opsets.items()]
    # In a child process: ONNX's C++ inference can crash on a hostile body (inference.py).
    types = inferred_types(onnx.helper.make_model(graph, opset_imports=opsets), ctx.where,
                           ctx.isolate)
    ctx.body_types[key] = (body, types)
    return types


def _as_operand(ctx: ImportContext, value) -> Operand:
    return value if isinstance(value, Operand) else ctx.constant(value)


class _Unrolling:
    """While a Loop or Scan unrolls: its copies, and everything inside them, count."""

    def __init__(self, ctx: ImportContext):
        self.ctx = ctx

    def __enter__(self):
        self.ctx.unrolling += 1

    def __exit__(self, *exc):
        self.ctx.unrolling -= 1


def _stacked(ctx: ImportContext, parts: list, axis: int):
    """Per-iteration values joined along a new axis: numpy when all are known."""
    if all(not isinstance(p, Operand) for p in parts):
        return np.stack([np.asarray(p) for p in parts], axis=axis)
    ops = []
    for p in parts:
        p = _as_operand(ctx, p)
        shape = list(p.shape)
        shape.insert(axis, 1)
        ops.append(ctx.emit("reshape", [p], {"newShape": shape}))
    return ops[0] if len(ops) == 1 else ctx.emit("concat", ops, {"axis": axis})


def _step(ctx: ImportContext, value, axis: int, index: int):
    """value[..., index, ...] along `axis`, the axis dropped."""
    if not isinstance(value, Operand):
        return np.take(np.asarray(value), index, axis=axis)
    starts = [0] * value.rank
    sizes = list(value.shape)
    starts[axis], sizes[axis] = index, 1
    part = ctx.emit("slice", [value], {"starts": starts, "sizes": sizes})
    return ctx.emit("reshape", [part], {"newShape": sizes[:axis] + sizes[axis + 1:]})


def _value(ctx: ImportContext, name: str):
    v = ctx.value(name)
    return v.operand if v.operand is not None else ctx.known(name)


# -- If ---------------------------------------------------------------------------------------
@onnx_op("If", webnn=("where", "reshape"))
def if_(ctx: ImportContext, node: OnnxNode):
    """A known condition imports only the chosen branch, inline. An unknown one imports both
    branches and picks each output with `where`: the same values, as long as both branches
    give their outputs one shape and type (and neither has side effects: ONNX ops have none)."""
    cond = ctx.known(node.input(0))
    if cond is not None:
        taken = bool(known_scalar(ctx, node.input(0), "the condition"))
        return _branch(ctx, node, "then_branch" if taken else "else_branch")
    then_out = _either_branch(ctx, node, "then_branch")
    else_out = _either_branch(ctx, node, "else_branch")
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
                              f"static, so give the condition's inputs at conversion time "
                              f"(--const)", needs=ctx.inputs_feeding(node.input(0)))
        results.append(ctx.emit("where", [selector, a, b], suffix=f"select_{i}"))
    return results


def _either_branch(ctx: ImportContext, node: OnnxNode, attr: str) -> list:
    """A branch of a run-time condition, imported at shapes it may never run at (a merged
    decoder's cache branch at the first step's shapes): its failure there is not the model's
    fault, so it is refused naming the condition to fix, not blamed on the model."""
    try:
        return _branch(ctx, node, attr)
    except Invalid as e:
        inputs = ctx.inputs_feeding(node.input(0))
        fix = f"--const {inputs[0] if inputs else 'NAME'}=VALUE"
        if "use_cache_branch" in inputs:  # a merged decoder: the decoder commands set it
            fix += ", or step the decoder: run/verify --steps N --prompt IDS"
        raise Unsupported(f"its condition is computed at run time, so both branches are "
                          f"imported at these shapes, and its {attr} fails at them ({e}); "
                          f"give the condition's inputs at conversion time ({fix})",
                          needs=inputs) from None


def _branch(ctx: ImportContext, node: OnnxNode, attr: str) -> list:
    branch = node.attr(attr)
    if branch is None:
        raise Unsupported(f"it has no {attr}")
    return import_body(ctx, node, branch, attr)


# -- Loop -------------------------------------------------------------------------------------
@onnx_op("Loop", webnn=("reshape", "concat"))
def loop(ctx: ImportContext, node: OnnxNode):
    """Body inputs: (iteration number, condition, carried values...); outputs: (condition,
    carried values..., scan outputs...). The loop ends after the trip count or when the
    body's condition is false, so both must be known; scan outputs stack along a new axis 0."""
    body = node.attr("body")
    trips = None
    if node.input(0) is not None:
        trips = int(known_scalar(ctx, node.input(0), "the trip count M"))
    going = True
    if node.input(1) is not None:
        going = bool(known_scalar(ctx, node.input(1), "the loop condition"))
    carried = [_value(ctx, n) for n in node.inputs[2:] if n is not None]
    n_carried = len(carried)
    names = [vi.name for vi in body.input]
    if len(names) != 2 + n_carried:
        raise Unsupported(f"its body takes {len(names)} inputs; it must take 2 + "
                          f"{n_carried}")
    # A loop may end on its condition long before its trip count (M is often the largest
    # int64), so the trip count is held against the budget up front only when the body passes
    # its condition through unchanged; otherwise each copy counts as it is made.
    if going and trips is not None and condition_fixed(body):
        check_size(ctx, body, trips, "its trip count asks for")
    elif going:  # its condition ends it: counted up front when its nodes can be run here
        check_predicted(ctx, body, trips, carried)
    with _Unrolling(ctx):
        return _unroll_loop(ctx, node, body, names, trips, going, carried)


def _unroll_loop(ctx: ImportContext, node: OnnxNode, body: onnx.GraphProto, names: list,
                 trips: int | None, going: bool, carried: list) -> list:
    n_carried = len(carried)
    scans: list[list] = []
    types = None
    i = 0
    while going and (trips is None or i < trips):
        bound = {names[0]: np.array(i, np.int64), names[1]: np.array(True)}
        bound.update(zip(names[2:], carried))
        if types is None:
            for name, value in bound.items():  # inference needs the inputs' types set
                ctx.set(name, value, _declared(body, name) or _onnx_type(value))
            types = body_types(ctx, body)
        out = import_body(ctx, node, body, "body", bound, types)
        cond_out = out[0]
        if isinstance(cond_out, Operand):
            raise Unsupported("its body computes the loop condition from run-time values; "
                              "unrolling needs it known at every iteration")
        going = bool(np.asarray(cond_out).reshape(-1)[0])
        carried = out[1:1 + n_carried]
        scans.append(out[1 + n_carried:])
        i += 1
    n_scans = len(body.output) - 1 - n_carried
    if n_scans and not scans:
        raise Unsupported("it runs no iteration, so its scan outputs are empty; WebNN has no "
                          "empty tensors")
    stacked = [_stacked(ctx, [s[k] for s in scans], 0) for k in range(n_scans)]
    return [*carried, *stacked]


def _declared(body: onnx.GraphProto, name: str) -> int:
    for vi in body.input:
        if vi.name == name:
            return vi.type.tensor_type.elem_type
    return 0


# -- Scan -------------------------------------------------------------------------------------
@onnx_op("Scan", since=8, webnn=("slice", "reshape", "concat"))
def scan_8(ctx: ImportContext, node: OnnxNode):
    """Opset 8: inputs (sequence_lens, states..., scans...) with a batch axis 0 that the body
    does not see, scanned along axis 1; each batch item is scanned on its own."""
    if node.input(0) is not None:
        lens = ctx.require_known(node.input(0), "sequence_lens")
        first_scan = [n for n in node.inputs[1:] if n is not None][-1]
        full = ctx.shape(first_scan)[1]
        if np.any(np.asarray(lens) != full):
            raise Unsupported("sequence_lens shorter than the sequence: unrolling needs every "
                              "sequence full")
    names = [n for n in node.inputs[1:]]
    m = _scan_input_count(node, len(names))
    values = [_value(ctx, n) for n in names]
    batch = _shape(values[0])[0]
    sequence = _shape(values[-1])[1] if len(_shape(values[-1])) > 1 else 1
    if node.attr("body") is not None:  # (without one, _scan says so)
        check_size(ctx, node.attr("body"), batch * sequence, "its batch and sequence give")
    per_item = []
    for b in range(batch):
        items = [_step(ctx, v, 0, b) for v in values]
        per_item.append(_scan(ctx, node, items[:len(items) - m], items[len(items) - m:],
                              [1 if d else 0 for d in node.attr("directions", [0] * m)],
                              [0] * m, None, None))
    return [_stacked(ctx, [p[k] for p in per_item], 0) for k in range(len(per_item[0]))]


@onnx_op("Scan", since=9, webnn=("slice", "reshape", "concat"))
def scan_9(ctx: ImportContext, node: OnnxNode):
    m = _scan_input_count(node, len(node.inputs))
    values = [_value(ctx, n) for n in node.inputs]
    states, scanned = values[:len(values) - m], values[len(values) - m:]
    return _scan(ctx, node, states, scanned, node.attr("scan_input_directions", [0] * m),
                 node.attr("scan_input_axes", [0] * m),
                 node.attr("scan_output_directions"), node.attr("scan_output_axes"))


def _scan_input_count(node: OnnxNode, inputs: int) -> int:
    """num_scan_inputs, checked against the inputs there are before lists are sized by it."""
    m = int(node.attr("num_scan_inputs"))
    if not 1 <= m <= inputs:
        raise Invalid(f"num_scan_inputs is {m}, but the node has {inputs} inputs to scan")
    return m


def _shape(value) -> tuple[int, ...]:
    return tuple(value.shape)


def _scan(ctx: ImportContext, node: OnnxNode, states: list, scanned: list, in_dirs, in_axes,
          out_dirs, out_axes) -> list:
    body = node.attr("body")
    in_axes = [normalize_axis(a, len(_shape(v))) for a, v in zip(in_axes, scanned)]
    lengths = {_shape(v)[a] for v, a in zip(scanned, in_axes)}
    if len(lengths) != 1:
        raise Unsupported(f"its scan inputs have different lengths {sorted(lengths)}")
    steps = lengths.pop()
    check_size(ctx, body, steps, "its scan inputs give")
    with _Unrolling(ctx):
        return _unroll_scan(ctx, node, body, states, scanned, steps, in_dirs, in_axes,
                            out_dirs, out_axes)


def _unroll_scan(ctx: ImportContext, node: OnnxNode, body: onnx.GraphProto, states: list,
                 scanned: list, steps: int, in_dirs, in_axes, out_dirs, out_axes) -> list:
    names = [vi.name for vi in body.input]
    n_states = len(states)
    n_outputs = len(body.output) - n_states
    out_dirs = list(out_dirs or [0] * n_outputs)
    out_axes = list(out_axes or [0] * n_outputs)
    types = None
    collected: list[list] = []
    for t in range(steps):
        bound = dict(zip(names, states))
        for name, value, axis, reverse in zip(names[n_states:], scanned, in_axes, in_dirs):
            bound[name] = _step(ctx, value, axis, steps - 1 - t if reverse else t)
        if types is None:
            for name, value in bound.items():
                ctx.set(name, value, _declared(body, name) or _onnx_type(value))
            types = body_types(ctx, body)
        out = import_body(ctx, node, body, "body", bound, types)
        states = out[:n_states]
        collected.append(out[n_states:])
    results = list(states)
    for k in range(n_outputs):
        parts = [c[k] for c in collected]
        if out_dirs[k]:
            parts = parts[::-1]
        rank = len(_shape(parts[0])) + 1
        results.append(_stacked(ctx, parts, normalize_axis(out_axes[k], rank)))
    return results
