"""The transposes a conversion put at a graph's boundary, so a graph and its source can be fed
and compared in their own layouts.

`convert --io-layout nhwc` presents an NCHW model's image input as NHWC (and its NCHW feature
map outputs as NHWC): the graph's value there is the source's value transposed. Each such
input and output is recorded in `graph.metadata["permuted"]`:

    {"inputs": {"image": [0, 2, 3, 1]}, "outputs": {"mask": [0, 2, 3, 1]}}

meaning graph value == transpose(source value, perm) (WebNN's transpose: axis i of the graph's
value is axis perm[i] of the source's). Graph files keep the record (`#@permuted` comments in
the text form, a `permuted` member in JSON: see formats/webnn_text.py and webnn_json.py), so a
graph converted earlier is verified as well as one converted now.

Verification feeds each side in its own layout: inputs are made (or given) in the source
model's layout and transposed for the graph; the graph's outputs are transposed back before
they are compared with the source's.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import ConverterError
from .perms import apply, compose, inverse, is_identity

__all__ = ["KEY", "SIDES", "permutations", "record", "source_shape", "to_graph_inputs",
           "to_source_inputs", "to_source_outputs", "check_declared", "described",
           "check_given", "unrecorded", "present"]

KEY = "permuted"
SIDES = ("inputs", "outputs")


def permutations(graph) -> dict[str, dict[str, list[int]]]:
    """The graph's recorded boundary permutations, {"inputs": {...}, "outputs": {...}}."""
    found = graph.metadata.get(KEY) or {}
    return {side: dict(found.get(side, {})) for side in SIDES}


def record(graph, side: str, name: str, perm: Sequence[int]) -> None:
    """Record that `side`'s `name` is now its former value transposed by `perm`; a graph
    permuted before (a graph file converted again) composes the two, and a round trip back to
    the source's layout leaves no record."""
    table = graph.metadata.setdefault(KEY, {}).setdefault(side, {})
    total = compose(table[name], perm) if name in table else list(perm)
    if is_identity(total):
        table.pop(name, None)
    else:
        table[name] = [int(p) for p in total]


def source_shape(graph, name: str) -> tuple[int, ...]:
    """The shape the source model gives input `name` (the graph's, transposed back)."""
    shape = graph.inputs[name].shape
    perm = permutations(graph)["inputs"].get(name)
    if perm is None:
        return tuple(shape)
    return tuple(shape[i] for i in inverse(perm))


def to_graph_inputs(graph, feeds: Mapping[str, Any]) -> dict[str, Any]:
    """Feeds in the source's layout as the graph takes them."""
    perms = permutations(graph)["inputs"]
    return {name: (np.ascontiguousarray(np.transpose(value, perms[name])) if name in perms
                   else value) for name, value in feeds.items()}


def to_source_inputs(graph, feeds: Mapping[str, Any]) -> dict[str, Any]:
    """Feeds in the graph's layout (a state's initial value) as the source takes them."""
    perms = permutations(graph)["inputs"]
    return {name: (np.ascontiguousarray(np.transpose(value, inverse(perms[name])))
                   if name in perms else value) for name, value in feeds.items()}


def to_source_outputs(graph, outputs: Mapping[str, Any]) -> dict[str, Any]:
    """The graph's outputs in the source's layout, to compare with the source's."""
    perms = permutations(graph)["outputs"]
    return {name: (np.ascontiguousarray(np.transpose(value, inverse(perms[name])))
                   if name in perms else value) for name, value in outputs.items()}


def check_given(graph, name: str, value: Any) -> None:
    """A value given for a permuted input must be in the source model's layout: one in the
    graph's (and not the source's) shape is refused with both shapes named."""
    perm = permutations(graph)["inputs"].get(name)
    if perm is None:
        return
    shape, want = tuple(np.shape(value)), source_shape(graph, name)
    if shape != want:
        graph_shape = tuple(graph.inputs[name].shape)
        said = " (the graph's layout)" if shape == graph_shape else ""
        raise ConverterError(
            f"input '{name}' is given with shape {list(shape)}{said}; given inputs are in the "
            f"source model's layout, {list(want)} (the graph transposes it by {perm})",
            fix=f"give '{name}' as the source model takes it")


def described(graph) -> dict[str, dict[str, list[int]]]:
    """The record as a report states it (only the sides that have entries)."""
    return {side: table for side, table in permutations(graph).items() if table}


def check_declared(graph, table: Any) -> list[str]:
    """What is wrong with a `permuted` record read from a file (empty when it fits the
    graph): each name an input/output of the graph, each perm a permutation of its rank."""
    problems = []
    if not isinstance(table, dict):
        return ["the permuted record is not a table of inputs and outputs"]
    for side, entries in table.items():
        if side not in SIDES or not isinstance(entries, dict):
            problems.append(f"permuted: unknown side {side!r} (inputs or outputs)")
            continue
        operands = graph.inputs if side == "inputs" else graph.outputs
        for name, perm in entries.items():
            if name not in operands:
                problems.append(f"permuted {side[:-1]} '{name}' is not an {side[:-1]} of the "
                                f"graph")
                continue
            rank = len(operands[name].shape)
            if not (isinstance(perm, list) and all(type(p) is int for p in perm)
                    and sorted(perm) == list(range(rank))):
                problems.append(f"permuted {side[:-1]} '{name}': {perm!r} is not a permutation "
                                f"of its {rank} axes")
    return problems


def unrecorded(graph, source_shapes: Mapping[str, Sequence[int | None]]) -> str | None:
    """Why the source refused the graph's feeds, when a graph input is the source's input
    transposed and the graph records no permutation for it (a graph converted with
    --io-layout before graph files kept the record): the input, both shapes, and None when
    no input is such."""
    recorded = permutations(graph)["inputs"]
    for name, operand in graph.inputs.items():
        theirs = source_shapes.get(name)
        if name in recorded or theirs is None or len(theirs) != len(operand.shape):
            continue
        mine = [int(d) for d in operand.shape]
        if any(d is None for d in theirs) or list(theirs) == mine \
                or sorted(theirs) != sorted(mine):
            continue
        return (f"graph input '{name}' is {mine} where the source takes {list(theirs)}: the "
                f"graph takes it transposed and its file does not say how (converted with "
                f"--io-layout before graph files recorded it)")
    return None


def present(graph, table: Mapping[str, Mapping[str, Sequence[int]]], where: str) -> None:
    """Give `graph` (in the source's layout) the boundary `table` records: each listed input
    taken transposed (a transpose back in front of its readers), each listed output given
    transposed. Verifying a module written earlier this way knows its layout; a table that does
    not fit the graph is refused (it comes from a file)."""
    problems = check_declared(graph, table)
    if problems:
        raise ConverterError(problems[0], where=where, fix="give the module convert wrote")
    first = graph.operations[0] if graph.operations else None
    for name, perm in table.get("inputs", {}).items():
        x = graph.inputs[name]
        readers = list(x.uses())
        graph.set_input_shape(x, apply(x.shape, perm))
        back = graph.add_operation("transpose", [x], {"permutation": inverse(perm)},
                                   name=graph.fresh_name(f"{name}_back"), before=first)
        for use in readers:
            use.op.replace_input(use.index, back.output)
        record(graph, "inputs", name, perm)
    for name, perm in table.get("outputs", {}).items():
        given = graph.add_operation("transpose", [graph.outputs[name]],
                                    {"permutation": list(perm)},
                                    name=graph.fresh_name(f"{name}_presented"))
        graph.set_output(name, given.output)
        record(graph, "outputs", name, perm)
    graph.verify()
