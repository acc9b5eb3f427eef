"""Permutation arithmetic for the layout pass.

A permutation `p` means what WebNN's transpose means by it: `y = transpose(x, p)` has
`y.shape[i] == x.shape[p[i]]`, so axis `i` of y is axis `p[i]` of x. Every helper here follows
that one convention; the layout rules and the pass driver never index a permutation any other way.
"""
from __future__ import annotations

from typing import Sequence

from ..ir.perms import apply, compose, inverse, is_identity

__all__ = [
    "identity", "is_identity", "inverse", "compose", "extend", "letters_perm", "apply",
    "keeps_element_order", "is_invariant", "labels_perm", "align",
]


def identity(rank: int) -> list[int]:
    return list(range(rank))


def extend(perm: Sequence[int], rank: int) -> list[int]:
    """`perm` on the trailing axes of a rank-`rank` tensor, leading axes fixed.

    Broadcasting aligns shapes from the right, so a lower-rank operand's axes are the trailing
    ones of the result; this is the permutation its right-aligned view is transposed by.
    """
    lead = rank - len(perm)
    if lead < 0:
        raise ValueError(f"cannot extend a rank-{len(perm)} permutation to rank {rank}")
    return list(range(lead)) + [p + lead for p in perm]


def letters_perm(source: str, target: str) -> list[int]:
    """The permutation taking a tensor laid out as `source` to `target` ("nhwc" to "nchw" is
    [0, 3, 1, 2]; "oihw" to "ohwi" is [0, 2, 3, 1])."""
    if sorted(source) != sorted(target):
        raise ValueError(f"layouts {source!r} and {target!r} name different axes")
    return [source.index(letter) for letter in target]


def keeps_element_order(shape: Sequence[int], perm: Sequence[int]) -> bool:
    """Whether transposing a tensor of `shape` by `perm` leaves its elements in the same
    row-major order, which is the case when it only moves size-1 axes. Such a transpose is a
    reshape."""
    moved = [p for p in perm if shape[p] != 1]
    return moved == sorted(moved)


def is_invariant(shape: Sequence[int], perm: Sequence[int]) -> bool:
    """Whether a tensor of `shape` (right-aligned to len(perm) axes) equals its own transpose
    by `perm`: every axis longer than 1 stays where it is. Such an operand can be combined with
    either layout unchanged."""
    aligned = align(shape, len(perm))
    return all(perm[i] == i for i, d in enumerate(aligned) if d != 1)


def align(shape: Sequence[int], rank: int) -> tuple[int, ...]:
    """`shape` with leading 1s up to `rank` (how broadcasting sees a lower-rank operand)."""
    return (1,) * (rank - len(shape)) + tuple(shape)


def labels_perm(original: Sequence, rewritten: Sequence) -> list[int]:
    """The permutation q with transpose(rewritten, q) == original, where each sequence names
    the axes of a tensor by labels (the same labels, in a different order)."""
    if sorted(map(str, original)) != sorted(map(str, rewritten)):
        raise ValueError(f"axis labels {list(original)} and {list(rewritten)} differ")
    position = {label: i for i, label in enumerate(rewritten)}
    return [position[label] for label in original]
