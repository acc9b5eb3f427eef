"""How each op family can run at another rank: plans for the rank pass.

A plan gives new shapes for some of an operation's operands (the pass reshapes them), the
operation's new arguments, and the pass reshapes each result back to its old shape. A rule
returns a plan, or a sentence saying why the op cannot change rank. Every plan computes
exactly what the op computed, because it only groups dimensions the op treats alike:
  * element-wise ops (broadcasting included), expand and matmul's batch dimensions: adjacent
    dimensions merge where each operand either has the result's sizes in both or broadcasts
    (size 1) in both;
  * softmax, argMin/argMax, cumulativeSum, concat and batchNormalization work along one axis
    and treat every other index independently: dimensions on either side of the axis merge;
  * reductions: adjacent dimensions merge when both are reduced or both are kept; the op then
    keeps the reduced dimensions (as size 1), and the result is reshaped to the old shape;
  * transpose: input dimensions that stay neighbours, in order, in the permutation merge, and
    dimensions of size 1 drop out;
  * slice, pad and reverse: dimensions the op leaves alone merge (and reversed ones with each
    other).
Merging starts from the leading dimensions and stops as soon as the rank fits. A rank below the
target's lowest gains leading dimensions of size 1 (batchNormalization: trailing, so its axis
does not move).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from ..ir import Operation
from ..ops.elementwise import BINARY, COMPARISON, LOGICAL_BINARY, PREDICATES, UNARY
from ..ops.reduction import REDUCE_OPS

__all__ = ["Plan", "Rule", "RULES", "NO_RANK_RULE", "rank_rule"]

Shape = tuple[int, ...]


@dataclass
class Plan:
    shapes: dict[int, Shape]  # input slot -> the shape it is reshaped to
    attrs: dict = field(default_factory=dict)  # the op's arguments and options after


@dataclass(frozen=True)
class Rule:
    keys: Callable[[Operation], list[str]]  # the limits keys whose rank the plan changes
    plan: Callable[[Operation, int, float], "Plan | str"]


RULES: dict[str, Rule] = {}


def _all_slots(op: Operation) -> list[str]:
    from .rank_limits import operand_slots

    return sorted({key for key, _ in operand_slots(op)})


def rank_rule(*op_types: str, keys: Callable[[Operation], list[str]] = _all_slots):
    """Register the decorated plan function as the rank rule of `op_types`.

    keys: the limits keys (operands and results) whose rank the plan changes; by default every
    one the op has. An op whose problem lies outside its keys is left alone (and noted).
    """

    def register(fn):
        for name in op_types:
            if name in RULES:
                raise ValueError(f"rank rule for {name} registered twice")
            RULES[name] = Rule(keys, fn)
        return fn

    return register


def _data_and_result(op: Operation) -> list[str]:
    return [op.opdef.operands[0], "output"]


_SAME_AS_INPUT = ("cast", "clamp", "elu", "gelu", "hardSigmoid", "hardSwish", "leakyRelu",
                  "linear", "relu", "sigmoid", "softplus", "softsign", "tanh")


# -- grouping dimensions ---------------------------------------------------------------------
def _compatible(a: tuple, b: tuple) -> bool:
    return all(x is None or y is None or x == y for x, y in zip(a, b))


def _join(a: tuple, b: tuple) -> tuple:
    return tuple(x if x is not None else y for x, y in zip(a, b))


def merge_dims(labels: list[tuple], count: float, fixed: frozenset[int] = frozenset()
               ) -> list[list[int]] | None:
    """Group adjacent dimensions, leftmost first, until at most `count` groups remain.

    Two neighbours merge when their labels agree item by item (None agrees with anything) and
    neither is `fixed`. None when the rank cannot get that low.
    """
    need = len(labels) - count
    groups: list[list[int]] = []
    joined: list[tuple] = []
    for d, label in enumerate(labels):
        if (groups and need > 0 and d not in fixed and groups[-1][0] not in fixed
                and _compatible(joined[-1], label)):
            groups[-1].append(d)
            joined[-1] = _join(joined[-1], label)
            need -= 1
        else:
            groups.append([d])
            joined.append(label)
    return groups if need <= 0 else None


def merged(shape: Shape, groups: list[list[int]]) -> Shape:
    return tuple(math.prod(shape[d] for d in g) for g in groups)


def _pad(shape: Shape, rank: int) -> Shape:
    return (1,) * (rank - len(shape)) + tuple(shape)


def _broadcast_labels(out: Shape, operands: list[Shape]) -> list[tuple]:
    """Per dimension: for each operand (padded to the result's rank), whether it has the
    result's size there ("full") or broadcasts ("one"); None where the result's size is 1."""
    padded = [_pad(s, len(out)) for s in operands]
    return [tuple(None if out[d] == 1 else ("full" if p[d] == out[d] else "one")
                  for p in padded) for d in range(len(out))]


def _target_rank(rank: int, low: int, high: float) -> int | None:
    """The rank closest to `rank` in low..high; None when the window is empty."""
    if low > high:
        return None
    if rank > high:
        return int(high)
    return max(rank, low)


# -- element-wise ops with broadcasting, expand, matmul -----------------------------------------
def _broadcast_plan(out: Shape, operands: list[Shape], low: int, high: float, tail: int = 0
                    ) -> tuple[list[Shape], Shape] | str:
    """New shapes for operands that broadcast to `out`; the last `tail` dims stay apart (matmul's
    matrix dimensions, which do not broadcast)."""
    rank = len(out)
    target = _target_rank(rank, low, high)
    if target is None or target < tail:
        return f"rank {rank} cannot become a rank in {low}..{high}"
    padded = [_pad(s, rank) for s in operands]
    if target >= rank:
        return [_pad(p, target) for p in padded], _pad(out, target)
    labels = _broadcast_labels(out[:rank - tail], [p[:rank - tail] for p in padded])
    groups = merge_dims(labels, target - tail)
    if groups is None:
        return (f"its {rank} dimensions cannot be merged into {target}: neighbouring "
                f"dimensions broadcast differently")
    groups += [[d] for d in range(rank - tail, rank)]
    return [_trim(merged(p, groups), len(s), low) for p, s in zip(padded, operands)], \
        merged(out, groups)


def _trim(shape: Shape, rank: int, low: int) -> Shape:
    """Drop leading 1s (broadcasting aligns from the right, so they change nothing) down to the
    operand's own rank, so an operand that already fits is not reshaped."""
    keep = max(rank, low)
    while len(shape) > keep and shape[0] == 1:
        shape = shape[1:]
    return shape


@rank_rule(*BINARY, *COMPARISON, *LOGICAL_BINARY, *PREDICATES, *UNARY, *_SAME_AS_INPUT,
           "where", "prelu")
def _elementwise(op: Operation, low: int, high: float) -> Plan | str:
    shapes = [x.shape for x in op.inputs]
    result = _broadcast_plan(op.outputs[0].shape, shapes, low, high)
    if isinstance(result, str):
        return result
    return Plan(dict(enumerate(result[0])), dict(op.attrs))


@rank_rule("expand")
def _expand(op: Operation, low: int, high: float) -> Plan | str:
    result = _broadcast_plan(op.output.shape, [op.inputs[0].shape], low, high)
    if isinstance(result, str):
        return result
    (shape,), out = result
    return Plan({0: shape}, dict(op.attrs, newShape=list(out)))


@rank_rule("matmul")
def _matmul(op: Operation, low: int, high: float) -> Plan | str:
    a, b = op.inputs
    result = _broadcast_plan(op.output.shape, [a.shape[:-2] + (1, 1), b.shape[:-2] + (1, 1)],
                             low, high, tail=2)
    if isinstance(result, str):
        return result
    (sa, sb), _ = result
    return Plan({0: sa[:-2] + a.shape[-2:], 1: sb[:-2] + b.shape[-2:]}, dict(op.attrs))


# -- one-axis ops ------------------------------------------------------------------------------
def _axis_plan(shape: Shape, axis: int, low: int, high: float, *, trailing: bool = False
               ) -> tuple[list[list[int]] | None, int, int] | str:
    """(groups or None, padding, new axis) for an op along `axis` that treats every other
    index independently."""
    rank = len(shape)
    target = _target_rank(rank, low, high)
    if target is None:
        return f"rank {rank} cannot become a rank in {low}..{high}"
    if target >= rank:
        pad = target - rank
        return None, pad, axis if trailing else axis + pad
    groups = merge_dims([("other",)] * rank, target, frozenset({axis}))
    if groups is None:
        return f"its {rank} dimensions cannot be merged into {target} around axis {axis}"
    return groups, 0, next(i for i, g in enumerate(groups) if g == [axis])


def _reshape_for(shape: Shape, groups, pad: int, trailing: bool = False) -> Shape:
    if groups is not None:
        return merged(shape, groups)
    return tuple(shape) + (1,) * pad if trailing else (1,) * pad + tuple(shape)


@rank_rule("softmax", "argMin", "argMax", "cumulativeSum", "concat", "split")
def _one_axis(op: Operation, low: int, high: float) -> Plan | str:
    trailing = op.op_type == "batchNormalization"
    axis = op.attr("axis")
    result = _axis_plan(op.inputs[0].shape, axis, low, high, trailing=trailing)
    if isinstance(result, str):
        return result
    groups, pad, new_axis = result
    attrs = dict(op.attrs, axis=new_axis)
    if op.op_type in ("argMin", "argMax"):
        attrs["keepDimensions"] = True  # the result keeps the rank the plan chose
    slots = range(len(op.inputs)) if op.op_type == "concat" else [0]
    return Plan({i: _reshape_for(op.inputs[i].shape, groups, pad, trailing) for i in slots},
                attrs)


# -- reductions --------------------------------------------------------------------------------
@rank_rule(*REDUCE_OPS)
def _reduce(op: Operation, low: int, high: float) -> Plan | str:
    shape = op.inputs[0].shape
    rank = len(shape)
    axes = op.attr("axes")
    reduced = set(range(rank)) if axes is None else set(axes)
    target = _target_rank(rank, low, high)
    if target is None:
        return f"rank {rank} cannot become a rank in {low}..{high}"
    attrs = dict(op.attrs, keepDimensions=True)
    if target >= rank:
        pad = target - rank
        if axes is not None:
            attrs["axes"] = [a + pad for a in axes]
        return Plan({0: _pad(shape, target)}, attrs)
    # Size-1 dimensions do not merge freely: reducing one still applies the op's
    # element function (abs, square, exp ...), so reduced and kept never mix.
    groups = merge_dims([("r" if d in reduced else "k",) for d in range(rank)], target)
    if groups is None:
        return (f"its {rank} dimensions cannot be merged into {target}: reduced and kept "
                f"dimensions alternate")
    if axes is not None:
        attrs["axes"] = [i for i, g in enumerate(groups) if g[0] in reduced]
    return Plan({0: merged(shape, groups)}, attrs)


# -- transpose ---------------------------------------------------------------------------------
@rank_rule("transpose")
def _transpose(op: Operation, low: int, high: float) -> Plan | str:
    shape = op.inputs[0].shape
    rank = len(shape)
    perm = op.attr("permutation")
    perm = list(perm) if perm is not None else list(reversed(range(rank)))
    target = _target_rank(rank, low, high)
    if target is None:
        return f"rank {rank} cannot become a rank in {low}..{high}"
    if target >= rank:
        pad = target - rank
        return Plan({0: _pad(shape, target)},
                    dict(op.attrs, permutation=list(range(pad)) + [p + pad for p in perm]))
    need = rank - target
    # Size-1 dimensions carry no data: drop them first.
    dropped = set()
    for d in range(rank):
        if need and shape[d] == 1:
            dropped.add(d)
            need -= 1
    order = [p for p in perm if p not in dropped]  # input dims in output order
    runs: list[list[int]] = []  # output-order runs of input dims that stay neighbours
    for p in order:
        if runs and need and p == runs[-1][-1] + 1:
            runs[-1].append(p)
            need -= 1
        else:
            runs.append([p])
    if need:
        return (f"permutation {perm} keeps too few dimensions together to reach rank "
                f"{target}")
    groups = sorted(runs)  # in input order
    new_shape = tuple(math.prod(shape[d] for d in g) for g in groups)
    return Plan({0: new_shape}, dict(op.attrs, permutation=[groups.index(r) for r in runs]))


# -- slice, pad, reverse -----------------------------------------------------------------------
def _per_dim(op: Operation, low: int, high: float, touched: list, rebuild
             ) -> Plan | str:
    """Ops with a per-dimension argument: dims whose label is None are left alone by the op
    and merge with each other; others merge only with an equal label (not None: `fixed`)."""
    shape = op.inputs[0].shape
    rank = len(shape)
    target = _target_rank(rank, low, high)
    if target is None:
        return f"rank {rank} cannot become a rank in {low}..{high}"
    if target >= rank:
        pad = target - rank
        return Plan({0: _pad(shape, target)}, rebuild(None, pad))
    labels = [("alone",) if t is None else (t,) for t in touched]
    fixed = frozenset(d for d, t in enumerate(touched) if t == "fixed")
    groups = merge_dims(labels, target, fixed)
    if groups is None:
        return f"its {rank} dimensions cannot be merged into {target}: the op changes them"
    return Plan({0: merged(shape, groups)}, rebuild(groups, 0))


@rank_rule("slice")
def _slice(op: Operation, low: int, high: float) -> Plan | str:
    shape = op.inputs[0].shape
    starts, sizes, strides = op.attr("starts"), op.attr("sizes"), op.attr("strides")
    step = strides or [1] * len(shape)
    touched = [None if (starts[d], sizes[d], step[d]) == (0, shape[d], 1) else "fixed"
               for d in range(len(shape))]

    def rebuild(groups, pad):
        if pad:
            new = dict(op.attrs, starts=[0] * pad + starts, sizes=[1] * pad + sizes)
            if strides is not None:
                new["strides"] = [1] * pad + strides
            return new
        new = dict(op.attrs, starts=[starts[g[0]] if len(g) == 1 else 0 for g in groups],
                   sizes=[sizes[g[0]] if len(g) == 1 else math.prod(shape[d] for d in g)
                          for g in groups])
        if strides is not None:
            new["strides"] = [strides[g[0]] if len(g) == 1 else 1 for g in groups]
        return new

    return _per_dim(op, low, high, touched, rebuild)


@rank_rule("pad")
def _pad_op(op: Operation, low: int, high: float) -> Plan | str:
    begin, end = op.attr("beginningPadding"), op.attr("endingPadding")
    touched = [None if not (b or e) else "fixed" for b, e in zip(begin, end)]

    def rebuild(groups, pad):
        if pad:
            return dict(op.attrs, beginningPadding=[0] * pad + begin,
                        endingPadding=[0] * pad + end)
        return dict(op.attrs, beginningPadding=[begin[g[0]] if len(g) == 1 else 0
                                                for g in groups],
                    endingPadding=[end[g[0]] if len(g) == 1 else 0 for g in groups])

    return _per_dim(op, low, high, touched, rebuild)


@rank_rule("reverse")
def _reverse(op: Operation, low: int, high: float) -> Plan | str:
    rank = op.inputs[0].rank
    axes = op.attr("axes")
    axes = set(range(rank)) if axes is None else set(axes)
    # Reversing two neighbouring dimensions reverses their flattened index: they merge.
    touched = ["reversed" if d in axes else None for d in range(rank)]

    def rebuild(groups, pad):
        if pad:
            return dict(op.attrs, axes=[a + pad for a in sorted(axes)])
        return dict(op.attrs, axes=[i for i, g in enumerate(groups) if g[0] in axes])

    return _per_dim(op, low, high, touched, rebuild)


@rank_rule("tile")
def _tile(op: Operation, low: int, high: float) -> Plan | str:
    reps = op.attr("repetitions")
    touched = [None if r == 1 else "fixed" for r in reps]

    def rebuild(groups, pad):
        if pad:
            return dict(op.attrs, repetitions=[1] * pad + list(reps))
        return dict(op.attrs, repetitions=[reps[g[0]] if len(g) == 1 else 1 for g in groups])

    return _per_dim(op, low, high, touched, rebuild)


rank_rule("batchNormalization", keys=_data_and_result)(_one_axis)

# The ops no rank rule can serve, and why: their shape rules fix their ranks.
NO_RANK_RULE = {
    **dict.fromkeys(("conv2d", "convTranspose2d", "averagePool2d", "l2Pool2d", "maxPool2d",
                     "resample2d", "instanceNormalization"),
                    "its input has exactly two spatial dimensions and a channel dimension"),
    "gemm": "it multiplies 2-D matrices only",
    **dict.fromkeys(("gru", "lstm"), "its operands have fixed [steps, batch, features] ranks"),
    **dict.fromkeys(("gruCell", "lstmCell"), "its operands have fixed [batch, features] ranks"),
    "reshape": "its result's shape is its argument",
}

from . import rank_rules_indexing  # noqa: E402,F401  (registers the indexing and norm rules)
