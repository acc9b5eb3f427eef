"""Permutation arithmetic every layer shares (the layout pass, the boundary record of
io_permutations.py).

A permutation `p` means what WebNN's transpose means by it: `y = transpose(x, p)` has
`y.shape[i] == x.shape[p[i]]`, so axis `i` of y is axis `p[i]` of x.
"""
from __future__ import annotations

from typing import Sequence

__all__ = ["is_identity", "inverse", "compose", "apply"]


def is_identity(perm: Sequence[int]) -> bool:
    return all(p == i for i, p in enumerate(perm))


def inverse(perm: Sequence[int]) -> list[int]:
    """The permutation that undoes `perm`: transpose(transpose(x, p), inverse(p)) == x."""
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def compose(first: Sequence[int], second: Sequence[int]) -> list[int]:
    """transpose(transpose(x, first), second) == transpose(x, compose(first, second))."""
    return [first[s] for s in second]


def apply(shape: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    """The shape of transpose(x, perm) for x of `shape`."""
    return tuple(shape[p] for p in perm)
