"""Order-free regions: where a transpose may pass a reshape that reorders elements.

A one-group GroupNorm exported as reshape to [N, 1, C*H*W] -> normalization -> reshape back
to [N, C, H, W], or a normalization over every non-batch element, computes each output element
from its own input element and statistics of the whole sample (sums, means, maxima), and
statistics do not depend on the order of the elements they summarise. So when
y = transpose(x, perm) keeps the leading (batch) axes in place and only reorders the elements
inside each sample, the region computes the same values on x's order, and

    reshape_back(region(reshape(y)))  ==  transpose(reshape(region(reshape(x)), x.shape), perm)

A region starts at a reshape of y. Its tensors are those computed from it by ops that keep
every element's own position (reshapes and transposes of size-1 axes, element-wise ops whose
other operands are the same for every element of a sample, normalizations over the whole
sample) and ends at reshapes back to y's shape (the exits). Reductions over the whole sample
leave it: their results do not depend on the order. Any other reader of a region tensor (a
conv, a graph output, a per-position operand) means there is no region.
"""
from __future__ import annotations

import math
from typing import Sequence

from ..ir import Operand, Operation
from ..ops.elementwise import BINARY, COMPARISON, LOGICAL_BINARY, PREDICATES, UNARY
from ..ops.reduction import REDUCE_OPS
from .layout_edit import perm_of
from .layout_perms import keeps_element_order

__all__ = ["order_free_exits", "region_entry", "PER_ELEMENT", "COMBINING"]

# Ops that compute each element from the element at the same position alone.
PER_ELEMENT = frozenset((*UNARY, *PREDICATES, "cast", "clamp", "elu", "gelu", "hardSigmoid",
                          "hardSwish", "leakyRelu", "linear", "relu", "sigmoid", "softplus",
                          "softsign", "tanh"))
# Ops that combine elements at the same position with other operands (broadcast).
COMBINING = frozenset((*BINARY, *COMPARISON, *LOGICAL_BINARY, "where", "prelu"))


def _boundary(shape: Sequence[int], batch: int) -> int | None:
    """The last j with prod(shape[:j]) == batch (the axes before j index the samples)."""
    found = None
    for j in range(len(shape) + 1):
        size = math.prod(shape[:j])
        if size == batch:
            found = j
        elif size > batch:
            break
    return found


def _per_sample(shape: Sequence[int], rank: int, j: int) -> bool:
    """Whether an operand of `shape`, broadcast against a rank-`rank` region tensor whose
    samples start at axis j, is the same for every element of a sample."""
    aligned = (1,) * (rank - len(shape)) + tuple(shape)
    return len(shape) <= rank and all(d == 1 for d in aligned[j:])


def _covers_sample(shape: Sequence[int], axes, j: int) -> bool:
    axes = set(range(len(shape)) if axes is None else axes)
    return all(a in axes for a in range(j, len(shape)) if shape[a] != 1)


def _reshape_like(op: Operation) -> bool:
    if op.op_type == "reshape":
        return True
    if op.op_type == "transpose":
        return keeps_element_order(op.inputs[0].shape, perm_of(op))
    return False


def order_free_exits(shape: Sequence[int], perm: Sequence[int], entry: Operation
                     ) -> list[Operation] | None:
    """The reshapes back to `shape` that end the order-free region starting at `entry` (a
    reshape reading transpose(x, perm), of `shape`), or None when `entry` starts none."""
    lead = 0
    while lead < len(perm) and perm[lead] == lead:
        lead += 1
    batch = math.prod(shape[:lead])
    if entry.op_type != "reshape" or _boundary(entry.output.shape, batch) is None:
        return None
    exits: list[Operation] = []
    seen: set[str] = set()
    needed: list[Operand] = []  # same-shaped operands of combining ops: must be region tensors
    todo: list[Operand] = [entry.output]
    while todo:
        value = todo.pop()
        if value.name in seen:
            continue
        seen.add(value.name)
        j = _boundary(value.shape, batch)
        if j is None or value.is_graph_output() or not value.uses():
            return None
        for op in {id(u.op): u.op for u in value.uses()}.values():
            step = _step(op, value, j, batch, tuple(shape))
            if step is None:
                return None
            kind, results, needs = step
            if kind == "exit":
                if op not in exits:
                    exits.append(op)
            todo.extend(results)
            needed.extend(needs)
    if any(x.name not in seen for x in needed):
        return None  # a tensor from outside the region, in y's order, meets one in x's
    return exits or None


def _step(op: Operation, value: Operand, j: int, batch: int, shape: tuple
          ) -> tuple[str, list[Operand], list[Operand]] | None:
    """How the region continues through `op` (a reader of region tensor `value`): ("exit", ...),
    ("inside", results that are region tensors, ...) or ("leaves", ...), with the operands that
    must be region tensors too; None: it cannot."""
    if _reshape_like(op):
        if op.output.shape == shape and op.op_type == "reshape":
            return "exit", [], []
        return ("inside", [op.output], []) if _boundary(op.output.shape, batch) is not None \
            else None
    if op.op_type in PER_ELEMENT:
        return "inside", [op.output], []
    if op.op_type in COMBINING:
        if op.output.shape != value.shape:
            return None  # the region tensor itself is broadcast: positions repeat
        needs = []
        for other in op.inputs:
            if other is value or _per_sample(other.shape, value.rank, j):
                continue
            if other.shape != value.shape:
                return None
            needs.append(other)
        return "inside", [op.output], needs
    if op.op_type in REDUCE_OPS:
        if op.inputs[0] is not value or not _covers_sample(value.shape, op.attr("axes"), j):
            return None
        return "leaves", [], []
    if op.op_type == "layerNormalization":
        axes = op.attr("axes")
        axes = list(range(1, value.rank)) if axes is None else axes
        if op.inputs[0] is not value or not _covers_sample(value.shape, axes, j):
            return None
        if any(x is not None and any(d != 1 for d in x.shape) for x in op.inputs[1:]):
            return None  # per-position scale or bias
        return "inside", [op.output], []
    if op.op_type == "instanceNormalization":
        channel = 3 if op.attr("layout") == "nhwc" else 1
        if op.inputs[0] is not value or value.shape[channel] != 1 or value.shape[0] != batch:
            return None
        return "inside", [op.output], []
    return None


def region_entry(exit_op: Operation, shape: Sequence[int], limit: int = 64) -> Operation | None:
    """The reshape that starts the region `exit_op` (a reshape back to `shape`) ends: found by
    walking up through the ops a region holds; `order_free_exits` then checks the region."""
    value = exit_op.inputs[0]
    for _ in range(limit):
        op = value.producer
        if op is None:
            return None
        if op.op_type == "reshape" and op.inputs[0].shape == tuple(shape):
            return op
        if _reshape_like(op) or op.op_type in PER_ELEMENT or op.op_type in (
                "layerNormalization", "instanceNormalization"):
            value = op.inputs[0]
        elif op.op_type in COMBINING:
            same = [x for x in op.inputs if x is not None and x.shape == value.shape]
            if not same:
                return None
            value = same[0]
        else:
            return None
    return None
