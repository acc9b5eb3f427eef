"""Constant folding: an operation whose inputs are all constants becomes a constant.

This covers shape subgraphs left after import, constant-only subexpressions, casts of
constants, and the transposes and reshapes of weights other passes insert. Operations are
visited in graph order, so a chain of them folds in one run.

Each value is computed by running the one-operation graph through the executor
(`converter.run`), so a folded constant is exactly what the graph would have computed.

When an operation is kept:
  * dequantizeLinear of more than 4,096 elements (the importer's threshold): folding it would
    store float weights in place of quantized ones, undoing the model's quantization; so
    nothing downstream of it folds either. Under a target, a dequantizeLinear of 4-bit weights
    is kept whatever its size when the quantized_weights pass keeps them 4-bit or re-bases
    them exactly to the other 4-bit type (uint4 -> int4 for chromium-litert): folding would
    store float32 at eight times their bytes (a q4 model's small matmuls). Without a target,
    with --dequantize, or where that pass would widen them to 8 bits or dequantize them, the
    size rule alone decides.
  * When folding would grow the stored weights too much. A folded value is stored in the weights
    file, and the input constants that only this operation read are freed. So the net growth is
    the stored bytes of the results minus the stored bytes freed. A uniform result is stored as
    a `@scalar` fill and costs nothing. An operation is kept when its net growth is over 64 KiB,
    or when it would take the growth of the whole run over max(1 MiB, 1% of the weights).
    With this rule a transposed or cast weight (which frees its source) and all shape arithmetic
    always fold, while an `expand` or `tile` that turns a small constant into a large tensor
    stays as it is: computing it at load time costs less than shipping it.
  * When evaluating it would hold more than the per-tensor memory limit (converter.budget,
    `--max-tensor-bytes`, 1 GiB by default) at once: its results plus its fill inputs, which
    are stored as one number but computed with at full size.
  * When the executor cannot compute the value. This is noted with its error.
Identities are left to cleanup (folding one would only copy its constant). A folded result that
is a graph output is read through an identity: an output must be an operation's result.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..budget import current_limits
from ..errors import ConverterError
from ..ir import ConstantData, Graph, Operand, Operation
from ..ir.operand import pack4
from . import PassContext, PassResult, graph_pass
from .cleanup import replace_results

__all__ = ["fold_constants", "evaluate", "constant_data", "stored_bytes"]

QUANTIZED_KEEP_ELEMENTS = 4096  # dequantizeLinear of more elements than this stays
GROWTH_PER_OP = 64 * 1024  # bytes
GROWTH_TOTAL_MIN = 1 << 20  # bytes
GROWTH_TOTAL_FRACTION = 0.01
# An operation whose inputs are all fills is evaluated even when its full result is over the
# per-op limit, since its result is likely uniform (a fill, free to store); up to this size.
_UNIFORM_PROBE_BYTES = 64 << 20


def stored_bytes(data: ConstantData) -> int:
    """What a constant costs in the weights file (a fill is written as one number)."""
    return 0 if data.fill is not None else data.nbytes


def evaluate(op: Operation) -> list[np.ndarray]:
    """The results of `op` (whose inputs are all constants), computed by the executor."""
    from ..lowering.onnx.executor import run_on_ort as run

    sub = Graph(f"fold_{op.name}")
    copies: dict[int, Operand] = {}
    inputs = []
    for x in op.inputs:
        if x is not None and id(x) not in copies:
            copies[id(x)] = sub.add_constant(x.name, x.constant)
        inputs.append(None if x is None else copies[id(x)])
    new = sub.add_operation(op.op_type, inputs, dict(op.attrs), name=op.name)
    keys = [f"result{i}" for i in range(len(new.outputs))]
    for key, out in zip(keys, new.outputs):
        sub.set_output(key, out)
    values = run(sub, {})
    return [values[k] for k in keys]


def constant_data(data_type: str, shape: tuple[int, ...], value: np.ndarray) -> ConstantData:
    """A computed value as constant data: a fill when every element is the same (bit for bit),
    otherwise an array (packed for 4-bit types)."""
    info = dtypes.info(data_type)
    if info.bits == 4:
        return ConstantData(data_type, shape, array=pack4(value))
    arr = np.ascontiguousarray(np.asarray(value).astype(info.numpy, copy=False)).reshape(shape)
    flat = arr.reshape(-1)
    bits = flat.view(f"u{info.numpy.itemsize}")
    if flat.size and np.all(bits == bits[0]):
        return ConstantData(data_type, shape, fill=flat[0].item(), origin="scalar")
    return ConstantData(data_type, shape, array=arr)


def _freed_bytes(op: Operation) -> int:
    """Stored bytes of the input constants that nothing but `op` reads (folding frees them)."""
    freed, seen = 0, set()
    for x in op.inputs:
        if x is None or id(x) in seen:
            continue
        seen.add(id(x))
        if all(u.op is op for u in x.uses()):
            freed += stored_bytes(x.constant)
    return freed


def _needed(op: Operation) -> list[Operand]:
    return [o for o in op.outputs if o.uses() or o.is_graph_output()]


class _Folder:
    def __init__(self, graph: Graph, ctx: PassContext):
        self.graph = graph
        self.ctx = ctx
        weights = sum(stored_bytes(c.constant) for c in graph.constants.values())
        self.budget = max(GROWTH_TOTAL_MIN, int(GROWTH_TOTAL_FRACTION * weights))
        self.grown = 0
        self.max_bytes = current_limits()[0]  # --max-tensor-bytes
        self.counts = {"folded": 0, "kept_quantized": 0, "kept_growth": 0, "kept_memory": 0,
                       "failed": 0, "weights_bytes_before": weights}
        self.kept: dict[str, list[str]] = {"quantized": [], "growth": [], "memory": [],
                                           "failed": []}

    def visit(self, op: Operation) -> None:
        if not all(x is None or x.is_constant for x in op.inputs) or not _needed(op):
            return  # not constant-only, or dead (cleanup removes it)
        if op.op_type == "identity":
            return  # cleanup bypasses identities; folding one would copy its constant
        if op.op_type == "dequantizeLinear" and self._stays_quantized(op):
            self.counts["kept_quantized"] += 1
            self.kept["quantized"].append(op.name)
            return
        freed = _freed_bytes(op)
        full = sum(dtypes.byte_length(o.data_type, o.shape) for o in _needed(op))
        # Evaluating materialises every result and every fill input at full size (a fill is
        # stored as one number, but the executor holds it whole): bounded by the per-tensor
        # memory limit before anything is allocated.
        materialised = full + sum(dtypes.byte_length(x.data_type, x.shape)
                                  for x in {id(x): x for x in op.inputs if x is not None
                                            and x.constant.fill is not None}.values())
        if materialised > self.max_bytes:
            self.counts["kept_memory"] += 1
            self.kept["memory"].append(f"{op.op_type} '{op.name}' ({materialised} bytes)")
            return
        all_fills = all(x is None or x.constant.fill is not None for x in op.inputs)
        if full - freed > GROWTH_PER_OP and not (all_fills and full <= _UNIFORM_PROBE_BYTES):
            self._keep_for_growth(op, full - freed)
            return
        try:
            values = evaluate(op)
        except ConverterError as e:
            self.counts["failed"] += 1
            self.kept["failed"].append(f"{op.op_type} '{op.name}': {e.line()}")
            return
        data = [constant_data(o.data_type, o.shape, v) for o, v in zip(op.outputs, values)]
        needed = {id(o) for o in _needed(op)}
        growth = sum(stored_bytes(d) for o, d in zip(op.outputs, data)
                     if id(o) in needed) - freed
        if growth > GROWTH_PER_OP or self.grown + growth > self.budget:
            self._keep_for_growth(op, growth)
            return
        self.grown += growth
        self._replace(op, data)
        self.counts["folded"] += 1

    def _stays_quantized(self, op: Operation) -> bool:
        """This constant-only dequantizeLinear is kept so its weights stay quantized (see the
        module docstring)."""
        weights = op.inputs[0]
        if weights.size > QUANTIZED_KEEP_ELEMENTS:
            return True
        if self.ctx.target is None or dtypes.info(weights.data_type).bits != 4:
            return False
        from .quantized_weights import decide  # it folds through this module's evaluate

        decision = decide(op, self.ctx.target, self.ctx.dequantize)
        # widened to 8 bits, they would be folded by size by the pipeline's second folding
        return decision.action in ("keep", "re-encode") and \
            dtypes.info(decision.new_type).bits == 4

    def _keep_for_growth(self, op: Operation, growth: int) -> None:
        self.counts["kept_growth"] += 1
        self.kept["growth"].append(f"{op.op_type} '{op.name}' (+{growth} bytes)")

    def _replace(self, op: Operation, data: list[ConstantData]) -> None:
        graph = self.graph
        replacements = []
        for out, d in zip(op.outputs, data):
            if not (out.uses() or out.is_graph_output()):
                replacements.append(out)  # an unread result of a multi-result op: dropped
                continue
            const = graph.add_constant(graph.fresh_name(f"{out.name}_value"), d)
            if out.is_graph_output():
                # Readers take the constant (and may fold in turn); the output must be an
                # op's result, so it reads the constant through an identity.
                out.replace_all_uses_with(const)
                const = graph.add_operation("identity", [const], before=op,
                                            name=graph.fresh_name(out.name)).output
            replacements.append(const)
        sources = [x for x in op.inputs if x is not None]
        replace_results(graph, op, replacements, take_names=True)
        for x in sources:  # the constants only this op read
            if x.graph is graph and not x.uses():
                graph.remove_operand(x)

    def notes(self) -> list[str]:
        notes = []
        if self.kept["quantized"]:
            notes.append(f"kept {len(self.kept['quantized'])} dequantizeLinear (of more than "
                         f"{QUANTIZED_KEEP_ELEMENTS} elements, or of 4-bit weights the target "
                         f"reads) so the weights stay quantized: "
                         f"{', '.join(self.kept['quantized'][:5])}")
        if self.kept["growth"]:
            notes.append(f"kept {len(self.kept['growth'])} constant-only op(s) whose folding "
                         f"would grow the weights by more than {GROWTH_PER_OP // 1024} KiB "
                         f"each or {self.budget} bytes in all: "
                         f"{', '.join(self.kept['growth'][:5])}")
        if self.kept["memory"]:
            notes.append(f"kept {len(self.kept['memory'])} constant-only op(s) whose evaluation "
                         f"would hold more than {self.max_bytes} bytes at once (the "
                         f"--max-tensor-bytes limit): {', '.join(self.kept['memory'][:5])}")
        for failure in self.kept["failed"]:
            notes.append(f"could not compute {failure}")
        return notes


@graph_pass("fold_constants")
def fold_constants(graph: Graph, ctx: PassContext) -> PassResult:
    folder = _Folder(graph, ctx)
    for op in list(graph.operations):
        folder.visit(op)
    folder.counts["weights_bytes_after"] = sum(stored_bytes(c.constant)
                                               for c in graph.constants.values())
    return PassResult(folder.counts["folded"] > 0, folder.counts, folder.notes())
