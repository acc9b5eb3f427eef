"""Moving transposes up: the layout pass's push-up step (the other push steps: layout_push.py).

`push_up(t)`: transpose(op(x)) becomes op'(transpose(x)) when that leads every new transpose
to a graph input, a constant or another transpose, without adding transposes (through a whole
order-free region too). That moves the transposes in front of a network's first convolution
(after an input normalization, a pad, a GroupNorm) to the graph boundary.

The plan is a graph, not a tree: an operand reached on two paths (x in concat([x, f(x)])) is
planned once per permutation, so the transpose it needs is made once and counted once, and an
op the plan rewrites may have several readers as long as the plan rewrites them all (else the
op would have to stay as well, and the move is refused).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..ir import Operand, Operation
from .layout_edit import LayoutEditor, merged_attrs, perm_of
from .layout_order_free import order_free_exits, region_entry
from .layout_perms import align, apply, compose, inverse, is_identity, is_invariant
from .layout_rules import OpView, reshape_groups, rule_for

__all__ = ["UpMover", "LOOKAHEAD"]

# How many ops ahead the look ahead follows a transpose before giving up on it (and how many
# ops up a plan goes). A residual stream is followed to the network's end: 12 PoolFormer
# blocks with GroupNorms take about 100.
LOOKAHEAD = 256


@dataclass
class _UpPlan:
    """How to compute transpose(operand, perm) without a transpose after operand's producer."""

    kind: str  # same | fold | transpose | compose | op | region
    operand: Operand
    perm: list[int]
    attrs: dict[str, Any] = field(default_factory=dict)
    children: list[tuple[int, "_UpPlan"]] = field(default_factory=list)


def _walk(top: _UpPlan) -> tuple[list[_UpPlan], Counter[str]]:
    """The distinct plans `top` is made of, each after the plans it reads, and how many times
    they read each operand (a plan reached on two paths is one plan, read twice)."""
    done: list[_UpPlan] = []
    reads: Counter[str] = Counter()
    seen: set[int] = set()

    def visit(plan: _UpPlan) -> None:
        for _, child in plan.children:
            reads[child.operand.name] += 1
            if id(child) not in seen:
                seen.add(id(child))
                visit(child)
        done.append(plan)

    visit(top)
    return done, reads


def _cost(done: list[_UpPlan], reads: Counter[str]) -> int | None:
    """Transposes added minus transposes removed; None when an op the plans rewrite would have
    to stay for a reader outside them, or would be rewritten twice (computed in two layouts)."""
    plans_of = Counter(p.operand.name for p in done)
    cost = 0
    for plan in done:
        x = plan.operand
        if plan.kind in ("op", "region") and (
                plans_of[x.name] > 1 or reads[x.name] != len(x.uses())):
            return None
        if plan.kind == "transpose":
            cost += 1
        elif plan.kind == "compose":
            cost += 0 if is_identity(compose(perm_of(x.producer), plan.perm)) else 1
    # a transpose the plans compose with goes when they read it wherever it is read, and
    # never as it is (a "same" plan: the permutation moves only its size-1 axes)
    composed = {p.operand.name: p.operand for p in done if p.kind == "compose"}
    kept = {p.operand.name for p in done if p.kind == "same"}
    cost -= sum(1 for name, x in composed.items() if name not in kept
                and reads[name] == len(x.uses()) and not x.is_graph_output())
    return cost


class UpMover(LayoutEditor):
    """A LayoutEditor that also moves transposes up, to the graph inputs."""

    def push_up(self, t: Operation) -> list[Operation] | None:
        """Move `t` (and every transpose by the same permutation reading the same operand)
        above the op that produces its input. Returns the transposes made, or None."""
        x, perm = t.inputs[0], perm_of(t)
        producer = x.producer
        if producer is None or producer.op_type == "transpose" or x.is_graph_output():
            return None
        siblings = x.consumers()
        if any(s.op_type != "transpose" or perm_of(s) != perm for s in siblings):
            return None
        if all(s.output.is_graph_output() for s in siblings):
            return None  # already at the boundary: moving it up gains nothing
        plan = self._plan_up({}, x, perm, LOOKAHEAD)
        if plan is None:
            return None
        done, reads = _walk(plan)
        reads[x.name] = len(siblings)  # x is read by the siblings, which all go
        cost = _cost(done, reads)
        if cost is None or cost > len(siblings):
            return None
        made: list[Operation] = []
        value = self._apply_up(plan, producer, made, {})
        for i, s in enumerate(siblings):
            self.swap(s, [value], rename=i == 0)
        for replaced in reversed(done):  # the ops replaced, readers before their sources
            if replaced.kind in ("op", "compose", "region"):
                self.remove_if_dead(replaced.operand.producer)
        self.stats["pushed_up"] += 1
        return made

    def _plan_up(self, memo: dict, operand: Operand, perm: list[int], depth: int
                 ) -> _UpPlan | None:
        """The plan for transpose(operand, perm), made once per push-up (`memo`) however
        many paths reach it."""
        key = (operand.name, tuple(perm))
        if key not in memo:
            memo[key] = self._plan_new(memo, operand, perm, depth)
        return memo[key]

    def _plan_new(self, memo: dict, operand: Operand, perm: list[int], depth: int
                  ) -> _UpPlan | None:
        if is_identity(perm):
            return _UpPlan("same", operand, perm)
        if self.foldable(operand):
            return _UpPlan("fold", operand, perm)
        if operand.is_input:
            return _UpPlan("transpose", operand, perm)
        op = operand.producer
        if op is None:
            # A constant foldable() refuses (packed 4-bit weights): its bytes cannot be
            # re-laid out now, and a transpose of it is what moving up was meant to avoid.
            return None
        if op.op_type == "transpose":
            return _UpPlan("compose", operand, perm)
        if depth == 0 or len(op.outputs) != 1:
            return None
        if operand.is_graph_output():
            return None  # its op stays for the output (push_up's own x is never one)
        if op.op_type == "reshape":
            return self._plan_up_reshape(memo, operand, perm, depth) \
                or self._plan_up_order_free(memo, operand, perm, depth)
        rule = rule_for(op.op_type)
        if rule.opaque:
            return None
        carried = [op.inputs[i] for i in rule.carried_slots(len(op.inputs))
                   if op.inputs[i] is not None]
        if max(o.rank for o in carried) != len(perm):
            return None  # the op changes rank: only rank-keeping ops are pushed up
        # op' is the op that gives back op's arguments when `perm` is pushed down through it.
        backward = rule.remap(OpView.of(op), inverse(perm))
        if backward is None:
            return None
        attrs = merged_attrs(op.attrs, backward.attrs)
        rank = len(perm)
        shapes = [o.shape if o is not None else None for o in op.inputs]
        children = []
        for slot in rule.carried_slots(len(op.inputs)):
            source = op.inputs[slot]
            if source is None or is_invariant(source.shape, perm):
                continue
            lead = rank - source.rank
            if perm[:lead] == list(range(lead)):
                own = [p - lead for p in perm[lead:]]
                child = self._plan_up(memo, source, own, depth - 1)
                shapes[slot] = apply(source.shape, own)
            elif self.foldable(source):
                child = _UpPlan("fold", source, perm)
                shapes[slot] = apply(align(source.shape, rank), perm)
            else:
                child = None
            if child is None:
                return None
            children.append((slot, child))
        forward = rule.remap(OpView(op.op_type, attrs, shapes), perm)
        if forward is None or [list(q) if q is not None else None for q in forward.outputs] \
                != [perm]:
            return None
        if any(op.attr(k) != v for k, v in forward.attrs.items()):
            return None
        if not self.layout_ok(op.op_type, attrs, shapes):
            return None
        return _UpPlan("op", operand, perm, attrs, children)

    def _plan_up_reshape(self, memo: dict, operand: Operand, perm: list[int],
                         depth: int) -> _UpPlan | None:
        """transpose(reshape(x), perm) as reshape(transpose(x, perm'), ...): possible when perm
        moves the reshape's groups of axes whole (a conv1d's [n, c, l] -> [n, c, 1, l] read in
        nhwc is [n, l, c] reshaped)."""
        x = operand.producer.inputs[0]
        groups = reshape_groups(x.shape, operand.shape)
        new_shape = apply(operand.shape, perm)
        moved = [p for p in perm if operand.shape[p] != 1]  # operand's axes as the result has them
        group_of = {axis: g for g, (_, outs) in enumerate(groups) for axis in outs}
        order: list[int] = []  # groups in the order the result holds them
        for axis in moved:
            if not order or order[-1] != group_of[axis]:
                order.append(group_of[axis])
        if len(order) != len(groups) or any(
                [a for a in moved if group_of[a] == g] != groups[g][1] for g in order):
            return None  # a group is split up or reordered inside: not a whole-group move
        rank_of = {axis: (order.index(g), k) for g, (ins, _) in enumerate(groups)
                   for k, axis in enumerate(ins)}
        keys, last = [], (-1, -1)
        for axis in range(x.rank):  # a size-1 axis of x follows the axis before it
            last = rank_of.get(axis, last)
            keys.append((*last, 0 if axis in rank_of else axis + 1))
        source_perm = sorted(range(x.rank), key=lambda a: keys[a])
        child = self._plan_up(memo, x, source_perm, depth - 1)
        if child is None:
            return None
        return _UpPlan("op", operand, perm, {"newShape": list(new_shape)}, [(0, child)])

    def _plan_up_order_free(self, memo: dict, operand: Operand, perm: list[int],
                            depth: int) -> _UpPlan | None:
        """transpose(exit, perm) where `operand` is the one exit of an order-free region (a
        one-group GroupNorm's reshape back): the region reads its source transposed instead,
        and the exit reshapes to the transposed shape."""
        exit_op = operand.producer
        entry = region_entry(exit_op, operand.shape)
        if entry is None or order_free_exits(operand.shape, perm, entry) != [exit_op]:
            return None
        child = self._plan_up(memo, entry.inputs[0], perm, depth - 1)
        if child is None:
            return None
        return _UpPlan("region", operand, perm, {"entry": entry}, [(0, child)])

    def _apply_up(self, plan: _UpPlan, before: Operation, made: list[Operation],
                  values: dict[int, Operand]) -> Operand:
        """The value `plan` computes, made once (`values`, by plan) however often it is read."""
        if id(plan) not in values:
            values[id(plan)] = self._apply_new(plan, before, made, values)
        return values[id(plan)]

    def _apply_new(self, plan: _UpPlan, before: Operation, made: list[Operation],
                   values: dict[int, Operand]) -> Operand:
        operand, perm = plan.operand, plan.perm
        if plan.kind == "same":
            return operand
        if plan.kind == "fold":
            return self.folded(operand, perm)
        if plan.kind == "transpose":
            out = self.transpose(operand, perm, before=before)
            made.append(out.producer)
            return out
        if plan.kind == "compose":
            source = operand.producer
            combined = compose(perm_of(source), perm)
            if is_identity(combined):
                return source.inputs[0]
            out = self.transpose(source.inputs[0], combined, before=before)
            made.append(out.producer)
            return out
        op = operand.producer
        if plan.kind == "region":
            entry = plan.attrs["entry"]
            [(_, child)] = plan.children
            # (a child shared with the rest of the plan may be made already, after the entry:
            # the pass sorts the graph at its end)
            entry.replace_input(0, self._apply_up(child, entry, made, values))
            back = self.graph.add_operation("reshape", [op.inputs[0]],
                                            {"newShape": list(apply(operand.shape, perm))},
                                            name=self.graph.fresh_name(op.name), before=before)
            self.stats["order_free_regions_passed"] += 1
            return back.output
        inputs = list(op.inputs)
        for slot, child in plan.children:
            inputs[slot] = self._apply_up(child, before, made, values)
        new_op = self.graph.add_operation(op.op_type, inputs, plan.attrs,
                                          name=self.graph.fresh_name(op.name), before=before)
        return new_op.output
