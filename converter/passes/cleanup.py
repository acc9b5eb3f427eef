"""Cleanup: dead operations and constants, identities and no-ops, reshape chains, adjacent
transposes and exact cast chains.

The rules, applied in graph order until none fires:
  1. `identity(x)` is bypassed: its readers read x. Where its result is a graph output and x is
     a graph input or a constant, it stays: an output must be an operation's result (the spec's
     build() rejects an input or a constant as an output), so this is the one identity needed.
  2. No-ops are bypassed the same way: reshape or expand to the input's own shape, cast to the
     input's own type, transpose by the identity permutation, slice of the whole tensor, pad by
     zeros, tile by ones, reverse of no axes, concat of one input.
  3. `reshape(reshape(x, s1), s2)` reads x directly: one reshape to s2 (a no-op if s2 is x's).
  4. `transpose(transpose(x, p), q)` becomes one transpose by the composed permutation
     (dimension i of the result is x's dimension p[q[i]]); the identity permutation goes.
  5. `cast(cast(x, T1), T2)` becomes `cast(x, T2)` when T1 holds every value of x's type
     exactly (int8 -> int32 -> float32, float16 -> float32 -> float16 ...): the value reaching
     the second cast is then x's own, so the first cast changes nothing.
  6. Dead operations (no result read, none an output) and unread constants go.

`bypass`, `replace_results` and `replace_op` are the editing steps the other passes share:
replace an operation's results while graph outputs keep their names.
"""
from __future__ import annotations

from ..errors import ConverterError
from ..ir import Graph, Operand, Operation
from . import PassContext, PassResult, graph_pass

__all__ = ["cleanup", "bypass", "replace_results", "replace_op", "collapse_reshape_chains",
           "exactly_holds"]


# -- editing steps the passes share ------------------------------------------------------------
def replace_results(graph: Graph, op: Operation, replacements: list[Operand], *,
                    take_names: bool) -> None:
    """Readers of `op`'s results, graph outputs included, read `replacements` instead; `op` goes.

    A replacement that now stands for a graph output takes the output's operand name, so the
    `outputs` block of a saved graph still lists the names the user reads. With `take_names`
    (the replacement is a new operand made for this), it takes the old name in every case, so
    rewriting keeps the graph's names stable. Graph inputs are never renamed: they are the
    graph's interface.
    """
    renames = []
    for old, new in zip(op.outputs, replacements, strict=True):
        keys = [k for k, v in graph.outputs.items() if v is old]
        if keys and new.kind != "intermediate":
            raise ConverterError(f"output '{keys[0]}' cannot become {new.kind} '{new.name}'",
                                 where=f"{op.op_type} '{op.name}'",
                                 fix="an output must be an operation's result (a bug in the pass)")
        old.replace_all_uses_with(new)
        for key in keys:
            graph.set_output(key, new)
        if new is not old and new.kind != "input" and (take_names or keys):
            renames.append((new, old.name))
    graph.remove_operation(op)
    for new, name in renames:
        if not graph.has_operand(name):
            graph.rename(new, name)


def bypass(graph: Graph, op: Operation, replacement: Operand) -> bool:
    """Make the readers of `op`'s only result read `replacement` (an operand already in the
    graph) and drop `op`. Refused (False, nothing changed) when the result is a graph output
    and the replacement cannot be one: a graph input, a constant, or already an output."""
    result = op.output
    if result.is_graph_output() and (replacement.kind != "intermediate"
                                     or replacement.is_graph_output()):
        return False
    replace_results(graph, op, [replacement], take_names=False)
    return True


def replace_op(graph: Graph, op: Operation, op_type: str, inputs: list[Operand | None],
               attrs: dict) -> Operation:
    """A new operation in `op`'s place (same position, its results under the old names)."""
    new = graph.add_operation(op_type, inputs, attrs, before=op,
                              name=graph.fresh_name(op.name))
    replace_results(graph, op, list(new.outputs), take_names=True)
    return new


# -- the rules ---------------------------------------------------------------------------------
# Each data type mapped to the types that hold every one of its values exactly.
_HOLDS_EXACTLY: dict[str, frozenset[str]] = {
    "int4": frozenset({"int8", "int32", "int64", "float16", "float32"}),
    "uint4": frozenset({"uint8", "int8", "int32", "uint32", "int64", "uint64", "float16",
                        "float32"}),
    "int8": frozenset({"int32", "int64", "float16", "float32"}),
    "uint8": frozenset({"int32", "uint32", "int64", "uint64", "float16", "float32"}),
    "int32": frozenset({"int64"}),
    "uint32": frozenset({"int64", "uint64"}),
    "float16": frozenset({"float32"}),
    "int64": frozenset(),
    "uint64": frozenset(),
    "float32": frozenset(),
}


def exactly_holds(wide: str, narrow: str) -> bool:
    """Whether every value of type `narrow` is exactly a value of type `wide`."""
    return wide == narrow or wide in _HOLDS_EXACTLY[narrow]


def _permutation(op: Operation) -> list[int]:
    perm = op.attr("permutation")
    return list(perm) if perm is not None else list(reversed(range(op.inputs[0].rank)))


def _is_no_op(op: Operation) -> bool:
    """Whether `op` returns its (first) input unchanged."""
    t = op.op_type
    if t == "identity":
        return True
    if t == "concat":
        return len(op.inputs) == 1
    if len(op.outputs) != 1 or not op.inputs or op.inputs[0] is None:
        return False
    x, y = op.inputs[0], op.output
    if x.desc != y.desc:
        return False  # every no-op keeps the descriptor; below: which ops that do are no-ops
    if t in ("reshape", "expand", "cast"):
        return True
    if t == "transpose":
        return _permutation(op) == list(range(x.rank))
    if t == "slice":
        strides = op.attr("strides")
        return all(s == 0 for s in op.attr("starts")) and (strides is None or all(
            s == 1 for s in strides))
    if t == "pad":
        return not any(op.attr("beginningPadding")) and not any(op.attr("endingPadding"))
    if t == "tile":
        return all(r == 1 for r in op.attr("repetitions"))
    if t == "reverse":
        return op.attr("axes") == []  # absent axes reverse every dimension
    return False


def _producer(operand: Operand | None, op_type: str) -> Operation | None:
    if operand is None or operand.producer is None or operand.producer.op_type != op_type:
        return None
    return operand.producer


def _reshape_chain(graph: Graph, op: Operation, counts: dict) -> bool:
    inner = _producer(op.inputs[0], "reshape")
    if inner is None:
        return False
    replace_op(graph, op, "reshape", [inner.inputs[0]], dict(op.attrs))
    counts["reshape_chains"] += 1
    return True


def _transpose_chain(graph: Graph, op: Operation, counts: dict) -> bool:
    inner = _producer(op.inputs[0], "transpose")
    if inner is None:
        return False
    p, q = _permutation(inner), _permutation(op)
    composed = [p[i] for i in q]
    x = inner.inputs[0]
    if composed == list(range(x.rank)):
        if not bypass(graph, op, x):  # an output reading an input or constant
            replace_op(graph, op, "identity", [x], {})
        counts["transposes_cancelled"] += 1
        return True
    attrs = dict(op.attrs, permutation=composed)
    replace_op(graph, op, "transpose", [x], attrs)
    counts["transposes_composed"] += 1
    return True


def _cast_chain(graph: Graph, op: Operation, counts: dict) -> bool:
    inner = _producer(op.inputs[0], "cast")
    if inner is None:
        return False
    x = inner.inputs[0]
    if not exactly_holds(inner.attr("dataType"), x.data_type):
        return False
    replace_op(graph, op, "cast", [x], dict(op.attrs))
    counts["cast_chains"] += 1
    return True


def collapse_reshape_chains(graph: Graph) -> int:
    """Rules 2 and 3 for reshapes only, dropping the reshapes they leave unread; returns how
    many reshapes went. (The rank pass runs this after inserting reshapes.)"""
    before = sum(op.op_type == "reshape" for op in graph.operations)
    counts = {"reshape_chains": 0}
    for op in list(graph.operations):
        if op.graph is not graph or op.op_type != "reshape":
            continue
        inner = _producer(op.inputs[0], "reshape")
        if _reshape_chain(graph, op, counts) and not inner.output.uses() \
                and not inner.output.is_graph_output():
            graph.remove_operation(inner)
    for op in list(graph.operations):
        if op.op_type == "reshape" and _is_no_op(op):
            bypass(graph, op, op.inputs[0])
    return before - sum(op.op_type == "reshape" for op in graph.operations)


_CHAIN_RULES = {"reshape": _reshape_chain, "transpose": _transpose_chain, "cast": _cast_chain}


@graph_pass("cleanup")
def cleanup(graph: Graph, ctx: PassContext) -> PassResult:
    counts = {"identities": 0, "no_ops": 0, "reshape_chains": 0, "transposes_composed": 0,
              "transposes_cancelled": 0, "cast_chains": 0, "dead_operations": 0,
              "dead_constants": 0}
    transposes_before = sum(op.op_type == "transpose" for op in graph.operations)
    changed = True
    while changed:
        changed = False
        for op in list(graph.operations):  # each rule removes only the op it rewrites
            if _is_no_op(op):
                if bypass(graph, op, op.inputs[0]):
                    counts["identities" if op.op_type == "identity" else "no_ops"] += 1
                    changed = True
                elif op.op_type != "identity":  # an output reading an input or constant
                    replace_op(graph, op, "identity", [op.inputs[0]], {})
                    counts["no_ops"] += 1
                    changed = True
                continue
            rule = _CHAIN_RULES.get(op.op_type)
            if rule is not None and rule(graph, op, counts):
                changed = True
        constants_before = len(graph.constants)
        dead = graph.remove_unused()
        counts["dead_operations"] += dead
        counts["dead_constants"] += constants_before - len(graph.constants)
        changed = changed or dead > 0
    counts["transposes_before"] = transposes_before
    counts["transposes_after"] = sum(op.op_type == "transpose" for op in graph.operations)
    notes = []
    kept = [op.name for op in graph.operations if op.op_type == "identity"]  # all needed now
    if kept:
        notes.append(f"kept {len(kept)} identity op(s) whose output cannot be their input "
                     f"itself (a graph input, a constant or another output): "
                     f"{', '.join(kept[:5])}")
    edits = sum(v for k, v in counts.items() if k not in ("transposes_before",
                                                          "transposes_after"))
    return PassResult(edits > 0, counts, notes)
