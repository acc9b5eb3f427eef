"""The layout pass's edits: transposes made, folded, merged and dropped through the IR.

LayoutEditor holds the graph and the target layout, makes each edit through the IR's own
methods and counts it in `stats`. Its `simplify(t)` handles one transpose on its own: by the
identity it goes; of a transpose it becomes one transpose (or none); of a constant it becomes
a new constant, transposed now. Replaced results hand their names on (`swap`), so the graph's
operand names outlive the rewrites. Moving transposes: layout_push.py (up: layout_push_up.py).
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import ConverterError
from ..ir import ConstantData, Graph, Operand, Operation
from .layout_ops import LAYOUT_BEARING, input_perm
from .layout_perms import align, apply, compose, is_identity, keeps_element_order
from .layout_rules import OpView

__all__ = ["LayoutEditor", "perm_of", "merged_attrs"]


def perm_of(t: Operation) -> list[int]:
    """A transpose's permutation (the spec's default reverses the axes)."""
    perm = t.attrs.get("permutation")
    return list(perm) if perm is not None else list(range(t.inputs[0].rank - 1, -1, -1))


def merged_attrs(attrs: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`attrs` with a rule's changes applied (a None value drops the argument)."""
    out = dict(attrs)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


class LayoutEditor:
    """The graph being rewritten for `target` ("nchw" or "nhwc"), and what was done to it."""

    def __init__(self, graph: Graph, target: str):
        self.graph = graph
        self.target = target
        self.stats: Counter[str] = Counter()
        self._folded: dict[tuple[str, tuple[int, ...]], Operand] = {}
        self._maybe_orphaned: set[str] = set()

    # -- primitive edits ---------------------------------------------------------------------
    def transpose(self, x: Operand, perm, *, before: Operation | None) -> Operand:
        op = self.graph.add_operation("transpose", [x], {"permutation": list(perm)},
                                      name=self.graph.fresh_name(f"{x.name}_transpose"),
                                      before=before)
        return op.output

    @staticmethod
    def foldable(operand: Operand) -> bool:
        """Constants whose data can be transposed now (packed 4-bit data is left alone)."""
        return operand.is_constant and dtypes.info(operand.data_type).bits >= 8

    def folded(self, const: Operand, perm, suffix: str | None = None) -> Operand:
        """A new constant holding `const`, right-aligned to len(perm) axes, transposed by
        `perm` (made once per constant and permutation)."""
        key = (const.name, tuple(perm))
        made = self._folded.get(key)
        if made is not None and made.graph is self.graph:
            return made
        data = const.constant
        shape = align(const.shape, len(perm))
        new_shape = apply(shape, perm)
        if data.fill is not None:
            new = ConstantData(const.data_type, new_shape, fill=data.fill, origin=data.origin)
        else:
            # A view: the re-laid bytes are made one tensor at a time when written (or run),
            # never all at once beside the source's.
            array = data.numpy().reshape(shape).transpose(perm)
            new = ConstantData(const.data_type, new_shape, array=array)
        suffix = suffix or "t" + "".join(map(str, perm))
        made = self.graph.add_constant(self.graph.fresh_name(f"{const.name}_{suffix}"), new)
        self._folded[key] = made
        self._maybe_orphaned.add(const.name)
        self.stats["constants_transposed"] += 1
        return made

    def remove(self, op: Operation) -> None:
        for operand in op.inputs:
            if operand is not None and operand.is_constant:
                self._maybe_orphaned.add(operand.name)
        self.graph.remove_operation(op)

    def remove_if_dead(self, op: Operation) -> bool:
        if op.graph is None:
            return False
        if any(out.uses() or out.is_graph_output() for out in op.outputs):
            return False
        self.remove(op)
        return True

    @staticmethod
    def can_stand_for(old: Operand, new: Operand) -> bool:
        """Whether `new` may replace `old` everywhere: a graph output must stay a result."""
        return not old.is_graph_output() or new.kind == "intermediate"

    def swap(self, old_op: Operation, results: list[Operand], *, rename: bool = True) -> None:
        """Replace old_op's results by `results` (same shapes), drop old_op, and (with
        `rename`) give each new result its old name, so the graph's names outlive the rewrite."""
        names = []
        for old, new in zip(old_op.outputs, results):
            if old.desc != new.desc:
                raise ConverterError(
                    f"the layout rewrite of {old_op.op_type} '{old_op.name}' gives {new.desc} "
                    f"for '{old.name}', which is {old.desc} (a bug in the layout pass)")
            names.append((old.name, new))
            self.graph.replace_operand(old, new)
        self.remove(old_op)
        for name, new in names if rename else ():
            if new.kind == "intermediate" and not self.graph.has_operand(name):
                self.graph.rename(new, name)

    def drop_orphans(self) -> None:
        """Remove constants this pass left unread (filters and operands it re-laid out)."""
        for name in sorted(self._maybe_orphaned):
            if self.graph.has_operand(name):
                const = self.graph.operand(name)
                if const.is_constant and not const.uses() and not const.is_graph_output():
                    self.graph.remove_operand(const)

    def layout_ok(self, op_type: str, attrs: dict, shapes) -> bool:
        """A layout-bearing op must stay in the target layout whatever is pushed through it."""
        if op_type not in LAYOUT_BEARING:
            return True
        return input_perm(OpView(op_type, attrs, shapes), self.target) is None

    # -- one transpose on its own ------------------------------------------------------------
    def simplify(self, t: Operation) -> tuple[bool, Operation | None]:
        """Drop, merge or fold `t`. Returns (whether it changed, a new transpose to revisit)."""
        x, perm, out = t.inputs[0], perm_of(t), t.output
        if is_identity(perm):
            if not self.can_stand_for(out, x):
                return False, None
            self.graph.replace_operand(out, x)
            self.remove(t)
            self.stats["identity_transposes_removed"] += 1
            return True, None
        source = x.producer
        if source is not None and source.op_type == "transpose":
            combined = compose(perm_of(source), perm)
            inner = source.inputs[0]
            if is_identity(combined):
                if not self.can_stand_for(out, inner):
                    return False, None
                self.graph.replace_operand(out, inner)
                self.remove(t)
                self.remove_if_dead(source)
                self.stats["transpose_pairs_cancelled"] += 1
                return True, None
            merged = self.transpose(inner, combined, before=t)
            self.swap(t, [merged])
            self.remove_if_dead(source)
            self.stats["transposes_merged"] += 1
            return True, merged.producer
        if self.foldable(x) and self.can_stand_for(out, x):
            self.graph.replace_operand(out, self.folded(x, perm))
            self.remove(t)
            return True, None
        return False, None

    # -- final tidying -----------------------------------------------------------------------
    def merge_duplicates(self) -> None:
        """Transposes of one operand by one permutation become one (the first keeps)."""
        position = {id(op): i for i, op in enumerate(self.graph.operations)}
        for t in list(self.graph.operations):
            if t.graph is None or t.op_type != "transpose":
                continue
            for other in t.inputs[0].consumers():
                if other is not t and other.op_type == "transpose" \
                        and perm_of(other) == perm_of(t) \
                        and position[id(other)] > position[id(t)]:
                    self.graph.replace_operand(other.output, t.output)
                    self.remove(other)
                    self.stats["duplicate_transposes_merged"] += 1

    def drop_dead_transposes(self) -> None:
        """Transposes nobody reads (made around an op whose result nobody read) go."""
        for t in reversed(list(self.graph.operations)):
            if t.op_type == "transpose" and self.remove_if_dead(t):
                self.stats["dead_transposes_removed"] += 1

    def reshapes_for_unit_moves(self) -> None:
        """A transpose that only moves size-1 axes keeps the bytes in order: it is a reshape."""
        for t in list(self.graph.operations):
            if t.op_type != "transpose" or t.graph is None:
                continue
            x = t.inputs[0]
            if keeps_element_order(x.shape, perm_of(t)):
                reshape = self.graph.add_operation(
                    "reshape", [x], {"newShape": list(t.output.shape)},
                    name=self.graph.fresh_name(f"{x.name}_reshape"), before=t)
                self.swap(t, [reshape.output])
                self.stats["transposes_made_reshapes"] += 1
