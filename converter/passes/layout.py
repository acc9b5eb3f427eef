"""The layout pass: every layout-bearing op in the target's preferred layout, with as few
transposes as it takes.

1. Boundary. With `ctx.io_layout`, each rank-4 graph input and output whose source layout
   differs is presented in that layout: its shape is permuted and a transpose to (from) the
   source layout put next to it. A state pair (graph.state) moves as one, its initial value
   permuted alike, and only when both its ends were traced to one layout. Each permuted
   input and output is recorded in graph.metadata (ir/io_permutations.py), so verification
   feeds the source and the graph each in its own layout. Without io_layout, the interface
   stays exactly as it is.
2. Conversion. Each layout-bearing op (conv2d, convTranspose2d, the pools, instanceNormalization,
   resample2d, a 4-D batchNormalization; see layout_ops.py) not in the target layout is
   rewritten to it between a transpose of its input and the inverse transpose of its result.
   Convolution filters go to the layout the target consumes: a constant filter is transposed
   now (a new constant), any other gets a transpose op.
3. Transposes are pushed down through layout-agnostic ops (with their axis arguments remapped
   by the rule table in layout_rules.py), cancelled against each other and folded into
   constants. A flattening reshape read by dense layers takes none (their constant weights'
   rows are permuted instead), and one that regroups axes (a channel shuffle) takes the part
   of a transpose that moves whole groups. A reshape into an order-free region (a one-group
   GroupNorm: statistics over whole samples, layout_order_free.py) or a grouped one (a
   GroupNorm with several groups, layout_grouped.py) takes the transpose through to the
   region's reshapes back. Then the transposes left in front of a network's first
   layout-bearing op are pushed up to the graph inputs where that costs no transpose.
4. Tidying: duplicate transposes of one operand merge, dead ones go, and a transpose that only
   moves size-1 axes becomes a reshape. A chain of reshapes and transposes with two or more
   transposes (a patch unfolding, with the layout's own transpose in front) becomes one
   transpose between reshapes (layout_chains.py).

No target: nothing changes (a layout is only preferred by a backend).
"""
from __future__ import annotations

from collections import deque

import numpy as np

from ..errors import ConverterError
from ..ir import ConstantData, Graph, Operand
from ..ir.io_permutations import record
from ..ir.operand import pack4
from . import PassContext, PassResult, graph_pass
from .layout_chains import collapse_chains
from .layout_edit import perm_of
from .layout_grouped import instance_as_layer_norm
from .layout_ops import LAYOUT_BEARING, filter_layout_for, input_perm, layout_of, target_attrs
from .layout_perms import apply, compose, inverse, letters_perm
from .layout_push import TransposeMover
from .layout_rules import OpView, rule_for
from .rank_limits import rank_window

__all__ = ["run", "count_transposes", "source_layouts"]

LAYOUTS = ("nchw", "nhwc")


@graph_pass("layout")
def run(graph: Graph, ctx: PassContext) -> PassResult:
    if ctx.target is None:
        return PassResult(False, notes=["no target: the layout is left as the source has it"])
    target = ctx.target.preferred_layout
    if target not in LAYOUTS:
        raise ConverterError(f"target '{ctx.target.name}' prefers layout {target!r}",
                             fix=f"preferredInputLayout must be one of {', '.join(LAYOUTS)}")
    if ctx.io_layout is not None and ctx.io_layout not in LAYOUTS:
        raise ConverterError(f"unknown io layout {ctx.io_layout!r}",
                             fix=f"use one of {', '.join(LAYOUTS)}")
    for op in graph.operations:
        rule_for(op.op_type)  # an op without a rule stops the pass before it edits anything
    before = count_transposes(graph)
    editor = TransposeMover(graph, target)
    notes: list[str] = []
    if ctx.io_layout is not None:
        _present_boundary(editor, ctx.io_layout, notes)
    for op in list(graph.operations):
        if op.op_type == "instanceNormalization" and instance_as_layer_norm(editor, op,
                                                                            ctx.target):
            continue
        if op.op_type in LAYOUT_BEARING:
            _convert(editor, op)
    _optimize(editor)
    collapse_chains(editor, rank_window(ctx.target, "transpose", ["input", "output"]),
                    rank_window(ctx.target, "reshape", ["input", "output"]))
    graph.sort()  # a push-up shared with a region may make its source after the entry
    editor.drop_orphans()
    after = count_transposes(graph)
    counts = {
        "transposes_before": before["total"],
        "transposes_before_at_boundary": before["boundary"],
        "transposes_before_inside": before["inside"],
        "transposes_after": after["total"],
        "transposes_after_at_boundary": after["boundary"],
        "transposes_after_inside": after["inside"],
        **{key: value for key, value in sorted(editor.stats.items())},
    }
    notes.append(f"{target} layout: transposes {before['total']} -> {after['total']} "
                 f"({after['boundary']} at the graph boundary, {after['inside']} inside)")
    return PassResult(bool(editor.stats), counts, notes)


def count_transposes(graph: Graph) -> dict[str, int]:
    """Transposes in the graph: those reading a graph input or giving a graph output are at
    the boundary, the others inside."""
    total = boundary = 0
    for op in graph.operations:
        if op.op_type == "transpose":
            total += 1
            if op.inputs[0].is_input or op.output.is_graph_output():
                boundary += 1
    return {"total": total, "boundary": boundary, "inside": total - boundary}


# -- 1. the graph boundary -------------------------------------------------------------------
def source_layouts(graph: Graph) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """The layout each rank-4 graph input and output has in the source, found by following
    it to the layout-bearing ops it meets through ops that keep axes in place (and through
    transposes, whose permutation is applied to the layout's letters); None when it meets
    none, or ops that disagree."""
    inputs = {name: _single(_reached(x, forward=True))
              for name, x in graph.inputs.items() if x.rank == 4}
    outputs = {name: _single(_reached(o, forward=False))
               for name, o in graph.outputs.items() if o.rank == 4}
    return inputs, outputs


def _single(found: set[str]) -> str | None:
    found = found & set(LAYOUTS)  # a transpose may leave letters no layout is named by
    return next(iter(found)) if len(found) == 1 else None


def _keeps_axes(op, rank: int) -> bool:
    """Ops a layout is traced through: every axis stays where it is."""
    return (op.op_type not in ("transpose", "reshape") and not rule_for(op.op_type).opaque
            and all(out.rank == rank for out in op.outputs))


def _reached(start: Operand, *, forward: bool) -> set[str]:
    """The layouts (as letters) `start` has according to the layout-bearing ops it meets.

    Each step carries `perm` with operand == transpose(start, perm), so a layout found on an
    operand gives start's letters by the inverse permutation.
    """
    found: set[str] = set()
    seen: set[str] = set()
    todo = [(start, list(range(start.rank)))]
    while todo:
        operand, perm = todo.pop()
        if operand.name in seen:
            continue
        seen.add(operand.name)
        back = inverse(perm)
        if forward:
            for use in operand.uses():
                op = use.op
                if op.op_type in LAYOUT_BEARING and use.index == 0:
                    found.add(_letters(layout_of(OpView.of(op)), back))
                elif op.op_type == "transpose":
                    todo.append((op.output, compose(perm, perm_of(op))))
                elif _keeps_axes(op, operand.rank):  # a split's results are each traced
                    todo.extend((out, perm) for out in op.outputs)
        elif operand.producer is not None:
            op = operand.producer
            if op.op_type in LAYOUT_BEARING:
                found.add(_letters(layout_of(OpView.of(op)), back))
            elif op.op_type == "transpose":
                todo.append((op.inputs[0], compose(perm, inverse(perm_of(op)))))
            elif _keeps_axes(op, operand.rank):
                todo.extend((source, perm) for source in op.inputs
                            if source is not None and source.rank == operand.rank)
    found.discard(None)
    return found


def _letters(layout: str | None, perm: list[int]) -> str | None:
    return None if layout is None else "".join(apply(layout, perm))


def _present_boundary(editor: TransposeMover, io_layout: str, notes: list[str]) -> None:
    graph = editor.graph
    inputs, outputs = source_layouts(graph)
    held = _states_held(graph, inputs, outputs, notes)
    first = graph.operations[0] if graph.operations else None
    for name, source in inputs.items():
        if name in held:
            continue
        if source is None:
            notes.append(f"input '{name}': its layout is unknown (no layout-bearing op reads "
                         f"it), so it keeps its shape")
            continue
        if source == io_layout:
            continue
        x = graph.inputs[name]
        readers = list(x.uses())
        # The input itself changes shape: its name and position in the interface stay.
        graph.set_input_shape(x, apply(x.shape, letters_perm(source, io_layout)))
        record(graph, "inputs", name, letters_perm(source, io_layout))  # verify feeds by it
        for var in graph.state:  # the first step's value is fed in the new layout too
            if var.input == name and var.initial is not None:
                var.initial = _transposed(var.initial, letters_perm(source, io_layout))
        to_source = editor.transpose(x, letters_perm(io_layout, source), before=first)
        for use in readers:
            use.op.replace_input(use.index, to_source)
        editor.stats["inputs_presented"] += 1
    for name, source in outputs.items():
        if name in held:
            continue
        if source is None:
            notes.append(f"output '{name}': its layout is unknown (no layout-bearing op makes "
                         f"it), so it keeps its shape")
            continue
        if source == io_layout:
            continue
        result = graph.outputs[name]
        presented = editor.transpose(result, letters_perm(source, io_layout), before=None)
        graph.set_output(name, presented)
        record(graph, "outputs", name, letters_perm(source, io_layout))
        if result.name == name:  # the output's operand keeps the output's name
            graph.rename(result, graph.fresh_name(f"{name}_{source}"))
            graph.rename(presented, name)
        editor.stats["outputs_presented"] += 1


def _states_held(graph: Graph, inputs: dict[str, str | None], outputs: dict[str, str | None],
                 notes: list[str]) -> set[str]:
    """The ends of the state pairs that keep their shapes: a state's next value is fed back as
    its input, so both ends are presented or neither, and only when both were traced to one
    layout (an end traced to none runs into data of no known layout, such as the state input
    itself next to a rank-3 audio frame: presenting the pair would only move the transposes
    to the boundary)."""
    held: set[str] = set()
    for var in graph.state:
        if var.input not in inputs:  # not rank 4 (a pair's ends have one shape)
            continue
        ends = inputs[var.input], outputs[var.output]
        if ends[0] != ends[1]:
            held.update((var.input, var.output))
            notes.append(f"state '{var.input}' -> '{var.output}': its input was traced to "
                         f"{ends[0] or 'no layout'} and its output to {ends[1] or 'no layout'},"
                         f" so both keep their shapes")
    return held


def _transposed(data: ConstantData, perm: list[int]) -> ConstantData:
    """`data` transposed by `perm`: a fill stays a fill, 4-bit values are packed again."""
    shape = apply(data.shape, perm)
    if data.fill is not None:
        return ConstantData(data.data_type, shape, fill=data.fill, origin=data.origin)
    array = np.ascontiguousarray(data.numpy().transpose(perm))
    return ConstantData(data.data_type, shape, array=pack4(array) if data.packed else array)


# -- 2. layout-bearing ops to the target layout ----------------------------------------------
def _convert(editor: TransposeMover, op) -> None:
    graph, target = editor.graph, editor.target
    view = OpView.of(op)
    perm = input_perm(view, target)
    wanted_filter = filter_layout_for(view, target)
    filter_layout = op.attr("filterLayout") if wanted_filter else None
    if perm is None and wanted_filter == filter_layout:
        return
    inputs, attrs = list(op.inputs), dict(op.attrs)
    if perm is not None:
        inputs[0] = editor.transpose(op.inputs[0], perm, before=op)
        attrs.update(target_attrs(view, target))
        editor.stats["layout_ops_converted"] += 1
    if wanted_filter != filter_layout:
        inputs[1] = _relaid_filter(editor, op.inputs[1], filter_layout, wanted_filter, op)
        attrs["filterLayout"] = wanted_filter
    old_name = op.name
    new_op = graph.add_operation(op.op_type, inputs, attrs, name=graph.fresh_name(op.name),
                                 before=op)
    result = new_op.output
    if perm is not None:
        result = editor.transpose(result, inverse(perm), before=op)
    editor.swap(op, [result])
    if op.graph is None and not graph.has_node_name(old_name):  # the old op is gone: keep its id
        graph.rename_operation(new_op, old_name)


def _relaid_filter(editor: TransposeMover, filter_: Operand, current: str, wanted: str,
                   op) -> Operand:
    perm = letters_perm(current, wanted)
    if editor.foldable(filter_):
        editor.stats["filters_relaid"] += 1
        return editor.folded(filter_, perm, suffix=wanted)
    editor.stats["filter_transposes"] += 1
    return editor.transpose(filter_, perm, before=op)


# -- 3 and 4. moving, cancelling and tidying transposes --------------------------------------
def _transposes(graph: Graph, *, reverse: bool = False):
    ops = [op for op in graph.operations if op.op_type == "transpose"]
    return deque(reversed(ops) if reverse else ops)


def _drain(editor: TransposeMover, todo: deque, move) -> None:
    """Work through a queue of transposes: simplify each (cancel, fold, compose); one that stays
    is handed to `move`, which returns the transposes it made, to be revisited."""
    while todo:
        t = todo.popleft()
        if t.graph is None:
            continue
        changed, made = editor.simplify(t)
        if changed:
            if made is not None:
                todo.append(made)
            continue
        todo.extend(move(t) or ())


def _optimize(editor: TransposeMover) -> None:
    graph = editor.graph

    def push_down(t):
        made_all = []
        for reader in t.output.consumers():
            if reader.op_type == "transpose":
                made_all.append(reader)
                continue
            made_below = editor.push_down(t, reader)
            if made_below:
                made_all.extend(made_below)
            elif made_below is None and reader.op_type == "reshape" \
                    and not editor.push_into_dense(t, reader):
                made = editor.split_for_reshape(t, reader)
                if made is None:
                    made = editor.push_through_region(t, reader)
                made_all.extend(made or ())
        return made_all

    _drain(editor, _transposes(graph), push_down)
    _drain(editor, _transposes(graph, reverse=True), editor.push_up)
    editor.merge_duplicates()
    editor.drop_dead_transposes()
    editor.reshapes_for_unit_moves()
