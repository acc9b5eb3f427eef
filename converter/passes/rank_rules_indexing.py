"""Rank rules for ops whose operands are not simply broadcast together: the gathers and
scatters, triangular, layerNormalization and the quantization ops (the table and the shared
helpers are in rank_rules.py).

  * gather: the result is input[:axis] + indices + input[axis + 1:], and each of the three
    parts is read and written in row-major order on its own, so each may be regrouped
    independently: leading dimensions of a part merge, and a part gains leading 1s (a scalar
    index becomes [1], a rank-1 input gets a leading 1, and so on);
  * gatherElements and scatterElements: input, indices (and updates) share every dimension
    but axis, so the dimensions before axis merge (or gain a 1) in all of them alike, and so
    do the ones after it;
  * gatherND and scatterND: an index names input's first k dimensions (k = indices' last
    dimension), which stay; input's other dimensions (and the same ones of updates and the
    result) regroup as one part, and indices' leading dimensions (the batch of coordinates)
    as another;
  * quantizeLinear and dequantizeLinear: scale and zeroPoint have input's rank; neighbouring
    dimensions merge where scale has input's size in both or 1 in both (a block that is
    neither stays apart), like broadcasting;
  * triangular: the triangle lies in the last two dimensions; the ones before it are a batch
    and merge;
  * layerNormalization: like a reduction, normalized and kept dimensions merge apart; scale and
    bias (shaped like the normalized dimensions, in axes order) are reshaped to the merged
    normalized dimensions, which keeps their element order when the axes are ascending.
"""
from __future__ import annotations

import itertools
import math

from ..ir import Operation
from .rank_rules import Plan, _axis_plan, _broadcast_plan, _pad, _reshape_for, _target_rank, \
    merge_dims, merged, rank_rule

Shape = tuple[int, ...]
_MAX_RANK = 8  # the rank no target exceeds: candidates above it are never tried


def _regroup(shape: Shape, rank: int) -> Shape:
    """`shape` at `rank` with the same elements in the same order: leading 1s added, or the
    leading dimensions merged. Rank 0 only for a part of one element."""
    if rank >= len(shape):
        return _pad(shape, rank)
    if rank == 0:
        return ()
    cut = len(shape) - rank + 1
    return (math.prod(shape[:cut]),) + tuple(shape[cut:])


def _part_ranks(shape: Shape) -> range:
    """The ranks a part can be regrouped to: 0 only when it holds one element."""
    return range(0 if math.prod(shape) == 1 else 1, _MAX_RANK + 1)


@rank_rule("gather")
def _gather(op: Operation, low: int, high: float) -> Plan | str:
    x, indices = op.inputs
    axis = op.attr("axis")
    before, after = x.shape[:axis], x.shape[axis + 1:]
    found = _best_parts([before, indices.shape, after],
                        lambda p, q, s: (p + 1 + s, q, p + q + s), low, high)  # in, idx, out
    if found is None:
        return (f"no regrouping of input {list(x.shape)} and indices {list(indices.shape)} "
                f"has every rank in {low}..{high}")
    p, q, s = found
    new_before = _regroup(before, p)
    shape = new_before + (x.shape[axis],) + _regroup(after, s)
    return Plan({0: shape, 1: _regroup(indices.shape, q)}, dict(op.attrs, axis=len(new_before)))


def _best_parts(parts: list[Shape], ranks, low: int, high: float):
    """The part ranks closest to the parts' own for which every rank `ranks(part ranks)` gives
    (one per operand and result) lies in low..high; None when there are none."""
    best = None
    for choice in itertools.product(*(_part_ranks(p) for p in parts)):
        if not all(low <= r <= high for r in ranks(*choice)):
            continue
        cost = sum(abs(c - len(p)) for c, p in zip(choice, parts))
        if best is None or cost < best[0]:
            best = (cost, choice)
    return None if best is None else best[1]


@rank_rule("gatherND", "scatterND")
def _nd(op: Operation, low: int, high: float) -> Plan | str:
    x, indices = op.inputs[0], op.inputs[1]
    k = indices.shape[-1]
    rest, batch = x.shape[k:], indices.shape[:-1]
    found = _best_parts([rest, batch],
                        lambda s, q: (k + s, q + 1, q + s), low, high)  # input, indices, the rest
    if found is None:
        return (f"no regrouping of input {list(x.shape)} (first {k} dimensions indexed) and "
                f"indices {list(indices.shape)} has every rank in {low}..{high}")
    s, q = found
    new_rest, new_batch = _regroup(rest, s), _regroup(batch, q)
    shapes = {0: x.shape[:k] + new_rest, 1: new_batch + (k,)}
    if op.op_type == "scatterND":
        shapes[2] = new_batch + new_rest
    return Plan(shapes, dict(op.attrs))


@rank_rule("quantizeLinear", "dequantizeLinear")
def _quantization(op: Operation, low: int, high: float) -> Plan | str:
    x, scale = op.inputs[0], op.inputs[1]
    rank = x.rank
    target = _target_rank(rank, low, high)
    if target is None:
        return f"rank {rank} cannot become a rank in {low}..{high}"
    if target >= rank:
        return Plan({i: _pad(v.shape, target) for i, v in enumerate(op.inputs)}, dict(op.attrs))
    labels = [(None,) if x.shape[d] == 1 else ("full",) if scale.shape[d] == x.shape[d]
              else ("one",) if scale.shape[d] == 1 else ("block", d) for d in range(rank)]
    fixed = frozenset(d for d, label in enumerate(labels) if label[0] == "block")
    groups = merge_dims(labels, target, fixed)
    if groups is None:
        return (f"its {rank} dimensions cannot be merged into {target}: scale blocks or "
                f"broadcasts neighbouring dimensions differently")
    return Plan({i: merged(v.shape, groups) for i, v in enumerate(op.inputs)}, dict(op.attrs))


@rank_rule("gatherElements", "scatterElements")
def _elements(op: Operation, low: int, high: float) -> Plan | str:
    axis = op.attr("axis")
    result = _axis_plan(op.inputs[0].shape, axis, low, high)
    if isinstance(result, str):
        return result
    groups, pad, new_axis = result
    return Plan({i: _reshape_for(x.shape, groups, pad) for i, x in enumerate(op.inputs)},
                dict(op.attrs, axis=new_axis))


@rank_rule("triangular")
def _triangular(op: Operation, low: int, high: float) -> Plan | str:
    result = _broadcast_plan(op.output.shape, [op.inputs[0].shape], low, high, tail=2)
    if isinstance(result, str):
        return result
    (shape,), _ = result
    return Plan({0: shape}, dict(op.attrs))


@rank_rule("layerNormalization")
def _layer_normalization(op: Operation, low: int, high: float) -> Plan | str:
    x = op.inputs[0]
    rank = x.rank
    axes = op.attr("axes")
    axes = list(range(1, rank)) if axes is None else list(axes)
    target = _target_rank(rank, low, high)
    if target is None:
        return f"rank {rank} cannot become a rank in {low}..{high}"
    extra = [i for i in (1, 2) if i < len(op.inputs) and op.inputs[i] is not None]
    if target >= rank:
        pad = target - rank
        return Plan({0: _pad(x.shape, target)}, dict(op.attrs, axes=[a + pad for a in axes]))
    if axes != sorted(axes):
        return "its axes are not ascending, so merged scale and bias would change order"
    groups = merge_dims([("n" if d in axes else "k",) for d in range(rank)], target)
    if groups is None:
        return (f"its {rank} dimensions cannot be merged into {target}: normalized and kept "
                f"dimensions alternate")
    normalized = [g for g in groups if g[0] in axes]
    shapes = {0: merged(x.shape, groups)}
    for slot in extra:  # scale and bias: one dimension per normalized group
        shapes[slot] = tuple(math.prod(x.shape[d] for d in g) for g in normalized)
    return Plan(shapes, dict(op.attrs, axes=[i for i, g in enumerate(groups) if g[0] in axes]))
