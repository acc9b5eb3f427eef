"""Integer-valued polynomials of a model's dims, fitted exactly to the numbers seen at several
values of the dims (converter.dynamic.symbolic writes a graph's shapes and options as these).

`fit(points, values)` solves for the polynomial of degree <= 1 in each dim that varies (so
batch*sequence may appear, sequence*sequence may not) with exact rational arithmetic; `Expr`
evaluates it at other values and writes it as JavaScript over a `dims` object.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Mapping, Sequence

import numpy as np

from ..emit.escape import js_string
from ..errors import ConverterError

__all__ = ["Expr", "fit", "StructureDiffers", "HeldOutMismatch", "point_text"]


class StructureDiffers(ConverterError):
    """The variants are not one graph with varying numbers: one builder per value is needed."""


class HeldOutMismatch(ConverterError):
    """An expression fitted on the variants is wrong at a value not used to fit it."""


@dataclass(frozen=True)
class Expr:
    """A polynomial of the dims, degree <= 1 in each: ((monomial dims), coefficient) pairs, the
    constant term's monomial being (); coefficients are ints, or Fractions where a dim counts
    in steps (a stride-2 convolution's output is height / 2: integral on even heights only)."""

    terms: tuple[tuple[tuple[str, ...], int | Fraction], ...]

    @staticmethod
    def constant(value: int) -> "Expr":
        return Expr((((), int(value)),)) if value else Expr(())

    @property
    def is_constant(self) -> bool:
        return all(not dims for dims, _ in self.terms)

    @property
    def denominator(self) -> int:
        return math.lcm(1, *(Fraction(c).denominator for _, c in self.terms))

    def at(self, dims: Mapping[str, int]) -> int | Fraction:
        total = Fraction(0)
        for names, coef in self.terms:
            product = Fraction(coef)
            for name in names:
                product *= int(dims[name])
            total += product
        return int(total) if total.denominator == 1 else total

    def _text(self, name: Callable[[str], str]) -> str:
        scale = self.denominator
        if scale != 1:  # exact in JavaScript: an integer numerator, divided once at the end
            whole = Expr(tuple((m, int(c * scale)) for m, c in self.terms))
            return f"({whole._text(name)}) / {scale}"
        parts = []
        for names, coef in reversed(self.terms):  # the dims' terms first
            magnitude = abs(coef) if parts else coef
            factors = [name(n) for n in names]
            if magnitude != 1 or not factors:
                factors.insert(0, str(magnitude))
            if parts:
                parts.append(("- " if coef < 0 else "+ ") + " * ".join(factors))
            else:
                parts.append(" * ".join(factors))
        return " ".join(parts) or "0"

    def js(self, var: str = "dims") -> str:
        """JavaScript computing the value from the object `var` (dims by name, escaped)."""
        return self._text(lambda n: f"{var}[{js_string(n)}]")

    def __str__(self) -> str:
        return self._text(str)


def fit(points: Sequence[Mapping[str, int]], values: Sequence[int], where: str = "") -> Expr:
    """The polynomial (degree <= 1 per dim, exact rational coefficients) of the dims that vary
    among `points` which gives `values[i]` at `points[i]` for every i. Raises StructureDiffers
    when no such polynomial exists or the points cannot tell its terms apart."""
    if all(v == values[0] for v in values):
        return Expr.constant(values[0])
    names = sorted({n for p in points for n in p if len({q[n] for q in points}) > 1})
    monomials = [m for k in range(len(names) + 1) for m in itertools.combinations(names, k)]
    rows = [[Fraction(int(np.prod([p[n] for n in m], dtype=object) if m else 1))
             for m in monomials] + [Fraction(int(v))] for p, v in zip(points, values)]
    solution = _solve(rows, len(monomials))
    seen = ", ".join(f"{point_text(p)} -> {v}" for p, v in zip(points, values))
    if solution is None:
        raise StructureDiffers(f"no polynomial of degree <= 1 per dim gives {seen}", where=where)
    if solution == "underdetermined":
        raise StructureDiffers(f"the values given cannot tell the dims' terms apart ({seen})",
                               where=where, fix="list the dims' values on a grid (every "
                                                "combination)")
    return Expr(tuple((m, int(c) if c.denominator == 1 else c)
                      for m, c in zip(monomials, solution) if c))


def _solve(rows: list[list[Fraction]], unknowns: int):
    """Exact Gauss-Jordan elimination of the augmented rows: the unique solution, None when the
    system is inconsistent, or "underdetermined"."""
    rows = [list(r) for r in rows]
    pivots = []
    r = 0
    for c in range(unknowns):
        pivot = next((i for i in range(r, len(rows)) if rows[i][c] != 0), None)
        if pivot is None:
            continue
        rows[r], rows[pivot] = rows[pivot], rows[r]
        lead = rows[r][c]
        rows[r] = [x / lead for x in rows[r]]
        for i in range(len(rows)):
            if i != r and rows[i][c] != 0:
                factor = rows[i][c]
                rows[i] = [a - factor * b for a, b in zip(rows[i], rows[r])]
        pivots.append(c)
        r += 1
    if any(all(x == 0 for x in row[:-1]) and row[-1] != 0 for row in rows):
        return None
    if len(pivots) < unknowns:
        return "underdetermined"
    return [rows[i][-1] for i in range(unknowns)]


def point_text(point: Mapping[str, int]) -> str:
    return ",".join(f"{n}={v}" for n, v in sorted(point.items()))
