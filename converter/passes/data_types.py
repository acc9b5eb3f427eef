"""Data types: int64 becomes int32 on a target without int64; other unsupported types are noted.

A target lacks int64 when an int64 operand of the graph sits where the target does not take
int64: an operand or result of an op (its opSupportLimits entry), a constant (its `constant`
limits), a graph input or output (its `input` / `output` limits). Then:

  1. The int64 operands are split into groups that must change together: all the int64
     operands of one operation are in one group (an op needs its int64 operands to agree;
     argMin's input and result, or cast's, do not, and are grouped only by int64 itself).
  2. A group changes only if it can. Each constant's values must fit in int32. Each op must
     still be valid with int32 (its shape rule is run first). A pad `value` must fit int32.
     A group that cannot change is left as it is, with a note saying why.
  3. Constants are converted. Ops are rebuilt with int32 operands: `cast` to int64 casts to
     int32, argMin/argMax `outputDataType` int64 becomes int32, and every other op follows its
     operands (gather indices, shape arithmetic, comparisons ...).
  4. At the graph boundary, an int64 input is cast to int32 as the graph's first op, and an
     int64 output is cast back from int32 as its last. So inputs and outputs keep their int64
     interface. Where the target's own `input` (or `output`) limits leave int64 out too, that
     is not possible: the input (output) itself becomes int32, and a note tells the caller to
     feed (read) int32.

Values the graph computes at run time in int32 are assumed to fit (indices and shape
arithmetic do); a note says so. uint64 and other unsupported types are only noted: the
check reports them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConverterError
from ..ir import ConstantData, Graph, Operand, Operation
from ..ops.registry import infer
from . import PassContext, PassResult, graph_pass
from .cleanup import replace_results
from .rank_limits import operand_slots, type_allowed

if TYPE_CHECKING:
    from ..targets import Target

__all__ = ["data_types", "int64_groups"]

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# Arguments that name a result data type: int64 there becomes int32.
_TYPE_ARGUMENTS = {"cast": "dataType", "argMin": "outputDataType", "argMax": "outputDataType"}


def _lacks_int64(graph: Graph, target: "Target") -> list[str]:
    """Where this graph needs int64 and the target does not take it (empty: nowhere)."""
    where = []
    for op in graph.operations:
        for key, operand in operand_slots(op):
            if operand.data_type == "int64" and not type_allowed(target, op.op_type, key,
                                                                   "int64"):
                where.append(f"{op.op_type} {key}")
    for kind, table in (("constant", graph.constants), ("input", graph.inputs),
                        ("output", graph.outputs)):
        limits = target.io_limits(kind) or {}
        types = limits.get("dataTypes")
        if isinstance(types, list) and "int64" not in types \
                and any(o.data_type == "int64" for o in table.values()):
            where.append(f"graph {kind}s")
    return sorted(set(where))


def _takes_int64(target: "Target", kind: str) -> bool:
    types = (target.io_limits(kind) or {}).get("dataTypes")
    return not isinstance(types, list) or "int64" in types


def int64_groups(graph: Graph) -> list[list[Operand]]:
    """The int64 operands, grouped so that the operands of one op are in one group."""
    parent: dict[int, int] = {}
    by_id: dict[int, Operand] = {}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for operand in graph.operands():
        if operand.data_type == "int64":
            parent[id(operand)] = id(operand)
            by_id[id(operand)] = operand
    for op in graph.operations:
        ids = [id(o) for o in (*op.inputs, *op.outputs) if o is not None and id(o) in parent]
        for other in ids[1:]:
            parent[find(other)] = find(ids[0])
    groups: dict[int, list[Operand]] = {}
    for i, operand in by_id.items():
        groups.setdefault(find(i), []).append(operand)
    return list(groups.values())


def _fits_int32(data: ConstantData) -> bool:
    if data.fill is not None:
        return INT32_MIN <= int(data.fill) <= INT32_MAX
    arr = data.numpy()
    return bool(arr.min() >= INT32_MIN and arr.max() <= INT32_MAX)


def _int32_data(data: ConstantData) -> ConstantData:
    if data.fill is not None:
        return ConstantData("int32", data.shape, fill=int(data.fill), origin=data.origin)
    return ConstantData("int32", data.shape, array=data.numpy().astype(np.int32))


def _new_attrs(op: Operation) -> dict:
    attrs = dict(op.attrs)
    name = _TYPE_ARGUMENTS.get(op.op_type)
    if name is not None and op.attr(name) == "int64":
        attrs[name] = "int32"
    return attrs


def _why_not(group: list[Operand], members: set[int]) -> str | None:
    """Why this group cannot become int32 (None: it can)."""
    for operand in group:
        if operand.is_constant and not _fits_int32(operand.constant):
            return f"constant '{operand.name}' has values outside int32"
    ops = {id(u.op): u.op for o in group for u in o.uses()}
    ops.update({id(o.producer): o.producer for o in group if o.producer is not None})
    for op in ops.values():
        if op.op_type == "pad" and op.attr("mode") == "constant" \
                and not INT32_MIN <= op.attr("value") <= INT32_MAX:
            return f"pad '{op.name}' pads with {op.attr('value')}, outside int32"
        descs = [None if x is None else x.desc._replace(data_type="int32") if id(x) in members
                 else x.desc for x in op.inputs]
        try:
            infer(op.op_type, descs, _new_attrs(op), node=op.name)
        except ConverterError as e:
            return f"{op.op_type} '{op.name}' does not take int32 ({e.line()})"
    return None


class _Int64To32:
    def __init__(self, graph: Graph, target: "Target"):
        self.graph, self.target = graph, target
        self.counts = {"constants": 0, "ops": 0, "input_casts": 0, "output_casts": 0,
                       "inputs_retyped": 0, "outputs_retyped": 0}
        self.notes: list[str] = []

    def run(self) -> None:
        graph = self.graph
        members: set[int] = set()
        for group in int64_groups(graph):
            ids = {id(o) for o in group}
            why = _why_not(group, ids)
            if why is None:
                members |= ids
            else:
                names = ", ".join(sorted(o.name for o in group)[:5])
                self.notes.append(f"kept int64 for {len(group)} operand(s) ({names}): {why}")
        if not members:
            return
        inputs = [o for o in graph.inputs.values() if id(o) in members]
        constants = [o for o in graph.constants.values() if id(o) in members]
        ops = [op for op in graph.operations
               if any(o is not None and id(o) in members for o in (*op.inputs, *op.outputs))]
        for x in inputs:
            self._input(x)
        for c in constants:
            self._constant(c)
        for op in ops:  # in graph order: each reads operands already converted
            self._op(op)
        if self.counts["ops"]:
            self.notes.append(f"{self.counts['ops']} op(s) now compute in int32: the values "
                              f"they compute must fit in int32 (indices and shapes do)")

    def _input(self, x: Operand) -> None:
        graph = self.graph
        if not x.uses():
            return  # an unread input: nothing inside needs it as int32
        first = graph.operations[0]
        if _takes_int64(self.target, "input"):  # keep the interface: cast inside
            cast = graph.add_operation("cast", [x], {"dataType": "int32"}, before=first,
                                       name=graph.fresh_name(f"{x.name}_int32"))
            for use in x.uses():
                if use.op is not cast:
                    use.op.replace_input(use.index, cast.output)
            self.counts["input_casts"] += 1
            return
        order = list(graph.inputs)
        old_name = x.name
        graph.rename(x, graph.fresh_name(f"{old_name}_int64"))
        new = graph.add_input(old_name, "int32", x.shape)
        x.replace_all_uses_with(new)
        graph.remove_operand(x)
        ordered = [(name, graph.inputs[name]) for name in order if name in graph.inputs]
        graph.inputs.clear()  # the retyped input keeps its place among the inputs
        graph.inputs.update(ordered)
        self.counts["inputs_retyped"] += 1
        self.notes.append(f"input '{old_name}' is int32 now (target '{self.target.name}' takes "
                          f"no int64 inputs): feed it int32 values")

    def _constant(self, c: Operand) -> None:
        graph = self.graph
        new = graph.add_constant(graph.fresh_name(c.name), _int32_data(c.constant))
        c.replace_all_uses_with(new)
        name = c.name
        graph.remove_operand(c)
        graph.rename(new, name)
        self.counts["constants"] += 1

    def _op(self, op: Operation) -> None:
        graph = self.graph
        old_outputs = list(op.outputs)
        new = graph.add_operation(op.op_type, list(op.inputs), _new_attrs(op), before=op,
                                  name=graph.fresh_name(op.name))
        finals = []
        for old, out in zip(old_outputs, new.outputs):
            if old.data_type == "int64" and old.is_graph_output() \
                    and _takes_int64(self.target, "output"):
                # Readers inside the graph take the int32 value; the output is cast back.
                old.replace_all_uses_with(out)
                back = graph.add_operation("cast", [out], {"dataType": "int64"}, before=op,
                                           name=graph.fresh_name(f"{old.name}_int64"))
                finals.append(back.output)
                self.counts["output_casts"] += 1
            else:
                if old.data_type == "int64" and old.is_graph_output():
                    keys = [k for k, v in graph.outputs.items() if v is old]
                    self.counts["outputs_retyped"] += len(keys)
                    self.notes += [f"output '{k}' is int32 now (target '{self.target.name}' "
                                   f"takes no int64 outputs): read it as int32" for k in keys]
                finals.append(out)
        replace_results(graph, op, finals, take_names=True)
        self.counts["ops"] += 1


def _other_types(graph: Graph, target: "Target") -> list[str]:
    """One note per (op, operand, data type) the target does not take, int64 aside."""
    found: dict[tuple[str, str, str], list[str]] = {}
    # An op the target lacks needs no check: type_allowed is True for it (the missing op is
    # reported elsewhere).
    for op in graph.operations:
        for key, operand in operand_slots(op):
            if operand.data_type != "int64" and not type_allowed(target, op.op_type, key,
                                                                   operand.data_type):
                found.setdefault((op.op_type, key, operand.data_type), []).append(op.name)
    return [f"{op_type} {key} is {dt} in {len(names)} op(s) ({', '.join(names[:3])}); target "
            f"'{target.name}' does not take {dt} there"
            for (op_type, key, dt), names in sorted(found.items())]


@graph_pass("data_types")
def data_types(graph: Graph, ctx: PassContext) -> PassResult:
    target = ctx.target
    if target is None:
        return PassResult(False, notes=["no target: data types were not checked"])
    lacking = _lacks_int64(graph, target)
    counts: dict[str, int] = {}
    notes: list[str] = []
    if lacking:
        converter = _Int64To32(graph, target)
        converter.run()
        counts, notes = converter.counts, converter.notes
    notes += _other_types(graph, target)
    remaining = sum(o.data_type == "int64" for o in graph.operands())
    counts["int64_operands_left"] = remaining
    changed = any(v for k, v in counts.items() if k != "int64_operands_left")
    return PassResult(changed, counts, notes)
