"""Check a graph against a target: every violation at once, each with what would fix it.

    violations = check(graph, "coreml")
    for v in violations:
        print(v.line())   # coreml: batchNormalization 'bn' mean 'm': computed by ...; fix: ...

The rules, in the order they are reported:
  1. graph inputs, constants and outputs: data type and rank within the target's `input`,
     `constant` and `output` limits;
  2. per operation, in graph order: the op exists on the target; each operand's and result's
     data type and rank within the op's limits; the operands the target needs constant are
     graph constants; no option value the target refuses (`refusedOptions`: chromium-litert
     refuses pad's edge mode);
  3. every tensor's byte length within `maxTensorByteLength`, and every graph constant's within
     the target's `maxConstantByteLength` where it has one (Chromium's LiteRT backend refuses a
     constant over 128 MiB).

Each violation's `fix` comes from the advice table (advice.py): it names the pass that fixes
it only where that pass does, else it begins "no pass"; `advice` is the entry's key.

An operand the target file lists no limits for (an older browser's dump has no rankRange, for
instance) is not checked on that point: the file states no limit. Ops the target emulates are
not violations; `Target.emulates(op)` says how they run.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from ..ir import Graph, Operand, Operation
from . import Target, builtin_targets, load_target
from .advice import Situation, advise

__all__ = ["Violation", "KINDS", "check", "check_all", "operation_violations"]

KINDS = ("unsupported-op", "data-type", "rank", "tensor-size", "not-constant", "option")


@dataclass(frozen=True)
class Violation:
    """One thing the target does not accept.

    kind: one of KINDS. op/node: the operation (None for graph inputs, constants, outputs).
    operand: the op's operand name in the spec (`input`, `filter`, `output`...), or `input`,
    `constant`, `output` for the graph's own (None for an `option` violation, whose `found`
    names the option and its value: "mode 'edge'"). tensor: the graph operand's name. found: what
    the graph has. rule: what the target allows. fix: the pass or option that would fix it.
    advice: the key of the advice table's entry `fix` comes from.
    """

    target: str
    kind: str
    found: str
    rule: str
    fix: str
    op: str | None = None
    node: str | None = None
    operand: str | None = None
    tensor: str | None = None
    advice: str | None = None

    def where(self) -> str:
        if self.op is None:
            return f"graph {self.operand or 'tensor'} '{self.tensor}'"
        head = f"{self.op} '{self.node}'"
        if self.operand:
            head += f" {self.operand}"
        if self.tensor:
            head += f" '{self.tensor}'"
        return head

    def short(self) -> str:
        return f"{self.where()}: {self.found}"

    def line(self) -> str:
        return f"{self.target}: {self.where()}: {self.found}; {self.rule}; fix: {self.fix}"

    def to_json(self) -> dict:
        return {"target": self.target, "kind": self.kind, "op": self.op, "node": self.node,
                "operand": self.operand, "tensor": self.tensor, "found": self.found,
                "rule": self.rule, "fix": self.fix, "advice": self.advice}


def check(graph: Graph, target: Target | str) -> list[Violation]:
    """Every way `graph` breaks `target`'s limits (a Target, a built-in name or a file path)."""
    target = load_target(target)
    found: list[Violation] = []
    for kind, table in (("input", graph.inputs), ("constant", graph.constants),
                        ("output", graph.outputs)):
        limits = target.io_limits(kind)
        for name, operand in table.items():
            found += _tensor(target, limits, operand, graph_kind=kind, operand=kind,
                             tensor=name)
    for op in graph.operations:
        found += _operation(target, op)
    if target.max_tensor_bytes is not None:
        for operand in graph.operands():
            size = dtypes.byte_length(operand.data_type, operand.shape)
            if size > target.max_tensor_bytes:
                entry, fix = advise(Situation(target, "tensor-size", operand=operand))
                found.append(_at(operand, Violation(
                    target.name, "tensor-size", f"{size} bytes",
                    f"{target.name} takes at most {target.max_tensor_bytes} bytes a tensor",
                    fix, advice=entry.key)))
    limit = target.max_constant_bytes
    if limit is not None:
        for operand in graph.constants.values():
            size = dtypes.byte_length(operand.data_type, operand.shape)
            if size > limit and (target.max_tensor_bytes is None
                                 or size <= target.max_tensor_bytes):  # else said above
                entry, fix = advise(Situation(target, "tensor-size", operand=operand))
                found.append(_at(operand, Violation(
                    target.name, "tensor-size", f"{size} bytes",
                    f"{target.name} takes at most {limit} bytes a constant", fix,
                    advice=entry.key)))
    return found


def check_all(graph: Graph, targets: list[str] | None = None) -> dict[str, list[Violation]]:
    """`check` against several targets (default: every built-in one), by target name."""
    result = {}
    for name in targets or builtin_targets():
        target = load_target(name)
        result[target.name] = check(graph, target)
    return result


def _at(operand: Operand, v: Violation) -> Violation:
    """Place a violation on the operation that produces `operand`, or on the graph."""
    op = operand.producer
    if op is None:
        return Violation(**{**v.__dict__, "operand": operand.kind, "tensor": operand.name})
    return Violation(**{**v.__dict__, "op": op.op_type, "node": op.name,
                        "operand": _result_name(op, operand.index), "tensor": operand.name})


def _result_name(op: Operation, index: int) -> str:
    """A result's name in opSupportLimits: `output`, `outputs` (split), or `output0`..."""
    limits = op.opdef.limits
    if "output" in limits:
        return "output"
    if "outputs" in limits:
        return "outputs"
    return f"output{index}"


def operation_violations(op: Operation, target: Target) -> list[Violation]:
    """Every way one operation breaks `target`'s per-op rules (rule 2 above). The rewrite
    passes test the ops they build with passes/target_fit.misfit, held to the same verdicts
    by tests/passes/test_target_fit.py."""
    return _operation(target, op)


def _operation(target: Target, op: Operation) -> list[Violation]:
    if not target.supports(op.op_type):
        entry, fix = advise(Situation(target, "unsupported-op", op))
        return [Violation(target.name, "unsupported-op", f"{op.op_type} is not supported",
                          f"{target.name} has no {op.op_type} op", fix, op=op.op_type,
                          node=op.name, advice=entry.key)]
    opdef = op.opdef
    names = [opdef.operands[0]] * len(op.inputs) if opdef.variadic else list(opdef.slots)
    found: list[Violation] = []
    where = {"op": op.op_type, "node": op.name}
    for name, operand in zip(names, op.inputs):
        if operand is not None:
            found += _tensor(target, target.operand_limits(op.op_type, name), operand,
                             op_=op, operand=name, tensor=operand.name, **where)
    for i, result in enumerate(op.outputs):
        name = _result_name(op, i)
        found += _tensor(target, target.operand_limits(op.op_type, name), result,
                         op_=op, operand=name, tensor=result.name, **where)
    for name in target.must_be_constant(op.op_type):
        operand = op.input(name)
        if operand is not None and not operand.is_constant:
            found.append(_not_constant(target, op, name, operand))
    for option in target.refused_options.get(op.op_type, {}):
        value = op.attr(option)
        if target.refuses(op.op_type, option, value):
            entry, fix = advise(Situation(target, "option", op))
            found.append(Violation(
                target.name, "option", f"{option} '{value}'",
                f"{target.name} refuses {op.op_type} with {option} '{value}'", fix,
                op=op.op_type, node=op.name, advice=entry.key))
    return found


def _tensor(target: Target, limits: dict | None, value: Operand, *, op_: Operation | None = None,
            graph_kind: str | None = None, **where) -> list[Violation]:
    """Data type and rank of one tensor against one `{dataTypes, rankRange}` entry."""
    if limits is None:
        return []
    found = []
    desc = value.desc
    allowed = limits["dataTypes"]
    if desc.data_type not in allowed:
        entry, fix = advise(Situation(target, "data-type", op_, value, graph_kind,
                                      desc.data_type, tuple(allowed)))
        found.append(Violation(
            target.name, "data-type", f"data type {desc.data_type}",
            f"{target.name} takes {', '.join(allowed) or 'no data type'}", fix,
            advice=entry.key, **where))
    ranks = limits.get("rankRange")
    if ranks is not None and not ranks["min"] <= len(desc.shape) <= ranks["max"]:
        lo, hi = ranks["min"], ranks["max"]
        span = f"rank {lo}" if lo == hi else f"ranks {lo} to {hi}"
        entry, fix = advise(Situation(target, "rank", op_, value, graph_kind))
        found.append(Violation(
            target.name, "rank", f"rank {len(desc.shape)}", f"{target.name} takes {span}",
            fix, advice=entry.key, **where))
    return found


def _not_constant(target: Target, op: Operation, name: str, operand: Operand) -> Violation:
    if operand.is_input:
        found = "a graph input"
    else:
        producer = operand.producer
        found = f"computed by {producer.op_type} '{producer.name}'"
    entry, fix = advise(Situation(target, "not-constant", op, operand))
    return Violation(
        target.name, "not-constant", found, f"{target.name} needs {op.op_type} {name} to be a "
        f"graph constant", fix, op=op.op_type, node=op.name, operand=name, tensor=operand.name,
        advice=entry.key)
