"""One model converted at several values of its symbolic dims: `Variants`.

    # convert_variants: converter/conversion/variants.py
    variants = convert_variants("bert.onnx", dims={"sequence": [8, 16, 32]})
    variants = convert_variants("bert.onnx", dims={"sequence": (8, 128), "batch": 1})
    graph = variants.at({"sequence": 16})

A dim is given one value (every variant has it), a list of values (one variant each), or a
range `(lo, hi)`: a range is converted at a few representative values (`range_values`) and the
range itself is recorded, for the emitted module's one builder to accept any value in it
(converter.dynamic.symbolic checks its expressions on a value none of the variants used).
Several varying dims give one variant per combination. The variants are written as one `.js`
module (converter.dynamic.module_js) or one `.webnn`/`.json` file whose weights file holds each
distinct constant once (converter.dynamic.variants_file).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..errors import ConverterError

if TYPE_CHECKING:
    from ..ir import Graph

__all__ = ["Variants", "DimValues", "split_dims", "range_values", "point_text", "one_graph",
           "MAX_VARIANTS"]

# Each variant is a whole conversion held in memory (its weights shared when the source's are
# mapped, its computed constants not): bound how many one call makes.
MAX_VARIANTS = 16

DimValues = "int | Sequence[int] | tuple[int, int]"  # documentation of what a dim may be given


@dataclass
class Variants:
    """A model's graphs at several values of its dims.

    dims: the names of the dims that vary, in the order the entries enumerate them.
    entries: (the dims' values, the graph at those values), the first entry first in files.
    ranges: dims given as a range: name -> (lo, hi), both included.
    fixed: dims given one value, the same in every entry.
    convert: converts the source at other values (the held-out check of the module's
        expressions); None for variants read from a file.
    """

    dims: tuple[str, ...]
    entries: list[tuple[dict[str, int], Graph]]
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    fixed: dict[str, int] = field(default_factory=dict)
    convert: Callable[[dict[str, int]], Graph] | None = field(default=None, repr=False,
                                                              compare=False)
    # The variants as one graph with expressions (symbolic.polymorphic), once asked for.
    _poly: Any = field(default=None, init=False, repr=False, compare=False)

    @property
    def points(self) -> list[dict[str, int]]:
        return [dict(p) for p, _ in self.entries]

    def accepted_text(self) -> str:
        """The values the entries were converted at, e.g. `sequence=8, sequence=16`."""
        return "; ".join(point_text(p) for p in self.points)

    def at(self, dims: Mapping[str, int] | None, where: str = "variants") -> Graph:
        """The graph converted at `dims` (the varying dims; fixed ones may be repeated). At
        values not converted but inside the variants' range, the graph their expressions give
        (converter.dynamic.instantiate), as the emitted module builds it."""
        if not dims:
            raise ConverterError(f"this model was converted at several values of "
                                 f"{', '.join(self.dims)} ({self.accepted_text()})",
                                 where=where, fix=f"pick one with dims= (CLI: --dim "
                                                  f"{self.dims[0]}=N)")
        wanted = dict(dims)
        for name, value in self.fixed.items():
            if wanted.get(name, value) != value:
                raise ConverterError(f"{name} was fixed at {value} in this conversion, not "
                                     f"{wanted[name]}", where=where, fix="convert again")
            wanted.pop(name, None)
        unknown = sorted(set(wanted) - set(self.dims))
        if unknown:
            raise ConverterError(f"no dim named {', '.join(unknown)} varies here (the dims: "
                                 f"{', '.join(self.dims)})", where=where)
        for point, graph in self.entries:
            if point == wanted:
                return graph
        if set(wanted) == set(self.dims):
            return self._from_expressions(wanted, where)
        raise ConverterError(f"give every dim that varies: {', '.join(self.dims)}",
                             where=where)

    def _from_expressions(self, at: dict[str, int], where: str) -> "Graph":
        """The graph at a value not converted, built from the variants' expressions (as the
        emitted module's one builder builds it) when `at` is in their range."""
        from .instantiate import graph_at
        from .symbolic import HeldOutMismatch, StructureDiffers, polymorphic

        listed = f"no variant at {point_text(at)}: converted at {self.accepted_text()}"
        if self._poly is None:
            try:
                self._poly = polymorphic(self, self.convert)
            except (StructureDiffers, HeldOutMismatch) as e:
                raise ConverterError(f"{listed}; other values need one graph whose shapes are "
                                     f"expressions of the dims, and here {e.line()}",
                                     where=where, fix="pick one of those values, or convert "
                                                      "at this value") from None
        for name, value in at.items():
            lo, hi = self._poly.ranges[name]
            step = self._poly.steps.get(name, 1)
            if not lo <= value <= hi or (value - lo) % step:
                steps = f" in steps of {step}" if step > 1 else ""
                raise ConverterError(f"{listed}; the expressions hold for {name} in "
                                     f"{lo}..{hi}{steps}", where=where,
                                     fix="pick a value in that range, or convert at this one")
        return graph_at(self._poly, at)


def one_graph(loaded, where: str | Path = "graph") -> Graph:
    """`loaded` when it is a Graph; for Variants read from a file with no dims given, the
    ConverterError that lists their dims (a command that works on one graph needs --dim)."""
    if isinstance(loaded, Variants):
        return loaded.at(None, where=str(where))
    return loaded


def point_text(point: Mapping[str, int]) -> str:
    return ", ".join(f"{n}={v}" for n, v in point.items())


def range_values(lo: int, hi: int) -> list[int]:
    """The values a range is converted at: both ends and the middle, so that the expressions
    fit on three values and the gaps between them leave values to check them on (a range
    too narrow for that is converted at each of its values)."""
    if hi - lo < 4:
        return list(range(lo, hi + 1))
    return [lo, (lo + hi) // 2, hi]


def split_dims(dims: Mapping[str, Any] | None, where: str = "dims"
               ) -> tuple[dict[str, int], dict[str, list[int]], dict[str, tuple[int, int]]]:
    """The fixed dims, each varying dim's values to convert at, and the ranges given.

    A value is an int, a list of ints (several values) or a `(lo, hi)` tuple (a range);
    raises ConverterError naming the dim for anything else."""
    fixed: dict[str, int] = {}
    varying: dict[str, list[int]] = {}
    ranges: dict[str, tuple[int, int]] = {}
    for name, value in (dims or {}).items():
        at = f"{where}: {name}"
        if _positive(value):
            fixed[name] = int(value)
        elif isinstance(value, tuple):
            if len(value) != 2 or not all(map(_positive, value)) or value[0] >= value[1]:
                raise ConverterError(f"range {value!r} is not (LO, HI) with 0 < LO < HI",
                                     where=at, fix="e.g. (8, 128); CLI: --dim NAME=8..128")
            lo, hi = int(value[0]), int(value[1])
            ranges[name] = (lo, hi)
            varying[name] = range_values(lo, hi)
        elif isinstance(value, list):
            if not value or not all(map(_positive, value)):
                raise ConverterError(f"values {value!r} are not positive integers", where=at,
                                     fix="e.g. [8, 16, 32]; CLI: --dim NAME=8,16,32")
            values = sorted({int(v) for v in value})
            if len(values) == 1:
                fixed[name] = values[0]
            else:
                varying[name] = values
        else:
            raise ConverterError(f"{value!r} is not a positive integer, a list of them or a "
                                 f"(LO, HI) range", where=at)
    return fixed, varying, ranges


def _positive(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
