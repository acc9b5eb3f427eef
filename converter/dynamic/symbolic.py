"""One graph for every value of the symbolic dimensions: shapes and options as expressions.

A model converted for several values of its dims (`Variants`: one Graph per value) usually
differs between the values only in numbers that count elements along those dims: input shapes,
reshape's newShape, slice sizes, the shapes of filled constants. `derive(variants)` checks that
the graphs have the same structure (the same ops in the same order on the same operands, equal
options except integers) and writes every shape and every integer that differs as a polynomial
of the dims (converter.dynamic.expr), of degree at most one in each dim (products of dims such
as batch*sequence included), exact on every variant. Coefficients may be fractions (a stride-2
convolution halves the height): the dim is then accepted in steps that keep every shape an
integer. `polymorphic(variants, convert)` then checks the expressions on values used to derive none of them (the model converted once
more at the midpoint of the widest gap between a dim's listed values, once per listed value of
the dims that have no gap; without a converter, one listed value left out of the fit) and
raises when any shape or option disagrees there. Listed values that are every value of every
dim's range need no check: nothing is extrapolated.

Constants that differ between the values (a position table sliced to the sequence length and
folded, a causal mask) are kept as one constant, the largest variant's, and cut to their
leading corner when the graph is built (still a constant: module_js's `corner`) where every
variant's value is its leading corner, or its trailing corner (`tail`: T5's relative-position
bias of a decoder step, the last past+1 keys), checked on the variants and on the held-out
value.
Other differing constants (a decoder's position row at each past length, folded) are kept one
value per point (`value`): exact only on the values converted, so `polymorphic` takes them only
when every value of every dim's range was converted (nothing to extrapolate). Anything else
that differs is a structural difference: `StructureDiffers`, and the emitter writes one builder
per value instead.
"""
from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import ConverterError
from ..ir import Graph
from .expr import Expr, HeldOutMismatch, StructureDiffers, fit
from .expr import point_text as _point_text

__all__ = ["Expr", "fit", "derive", "polymorphic", "held_out_point", "held_out_points",
           "Polymorphic", "ConstantForm", "StructureDiffers", "HeldOutMismatch", "value_key",
           "corner_index"]


# -- the structure ------------------------------------------------------------------------------
@dataclass
class ConstantForm:
    """How the builder makes one constant: `same` (one value for every variant), `fill` (one
    number, a shape of expressions), `corner` (the leading corner, of shape `shape`, of the
    largest variant's value `data`), `tail` (its trailing corner: the last entries along each
    dim, as T5's relative-position bias row of the past+1 keys) or `value` (`data`: each
    converted point's own value, by `value_key(point)`; only when every value of the dims
    was converted)."""

    kind: str
    shape: list[Expr]
    data: Any  # the ConstantData written: the template's, or the largest variant's


@dataclass
class Polymorphic:
    """The first variant's graph, with every shape and differing integer as an expression."""

    template: Graph
    dims: tuple[str, ...]
    ranges: dict[str, tuple[int, int]]
    input_shapes: dict[str, list[Expr]]
    output_shapes: dict[str, list[Expr]]
    constants: dict[str, ConstantForm]
    attrs: dict[int, dict[str, Any]]  # op index -> {option: value tree holding Exprs}
    result_shapes: list[list[list[Expr]]]  # op index -> output index -> shape
    checked_at: list[dict[str, int]] = field(default_factory=list)
    # dim -> the step its accepted values go in from ranges[dim][0] (1: every integer)
    steps: dict[str, int] = field(default_factory=dict)

    def check(self, at: Mapping[str, int], graph: Graph) -> None:
        """Raise HeldOutMismatch unless `graph` (the model converted at `at`) is what the
        expressions give at `at`: every shape, option and constant."""
        where = f"the model converted at {_point_text(at)}"
        problems = []
        try:
            refs = _structure(graph)
        except ConverterError as e:
            raise HeldOutMismatch(f"its structure cannot be read: {e.what}", where=where) from None
        if refs != _structure(self.template):
            raise HeldOutMismatch("its structure differs from the listed values'", where=where)
        for name, shape in self.input_shapes.items():
            _compare(problems, f"input '{name}' shape", _eval(shape, at), graph.inputs[name].shape)
        for name, form in self.constants.items():
            got = graph.constants[name].constant
            _compare(problems, f"constant '{name}' shape", _eval(form.shape, at), got.shape)
            if form.kind in ("corner", "tail") and not problems:
                corner = form.data.numpy()[corner_index(form.kind, got.shape, form.data.shape)]
                if not np.array_equal(corner, got.numpy()):
                    problems.append(f"constant '{name}' is not the "
                                    f"{'trailing' if form.kind == 'tail' else 'leading'} "
                                    f"corner of the largest variant's")
        for i, (op, fitted) in enumerate(zip(graph.operations, self.template.operations)):
            # Options equal on every listed value are checked too: a padding that is 0 at
            # every listed value may not be 0 here.
            for key in sorted(set(op.attrs) | set(fitted.attrs)):
                tree = self.attrs.get(i, {}).get(key, _plain(fitted.attrs.get(key)))
                _compare(problems, f"{op.op_type} '{op.name}' {key}", _eval(tree, at),
                         _plain(op.attrs.get(key)))
            for j, out in enumerate(op.outputs):
                _compare(problems, f"{op.op_type} '{op.name}' result {j} shape",
                         _eval(self.result_shapes[i][j], at), out.shape)
        for name, shape in self.output_shapes.items():
            _compare(problems, f"output '{name}' shape", _eval(shape, at), graph.outputs[name].shape)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise HeldOutMismatch(f"the expressions fitted on the listed values are wrong here: "
                                  f"{problems[0]}{more}", where=where,
                                  fix="list this value too, or convert one builder per value")
        self.checked_at.append(dict(at))


def _compare(problems: list[str], what: str, want, got) -> None:
    if _plain(want) != _plain(got):
        problems.append(f"{what} is {_plain(got)}, the expression gives {_plain(want)}")


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _eval(tree, at: Mapping[str, int]):
    if isinstance(tree, Expr):
        return tree.at(at)
    if isinstance(tree, list):
        return [_eval(v, at) for v in tree]
    return tree


def _structure(graph: Graph) -> tuple:
    """What must be equal between variants apart from integers: names, types, ranks, wiring."""
    if graph.state:
        raise StructureDiffers("a stateful graph is converted one builder per value",
                               where=f"graph '{graph.name}'")
    refs: dict[int, tuple] = {}
    parts: list[tuple] = []
    for name, operand in graph.inputs.items():
        refs[id(operand)] = ("input", name)
        parts.append(("input", name, operand.data_type, len(operand.shape)))
    for name, operand in graph.constants.items():
        refs[id(operand)] = ("constant", name)
        parts.append(("constant", name, operand.data_type, len(operand.shape)))
    for i, op in enumerate(graph.operations):
        ins = tuple(None if o is None else refs[id(o)] for o in op.inputs)
        for j, out in enumerate(op.outputs):
            refs[id(out)] = ("result", i, j)
        parts.append(("op", op.op_type, op.name, ins, tuple(sorted(op.attrs)),
                      tuple((o.data_type, len(o.shape)) for o in op.outputs)))
    parts.append(("outputs", tuple((n, refs[id(o)]) for n, o in graph.outputs.items())))
    return tuple(parts)


def derive(variants) -> Polymorphic:
    """The variants as one graph with expressions (see the module's docstring); raises
    StructureDiffers naming the first thing that is not a fitted integer."""
    entries = list(variants.entries)
    if len(entries) < 2:
        raise StructureDiffers("one value gives nothing to fit", where="variants",
                               fix="list two or more values")
    points = [dict(d) for d, _ in entries]
    graphs = [g for _, g in entries]
    template = graphs[0]
    shapes = _structure(template)
    for point, graph in zip(points[1:], graphs[1:]):
        if _structure(graph) != shapes:
            raise StructureDiffers("the graph's ops, wiring, names or data types differ from "
                                   f"those at {_point_text(points[0])}",
                                   where=f"the model converted at {_point_text(point)}")

    def shape_of(what: str, shapes_: list[tuple]) -> list[Expr]:
        return [fit(points, [s[k] for s in shapes_], where=f"{what} axis {k}")
                for k in range(len(shapes_[0]))]

    inputs = {n: shape_of(f"input '{n}'", [g.inputs[n].shape for g in graphs])
              for n in template.inputs}
    outputs = {n: shape_of(f"output '{n}'", [g.outputs[n].shape for g in graphs])
               for n in template.outputs}
    constants = {n: _constant_form(n, [g.constants[n].constant for g in graphs], shape_of,
                                   points) for n in template.constants}
    attrs: dict[int, dict[str, Any]] = {}
    results = []
    for i, op in enumerate(template.operations):
        where = f"{op.op_type} '{op.name}'"
        ops = [g.operations[i] for g in graphs]
        for key in op.attrs:
            tree = _fit_tree(points, [_plain(o.attrs[key]) for o in ops], f"{where} {key}")
            if _has_expr(tree):
                attrs.setdefault(i, {})[key] = tree
        results.append([shape_of(f"{where} result {j}", [o.outputs[j].shape for o in ops])
                        for j in range(len(op.outputs))])
    dims = tuple(getattr(variants, "dims", ()) or sorted({n for p in points for n in p}))
    everything = [inputs, outputs, [c.shape for c in constants.values()], attrs, results]
    steps = _steps(list(_exprs_in(everything)), points)
    return Polymorphic(template, dims, _ranges(variants, points, steps), inputs, outputs,
                       constants, attrs, results, steps=steps)


def _exprs_in(tree):
    if isinstance(tree, Expr):
        yield tree
    elif isinstance(tree, dict):
        for value in tree.values():
            yield from _exprs_in(value)
    elif isinstance(tree, list):
        for value in tree:
            yield from _exprs_in(value)


def _steps(exprs: list[Expr], points: list[dict[str, int]]) -> dict[str, int]:
    """Each dim's step: every expression must be an integer at every value of the dims that is
    the smallest listed one plus a multiple of its step (a shape is never half an element), and
    every listed value must be such a value. The smallest steps that do it are found among the
    divisors of the common denominator of the coefficients of the terms holding each dim.
    Checking the corners of one step in every dim suffices: counted in steps, an expression's
    coefficients are differences of its values at those corners."""
    names = sorted({n for p in points for n in p})
    most = dict.fromkeys(names, 1)
    for e in exprs:
        for monomial, coef in e.terms:
            for name in monomial:
                most[name] = math.lcm(most[name], Fraction(coef).denominator)
    if all(v == 1 for v in most.values()):
        return most
    low = {n: min(p[n] for p in points) for n in names}
    options = [[d for d in range(1, most[n] + 1) if most[n] % d == 0] for n in names]
    for steps in sorted(itertools.product(*options), key=math.prod):
        step = dict(zip(names, steps))
        if any((p[n] - low[n]) % step[n] for p in points for n in names):
            continue
        corners = [dict(zip(names, c)) for c in
                   itertools.product(*((low[n], low[n] + step[n]) for n in names))]
        if all(isinstance(e.at(at), int) for e in exprs for at in corners):
            return step
    raise StructureDiffers("no steps of the dims through every listed value keep every shape "
                           "whole (some shape is a fraction of a dim)", where="variants",
                           fix="list values a whole stride apart, or convert one builder per "
                               "value")


def value_key(point: Mapping[str, int]) -> str:
    """The key of a `value` constant's entry for the dims' values `point`: the values in the
    order of the dims' names, e.g. '3' or '8,2' (what the emitted module computes from its
    dims)."""
    return ",".join(str(point[n]) for n in sorted(point))


def _constant_form(name: str, datas: list, shape_of, points) -> ConstantForm:
    where = f"constant '{name}'"
    shape = shape_of(where, [d.shape for d in datas])
    if all(d.fill is not None for d in datas) and len({repr(d.fill) for d in datas}) == 1:
        return ConstantForm("same" if all(e.is_constant for e in shape) else "fill", shape,
                            datas[0])
    if all(e.is_constant for e in shape) and len({_digest(d) for d in datas}) == 1:
        return ConstantForm("same", shape, datas[0])
    largest = max(datas, key=lambda d: int(np.prod(d.shape, dtype=np.int64)))
    full = largest.numpy()
    for kind in ("corner", "tail"):  # the leading corner of the largest, or its trailing one
        if all(all(a <= b for a, b in zip(d.shape, largest.shape)) and np.array_equal(
                full[corner_index(kind, d.shape, largest.shape)], d.numpy()) for d in datas):
            return ConstantForm(kind, shape, largest)
    # one value per point (a position's row of a table, folded): exact on the converted
    # values only, which polymorphic() requires to be every value
    return ConstantForm("value", shape, {value_key(p): data for p, data in zip(points, datas)})


def corner_index(kind: str, shape, whole) -> tuple:
    """The index of a `corner` (leading) or `tail` (trailing) corner `shape` of `whole`."""
    if kind == "tail":
        return tuple(slice(w - k, w) for k, w in zip(shape, whole))
    return tuple(slice(0, k) for k in shape)


def _digest(data) -> str:
    return hashlib.sha256(bytes(data.raw_bytes())).hexdigest()


def _fit_tree(points, values: list, where: str):
    first = values[0]
    if all(v == first for v in values):
        return first
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return fit(points, values, where=where)
    if all(isinstance(v, list) and len(v) == len(first) for v in values):
        return [_fit_tree(points, [v[k] for v in values], f"{where}[{k}]")
                for k in range(len(first))]
    raise StructureDiffers(f"differs between the values: {first!r} at "
                           f"{_point_text(points[0])}, "
                           f"{next(v for v in values if v != first)!r} elsewhere", where=where)


def _has_expr(tree) -> bool:
    return isinstance(tree, Expr) or (isinstance(tree, list) and any(map(_has_expr, tree)))


def _ranges(variants, points, steps: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """Each dim's accepted (lo, hi): the range given, else the listed values' span, narrowed to
    values on its steps (counted from the smallest listed value)."""
    given = getattr(variants, "ranges", None) or {}
    out = {}
    for name in sorted({n for p in points for n in p}):
        listed = [p[name] for p in points]
        lo, hi = given.get(name, (min(listed), max(listed)))
        step, anchor = steps.get(name, 1), min(listed)
        lo = anchor - (anchor - int(lo)) // step * step
        hi = anchor + (int(hi) - anchor) // step * step
        out[name] = (lo, hi)
    return out


# -- the check on a value not used to fit ------------------------------------------------------
# Each held-out value is one more conversion: past this many, convert one builder per value.
MAX_HELD_OUT = 4


def held_out_points(points: Sequence[Mapping[str, int]],
                    steps: Mapping[str, int] | None = None) -> list[dict[str, int]]:
    """Points none of `points` has, to check fitted expressions on: each dim with a gap between
    its listed values at the middle of its widest gap (on its steps), each dim without one
    (every value of its range listed) at each of its listed values in turn, so that every
    combination of those is checked too. [] when no dim has a gap."""
    gapped, whole = {}, {}
    for name in sorted({n for p in points for n in p}):
        listed = sorted({p[name] for p in points})
        step = (steps or {}).get(name, 1)
        lo, hi = max(zip(listed, listed[1:]), key=lambda pair: pair[1] - pair[0],
                     default=(listed[0], listed[0]))
        if hi - lo >= 2 * step:
            gapped[name] = lo + (hi - lo) // step // 2 * step
        else:
            whole[name] = listed
    if not gapped:
        return []
    names = list(whole)
    return [{**gapped, **dict(zip(names, values))}
            for values in itertools.product(*(whole[n] for n in names))]


def held_out_point(points: Sequence[Mapping[str, int]]) -> dict[str, int] | None:
    """The last of `held_out_points` (the dims without a gap at their largest values), or None
    when no dim has a gap."""
    found = held_out_points(points)
    return found[-1] if found else None


def _every_value_listed(points: Sequence[Mapping[str, int]], ranges, steps) -> bool:
    """Whether the points are every combination of each dim's accepted values: then the
    expressions are exact wherever the module accepts dims, with nothing to extrapolate."""
    names = sorted({n for p in points for n in p})
    grid = {tuple(p[n] for n in names) for p in points}
    axes = []
    for name in names:
        lo, hi = ranges.get(name, (min(p[name] for p in points), max(p[name] for p in points)))
        axes.append(range(lo, hi + 1, steps.get(name, 1)))
    return grid == set(itertools.product(*axes))


def polymorphic(variants, convert: Callable[[dict[str, int]], Graph] | None = None
                ) -> Polymorphic:
    """`derive(variants)`, checked on values used to fit none of it: the model converted at
    each of `held_out_points` by `convert`, or without a converter a listed value left out of
    the fit. When the listed values are every value of every dim's range there is nothing to
    check (checked_at stays empty). Raises StructureDiffers, or HeldOutMismatch when the check
    fails."""
    points = [dict(d) for d, _ in variants.entries]
    result = derive(variants)  # first, so that a structural difference is what is reported
    if _every_value_listed(points, result.ranges, result.steps):
        return result
    for name, form in result.constants.items():
        if form.kind == "value":
            raise StructureDiffers("its value differs between the values in a way that is not "
                                   "a leading corner of one table, so only the converted "
                                   "values have it", where=f"constant '{name}'",
                                   fix="convert every value of the range, or one builder "
                                       "per value")
    if convert is not None:
        ats = held_out_points(points, result.steps)
        if not ats:
            raise StructureDiffers("no value between the listed ones is left to check the "
                                   "expressions on", where="variants",
                                   fix="list values with a gap between two of them")
        if len(ats) > MAX_HELD_OUT:
            raise StructureDiffers(f"checking the expressions would take {len(ats)} more "
                                   f"conversions (at most {MAX_HELD_OUT})", where="variants",
                                   fix="list the dims without a gap between values with one")
        for at in ats:
            result.check(at, convert(at))
        return result
    for k, (at, graph) in enumerate(variants.entries):
        rest = [e for i, e in enumerate(variants.entries) if i != k]
        rest_points = [dict(d) for d, _ in rest]
        if not _inside(at, rest_points):
            continue
        try:
            partial = derive(_Entries(variants, rest))
        except StructureDiffers:
            continue  # the others alone cannot fit: try leaving out another
        partial.check(dict(at), graph)
        result.checked_at.append(dict(at))
        return result
    raise StructureDiffers("no listed value can be left out to check the fitted expressions",
                           where="variants",
                           fix="list three or more values, or give a converter for one more")


def _inside(at: Mapping[str, int], points: list[dict]) -> bool:
    """Whether `at` lies strictly between listed values of every dim that varies."""
    for name, value in at.items():
        listed = {p[name] for p in points}
        if len(listed) > 1 and not min(listed) < value < max(listed):
            return False
    return True


class _Entries:
    def __init__(self, variants, entries):
        self.dims = getattr(variants, "dims", ())
        self.ranges = getattr(variants, "ranges", None)
        self.entries = entries
