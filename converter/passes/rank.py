"""Rank: operations whose operands a target does not accept at their rank run at one it does.

For each operation with an operand or result outside the target's rank range
(`target.operand_limits(op, operand)["rankRange"]`), the op family's rule in `rank_rules`
plans an equivalent operation at an accepted rank: collapsing leading dimensions of element-wise
ops where broadcasting allows, rank-5 batchNormalization to rank 4, scalars to [1] where the
target takes no rank 0, reductions and softmax over merged dimensions. The pass reshapes the
operands, runs the op, and reshapes each result back, so the rest of the graph is unchanged.
Then it merges the reshape chains this makes (reshape back, reshape again for the next op) so
that chains of such ops pass their tensor along at the accepted rank.

What no rule can fix (conv2d at rank 3, an op family without a rule, dimensions that cannot be
merged) is left as it is and noted; `check` reports it.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConverterError
from ..ir import ConstantData, Graph, Operand, Operation
from ..ops.registry import infer
from . import PassContext, PassResult, graph_pass
from .cleanup import collapse_reshape_chains, replace_results
from .rank_limits import operand_slots, rank_problems, rank_window
from .rank_rules import NO_RANK_RULE, RULES, Plan

__all__ = ["rank", "plan_rank"]


def _reshaped(graph: Graph, x: Operand, shape: tuple[int, ...], before: Operation) -> Operand:
    """`x` at `shape`: a reshaped constant when only `before` reads it (no op, no new bytes),
    else a reshape op."""
    if x.is_constant and all(u.op is before for u in x.uses()):
        data = x.constant
        if data.fill is not None:
            new = ConstantData(data.data_type, shape, fill=data.fill, origin=data.origin)
        elif data.packed:  # packed 4-bit bytes are row-major: the same bytes at any shape
            new = ConstantData(data.data_type, shape,
                               array=np.frombuffer(data.raw_bytes(), np.uint8))
        else:
            new = ConstantData(data.data_type, shape, array=data.numpy().reshape(shape))
        return graph.add_constant(graph.fresh_name(x.name), new)
    return graph.add_operation("reshape", [x], {"newShape": list(shape)}, before=before,
                               name=graph.fresh_name(f"{x.name}_reshaped")).output


def _plan_fits(op: Operation, plan: Plan, keys: list[str], low: int, high: float
               ) -> str | None:
    """Why the planned op would still not fit (or None): its new shapes, by the shape rule.
    Every operand under one of the rule's `keys` counts, reshaped by the plan or not."""
    descs = [None if x is None else x.desc for x in op.inputs]
    for slot, shape in plan.shapes.items():
        descs[slot] = descs[slot]._replace(shape=tuple(shape))
    try:
        results = infer(op.op_type, descs, dict(plan.attrs), node=op.name)
    except ConverterError as e:  # a rule that plans an invalid op is a bug: say so loudly
        raise ConverterError(f"the rank rule for {op.op_type} planned an invalid op: {e.line()}",
                             where=f"{op.op_type} '{op.name}'") from e
    slot_keys = [key for key, _ in operand_slots(op)]  # inputs present, in slot order, first
    present = [d for d in descs if d is not None]
    ranks = [len(d.shape) for d, key in zip(present, slot_keys) if key in keys] \
        + [r.rank for r in results]
    if not all(low <= r <= high for r in ranks):
        return f"the planned op still has ranks {ranks}, outside {low}..{high}"
    return None


def plan_rank(target, op: Operation) -> Plan | str | None:
    """What the pass does with `op` on `target`: None when its ranks fit, a Plan when its
    rule rewrites it into range, else the reason it stays (what `check` quotes)."""
    if not rank_problems(target, op):
        return None
    rule = RULES.get(op.op_type)
    if rule is None:
        why = NO_RANK_RULE.get(op.op_type)
        return f"{op.op_type} has no rank rewrite" + (f": {why}" if why else "")
    keys = rule.keys(op)
    fixed = sorted({key for key, _ in rank_problems(target, op)} - set(keys))
    if fixed:
        return f"the rank rewrite leaves {', '.join(fixed)} as it is"
    low, high = rank_window(target, op.op_type, keys)
    plan = rule.plan(op, low, high)
    why = plan if isinstance(plan, str) else _plan_fits(op, plan, keys, low, high)
    return plan if why is None else why


def _apply(graph: Graph, op: Operation, plan: Plan) -> int:
    """Rewrite `op` by `plan`; returns the number of reshape ops added."""
    before = len(graph.operations)
    inputs = list(op.inputs)
    originals = []
    for slot, shape in plan.shapes.items():
        x = inputs[slot]
        if x.shape != tuple(shape):
            originals.append(x)
            inputs[slot] = _reshaped(graph, x, tuple(shape), op)
    new = graph.add_operation(op.op_type, inputs, plan.attrs, before=op,
                              name=graph.fresh_name(op.name))
    backs = []
    for old, out in zip(op.outputs, new.outputs):
        if out.shape == old.shape:
            backs.append(out)
        else:
            backs.append(graph.add_operation("reshape", [out], {"newShape": list(old.shape)},
                                             before=op, name=graph.fresh_name(old.name)).output)
    replace_results(graph, op, backs, take_names=True)
    for x in originals:  # constants replaced by reshaped copies
        if x.is_constant and x.graph is graph and not x.uses():
            graph.remove_operand(x)
    return len(graph.operations) - before  # the new op replaced the old one: reshapes only


@graph_pass("rank")
def rank(graph: Graph, ctx: PassContext) -> PassResult:
    target = ctx.target
    if target is None:
        return PassResult(False, notes=["no target: ranks were not checked"])
    counts = {"ops_rewritten": 0, "reshapes_added": 0, "reshapes_merged": 0}
    reasons: dict[str, str] = {}
    for op in list(graph.operations):
        plan = plan_rank(target, op)
        if plan is None:
            continue
        if isinstance(plan, str):
            reasons[op.name] = plan
            continue
        counts["reshapes_added"] += _apply(graph, op, plan)
        counts["ops_rewritten"] += 1
    if counts["ops_rewritten"]:
        counts["reshapes_merged"] = collapse_reshape_chains(graph)
    notes = []
    for op in graph.operations:
        problems = rank_problems(target, op)
        if problems:
            why = reasons.get(op.name)
            found = "; ".join(phrase for _, phrase in problems)
            notes.append(f"{op.op_type} '{op.name}': {found} on target '{target.name}'"
                         + (f" ({why})" if why else ""))
    return PassResult(counts["ops_rewritten"] > 0, counts, notes)
