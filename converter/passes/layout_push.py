"""Moving transposes through layout-agnostic ops: the layout pass's push steps.

* `push_down(t, op)`: op(transpose(x)) becomes transpose(op'(x)), with op's axis arguments
  remapped by its layout rule (layout_rules.py). Other operands op transposes alike must be
  transposes by the same permutation (unwrapped), constants (re-laid out now, broadcast-aware),
  unaffected by the permutation (scalars, size-1 axes), or operands some other op already reads
  transposed by the inverse permutation (that transpose is read instead).
* `push_into_dense(t, reshape)`: a flattened feature map read by gemm/matmul with constant
  weights takes no transpose; the weights' rows are permuted instead.
* `push_through_region(t, reshape)`: a reshape that starts an order-free region (a one-group
  GroupNorm: layout_order_free.py) reads x instead, or a grouped one (a GroupNorm with several
  groups: layout_grouped.py) reads x regrouped, and the region's reshapes back take the
  transpose.
* `push_up(t)`, the way up to the graph inputs, is layout_push_up.py.

Pushing down is done where it cannot add transposes for nothing: a transpose read by one op
moves freely (the count stays the same); one read by several, or one that would come out of a
multi-result op as several, moves only when a look ahead sees each copy cancelled or reaching a
graph output. A transpose that is itself a graph output stays whatever moves, so a copy of it
that only reaches another output would be one transpose more: it moves only when each copy is
cancelled.
"""
from __future__ import annotations

from ..ir import ConstantData, Operand, Operation
from .layout_edit import merged_attrs, perm_of
from .layout_grouped import grouped_region, rewrite_grouped
from .layout_order_free import order_free_exits
from .layout_perms import align, apply, compose, extend, inverse, is_identity, is_invariant
from .layout_push_up import LOOKAHEAD as _LOOKAHEAD
from .layout_push_up import UpMover
from .layout_rules import OpView, reshape_groups, rule_for

__all__ = ["TransposeMover"]


class TransposeMover(UpMover):
    """A LayoutEditor that also moves transposes through other ops, down and up."""

    def _plan_inputs(self, op: Operation, slots, perm: list[int]):
        """How each transposed-alike operand of `op` is given to op': [(slot, kind, operand,
        new shape)], or None when one would need a new transpose."""
        rank = len(perm)
        plan = []
        for slot in slots:
            operand = op.inputs[slot]
            source = operand.producer
            if source is not None and source.op_type == "transpose" and operand.rank <= rank \
                    and extend(perm_of(source), rank) == perm:
                unwrapped = source.inputs[0]
                plan.append((slot, "unwrap", unwrapped, unwrapped.shape))
            elif is_invariant(operand.shape, perm):
                plan.append((slot, "keep", operand, operand.shape))
            elif (mate := self._inverse_transpose(operand, perm)) is not None:
                # operand is already transposed back to x's layout elsewhere: read that
                plan.append((slot, "reuse", mate, mate.shape))
            elif self.foldable(operand):
                shape = apply(align(operand.shape, rank), inverse(perm))
                plan.append((slot, "fold", operand, shape))
            else:
                return None
        return plan

    @staticmethod
    def _inverse_transpose(operand: Operand, perm: list[int]) -> Operand | None:
        """An existing transpose(operand, inverse(perm)), which is what op' wants there."""
        if operand.rank != len(perm):
            return None
        back = inverse(perm)
        for reader in operand.consumers():
            if reader.op_type == "transpose" and perm_of(reader) == back:
                return reader.output
        return None

    def push_down(self, t: Operation, op: Operation) -> list[Operation] | None:
        """Move `t` below `op`, its reader. Returns the transposes made after op', or None
        when it does not move."""
        rule = rule_for(op.op_type)
        if rule.opaque:
            return None
        y = t.output
        carried = rule.carried_slots(len(op.inputs))
        reading = [i for i, operand in enumerate(op.inputs) if operand is y]
        if not reading or any(i not in carried for i in reading):
            return None
        present = [i for i in carried if op.inputs[i] is not None]
        rank = max(op.inputs[i].rank for i in present) if rule.broadcast else y.rank
        perm = extend(perm_of(t), rank)
        plan = self._plan_inputs(op, present, perm)
        if plan is None:
            return None
        relayout = rule.remap(OpView.of(op), perm)
        if relayout is None:
            return None
        attrs = merged_attrs(op.attrs, relayout.attrs)
        shapes = [o.shape if o is not None else None for o in op.inputs]
        for slot, _, _, shape in plan:
            shapes[slot] = shape
        if not self.layout_ok(op.op_type, attrs, shapes):
            return None
        shared = y.is_graph_output() or any(u.op is not op for u in y.uses())
        if shared or len(op.outputs) > 1:
            # t stays for a graph output whatever moves: a copy below op that only reaches
            # another graph output adds a transpose, so then each copy must be cancelled.
            memo: dict = {}
            if not all(self._absorbed(out, q, _LOOKAHEAD, memo,
                                      to_output=not y.is_graph_output())
                       for out, q in zip(op.outputs, relayout.outputs)):
                return None
        inputs = list(op.inputs)
        unwrapped = []
        for slot, kind, operand, _ in plan:
            if kind == "fold":
                inputs[slot] = self.folded(operand, inverse(perm))
            else:
                inputs[slot] = operand
                if kind == "unwrap":
                    unwrapped.append(op.inputs[slot].producer)
        new_op = self.graph.add_operation(op.op_type, inputs, attrs,
                                          name=self.graph.fresh_name(op.name), before=op)
        made, results = [], []
        for out, q in zip(new_op.outputs, relayout.outputs):
            if q is not None and not is_identity(q):
                out = self.transpose(out, q, before=op)
                made.append(out.producer)
            results.append(out)
        self.swap(op, results)
        for source in unwrapped:
            self.remove_if_dead(source)
        self.stats["pushed_down"] += 1
        return made

    def push_into_dense(self, t: Operation, reshape: Operation) -> bool:
        """reshape(transpose(x), [n, k]) read only as `a` by gemm/matmul with constant weights
        (a classifier head flattening a feature map) becomes reshape(x, [n, k]) with the
        weights' rows permuted to meet the elements in x's order: no transpose at all."""
        y, out, perm = t.output, reshape.output, perm_of(t)
        if reshape.inputs[0] is not y or out.rank != 2 or out.is_graph_output() \
                or perm[0] != 0 or out.shape[0] != y.shape[0]:
            return False
        readers = list(out.uses())
        for use in readers:
            op = use.op
            if op.op_type not in ("gemm", "matmul"):
                return False  # (any other reader may have no second operand to look at)
            weights_ok = use.index == 0 and self.foldable(op.inputs[1]) \
                and op.inputs[1].rank == 2
            if op.op_type == "gemm":
                weights_ok = weights_ok and not op.attr("aTranspose")
            if not weights_ok:
                return False
        if not readers:
            return False
        inner = [p - 1 for p in perm[1:]]
        flat = self.graph.add_operation("reshape", [t.inputs[0]], {"newShape": list(out.shape)},
                                        name=self.graph.fresh_name(reshape.name), before=reshape)
        self.swap(reshape, [flat.output])
        for op in flat.output.consumers():
            weights = op.inputs[1]
            columns = op.op_type == "gemm" and op.attr("bTranspose")
            # The permuted weights as a strided view (the feature-map axes of the rows, or of
            # the columns, transposed) held under the 2-D shape: no copy until written.
            array = weights.constant.numpy()
            if columns:
                view = array.reshape(array.shape[0], *y.shape[1:]).transpose(
                    0, *(a + 1 for a in inverse(inner)))
            else:
                view = array.reshape(*y.shape[1:], array.shape[1]).transpose(
                    *inverse(inner), len(inner))
            data = ConstantData(weights.data_type, array.shape, array=view)
            permuted = self.graph.add_constant(
                self.graph.fresh_name(f"{weights.name}_rows"), data)
            inputs = [flat.output, permuted, *op.inputs[2:]]
            new_op = self.graph.add_operation(op.op_type, inputs, op.attrs,
                                              name=self.graph.fresh_name(op.name), before=op)
            self.swap(op, new_op.outputs)
        self.remove_if_dead(t)
        self.stats["dense_weights_permuted"] += len(readers)
        return True

    def split_for_reshape(self, t: Operation, reshape: Operation) -> list[Operation] | None:
        """transpose(x, perm) read by a reshape that regroups axes, where perm also reorders
        axes inside a group (a channel shuffle's [n, g, c / g, h, w] -> [n, c, h, w]): split
        perm into a transpose inside the groups, which stays, and one of whole groups, which
        goes on through the reshape when a look ahead sees it cancelled below."""
        y, perm = t.output, perm_of(t)
        if reshape.inputs[0] is not y:
            return None
        groups = [g for g, _ in reshape_groups(y.shape, reshape.attr("newShape"))]
        blocks = sorted((sorted(perm[a] for a in g) for g in groups), key=lambda b: b[0])
        flat = [s for block in blocks for s in block]
        if flat != sorted(flat):
            return None  # the groups interleave in x: no split of perm makes them whole
        inside = list(range(len(perm)))  # x's axes, reordered within each group as y has them
        for g in groups:
            for position, axis in zip(sorted(perm[a] for a in g), g):
                inside[position] = perm[axis]
        if is_identity(inside):
            return None
        back = inverse(inside)
        whole = [back[p] for p in perm]  # compose(inside, whole) == perm
        if is_identity(whole):
            return None  # nothing would move on
        relayout = rule_for("reshape").remap(OpView.of(reshape), whole)
        # Split, t is two transposes: the whole-group part must be cancelled below, or the
        # count goes up by one.
        if relayout is None or not self._absorbed(reshape.output, relayout.outputs[0],
                                                  _LOOKAHEAD, {}, to_output=False):
            return None
        first = self.transpose(t.inputs[0], inside, before=t)
        second = self.transpose(first, whole, before=t)
        reshape.replace_input(0, second)
        self.remove_if_dead(t)
        self.stats["transposes_split"] += 1
        return self.push_down(second.producer, reshape)

    def push_through_region(self, t: Operation, reshape: Operation) -> list[Operation] | None:
        """transpose(x, perm) read by a reshape that starts an order-free region (a one-group
        GroupNorm, layout_order_free.py): the region reads x's order instead; or a grouped
        region (a GroupNorm with several groups, layout_grouped.py): the region runs on x
        regrouped. Either way each reshape back to y's shape becomes a reshape to x's shape
        and the transpose. Moves when t has no other reader and the region one exit, else
        when a look ahead sees every new transpose absorbed (cancelled, when t is a graph
        output)."""
        y, perm, x = t.output, perm_of(t), t.inputs[0]
        if reshape.inputs[0] is not y:
            return None
        exits = order_free_exits(y.shape, perm, reshape)
        region = None
        if exits is None:
            region = grouped_region(y.shape, perm, reshape, x.shape)
            if region is None:
                return None
            exits = region.exits
        shared = y.is_graph_output() or any(u.op is not reshape for u in y.uses())
        if shared or len(exits) > 1:
            memo: dict = {}  # t stays for a graph output: then each copy must be cancelled
            if not all(self._absorbed(e.output, perm, _LOOKAHEAD, memo,
                                      to_output=not y.is_graph_output()) for e in exits):
                return None
        if region is not None:
            made = rewrite_grouped(self, region, x, perm)
            self.remove_if_dead(t)
            return made
        reshape.replace_input(0, x)
        made = []
        for e in exits:
            back = self.graph.add_operation("reshape", [e.inputs[0]], {"newShape": list(x.shape)},
                                            name=self.graph.fresh_name(e.name), before=e)
            out = self.transpose(back.output, perm, before=e)
            self.swap(e, [out])
            made.append(out.producer)
        self.remove_if_dead(t)
        self.stats["order_free_regions_passed"] += 1
        return made

    def _absorbed(self, operand: Operand, q, depth: int, memo: dict, *,
                  to_output: bool) -> bool:
        """Whether a transpose by `q` put on `operand` would, pushed on down, be cancelled by
        another transpose, become a reshape's business, or (with `to_output`) reach a graph
        output; other operands met on the way are assumed to come transposed alike (as a
        residual branch from the same source does)."""
        if q is None or is_identity(q):
            return True
        key = (operand.name, tuple(q))  # (one memo per question: to_output never changes in it)
        if key in memo:
            return memo[key]
        memo[key] = False  # a cycle cannot happen in a DAG; this bounds repeated visits
        ok = self._absorbed_uncached(operand, list(q), depth, memo, to_output)
        memo[key] = ok
        return ok

    def _absorbed_uncached(self, operand: Operand, q: list[int], depth: int, memo,
                           to_output: bool) -> bool:
        if not to_output and operand.is_graph_output():
            return False  # the copy stays there for the output
        for reader in operand.consumers():
            if reader.op_type == "transpose":
                if not is_identity(compose(q, perm_of(reader))):
                    return False  # merging with it keeps a transpose: not a cancellation
                continue
            rule = rule_for(reader.op_type)
            if rule.opaque or depth == 0:
                return False
            if reader.op_type == "reshape" and rule.remap(OpView.of(reader), list(q)) is None:
                exits = order_free_exits(operand.shape, q, reader)
                if exits is None:
                    region = grouped_region(operand.shape, q, reader,
                                            apply(operand.shape, inverse(q)))
                    exits = None if region is None else region.exits
                if exits is None or not all(self._absorbed(e.output, q, depth - 1, memo,
                                                           to_output=to_output)
                                            for e in exits):
                    return False
                continue
            carried = rule.carried_slots(len(reader.inputs))
            if any(u.op is reader and u.index not in carried for u in operand.uses()):
                return False
            present = [i for i in carried if reader.inputs[i] is not None]
            rank = max(reader.inputs[i].rank for i in present) if rule.broadcast \
                else operand.rank
            perm = extend(q, rank)
            view = OpView.of(reader)
            relayout = rule.remap(view, perm)
            if relayout is None or not self.layout_ok(
                    reader.op_type, merged_attrs(reader.attrs, relayout.attrs), view.shapes):
                return False
            for out, q2 in zip(reader.outputs, relayout.outputs):
                if not self._absorbed(out, q2, depth - 1, memo, to_output=to_output):
                    return False
        return True
