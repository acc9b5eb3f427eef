"""Variants made the plain way: the model converted once per value with `dims=` (the single-value
API), for the tests of the emitted module. Same fields as converter.dynamic's Variants."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import converter
from converter.ir import Graph


@dataclass
class Variants:
    dims: tuple[str, ...]
    entries: list[tuple[dict[str, int], Graph]]
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)


def convert_each(source, dims: dict[str, list[int]]) -> Variants:
    names = tuple(dims)
    entries = []
    for values in itertools.product(*(dims[n] for n in names)):
        point = dict(zip(names, values))
        entries.append((point, converter.load(source, dims=point)))
    return Variants(names, entries)
