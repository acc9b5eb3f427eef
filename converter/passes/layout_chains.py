"""Chains of reshapes and transposes collapsed into at most one transpose.

A reshape regroups a tensor's elements without moving them; a transpose moves whole axes. A
chain of both (MobileViT's unfolding into patches: reshape, transpose, reshape, transpose,
reshape; a pixel shuffle; a layout transpose in front of either) moves elements as one
permutation of "atoms": the finest axes every step's shapes are made of. Splitting the input's
axes into atoms (an axis of 8 read as 4 x 2 where a later reshape needs it), the chain is

    reshape(transpose(reshape(x, atom sizes), atom permutation), result shape)

so a chain with two or more transposes becomes one (or none when the atoms stay in order).
Neighbouring atoms that stay neighbours in order merge, so the transpose has the fewest axes;
the rewrite is made only when its transpose and reshapes fit the target's rank ranges.
"""
from __future__ import annotations

import math
from typing import Sequence

from ..ir import Operation
from .layout_edit import LayoutEditor, perm_of
from .layout_perms import is_identity

__all__ = ["atomize", "chain_permutation", "collapse_chains"]

Step = tuple[str, list[int]]  # ("reshape", new shape) or ("transpose", permutation)


def atomize(shape: Sequence[int], steps: Sequence[Step]
            ) -> tuple[dict[int, int], list[int], list[list[int]]] | None:
    """The atoms of a chain starting from `shape`: (atom sizes, x's atoms in order, the last
    tensor's axes as lists of atoms); None when a reshape cuts an atom unevenly. Size-1 axes
    hold no atom."""
    size: dict[int, int] = {}
    source: list[int] = []  # x's atoms in order
    axes: list[list[int]] = []  # the current tensor's axes, each a list of atoms
    for d in shape:
        if d != 1:  # size-1 axes carry no data
            size[len(size)] = d
            source.append(len(size) - 1)
        axes.append([source[-1]] if d != 1 else [])
    for kind, arg in steps:
        if kind == "transpose":
            axes = [axes[p] for p in arg]
            continue
        flat = [a for axis in axes for a in axis]
        axes, i = [], 0
        for d in arg:
            group, have = [], 1
            while have < d:
                atom = flat[i]
                need = d // have
                if d % have or (size[atom] > need and size[atom] % need):
                    return None
                if size[atom] > need:  # split: the major part stays in this axis
                    major, minor = len(size), len(size) + 1
                    size[major], size[minor] = need, size[atom] // need
                    for seq in (flat, source):
                        k = seq.index(atom)
                        seq[k:k + 1] = [major, minor]
                    atom = major
                group.append(atom)
                have *= size[atom]
                i += 1
            if have != d:
                return None
            axes.append(group)
    return size, source, axes


def chain_permutation(shape: Sequence[int], steps: Sequence[Step]
                      ) -> tuple[list[int], list[int]] | None:
    """(atom sizes in x's order, the atom permutation) for a chain starting from `shape`, with
    neighbouring atoms that stay in order merged; None when a reshape cuts an atom unevenly."""
    found = atomize(shape, steps)
    if found is None:
        return None
    size, source, axes = found
    target = [a for axis in axes for a in axis]
    runs: list[list[int]] = []  # the result's atoms as runs that are neighbours in x too
    for a in target:
        if runs and source.index(a) == source.index(runs[-1][-1]) + 1:
            runs[-1].append(a)
        else:
            runs.append([a])
    groups = sorted(runs, key=lambda r: source.index(r[0]))
    sizes = [math.prod(size[a] for a in g) for g in groups]
    return sizes, [groups.index(r) for r in runs]


def _chain_from(op: Operation) -> list[Operation]:
    """The reshapes and transposes from `op` on, while each result has one reader and is no
    graph output."""
    chain = [op]
    while True:
        out = chain[-1].output
        readers = out.uses()
        if out.is_graph_output() or len(readers) != 1 \
                or readers[0].op.op_type not in ("reshape", "transpose"):
            return chain
        chain.append(readers[0].op)


def collapse_chains(editor: LayoutEditor, transpose_ranks: tuple[int, float],
                    reshape_ranks: tuple[int, float]) -> None:
    graph = editor.graph
    for op in list(graph.operations):
        if op.graph is None or op.op_type not in ("reshape", "transpose"):
            continue
        producer = op.inputs[0].producer
        if producer is not None and producer.op_type in ("reshape", "transpose") \
                and len(op.inputs[0].uses()) == 1 and not op.inputs[0].is_graph_output():
            continue  # not the start of a chain
        chain = _chain_from(op)
        transposes = sum(o.op_type == "transpose" for o in chain)
        if transposes < 2:
            continue
        x, last = op.inputs[0], chain[-1]
        steps = [("transpose", perm_of(o)) if o.op_type == "transpose"
                 else ("reshape", list(o.output.shape)) for o in chain]
        found = chain_permutation(x.shape, steps)
        if found is None:
            continue
        sizes, perm = found
        low, high = transpose_ranks
        if not is_identity(perm) and not low <= len(perm) <= high:
            continue
        if not all(reshape_ranks[0] <= r <= reshape_ranks[1]
                   for r in (len(sizes), x.rank, last.output.rank)):
            continue
        if is_identity(perm) and x.shape == last.output.shape \
                and not editor.can_stand_for(last.output, x):
            continue
        value = x
        if tuple(sizes) != x.shape:
            value = graph.add_operation("reshape", [value], {"newShape": sizes}, before=last,
                                        name=graph.fresh_name(f"{x.name}_atoms")).output
        if not is_identity(perm):
            value = editor.transpose(value, perm, before=last)
        if value.shape != last.output.shape:
            value = graph.add_operation("reshape", [value],
                                        {"newShape": list(last.output.shape)}, before=last,
                                        name=graph.fresh_name(last.name)).output
        editor.swap(last, [value])
        for dead in reversed(chain[:-1]):
            editor.remove_if_dead(dead)
        editor.stats["transpose_chains_collapsed"] += 1
