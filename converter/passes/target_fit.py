"""Whether one operation fits a target as it is: what the rewrite passes (pad_modes, int_clamp,
split_constants) check the ops they build against before keeping them.

The rules are those of `check`'s per-operation step (targets/check.py, rule 2): the target has
the op; each operand and result has a data type and rank the target lists for it (an operand
the file lists no limits for is unrestricted); the operands the target wants constant are; no
option has a value the target refuses. `check` gives every violation with advice; here the
first one is enough, and the passes sit below the targets layer, so this module holds the
rules they need. tests/passes/test_target_fit.py holds the two to the same verdicts.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir import Operand, Operation

if TYPE_CHECKING:
    from ..targets import Target

__all__ = ["operand_slots", "misfit"]


def operand_slots(op: Operation) -> list[tuple[str, Operand]]:
    """(name in opSupportLimits, operand) for every present input and every result."""
    opdef = op.opdef
    names = [opdef.operands[0]] * len(op.inputs) if opdef.variadic else list(opdef.slots)
    pairs = [(n, x) for n, x in zip(names, op.inputs) if x is not None]
    results = opdef.limits
    for i, out in enumerate(op.outputs):
        name = "output" if "output" in results else "outputs" if "outputs" in results \
            else f"output{i}"
        pairs.append((name, out))
    return pairs


def misfit(op: Operation, target: "Target") -> str | None:
    """Why `target` does not take `op` as it is (None: it does)."""
    if not target.supports(op.op_type):
        return f"{target.name} has no {op.op_type}"
    for name, operand in operand_slots(op):
        limits = target.operand_limits(op.op_type, name)
        if limits is None:
            continue
        if operand.data_type not in limits["dataTypes"]:
            return f"{target.name}'s {op.op_type} takes no {operand.data_type} {name}"
        ranks = limits.get("rankRange")
        if ranks is not None and not ranks["min"] <= operand.rank <= ranks["max"]:
            return f"{target.name}'s {op.op_type} takes no rank-{operand.rank} {name}"
    for name in target.must_be_constant(op.op_type):
        operand = op.input(name)
        if operand is not None and not operand.is_constant:
            return f"{target.name} needs {op.op_type} {name} to be a constant"
    for option in target.refused_options.get(op.op_type, {}):
        if target.refuses(op.op_type, option, op.attr(option)):
            return f"{target.name} refuses {op.op_type} with {option} '{op.attr(option)}'"
    return None
