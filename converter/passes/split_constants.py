"""The split_constants pass: a constant over the target's `maxConstantByteLength` becomes
pieces under it, joined by concat.

Chromium 153's LiteRT backend refuses a graph constant of more than 128 MiB ("Buffer size is
over inline limit"; tests/browser/test_chromium_runtime.py) though its maxTensorByteLength is
2 GiB - 1 (alexnet's, vgg19's and zfnet512's first fully connected weights are 150 to 400 MB).
The limit is on one constant, not on a computed tensor, so

    w (1024 x 40000 float32, 156 MiB)  ->  concat([w[0:838], w[838:1024]], axis=0)

builds, and concat only copies: the result is w, bit for bit.

Each constant is cut along its first axis longer than 1, in blocks of as many rows as fit the
limit; where one row of that axis is itself over the limit, each row is cut the same way along
the next axis, and the pieces are joined by nested concats. A uniform (fill) constant's pieces
are fills too: nothing is materialised.

Decided: the pass never makes a piece a graph input instead. Feeding weights at run time
changes the graph's interface (every caller would have to supply them), so when the target's
concat cannot take the constant's data type or rank the constant stays, `check` says so, and
the model must be split by its author. The concat's result is a computed tensor, bounded by
maxTensorByteLength only; a constant over that is beyond any rewrite (the too-big advice).

The pass runs last in `convert --target`'s pipeline: fold_constants would fold a concat of
constants back into one constant, and a fold may itself make a constant over the limit.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes
from ..errors import ConverterError
from ..ir import ConstantData, Graph, Operand, Operation
from ..ir.semantics import infer
from . import PassContext, PassResult, graph_pass
from .target_fit import misfit

if TYPE_CHECKING:
    from ..targets import Target

__all__ = ["over_limit", "split_problem", "plan_pieces"]


def over_limit(operand: Operand, target: "Target | None") -> bool:
    """Whether `operand` is a graph constant over the target's maxConstantByteLength."""
    if target is None or target.max_constant_bytes is None or not operand.is_constant:
        return False
    return dtypes.byte_length(operand.data_type, operand.shape) > target.max_constant_bytes


def split_problem(operand: Operand, target: "Target") -> str | None:
    """Why the pass cannot split this constant on `target` (None: it can)."""
    size = dtypes.byte_length(operand.data_type, operand.shape)
    if target.max_tensor_bytes is not None and size > target.max_tensor_bytes:
        return f"its {size} bytes are over {target.name}'s limit on any tensor"
    if not target.supports("concat"):
        return f"{target.name} has no concat to join the pieces"
    for use in operand.uses():  # a concat's result is computed, not a constant
        slot = use.op.opdef.slots[use.index] if not use.op.opdef.variadic else None
        if slot in target.must_be_constant(use.op.op_type):
            return (f"{target.name} needs {use.op.op_type} '{use.op.name}' {slot} to be a "
                    f"constant")
    try:  # the spec's own concat (WebNN has no int4 or uint4 concat, whatever a target lists)
        infer("concat", [operand.desc, operand.desc], {"axis": 0})
    except ConverterError:
        return f"WebNN's concat takes no {operand.data_type} at rank {operand.rank}"
    for name in ("inputs", "output"):
        limits = target.operand_limits("concat", name) or {}
        types, ranks = limits.get("dataTypes"), limits.get("rankRange")
        if types is not None and operand.data_type not in types:
            return f"{target.name}'s concat takes no {operand.data_type}"
        if ranks is not None and not ranks["min"] <= operand.rank <= ranks["max"]:
            return f"{target.name}'s concat takes no rank {operand.rank}"
    if plan_pieces(operand.data_type, operand.shape, target.max_constant_bytes) == "impossible":
        return f"one element is over {target.max_constant_bytes} bytes"
    return None


def plan_pieces(data_type: str, shape: tuple[int, ...], limit: int):
    """How to cut a tensor of `shape` into pieces of at most `limit` bytes: None when it fits
    as it is; "impossible" when one element is over `limit`; else (axis, [(start, size,
    sub-plan), ...]), a sub-plan for each piece that is cut again (None where it fits)."""
    if dtypes.byte_length(data_type, shape) <= limit:
        return None
    axis = next((d for d, n in enumerate(shape) if n > 1), None)
    if axis is None:
        return "impossible"
    row = list(shape)
    row[axis] = 1
    row_bytes = dtypes.byte_length(data_type, row)
    if row_bytes <= limit:  # as many rows as fit (whole-byte types: split_problem says so)
        step = limit // row_bytes
        blocks = [(s, min(step, shape[axis] - s), None) for s in range(0, shape[axis], step)]
        return axis, blocks
    sub = plan_pieces(data_type, tuple(row), limit)
    if sub == "impossible":
        return "impossible"
    return axis, [(s, 1, sub) for s in range(shape[axis])]


def _piece_data(data: ConstantData, value: np.ndarray | None, index: tuple) -> ConstantData:
    """The ConstantData of one piece: a fill stays a fill; an array piece is a view where the
    cut is along the first axis (a copy of its own bytes otherwise)."""
    if data.fill is not None:
        shape = tuple(len(range(*s.indices(n))) for s, n in zip(index, data.shape))
        return ConstantData(data.data_type, shape, fill=data.fill)
    part = value[index]
    return ConstantData(data.data_type, part.shape, array=np.ascontiguousarray(part))


def _build(graph: Graph, constant: Operand, value, plan, index: list, before: Operation,
           made: list[Operation]) -> Operand:
    """The operand holding constant[index] (a piece, or a concat of pieces) under `plan`."""
    data = constant.constant
    if plan is None:
        piece = graph.add_constant(graph.fresh_name(f"{constant.name}_piece"),
                                   _piece_data(data, value, tuple(index)))
        return piece
    axis, blocks = plan
    parts = []
    for start, size, sub in blocks:
        where = list(index)
        where[axis] = slice(start, start + size)
        parts.append(_build(graph, constant, value, sub, where, before, made))
    op = graph.add_operation("concat", parts, {"axis": axis},
                             name=graph.fresh_name(f"{constant.name}_concat"), before=before)
    made.append(op)
    return op.output


def split_constant(graph: Graph, constant: Operand, limit: int) -> list[Operation]:
    """Replace `constant` by concats of pieces of at most `limit` bytes; the last concat takes
    the constant's name. Returns the concats added."""
    plan = plan_pieces(constant.data_type, constant.shape, limit)
    if plan is None or plan == "impossible":
        raise ValueError(f"constant '{constant.name}' cannot be split under {limit} bytes")
    readers = {id(u.op) for u in constant.uses()}
    first = next(op for op in graph.operations if id(op) in readers)
    data = constant.constant
    value = None if data.fill is not None else data.numpy()
    made: list[Operation] = []
    whole = [slice(0, n) for n in constant.shape]
    joined = _build(graph, constant, value, plan, whole, first, made)
    name = constant.name
    constant.replace_all_uses_with(joined, replace_graph_outputs=True)
    graph.remove_operand(constant)
    graph.rename(joined, name)
    return made


@graph_pass("split_constants")
def run(graph: Graph, ctx: PassContext) -> PassResult:
    target = ctx.target
    if target is None or target.max_constant_bytes is None:
        return PassResult(False)
    counts = {"constants split": 0, "pieces": 0}
    notes = []
    for constant in list(graph.constants.values()):
        if not over_limit(constant, target) or not constant.uses():
            continue
        why = split_problem(constant, target)
        if why is not None:
            notes.append(f"constant '{constant.name}' stays over {target.max_constant_bytes} "
                         f"bytes: {why}")
            continue
        made = split_constant(graph, constant, target.max_constant_bytes)
        refused = [why for op in made if (why := misfit(op, target)) is not None]
        if refused:  # split_problem checked concat's limits; anything else is a bug here
            raise AssertionError(f"split_constants built a concat {target.name} refuses: "
                                 f"{refused[0]}")
        counts["constants split"] += 1
        counts["pieces"] += sum(len(op.inputs) for op in made) - (len(made) - 1)
    return PassResult(counts["constants split"] > 0, counts, notes)
