"""TFLite -> WebNN import.

    graph = import_tflite("model.tflite", input_shapes={"input": [1, 224, 224, 3]})

TFLite is NHWC, and so is the imported graph: conv2d takes inputLayout "nhwc" with the filter
as stored (CONV_2D "ohwi", DEPTHWISE_CONV_2D "ihwo"), TRANSPOSE_CONV becomes convTranspose2d
"ohwi", pools take layout "nhwc", so a plain CNN imports without a single transpose. Weights
stay views into the mapped file; float16 weights reach the graph through DEQUANTIZE as cast,
sparse ones through DENSIFY (densified here), quantized tensors through dequantizeLinear and
quantizeLinear; complex64 tensors (RFFT2D's result) as pairs of float32 parts (see
rules/spectral.py). Resource variables become graph state, initialized by evaluating
CALL_ONCE's subgraph (rules/variables.py). What cannot be imported (other custom ops, control
flow, other subgraphs, ops without a WebNN form) is collected over the whole model and reported
at once, by name.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ...errors import ConverterError, UnsupportedError
from ...ir import Graph
from ...passes.fills import compact_fills
from .. import REFUSAL_FIX
from ..dropped_outputs import announce_dropped, drop_empty_output
from . import rules  # noqa: F401  (registers every op family's rules)
from .context import ImportContext, Value, stored_array
from .model_file import Operator, TfliteModel, read_tflite
from .registry import NOT_IMPORTED, Unsupported, known_ops, rule_for
from .rules.spectral import PART_BY_PART, part_by_part
from .rules.variables import finish_variables, init_subgraphs

__all__ = ["import_tflite", "import_model", "read_tflite", "known_ops"]


def import_tflite(source: str | Path | bytes, *,
                  input_shapes: Mapping[str, Sequence[int]] | None = None,
                  known_inputs: Mapping[str, np.ndarray] | None = None) -> Graph:
    """Read a .tflite file (or its bytes) and import it as a WebNN graph (see module docstring).

    Args:
        input_shapes: shapes for graph inputs, by tensor name; by default each input has the
            shape the file stores (a dynamic dimension is stored as 1, as LiteRT allocates it).
        known_inputs: graph inputs whose values are fixed at conversion time: they become
            constants (for inputs an op needs as plain values, such as a RESHAPE's shape).
    """
    model = read_tflite(source)
    name = Path(source).stem if isinstance(source, (str, Path)) else "tflite"
    return import_model(model, input_shapes=input_shapes, known_inputs=known_inputs, name=name)


def import_model(model: TfliteModel, *,
                 input_shapes: Mapping[str, Sequence[int]] | None = None,
                 known_inputs: Mapping[str, np.ndarray] | None = None,
                 name: str = "tflite") -> Graph:
    """Import a parsed model's main subgraph (read_tflite's result)."""
    main = model.subgraphs[0]
    graph = Graph(name)
    ctx = ImportContext(graph, main, model.where)
    ctx.model = model
    # The default total for computed values scales with the weights, as for ONNX models.
    ctx.budget.set_weights(sum(t.data.nbytes for t in main.tensors if t.data is not None))
    report = _Report()
    if len(model.subgraphs) > 1 + len(init_subgraphs(main) - {0}):
        names = ", ".join(f"'{sg.name}'" for sg in model.subgraphs)
        report.add_model(f"{len(model.subgraphs)} subgraphs ({names}): only a model of one "
                         f"subgraph (and CALL_ONCE's init subgraphs) imports, the others are "
                         f"reached through control flow")
    _known_tensors(ctx)
    _inputs(ctx, input_shapes or {}, known_inputs or {})
    for op in main.operators:
        ctx.op = op
        try:
            import_op(ctx, op)
        except Unsupported as e:
            report.add(op, ctx, str(e))
            _poison(ctx, op)
        except _Skipped:
            _poison(ctx, op)
    ctx.op = None
    _outputs(ctx, report)
    if not report:
        try:
            finish_variables(ctx)  # state outputs after the model's own
        except Unsupported as e:
            report.add_model(f"resource variables: {e}")
    if report:
        raise UnsupportedError(report.items(), where=model.where,
                               fix=REFUSAL_FIX)
    announce_dropped(graph, model.where)
    graph.remove_unused()  # results no output depends on (the model's dead ends)
    compact_fills(graph)  # a constant of one repeated value stored once, not per element
    return graph.verify()


class _Skipped(Exception):
    """The op reads a tensor an unsupported op should have written: not its own fault."""


_POISON = object()


def import_op(ctx: ImportContext, op: Operator) -> None:
    # What has no rule is named even when it reads another unsupported op's result.
    if op.name in NOT_IMPORTED:
        raise Unsupported(NOT_IMPORTED[op.name])
    rule = rule_for(op.name)
    if rule is None:
        if op.custom_code is not None:
            raise Unsupported("a custom op: its kernel lives outside the model")
        raise Unsupported("no WebNN equivalent")
    for index in op.inputs:
        if index >= 0 and ctx.values.get(index) is _POISON:
            raise _Skipped()
    if op.name in PART_BY_PART and any(ctx.is_complex(k) for k in range(len(op.inputs))):
        results = part_by_part(ctx, op, rule)
    else:
        results = list(rule(ctx, op))
    if len(results) != len(op.outputs):
        # The operator lists more or fewer outputs than the op has: a malformed model.
        raise Unsupported(f"it lists {len(op.outputs)} outputs; {op.name} has "
                          f"{len(results)}")
    for k, result in enumerate(results):
        if op.outputs[k] >= 0 and result is not None:
            ctx.set_output(k, result)


def _poison(ctx: ImportContext, op: Operator) -> None:
    """Mark a failed op's outputs so ops reading them are skipped, not reported again."""
    for index in op.outputs:
        if index >= 0:
            ctx.values[index] = _POISON


def _known_tensors(ctx: ImportContext) -> None:
    """Tensors with data are known values: constants, and the initial values of variables."""
    for t in ctx.subgraph.tensors:
        if t.data is not None and t.sparsity is None and t.info.numpy is not None:
            ctx.values[t.index] = Value(t, known=stored_array(t))
        elif t.info.numpy is not None and 0 in t.shape:
            # An empty constant (a RESHAPE to a scalar's shape []) has an empty buffer.
            ctx.values[t.index] = Value(t, known=np.zeros(t.shape, t.info.numpy))
        elif t.is_variable and t.data is None and t.info.numpy is not None:
            # A variable tensor (an RNN's state) that LiteRT starts at zero; a WebNN graph is a
            # function of its inputs, so it imports as that initial value.
            ctx.values[t.index] = Value(t, known=np.zeros(t.shape, t.info.numpy))
        elif t.sparsity is not None:
            ctx.values[t.index] = Value(t)  # read by DENSIFY only (see rules/quantization.py)


def _inputs(ctx: ImportContext, overrides: Mapping[str, Sequence[int]],
            known: Mapping[str, np.ndarray]) -> None:
    sg = ctx.subgraph
    names = [sg.tensors[i].name for i in sg.inputs]
    for key in (*overrides, *known):
        if key not in names:
            raise ConverterError(f"a shape or value is given for '{key}', which is not a graph "
                                 f"input", where=ctx.where, fix=f"inputs are: {', '.join(names)}")
    for index in sg.inputs:
        t = sg.tensors[index]
        if index in ctx.values and ctx.values[index].known is not None:
            continue  # an input with a buffer is a constant to LiteRT too
        if t.info.webnn is None:
            raise ConverterError(f"input '{t.name}' is {t.type_name}, which WebNN does not have",
                                 where=ctx.where)
        if t.name in known:
            value = np.asarray(known[t.name])
            if value.size != int(np.prod(t.shape, dtype=np.int64)) and t.name not in overrides:
                raise ConverterError(f"the value given for '{t.name}' has {value.size} elements, "
                                     f"its shape {list(t.shape)} needs "
                                     f"{int(np.prod(t.shape))}", where=ctx.where)
            shape = overrides.get(t.name, t.shape)
            ctx.values[index] = Value(t, known=value.astype(t.info.numpy).reshape(shape))
            continue
        shape = [int(d) for d in overrides.get(t.name, t.shape)]
        if t.name in overrides and len(shape) != len(t.shape):
            raise ConverterError(f"input '{t.name}' has rank {len(t.shape)}; the shape given "
                                 f"has {len(shape)} dimensions", where=ctx.where)
        if any(d <= 0 for d in shape):
            raise ConverterError(f"input '{t.name}' has shape {shape}; WebNN needs every "
                                 f"dimension greater than 0", where=ctx.where,
                                 fix="give its shape with --input-shape NAME=d0,d1,...")
        if ctx.graph.has_operand(t.name):
            raise ConverterError(f"two graph inputs are named '{t.name}'", where=ctx.where)
        try:
            operand = ctx.graph.add_input(t.name, t.info.webnn, shape)
        except ConverterError as e:  # a shape past the spec's limits: say which file
            raise ConverterError(f"input {t}: {e.what}", where=ctx.where, fix=e.fix) from None
        ctx.values[index] = Value(t, operand=operand)


def _outputs(ctx: ImportContext, report: _Report) -> None:
    for index in ctx.subgraph.outputs:
        value = ctx.values.get(index)
        if value is None or value is _POISON:
            continue  # its producer was unsupported: already reported
        t = value.tensor
        if value.parts is not None:
            report.add_model(f"output '{t.name}' is complex64: WebNN has no complex type "
                             f"(output its REAL and IMAG parts, or its COMPLEX_ABS, instead)")
            continue
        if value.operand is None and value.known is None:
            report.add_model(f"output '{t.name}' is a sparse constant; only DENSIFY reads one")
            continue
        if value.operand is None and value.known.size == 0:
            drop_empty_output(ctx.graph, t.name, value.known.shape)
            continue
        operand = value.operand
        if operand is None:
            try:
                operand = ctx.constant(value.known, t.info.webnn, name=t.name)
            except Unsupported as e:
                report.add_model(f"output '{t.name}': {e}")
                continue
        if operand.kind != "intermediate":  # the spec's build() rejects inputs and constants
            operand = ctx.emit("identity", [operand], suffix=f"{t.name}/identity")
        name = t.name
        if name in ctx.graph.outputs:
            raise ConverterError(f"two graph outputs are named '{name}'", where=ctx.where)
        ctx.graph.set_output(name, operand)


class _Report:
    """Unsupported ops grouped by op name and reason, so 12 VAR_HANDLEs make one item."""

    def __init__(self):
        self._model: list[str] = []
        self._groups: dict[tuple[str, str], list[str]] = {}

    def add_model(self, item: str) -> None:
        self._model.append(item)

    def add(self, op: Operator, ctx: ImportContext, reason: str) -> None:
        where = f"op {op.index}"
        if op.outputs and op.outputs[0] >= 0:
            where += f" -> '{ctx.subgraph.tensors[op.outputs[0]].name}'"
        self._groups.setdefault((op.name, reason), []).append(where)

    def __bool__(self) -> bool:
        return bool(self._model or self._groups)

    def items(self) -> list[str]:
        items = list(self._model)
        for (name, reason), where in self._groups.items():
            if len(where) == 1:
                items.append(f"{name} ({where[0]}): {reason}")
            else:
                items.append(f"{name} x{len(where)} (first {where[0]}): {reason}")
        return items
