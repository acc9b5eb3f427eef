"""How many times a Loop runs, found before it is unrolled, when its condition is computed.

A Loop whose body computes its condition (`i < M`, a counter carried from one iteration to the
next) is unrolled one copy at a time until the condition turns false, and each copy is counted
against the unrolling budget as it is made (control_flow.py). Loops nested in such loops made a
hostile file cost seconds of importing before the budget stopped it. Most such conditions need
only a few of the body's nodes: the ones the condition output depends on, and, for a carried
value it reads, the ones that compute that value's next iteration. Those nodes alone are run
here, with numpy, iteration after iteration, on the small known values they read; the count
they give is held against the budget before the first copy is made.

Only Constant and the ops simple_ops.py computes exactly with numpy are run (comparisons,
logic, add/sub/mul, Max/Min, Identity, Cast from bool and integers); any other op, a value
known only at run time, or a value of more than _MAX_ELEMENTS elements, and there is no
prediction (None): the loop is then counted copy by copy, as before. The run stops once the
count passes `stop_after`, what the caller's budget could take at the most.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import onnx

from ..registry import DEFAULT_DOMAINS
from ..simple_ops import SIMPLE_OPS, computed

__all__ = ["predicted_trips", "small_array", "Lookup"]

# A known value looked up by name outside the body (None when not known here).
Lookup = Callable[[str], "np.ndarray | None"]

_MAX_ELEMENTS = 64  # the values a condition is computed from are counters and limits


class _NotPredictable(Exception):
    """The condition needs something this module does not compute."""


def predicted_trips(body: onnx.GraphProto, trips: int | None, going: bool,
                    carried: list, outer: Lookup, stop_after: int) -> int | None:
    """The number of times `body` runs in a Loop of trip count `trips` (None: no limit) and
    initial condition `going`, carrying `carried` (known arrays, or None where not known);
    None when the condition cannot be computed here. A count past `stop_after` is returned
    as stop_after + 1."""
    if len(body.input) != 2 + len(carried) or not body.output \
            or len(body.output) < 1 + len(carried):
        return None
    try:
        nodes = _cone(body, len(carried))
        env0 = {t.name: small_array(t) for t in body.initializer}
        state = {}
        for vi, value in zip(body.input[2:], carried):
            state[vi.name] = value
        count = 0
        cond = going
        while cond and (trips is None or count < trips):
            if count > stop_after:
                return count
            env = dict(env0)
            env[body.input[0].name] = np.array(count, np.int64)
            env[body.input[1].name] = np.array(True)
            env.update(state)
            for node in nodes:
                _run(node, env, outer)
            cond = _flag(_read(env, body.output[0].name, outer))
            state = {vi.name: env.get(out.name) for vi, out in
                     zip(body.input[2:], body.output[1:1 + len(carried)])}
            count += 1
        return count
    except _NotPredictable:
        return None


def _cone(body: onnx.GraphProto, n_carried: int) -> list:
    """The body's nodes the condition output depends on, through the carried values it reads
    (their next values' nodes join), in the body's order."""
    made = {out: k for k, n in enumerate(body.node) for out in n.output if out}
    carried_next = {vi.name: out.name for vi, out in
                    zip(body.input[2:2 + n_carried], body.output[1:1 + n_carried])}
    wanted, seen, todo = set(), set(), [body.output[0].name]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in carried_next:
            todo.append(carried_next[name])
        k = made.get(name)
        if k is None:
            continue
        node = body.node[k]
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for a in node.attribute):
            raise _NotPredictable()
        wanted.add(k)
        todo.extend(n for n in node.input if n)
    return [body.node[k] for k in sorted(wanted)]


def small_array(t: onnx.TensorProto) -> np.ndarray | None:
    """A small tensor of the body as an array; None when big or stored elsewhere (the cone
    reading it then stops the prediction)."""
    if t.data_location == onnx.TensorProto.EXTERNAL or \
            int(np.prod([max(int(d), 0) for d in t.dims], dtype=np.float64)) > _MAX_ELEMENTS:
        return None
    try:
        return np.asarray(onnx.numpy_helper.to_array(t))
    except Exception:  # a damaged tensor is the import's to report, not the prediction's
        return None


def _read(env: dict, name: str, outer: Lookup) -> np.ndarray:
    value = env[name] if name in env else outer(name)
    if value is None or not isinstance(value, np.ndarray) or value.size > _MAX_ELEMENTS:
        raise _NotPredictable()
    return value


def _flag(value: np.ndarray) -> bool:
    if value.size != 1 or value.dtype != np.bool_:
        raise _NotPredictable()
    return bool(value.reshape(-1)[0])


def _run(node: onnx.NodeProto, env: dict, outer: Lookup) -> None:
    if node.domain not in DEFAULT_DOMAINS or len(node.output) != 1:
        raise _NotPredictable()
    if node.op_type == "Constant":
        env[node.output[0]] = _constant(node)
        return
    if node.op_type not in SIMPLE_OPS:
        raise _NotPredictable()
    result = computed(node, [_read(env, n, outer) for n in node.input])
    if result is None:
        raise _NotPredictable()
    env[node.output[0]] = np.asarray(result)


def _constant(node: onnx.NodeProto) -> np.ndarray:
    for a in node.attribute:
        if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
            value = small_array(a.t)
            if value is None:
                raise _NotPredictable()
            return value
        if a.name == "value_int" and a.type == onnx.AttributeProto.INT:
            return np.array(a.i, np.int64)
        if a.name == "value_float" and a.type == onnx.AttributeProto.FLOAT:
            return np.array(a.f, np.float32)
    raise _NotPredictable()
