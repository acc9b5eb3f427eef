"""Grouped regions: a GroupNorm with several groups, laid out again instead of transposed.

GroupNormalization with G groups is imported as reshape to [N, G, C / G * H * W], a
normalization (or mean and variance written out) over the last axis, and reshape back. When
its input is y = transpose(x, perm) of an NHWC x, the elements of one (sample, group) slice lie
in x as [N, H * W, G, C / G] with the slice spread over axes 1 and 3. Statistics do not depend
on the order of the elements they summarise, so the region can run on x directly:

    reshape(x, [N, H*W, G, C/G]) -> normalization over axes [1, 3] -> reshape(x.shape)

and the reshape back to y's shape becomes that reshape followed by the transpose. In general:
the chain transpose(perm) -> entry reshape is split into atoms (layout_chains.atomize); the
entry's axes that the region's statistics cover ("free" axes) may lie anywhere in x, and each
other ("kept") axis must be one run of x's atoms, in the same order as in the entry. Region
tensors have the entry's shape ("full") or that shape with 1s on the free axes ("statistics");
the ops allowed are element-wise ones, broadcast with statistics or with outside operands that
are constant over the free axes (those are reshaped to the new axes), reductions over exactly
the free axes keeping dimensions, and layerNormalization over exactly the free axes without
scale or bias. Anything else, or a region tensor read from outside, means no region.

GroupNorm exported as a rank-3 InstanceNormalization arrives as an instanceNormalization of
[N, G, M, 1]; `instance_as_layer_norm` turns it into layerNormalization over its spatial axes
and its per-channel scale and bias (before the layout pass converts layout-bearing ops), so it
joins a grouped region instead of being converted between two transposes that move the groups.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..ir import Operand, Operation
from ..ops.reduction import REDUCE_OPS
from .layout_chains import atomize
from .layout_order_free import COMBINING, PER_ELEMENT

__all__ = ["GroupedRegion", "grouped_region", "rewrite_grouped", "instance_as_layer_norm"]


@dataclass
class GroupedRegion:
    entry: Operation
    new_shape: list[int]  # the entry's shape read from x
    axis_map: dict[int, list[int]]  # entry axis -> its axes in new_shape
    free: set[int]  # entry axes the statistics cover
    ops: list[Operation] = field(default_factory=list)  # region ops, exits last
    exits: list[Operation] = field(default_factory=list)

    def stat_shape(self) -> list[int]:
        shape = list(self.new_shape)
        for a in self.free:
            for i in self.axis_map[a]:
                shape[i] = 1
        return shape

    def moved(self, shape: Sequence[int]) -> list[int] | None:
        """An outside operand's shape (broadcast against the entry's) in the new axes; None
        when it varies along a free axis."""
        rank = len(self.axis_map)
        aligned = (1,) * (rank - len(shape)) + tuple(shape)
        if len(shape) > rank or any(aligned[a] != 1 for a in self.free):
            return None
        new = [1] * len(self.new_shape)
        for a, axes in self.axis_map.items():
            if aligned[a] != 1:
                [i] = axes  # a kept axis is one new axis
                new[i] = aligned[a]
        return new


def _layout(x_shape, perm, entry_shape, kept: set[int]
            ) -> tuple[list[int], dict[int, list[int]]] | None:
    """x's atoms regrouped by entry axis: (new shape, entry axis -> new axes); None when a
    kept axis is not one run of x's atoms in the entry's order."""
    found = atomize(x_shape, [("transpose", list(perm)), ("reshape", list(entry_shape))])
    if found is None:
        return None
    size, source, axes = found
    axis_of = {atom: a for a, atoms in enumerate(axes) for atom in atoms}
    runs: list[list[int]] = []  # x's atoms, neighbours of one entry axis together
    for atom in source:
        if runs and axis_of[runs[-1][-1]] == axis_of[atom]:
            runs[-1].append(atom)
        else:
            runs.append([atom])
    new_shape, axis_map = [], {a: [] for a in range(len(entry_shape))}
    for a in kept:
        if [run for run in runs if axis_of[run[0]] == a] != [axes[a]]:
            return None  # split apart in x, or its atoms in another order
    for run in runs:
        axis_map[axis_of[run[0]]].append(len(new_shape))
        product = 1
        for atom in run:
            product *= size[atom]
        new_shape.append(product)
    return new_shape, axis_map


def grouped_region(shape: Sequence[int], perm: Sequence[int], entry: Operation,
                   x_shape: Sequence[int]) -> GroupedRegion | None:
    """The grouped region starting at `entry` (a reshape of transpose(x, perm), of `shape`),
    or None."""
    if entry.op_type != "reshape":
        return None
    full = tuple(entry.output.shape)
    ops, stats_ops, exits = _walk(entry, full, tuple(shape))
    if ops is None or not stats_ops or not exits:
        return None
    free = _free_axes(stats_ops, full)
    if free is None:
        return None
    kept = [a for a in range(len(full)) if a not in free and full[a] != 1]
    laid = _layout(x_shape, perm, full, set(kept))
    if laid is None:
        return None
    new_shape, axis_map = laid
    positions = [axis_map[a][0] for a in kept]
    if positions != sorted(positions):
        return None  # kept axes in another order: their values would need a transpose
    region = GroupedRegion(entry, new_shape, axis_map, free, ops, exits)
    stat = tuple(1 if a in free else d for a, d in enumerate(full))
    made = {id(entry)} | {id(op) for op in ops}
    for op in ops:
        if op in exits:
            continue
        if tuple(op.output.shape) not in (full, stat):
            return None  # a region tensor broadcast to another shape
        for x in op.inputs:
            if x is not None and id(x.producer) not in made and region.moved(x.shape) is None:
                return None  # an outside operand that varies along a free axis
    return region


def rewrite_grouped(editor, region: GroupedRegion, x: Operand, perm: Sequence[int]
                    ) -> list[Operation]:
    """Run the region on x in its new shape; each exit becomes reshape to x's shape and
    transpose(perm). Returns the transposes made."""
    graph = editor.graph
    axes = sorted(i for a in region.free for i in region.axis_map[a])
    entry = graph.add_operation("reshape", [x], {"newShape": list(region.new_shape)},
                                name=graph.fresh_name(region.entry.name), before=region.entry)
    new_of = {region.entry.output.name: entry.output}
    made = []
    for op in region.ops:
        if op in region.exits:
            back = graph.add_operation("reshape", [new_of[op.inputs[0].name]],
                                       {"newShape": list(x.shape)},
                                       name=graph.fresh_name(op.name), before=op)
            out = editor.transpose(back.output, perm, before=op)
            editor.swap(op, [out])
            made.append(out.producer)
            continue
        inputs = []
        for value in op.inputs:
            if value is None or value.name in new_of:
                inputs.append(None if value is None else new_of[value.name])
                continue
            shape = region.moved(value.shape)
            if value.rank == 0 or list(value.shape) == shape:
                inputs.append(value)
            else:
                inputs.append(graph.add_operation(
                    "reshape", [value], {"newShape": shape}, before=op,
                    name=graph.fresh_name(f"{value.name}_regrouped")).output)
        attrs = dict(op.attrs)
        if op.op_type in REDUCE_OPS or op.op_type == "layerNormalization":
            attrs["axes"] = axes
        new = graph.add_operation(op.op_type, inputs, attrs, before=op,
                                  name=graph.fresh_name(op.name))
        new_of[op.output.name] = new.output
    for op in reversed([region.entry, *region.ops]):
        if op.graph is not None:
            editor.remove_if_dead(op)
    editor.stats["grouped_regions_relaid"] += 1
    return made


def _walk(entry: Operation, full: tuple, shape: tuple):
    """The region's ops in graph order, its statistics ops and its exits; (None, ...) when a
    region tensor meets an op the region cannot hold."""
    inside: set[int] = {id(entry)}
    ops: list[Operation] = []
    stats_ops: list[Operation] = []
    exits: list[Operation] = []
    todo = [entry.output]
    seen: set[str] = set()
    while todo:
        value = todo.pop()
        if value.name in seen:
            continue
        seen.add(value.name)
        if value.is_graph_output() or not value.uses():
            return None, None, None
        for op in {id(u.op): u.op for u in value.uses()}.values():
            if id(op) in inside:
                continue
            if op.op_type == "reshape":
                if tuple(op.output.shape) != shape or value.shape != full:
                    return None, None, None
                exits.append(op)
            elif op.op_type in PER_ELEMENT or op.op_type in COMBINING:
                todo.append(op.output)
            elif op.op_type in REDUCE_OPS or op.op_type == "layerNormalization":
                if op.inputs[0] is not value or value.shape != full:
                    return None, None, None
                stats_ops.append(op)
                todo.append(op.output)
            else:
                return None, None, None
            inside.add(id(op))
            ops.append(op)
    order = {id(op): i for i, op in enumerate(entry.graph.operations)}
    ops.sort(key=lambda op: order[id(op)])
    return ops, stats_ops, exits


def _free_axes(stats_ops: list[Operation], full: tuple) -> set[int] | None:
    """The free axes: the same non-1 axes for every statistic (reductions keep dimensions;
    layerNormalization has no scale or bias)."""
    free = None
    for op in stats_ops:
        axes = op.attr("axes")
        if op.op_type == "layerNormalization":
            axes = list(range(1, len(full))) if axes is None else axes
            if any(x is not None for x in op.inputs[1:]):
                return None
        else:
            axes = list(range(len(full))) if axes is None else axes
            if not op.attr("keepDimensions"):
                return None
        mine = {a for a in axes if full[a] != 1}
        if free is None:
            free = mine
        elif mine != free:
            return None
    if not free or len(free) == sum(d != 1 for d in full):
        return None  # nothing kept: the whole-sample case is layout_order_free's
    return free


def instance_as_layer_norm(editor, op: Operation, target) -> bool:
    """An instanceNormalization fed by a reshape, with a spatial dimension of 1 (a rank-3
    InstanceNormalization as ONNX GroupNorm exports use it, [N, G, M] read as [N, G, M, 1]),
    in the other layout: layerNormalization over the spatial axes, then its scale and bias per
    channel. That computes the same values, has no layout, and joins a grouped region, where
    converting the op would put a real transpose (of the groups) on each side."""
    x = op.inputs[0]
    nchw = op.attr("layout") != "nhwc"
    channel, spatial = (1, [2, 3]) if nchw else (3, [1, 2])
    if (op.attr("layout") or "nchw") == editor.target or x.shape[channel] == 1 \
            or all(x.shape[a] != 1 for a in spatial) \
            or x.producer is None or x.producer.op_type != "reshape" \
            or not all(target.supports(t) for t in ("layerNormalization", "mul", "add")):
        return False
    graph = editor.graph
    y = graph.add_operation("layerNormalization", [x, None, None],
                            {"axes": spatial, "epsilon": op.attr("epsilon")},
                            name=graph.fresh_name(op.name), before=op).output
    per_channel = [1, 1, 1, 1]
    per_channel[channel] = x.shape[channel]
    for slot, combine in ((1, "mul"), (2, "add")):
        operand = op.inputs[slot]  # (add_operation pads inputs to every slot)
        if operand is None:
            continue
        shaped = graph.add_operation("reshape", [operand], {"newShape": per_channel},
                                     name=graph.fresh_name(f"{operand.name}_per_channel"),
                                     before=op).output
        y = graph.add_operation(combine, [y, shaped], {}, before=op,
                                name=graph.fresh_name(op.name)).output
    editor.swap(op, [y])
    editor.stats["instance_norms_as_layer_norms"] += 1
    return True
