"""WebNN graph -> TFLite model (.tflite flatbuffer) that LiteRT runs.

    data = to_tflite(graph)                 # the .tflite bytes
    save_tflite(graph, "model.tflite")      # written atomically
    export_problems(graph)                  # why a graph cannot be exported ([] when it can)

Each WebNN operation is exported by the rule registered for its op type (registry.py; one
module per op family) through the emitter in context.py. Before anything is emitted every
operation is checked against its rule's declared limits, and an UnsupportedError lists every
operation that TFLite cannot express, with the reason, at once.

The model has one subgraph and one signature ("serving_default") whose input and output names
are the graph's, so a runtime feeds and reads by the WebNN names. Layouts: TFLite's
convolutions, pools and resizes are NHWC (filters OHWI), so nhwc graphs map directly and nchw
operations get TRANSPOSE operators around them, while constant filters are transposed here,
at export time. Between two nchw operations the values stay nhwc (layout.py), so an nchw
model transposes its input once and its result once, not around every operation.

Float16 operations compute in float32 (TFLite's kernels do) and round each result to float16,
as WebNN's float16 operations round theirs. Operator versions are 1 (BROADCAST_TO: 2), the
versions every LiteRT kernel registers; kernels pick their code path by tensor type.
"""
from __future__ import annotations

from pathlib import Path

from ...errors import ConverterError
from ...ir import Graph
from .context import ExportContext, Permuted
from .flatbuffer import INLINE_LIMIT, ArrayBuffer, pack
from .layout import pointwise_permutation, run_permuted
from .registry import all_rules, problems, raise_problems, rule_for
from .schema import builtin_code, fb

__all__ = ["to_tflite", "save_tflite", "export_problems", "exportable_ops", "build_model"]

SIGNATURE_KEY = "serving_default"
_LOOK_IN_BUILTIN_CODE = fb.BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES


def export_problems(graph: Graph) -> list[str]:
    """Every reason `graph` cannot be exported to TFLite; empty when it can."""
    return problems(graph)


def exportable_ops() -> list[str]:
    """The WebNN ops with a TFLite export rule."""
    return list(all_rules())


def to_tflite(graph: Graph, *, inline_limit: int = INLINE_LIMIT) -> bytes:
    """The .tflite bytes computing `graph`.

    Raises UnsupportedError (listing every operation TFLite cannot express) before building
    anything. Weights larger than `inline_limit` bytes in total are stored after the
    flatbuffer rather than inside it (flatbuffers stop at 2 GiB).
    """
    return pack(build_model(graph), inline_limit=inline_limit)


def save_tflite(graph: Graph, path: str | Path, *, inline_limit: int = INLINE_LIMIT) -> list[Path]:
    """Write `graph` as a .tflite file; on any failure nothing is left behind."""
    from ...formats._files import AtomicSave

    model = build_model(graph)
    with AtomicSave() as save:
        with save.open(Path(path)) as f:
            pack(model, f, inline_limit=inline_limit)
        return save.commit()


def build_model(graph: Graph) -> fb.ModelT:
    """The TFLite model object (schema object API) computing `graph`."""
    problems_found = graph.problems()
    if problems_found:
        raise ConverterError(problems_found[0], where=f"graph '{graph.name}'",
                             fix="only a valid graph can be exported")
    raise_problems(graph)
    ctx = ExportContext(graph)
    inputs = []
    for name, operand in graph.inputs.items():
        t = ctx.tensor(operand.data_type, operand.shape, name)
        ctx.bind(operand, t)
        ctx.named.add(t)
        inputs.append(t)
    for op in graph.operations:
        ctx.op = op
        rule = rule_for(op.op_type)
        perm = pointwise_permutation(ctx, op) if rule.pointwise else None
        results = run_permuted(ctx, rule, op, perm) if perm else rule.emit(ctx, op)
        if len(results) != len(op.outputs):
            raise ConverterError(f"the export rule gave {len(results)} results, the op has "
                                 f"{len(op.outputs)}", where=ctx.where())
        for operand, t in zip(op.outputs, results):
            if isinstance(t, Permuted):
                ctx.bind_permuted(operand, _settle(ctx, operand, t.tensor, t.perm), t.perm)
            else:
                ctx.bind(operand, _settle(ctx, operand, t))
    ctx.op = None
    outputs = _outputs(ctx, graph, set(inputs))
    inputs, outputs = prune_dequantize(ctx, inputs, outputs)
    return _model(ctx, graph, inputs, outputs)


def prune_dequantize(ctx: ExportContext, inputs: list[int], outputs: list[int]
                     ) -> tuple[list[int], list[int]]:
    """Drop each DEQUANTIZE whose result nothing reads, with the tensors only it used, and
    return the inputs' and outputs' new tensor indices.

    A stored weight (`--weights`) read permuted gets a DEQUANTIZE of its own permuted constant
    (ExportContext.permuted), so the one its dequantizeLinear or cast emitted first may be
    left unread: without this the file would hold the weight twice. A dropped constant's
    buffer is emptied (buffer indices stay as they are); the tensors are renumbered."""
    if not ctx.operators:
        return inputs, outputs
    code = next((i for i, (c, _) in enumerate(ctx.codes) if c == builtin_code("DEQUANTIZE")),
                None)
    read = set(outputs) | {i for op in ctx.operators for i in op.inputs}
    dropped = [op for op in ctx.operators
               if op.opcodeIndex == code and not any(o in read for o in op.outputs)]
    if not dropped:
        return inputs, outputs
    ctx.operators[:] = [op for op in ctx.operators if all(op is not d for d in dropped)]
    used = set(inputs) | set(outputs) | {i for op in ctx.operators
                                         for i in (*op.inputs, *op.outputs)}
    released = {i for op in dropped for i in (*op.inputs, *op.outputs)} - used
    index, kept = {}, []
    for i, tensor in enumerate(ctx.tensors):
        if i in released:
            if tensor.buffer:
                ctx.buffers[tensor.buffer] = ArrayBuffer()  # its bytes are not written
            continue
        index[i] = len(kept)
        kept.append(tensor)
    ctx.tensors[:] = kept
    for op in ctx.operators:
        op.inputs = [index[i] if i >= 0 else i for i in op.inputs]
        op.outputs = [index[i] for i in op.outputs]
    return [index[i] for i in inputs], [index[i] for i in outputs]


def _settle(ctx: ExportContext, operand, t: int, perm=None) -> int:
    """Check a rule's result against the operand it computes (held permuted by `perm`, if
    given); a float32 result of a float16 operation is rounded to float16 here. The tensor
    takes the operand's name."""
    got = ctx.desc(t)
    if got.data_type != operand.data_type:
        if got.data_type == "float32" and operand.data_type == "float16":
            t = ctx.cast(t, "float16")
        else:
            raise ConverterError(f"the export rule gave {got.data_type} for "
                                 f"{operand.data_type} result '{operand.name}'", where=ctx.where())
    shape = tuple(operand.shape) if perm is None else tuple(operand.shape[p] for p in perm)
    if tuple(ctx.desc(t).shape) != shape:
        raise ConverterError(f"the export rule gave shape {list(got.shape)} for result "
                             f"'{operand.name}' of shape {list(shape)}", where=ctx.where())
    if t not in ctx.named and ctx.constant_value(t) is None:
        ctx.rename(t, operand.name)
        ctx.named.add(t)
    return t


def _outputs(ctx: ExportContext, graph: Graph, input_tensors: set[int]) -> list[int]:
    """One tensor per graph output. An output that is a graph input, a constant or another
    output's tensor gets a copy of its own (a RESHAPE to its own shape), since a TFLite
    subgraph output is the tensor an operator writes."""
    outputs, taken = [], set()
    for key, operand in graph.outputs.items():
        t = ctx.get(operand)
        if t in input_tensors or t in taken or ctx.constant_value(t) is not None:
            d = ctx.desc(t)
            t = ctx.emit("RESHAPE", [t, ctx.int32s(d.shape)], d)
        taken.add(t)
        ctx.rename(t, key)
        outputs.append(t)
    return outputs


def _model(ctx: ExportContext, graph: Graph, inputs: list[int], outputs: list[int]) -> fb.ModelT:
    subgraph = fb.SubGraphT()
    subgraph.tensors = ctx.tensors
    subgraph.inputs = inputs
    subgraph.outputs = outputs
    subgraph.operators = ctx.operators
    subgraph.name = graph.name

    codes = []
    for builtin, version in ctx.codes:
        code = fb.OperatorCodeT()
        code.builtinCode = builtin
        # Codes past 127 live in builtinCode only; the old int8 field says "look there".
        code.deprecatedBuiltinCode = min(builtin, _LOOK_IN_BUILTIN_CODE)
        code.version = version
        codes.append(code)

    signature = fb.SignatureDefT()
    signature.signatureKey = SIGNATURE_KEY
    signature.subgraphIndex = 0
    signature.inputs = [_tensor_map(name, t) for name, t in zip(graph.inputs, inputs)]
    signature.outputs = [_tensor_map(name, t) for name, t in zip(graph.outputs, outputs)]

    model = fb.ModelT()
    model.version = 3
    model.description = "webnn-converter"
    model.operatorCodes = codes
    model.subgraphs = [subgraph]
    model.buffers = ctx.buffers
    model.signatureDefs = [signature]
    return model


def _tensor_map(name: str, tensor: int):
    entry = fb.TensorMapT()
    entry.name = name
    entry.tensorIndex = tensor
    return entry
