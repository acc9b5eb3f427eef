"""The graph at dims no variant was converted at, from the variants' expressions: what the
emitted module's one builder builds in the browser, built here as a Graph, so that
`converter.run`, `verify` and `load(..., dims=)` take any value in the range too.

`graph_at(poly, at)` writes the template (the first variant) with every input shape, constant
shape and varying option evaluated at `at` (a constant kept as a leading corner is cut from the
largest variant's value), reads it back through the graph-file reader, whose op rules infer
every result's shape, and checks each result's shape and each output's against the fitted
expressions. The expressions themselves were checked on a value used to fit none of them
(converter.dynamic.symbolic.polymorphic); `verify` then compares with the source at `at`.
"""
from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Mapping

import numpy as np

from ..errors import ConverterError

if TYPE_CHECKING:
    from ..ir import Graph
    from .symbolic import Polymorphic

__all__ = ["graph_at"]


class _Arrays:
    """What graph_from_doc asks a weights file for, answered from arrays held in memory."""

    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}

    def tensor(self, key: str, data_type: str, shape, where: str) -> np.ndarray:
        return self.arrays[key]


def graph_at(poly: "Polymorphic", at: Mapping[str, int]) -> "Graph":
    """The template graph with its shapes and options evaluated at `at`; ConverterError when
    a value is not a whole number there or the op rules disagree with the expressions."""
    from ..formats.doc_from_graph import doc_from_graph
    from ..formats.graph_from_doc import graph_from_doc

    where = "dims " + ", ".join(f"{n}={v}" for n, v in at.items())
    doc = doc_from_graph(poly.template)
    doc.name = poly.template.name
    for decl in doc.inputs:
        decl.shape = _whole(poly.input_shapes[decl.name], at, f"input '{decl.name}'")
    arrays = _Arrays()
    for decl in doc.consts:
        form = poly.constants.get(decl.name)
        if form is None:  # a default the writer added for a skipped option
            continue
        decl.shape = _whole(form.shape, at, f"constant '{decl.name}'")
        if decl.kind != "weights":
            continue
        data = form.data
        if form.kind == "value":
            from .symbolic import value_key

            data = form.data.get(value_key(at))
            if data is None:
                raise ConverterError(f"constant '{decl.name}' was converted at other values "
                                     f"only", where=where, fix="list this value too")
        if form.kind in ("corner", "tail"):
            from .symbolic import corner_index

            if data.packed:
                raise ConverterError(f"constant '{decl.name}' is a corner of 4-bit values",
                                     where=where, fix="list this value too")
            value = np.ascontiguousarray(
                data.numpy()[corner_index(form.kind, decl.shape, data.shape)])
        elif data.packed:
            value = np.frombuffer(data.raw_bytes(), np.uint8)
        else:
            value = data.numpy()
        arrays.arrays[decl.key] = value
    for index, varying in poly.attrs.items():
        node = doc.nodes[index]
        for key, tree in varying.items():
            node.options[key] = _whole(tree, at, f"{node.op} '{node.id}' {key}")
    graph = graph_from_doc(doc, arrays)
    problems = []
    for i, (op, shapes) in enumerate(zip(graph.operations, poly.result_shapes)):
        for j, (out, shape) in enumerate(zip(op.outputs, shapes)):
            want = _whole(shape, at, f"{op.op_type} result")
            if list(out.shape) != want:
                problems.append(f"{op.op_type} '{op.name}' result {j} is {list(out.shape)}, "
                                f"the expressions give {want}")
    for name, shape in poly.output_shapes.items():
        want = _whole(shape, at, f"output '{name}'")
        if list(graph.outputs[name].shape) != want:
            problems.append(f"output '{name}' is {list(graph.outputs[name].shape)}, the "
                            f"expressions give {want}")
    if problems:
        raise ConverterError(f"the graph built from the expressions disagrees with its op "
                             f"rules: {problems[0]}", where=where,
                             fix="list this value too when converting")
    return graph


def _whole(tree, at: Mapping[str, int], what: str):
    """`tree` (an Expr, a list of them or a plain value) evaluated at `at`, every number whole."""
    from .symbolic import Expr

    if isinstance(tree, Expr):
        value = tree.at(at)
        if Fraction(value).denominator != 1:
            raise ConverterError(f"{what} would be {value} here, not a whole number",
                                 where="dims", fix="pick a value in the variants' steps")
        return int(value)
    if isinstance(tree, (list, tuple)):
        return [_whole(v, at, what) for v in tree]
    return tree
