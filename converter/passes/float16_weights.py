"""The float16_weights pass: float32 weights stored as float16, cast back to float32 in the graph.

`convert --weights float16` (converter.convert(..., weights="float16")) runs it, last: the
weights file roughly halves while every op still computes in float32, because each stored
constant is read through one cast:

    w (float32[64, 3, 3, 3])  ->  w_float16 (float16[64, 3, 3, 3]) -> cast(float32) -> w

The cast's result keeps the constant's name, so the ops, the graph's outputs and a reader of
the graph file see the same names as before. The values change by float16's rounding (a
relative error up to 2**-11 per weight); `verify` compares the result with the float source.

A float32 constant stays as it is, and the pass's notes list it, when
  * it is small (under MIN_BYTES): biases and scalars save little and a cast each costs an op;
  * an op reads it in an operand slot the target wants constant (the target's
    constantOperands: coreml's batchNormalization mean and variance, chromium-litert's
    gatherElements indices ...): a cast's result is computed, so such a slot would break the
    target (passes/constant_operands.py makes those slots constant, this pass must not undo it);
  * a value is beyond float16's range (|x| > 65504 would become infinity);
  * it is a fill (one value repeated, stored as a scalar: no bytes to halve).

A cast of such a constant back to float16 (float16_compute's, for float16 ops that read a
constant float32 ops read too) is dropped, its readers reading the float16 constant: one copy
stored, no cast each way.

It runs after fold_constants (which would fold a cast of a constant back into float32) and
after split_constants (each piece of a split constant is cast on its own, so the concat joining
them still joins float32 pieces).
"""
from __future__ import annotations

import numpy as np

from ..budget import MemoryBudget, format_size
from ..ir import Graph, Operand
from . import PassContext, PassResult, graph_pass
from .weight_types import WEIGHT_TYPES, check_weights, refuse_output  # noqa: F401 (re-exported)

__all__ = ["WEIGHT_TYPES", "MIN_BYTES", "check_weights", "refuse_output", "constant_slots",
           "float16_weights"]

# Constants smaller than this stay float32 (listed in the pass's notes).
MIN_BYTES = 256
_FLOAT16_MAX = float(np.finfo(np.float16).max)


def constant_slots(operand: Operand, ctx: PassContext) -> list[str]:
    """The uses of `operand` in slots the target wants constant, as "op 'name' operand"."""
    if ctx.target is None:
        return []
    found = []
    for use in operand.uses():
        op = use.op
        if op.opdef.variadic:
            continue
        slot = op.opdef.slots[use.index]
        if slot in ctx.target.must_be_constant(op.op_type):
            found.append(f"{op.op_type} '{op.name}' {slot}")
    return found


def _why_kept(operand: Operand, ctx: PassContext) -> tuple[str, str] | None:
    """Why a float32 constant stays float32, as (the reason, how to list the constant), or
    None: it is stored as float16."""
    data, name = operand.constant, operand.name
    if data.fill is not None:
        return "fills", name
    if data.nbytes < MIN_BYTES:
        return f"under {format_size(MIN_BYTES)}", name
    slots = constant_slots(operand, ctx)
    if slots:
        return f"read where {ctx.target.name} wants a constant", f"{name} ({', '.join(slots)})"
    if operand.is_graph_output():
        return "graph outputs", name
    values = data.numpy()  # min and max allocate nothing; a NaN makes both NaN, so it is kept
    if not (-_FLOAT16_MAX <= values.min() and values.max() <= _FLOAT16_MAX):
        return "values beyond float16's range", name
    return None


def _skip_round_trip(graph: Graph, widened: Operand, half: Operand) -> None:
    """A cast back to float16 of `widened` (the float32 cast of `half`), as float16_compute
    leaves for the float16 readers of a constant float32 ops read too: its readers read
    `half` itself. float32 -> float16 of a value float16 holds is exact, so nothing changes
    but a cast per run and, since `half` is the constant, the one copy stored."""
    for use in list(widened.uses()):
        op = use.op
        if op.op_type == "cast" and op.attrs.get("dataType") == "float16" \
                and not op.output.is_graph_output():
            op.output.replace_all_uses_with(half)
            graph.remove_operation(op)
    if not widened.uses() and not widened.is_graph_output():  # it was read by those alone
        graph.remove_operation(widened.producer)


@graph_pass("float16_weights")
def float16_weights(graph: Graph, ctx: PassContext) -> PassResult:
    if check_weights(ctx.weights) != "float16":
        return PassResult(False)
    candidates = [c for c in graph.constants.values() if c.data_type == "float32"]
    budget = MemoryBudget(weights_bytes=sum(c.constant.nbytes for c in candidates
                                            if c.constant.fill is None))
    kept: dict[str, list[str]] = {}
    stored, before, after = 0, 0, 0
    for old in candidates:
        why = _why_kept(old, ctx)
        if why is not None:
            kept.setdefault(why[0], []).append(why[1])
            continue
        size = old.constant.nbytes
        budget.claim(size // 2, f"storing '{old.name}' as float16", where="--weights float16")
        half = graph.add_constant(graph.fresh_name(f"{old.name}_float16"),
                                  np.asarray(old.constant.numpy(), dtype=np.float16))
        uses = old.uses()
        order = {id(op): i for i, op in enumerate(graph.operations)}
        first = min((u.op for u in uses), key=lambda op: order[id(op)], default=None)
        cast = graph.add_operation("cast", [half], {"dataType": "float32"},
                                   name=graph.fresh_name(f"{old.name}/float32"), before=first)
        old.replace_all_uses_with(cast.output)
        name = old.name
        graph.remove_operand(old)
        graph.rename(cast.output, name)
        _skip_round_trip(graph, cast.output, half)
        stored, before, after = stored + 1, before + size, after + size // 2
    notes = [f"kept float32 ({why}): {', '.join(names)}" for why, names in kept.items()]
    counts = {"stored as float16": stored, "kept float32": sum(map(len, kept.values()))}
    if stored:
        notes.insert(0, f"{stored} constant{'s' * (stored != 1)} stored as float16: "
                        f"{format_size(before)} -> {format_size(after)}")
    return PassResult(bool(stored), counts, notes)
