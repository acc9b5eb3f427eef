"""A module whose values fall in runs of one structure: one builder per run.

An encoder-decoder's decoder at past lengths 0..N-1 is two graphs in structure: the first step
(no past: it computes the cross-attention caches) and every later one (the same ops, shapes that
follow the length). When the variants of one dim, converted at every integer of their span,
are not one graph (converter.dynamic.symbolic raises StructureDiffers), they are cut into runs
of consecutive values with equal structure; a run of two or more values that fits as one graph
(every value converted: nothing extrapolated) is one builder with expressions, any other value
a builder of its own. `groups_of` returns None where that gives no fewer builders than one
per value, and module_js writes one builder per value as before; else module_js writes a
builder per group and a `buildGraph` that picks the group of the dims.
"""
from __future__ import annotations

__all__ = ["groups_of"]


def _runs(variants) -> list[list[tuple[dict, object]]] | None:
    """The entries cut into runs of consecutive values of equal structure, or None when the
    variants are not one dim converted at every integer of its span."""
    from .symbolic import StructureDiffers, _structure

    if len(variants.dims) != 1:
        return None
    dim = variants.dims[0]
    entries = sorted(variants.entries, key=lambda e: e[0][dim])
    values = [p[dim] for p, _ in entries]
    if any(set(p) != {dim} for p, _ in entries) or values != list(range(values[0],
                                                                        values[-1] + 1)):
        return None
    runs, last = [], None
    for point, graph in entries:
        try:
            shape = _structure(graph)
        except StructureDiffers:
            return None
        if runs and shape == last:
            runs[-1].append((point, graph))
        else:
            runs.append([(point, graph)])
        last = shape
    return runs


def groups_of(variants) -> list[tuple[int, int, object, object]] | None:
    """The builders of the module docstring, (lo, hi, Polymorphic or None, a graph of the
    run): a run that fits as one graph is one, any other value one of its own. None when the
    variants are not one dim at every integer of its span, or no run fits."""
    from .symbolic import HeldOutMismatch, StructureDiffers, polymorphic

    runs = _runs(variants)
    if runs is None:
        return None
    dim = variants.dims[0]
    groups = []
    for run in runs:
        poly = None
        if len(run) > 1:
            try:
                poly = polymorphic(_Run(dim, run), None)
            except (StructureDiffers, HeldOutMismatch):
                poly = None
        if poly is not None:
            groups.append((run[0][0][dim], run[-1][0][dim], poly, run[0][1]))
        else:
            groups.extend((p[dim], p[dim], None, g) for p, g in run)
    return groups if len(groups) < len(variants.entries) else None


class _Run:
    """One run's entries as variants (every value of its span: nothing to extrapolate)."""

    def __init__(self, dim: str, entries):
        self.dims = (dim,)
        self.entries = entries
        self.ranges = {}
