"""The unrolling budget: body nodes imported by unrolling Loops and Scans, for the whole model.

Every copy a loop makes of its body counts (ImportContext.unrolled), a loop inside a loop's
body (and an If's branch there) in each of its copies; past MAX_UNROLLED_NODES the import
stops. What a loop will cost is held against what is left before its first copy wherever the
file tells it: a trip count with a condition that cannot end the loop sooner, a scan's
length, or a condition whose own nodes can be run here (loop_trips.py); and, for each copy,
at the least what the loops and branches inside it import (`_least_cost`).
"""
from __future__ import annotations

import numpy as np
import onnx

from ....errors import ConverterError
from ....ir import Operand
from ..context import ImportContext
from ..registry import DEFAULT_DOMAINS, Unsupported
from ..tensor_data import tensor_array
from .loop_trips import Lookup, predicted_trips, small_array

__all__ = ["MAX_UNROLLED_NODES", "count_unrolled", "check_size", "check_predicted",
           "condition_fixed"]

# Body nodes imported by unrolling, in all, for the whole model (ImportContext.unrolled):
# beyond this the graph grows too large, and the import takes too long.
MAX_UNROLLED_NODES = 20000
_PACKED = (onnx.TensorProto.INT4, onnx.TensorProto.UINT4)  # known values stored two a byte


def count_unrolled(ctx: ImportContext, body: onnx.GraphProto, what: str) -> None:
    """Count one more copy of `body` against the model's unrolling budget, or refuse it."""
    cost = max(len(body.node), 1)  # an empty body still costs its bookkeeping
    if ctx.unrolled + cost > MAX_UNROLLED_NODES:
        raise Unsupported(f"one more copy of its {len(body.node)}-node {what} would take the "
                          f"model past {MAX_UNROLLED_NODES} body nodes imported by unrolling "
                          f"({ctx.unrolled} so far; every copy counts, loops inside loops too)")
    ctx.unrolled += cost


def check_size(ctx: ImportContext, body: onnx.GraphProto, iterations: int,
               what: str, shown: str | None = None) -> None:
    """Refuse, before any copy, a known number of iterations the budget cannot take: each
    copy costs its body's nodes and, at the least, what its own loops and branches import.
    `shown` is how the message gives the number (default: `iterations`)."""
    left = MAX_UNROLLED_NODES - ctx.unrolled
    per_copy = _least_cost(ctx, body, 0, _outer_known(ctx))
    if iterations * per_copy > left:
        inner = "" if per_copy == max(len(body.node), 1) else \
            f" (with what its inner loops and branches import, at least {per_copy} nodes " \
            f"a copy)"
        raise Unsupported(f"{what} {shown or iterations} iterations of its {len(body.node)}-node "
                          f"body{inner}, past the limit of {MAX_UNROLLED_NODES} body nodes "
                          f"imported by unrolling ({left} left of it)")


def check_predicted(ctx: ImportContext, body: onnx.GraphProto, trips: int | None,
                    carried: list) -> None:
    """A Loop whose body computes its condition: its iterations, when the condition's own
    nodes can be run here (loop_trips.py), held against the budget before any copy."""
    left = MAX_UNROLLED_NODES - ctx.unrolled
    most = left // max(len(body.node), 1)  # past this many, its own nodes alone do not fit
    runs = predicted_trips(body, trips, True, [None if isinstance(v, Operand) else v
                                               for v in carried], _outer_known(ctx), most)
    if runs is None:
        return
    check_size(ctx, body, runs, "its condition runs it for",
                f"more than {most}" if runs > most else None)


def _outer_known(ctx: ImportContext) -> Lookup:
    """Values known at conversion time, by name, for predicted_trips (None: not known)."""
    def known(name: str):
        v = ctx.values.get(name)
        if v is None or v.known is None or v.onnx_type in _PACKED:
            return None
        return ctx.known(name)
    return known


def _least_cost(ctx: ImportContext, body: onnx.GraphProto, depth: int, outer: Lookup) -> int:
    """The body nodes one copy of `body` imports at the least: its own, for each If in it the
    smaller branch, and for each Loop in it whose trip count is a constant and that only the
    trip count ends, or whose iterations predicted_trips can count from values known outside
    it (`outer`) and its constants, that many copies of its body (all counted the same way).
    Capped just past the budget: nothing larger matters."""
    cap = MAX_UNROLLED_NODES + 1
    total = max(len(body.node), 1)
    if depth > 32:  # deeper nesting only adds to what is already counted
        return total
    constants = {t.name: t for t in body.initializer}
    for n in body.node:
        if n.op_type == "Constant" and n.domain in DEFAULT_DOMAINS and n.output:
            value = next((a for a in n.attribute if a.name in ("value", "value_int")), None)
            if value is not None:
                constants[n.output[0]] = value.t if value.name == "value" else value.i
    made = {out for n in body.node for out in n.output}

    def here(name: str):  # what the body's copies see: its constants, then outer values
        given = constants.get(name)
        if isinstance(given, int):
            return np.array(given, np.int64)
        if isinstance(given, onnx.TensorProto):
            return small_array(given)
        return None if name in made else outer(name)

    for n in body.node:
        if n.op_type == "If" and n.domain in DEFAULT_DOMAINS:  # one branch runs, either
            branches = [a.g for a in n.attribute if a.name in ("then_branch", "else_branch")]
            if len(branches) == 2:
                total += min(_least_cost(ctx, b, depth + 1, here) for b in branches)
        if n.op_type != "Loop" or n.domain not in DEFAULT_DOMAINS or not n.input:
            if total >= cap:
                return cap
            continue
        inner = next((a.g for a in n.attribute if a.name == "body"), None)
        trips = _constant_int(ctx, constants, n.input[0])
        runs = len(n.input) < 2 or not n.input[1] or _constant_int(ctx, constants,
                                                                    n.input[1]) not in (0, None)
        if inner is not None and trips is not None and trips > 0 and runs \
                and condition_fixed(inner):
            total += trips * _least_cost(ctx, inner, depth + 1, here)
        elif inner is not None and runs and (trips is not None or not n.input[0]):
            count = predicted_trips(inner, trips, True,
                                    [here(name) if name else None for name in n.input[2:]],
                                    here, cap // max(len(inner.node), 1))
            if count:
                total += count * _least_cost(ctx, inner, depth + 1, here)
        if total >= cap:
            return cap
    return total


def _constant_int(ctx: ImportContext, constants: dict, name: str) -> int | None:
    """A one-element integer or bool constant of the body, or known outside it; else None."""
    if not name:
        return None
    given = constants.get(name)
    if isinstance(given, int):
        return given
    if isinstance(given, onnx.TensorProto):
        if given.data_type not in (onnx.TensorProto.INT64, onnx.TensorProto.INT32,
                                   onnx.TensorProto.BOOL) or any(d != 1 for d in given.dims) \
                or given.data_location == onnx.TensorProto.EXTERNAL:
            return None
        try:  # one element: a damaged one is the import's to report, not the estimate's
            value = np.asarray(tensor_array(given, where=ctx.where, budget=ctx.budget,
                                            release=False))
        except (ConverterError, ValueError):
            return None
        return int(value.reshape(-1)[0]) if value.size == 1 else None
    if name in ctx.values:
        value = ctx.known(name)
        if value is not None and value.size == 1 and value.dtype.kind in "biu":
            return int(value.reshape(-1)[0])
    return None


def condition_fixed(body: onnx.GraphProto) -> bool:
    """Whether the body's condition output is its condition input (directly or through
    Identity nodes): then only the trip count ends the loop."""
    if len(body.input) < 2 or not body.output:
        return False
    made = {out: n for n in body.node for out in n.output}
    name, seen = body.output[0].name, set()
    while name in made and name not in seen:
        seen.add(name)
        producer = made[name]
        if producer.op_type != "Identity" or producer.domain not in DEFAULT_DOMAINS \
                or not producer.input:
            return False
        name = producer.input[0]
    return name == body.input[1].name
