"""Resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE) and CALL_ONCE become graph
state (ir/state.py).

LiteRT keeps a resource variable alive between invocations: CALL_ONCE runs its init subgraph on
the first invoke only (which, in streaming models, assigns each variable a constant), and the
main subgraph reads and assigns the variables in operator order. A WebNN graph is a pure
function, so here each variable becomes one state pair:

  * the first READ_VARIABLE of a step reads a new graph input, the state before the step;
    a read after an ASSIGN_VARIABLE in the same step reads the assigned value, as LiteRT does;
  * the last value assigned becomes a graph output `<variable>/next`, the state after the step
    (a variable only read keeps its value: the output is the input);
  * the init subgraph is evaluated now: imported with the importer's own rules and, where it
    computes, run once on the executor; what it assigns is each variable's initial value. An
    init subgraph that takes inputs is not supported (the value would need a second graph).

Assigned values are carried as stored (int8 stays int8): LiteRT copies a variable's bytes and
does not requantize between the assigned tensor and the variable's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .... import dtypes
from ....ir import Operand
from ..context import ImportContext
from ..model_file import Operator, Subgraph
from ..registry import Unsupported, tflite_op

__all__ = ["init_subgraphs", "finish_variables"]


@dataclass
class _Variable:
    name: str  # its shared name: how LiteRT identifies a variable across subgraphs
    initial: np.ndarray | None = None  # stored type, from the init subgraph
    data_type: str | None = None  # WebNN type of the stored values
    state: Operand | None = None  # the graph input: the value before the step
    current: Operand | np.ndarray | None = None  # the value after the last ASSIGN so far


class _Variables:
    """What one import knows of the model's variables."""

    def __init__(self):
        self.by_name: dict[str, _Variable] = {}
        self.handles: dict[tuple[int, int], str] = {}  # (subgraph, tensor) -> variable name
        self.init_failed = False  # a CALL_ONCE was refused: reads it would set are skipped

    def variable(self, name: str) -> _Variable:
        return self.by_name.setdefault(name, _Variable(name))


def _variables(ctx: ImportContext) -> _Variables:
    if ctx.variables is None:
        ctx.variables = _Variables()
    return ctx.variables


def init_subgraphs(main: Subgraph) -> set[int]:
    """The subgraphs the main subgraph runs through CALL_ONCE (imported as initial values)."""
    return {int(op.options.initSubgraphIndex) for op in main.operators
            if op.name == "CALL_ONCE" and op.options is not None}


def _shared_name(ctx: ImportContext, op: Operator) -> str:
    opts = op.options
    name = getattr(opts, "sharedName", None) if opts is not None else None
    if isinstance(name, bytes):
        name = name.decode("utf-8", "replace")
    container = getattr(opts, "container", None) if opts is not None else None
    if isinstance(container, bytes):
        container = container.decode("utf-8", "replace")
    if not name:  # an anonymous variable is known by its handle tensor alone
        name = ctx.subgraph.tensors[op.outputs[0]].name
    return f"{container}/{name}" if container else name


def _handle(ctx: ImportContext, k: int) -> _Variable:
    tensors = _variables(ctx)
    index = ctx.op.inputs[k] if k < len(ctx.op.inputs) else -1
    name = tensors.handles.get((ctx.subgraph.index, index))
    if name is None:
        raise Unsupported(f"its resource {ctx.tensor(k) or 'input'} does not come from a "
                          f"VAR_HANDLE")
    return tensors.by_name[name]


@tflite_op("VAR_HANDLE")
def var_handle(ctx: ImportContext, op: Operator):
    tensors = _variables(ctx)
    name = _shared_name(ctx, op)
    tensors.variable(name)
    tensors.handles[(ctx.subgraph.index, op.outputs[0])] = name
    return [None]  # a resource: nothing WebNN holds


@tflite_op("READ_VARIABLE")
def read_variable(ctx: ImportContext, op: Operator):
    var = _handle(ctx, 0)
    if var.current is not None:  # assigned earlier in this step
        return [var.current]
    if var.state is None:
        t = ctx.out_tensor(0)
        if var.initial is None and _variables(ctx).init_failed:
            from .. import _Skipped  # the CALL_ONCE that should set it is reported already

            raise _Skipped()
        if var.initial is None:
            raise Unsupported(f"variable '{var.name}' is read before any value is assigned "
                              f"to it (no CALL_ONCE initializes it)")
        if t.info.webnn is None:
            raise Unsupported(f"variable '{var.name}' is {t.type_name}, which WebNN does "
                              f"not have")
        if tuple(var.initial.shape) != tuple(t.shape):
            raise Unsupported(f"variable '{var.name}' starts as shape "
                              f"{list(var.initial.shape)} but is read as {list(t.shape)}")
        var.data_type = t.info.webnn
        var.state = ctx.graph.add_input(ctx.graph.fresh_name(var.name), t.info.webnn,
                                        tuple(t.shape))
    return [var.state]


@tflite_op("ASSIGN_VARIABLE")
def assign_variable(ctx: ImportContext, op: Operator):
    var = _handle(ctx, 0)
    value = ctx.value(1)
    t = ctx.tensor(1)
    if var.data_type is not None and t.info.webnn != var.data_type:
        raise Unsupported(f"it assigns {t.type_name} to variable '{var.name}', which holds "
                          f"{var.data_type}")
    var.current = value.operand if value.operand is not None else value.known
    return []


@tflite_op("CALL_ONCE")
def call_once(ctx: ImportContext, op: Operator):
    """Evaluate the init subgraph now: each variable it assigns gets its initial value."""
    try:
        return _call_once(ctx, op)
    except Unsupported:
        _variables(ctx).init_failed = True
        raise


def _call_once(ctx: ImportContext, op: Operator):
    from .. import _known_tensors, import_op  # the driver, loaded before any rule runs

    model = ctx.model
    index = int(op.options.initSubgraphIndex) if op.options is not None else -1
    if model is None or not 0 < index < len(model.subgraphs):
        raise Unsupported(f"its init subgraph {index} is not in the model")
    sub = model.subgraphs[index]
    if sub.inputs:
        raise Unsupported(f"its init subgraph '{sub.name}' takes inputs; only an init that "
                          f"depends on nothing is evaluated at conversion time")
    init = ImportContext(ctx.graph.__class__(f"{ctx.graph.name}_init"), sub, ctx.where)
    init.model, init.variables = model, _variables(ctx)
    _known_tensors(init)
    computed: dict[str, Operand] = {}  # variable -> a value the init graph computes
    for inner in sub.operators:
        init.op = inner
        if inner.name == "ASSIGN_VARIABLE":
            var = _handle(init, 0)
            value = init.value(1)
            computed.pop(var.name, None)
            if value.known is not None:
                var.initial = np.array(value.known)
            else:
                computed[var.name] = value.operand
        elif inner.name in ("READ_VARIABLE", "CALL_ONCE"):
            raise Unsupported(f"its init subgraph '{sub.name}' uses {inner.name}, which an "
                              f"initialization evaluated at conversion time does not support")
        else:
            try:
                import_op(init, inner)
            except Unsupported as e:
                raise Unsupported(f"its init subgraph '{sub.name}' has {inner.name} "
                                  f"(op {inner.index}): {e}") from None
    if computed:
        _evaluate(init, computed, sub.name)
    return []


def _evaluate(init: ImportContext, computed: dict[str, Operand], where: str) -> None:
    """Run the init graph (it has no inputs) on the executor: its results are initial values."""
    from ....errors import ConverterError
    from ....lowering.onnx.executor import run_on_ort as run

    init.op = None
    for name, operand in computed.items():
        if operand.kind != "intermediate":
            operand = init.emit("identity", [operand], suffix=f"{name}/initial")
        init.graph.set_output(name, operand)
    try:
        values = run(init.graph, {})
    except ConverterError as e:
        raise Unsupported(f"its init subgraph '{where}' could not be evaluated: "
                          f"{e.line()}") from None
    for name, value in values.items():
        init.variables.by_name[name].initial = np.asarray(value)


def finish_variables(ctx: ImportContext) -> None:
    """After the main subgraph: declare a state pair for every variable it reads."""
    tensors = ctx.variables
    if tensors is None:
        return
    for var in tensors.by_name.values():
        if var.state is None:
            continue  # never read: its value cannot reach an output
        nxt = var.current if var.current is not None else var.state
        if isinstance(nxt, np.ndarray):
            nxt = ctx.constant(nxt, var.data_type, name=f"{var.name}/assigned")
        if nxt.data_type != var.data_type or nxt.shape != var.state.shape:
            raise Unsupported(f"variable '{var.name}' is {var.state.desc} but is assigned "
                              f"{nxt.desc}")
        if nxt.kind != "intermediate":  # the spec's build() takes results only
            nxt = ctx.emit("identity", [nxt], suffix=f"{var.name}/keep")
        key = f"{var.state.name}/next"
        while key in ctx.graph.outputs:
            key += "_"
        ctx.graph.set_output(key, nxt)
        if var.initial.dtype != dtypes.numpy_dtype(var.data_type):
            raise Unsupported(f"variable '{var.name}' starts as {var.initial.dtype} but is "
                              f"read as {var.data_type}")
        ctx.graph.declare_state(var.state.name, key, var.initial)

