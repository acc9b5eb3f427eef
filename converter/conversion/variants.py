"""A model converted at several values of its symbolic dims (converter.dynamic.Variants).

    variants = convert_variants("bert.onnx", dims={"sequence": [8, 16, 32]})
    variants = convert_variants("bert.onnx", dims={"sequence": (8, 128), "batch": 1})

Each value is one whole conversion (read, import, and a target's rewrites), so this sits above
the targets; the Variants it returns, and everything that reads, writes and fits them, are in
converter/dynamic/, below.
"""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..dynamic.variants import MAX_VARIANTS, Variants, split_dims
from ..errors import ConverterError
from ..ir import Graph

__all__ = ["convert_variants"]


def convert_variants(source: str | Path, dims: Mapping[str, Any], *,
                     target=None, io_layout: str | None = None,
                     input_shapes: Mapping[str, Sequence[int]] | None = None,
                     known_inputs: Mapping[str, Any] | None = None,
                     dequantize: bool = False,
                     on_variant: Callable[[dict[str, int], Graph], None] | None = None
                     ) -> Variants:
    """`source` converted once per combination of the varying dims' values (as
    `converter.convert` converts it at one: the fixed dims, `input_shapes`, `known_inputs`,
    and `target`'s rewrites when given). `on_variant(point, graph)` is told of each.

    Raises ConverterError when no dim varies, or when the combinations exceed MAX_VARIANTS."""
    fixed, varying, ranges = split_dims(dims)
    if not varying:
        raise ConverterError("no dim is given several values", where="dims",
                             fix="give a list or a range, e.g. {'sequence': [8, 16, 32]}; "
                                 "one value converts one graph (converter.convert)")
    names = tuple(varying)
    count = 1
    for values in varying.values():
        count *= len(values)
    if count > MAX_VARIANTS:
        raise ConverterError(f"{count} combinations of {', '.join(names)} is more than the "
                             f"{MAX_VARIANTS} conversions one call makes", where="dims",
                             fix="list fewer values, or give a range (three conversions)")

    def convert_at(point: dict[str, int]) -> Graph:
        return _convert_one(source, {**fixed, **point}, target, io_layout, input_shapes,
                            known_inputs, dequantize)

    entries = []
    for values in itertools.product(*(varying[n] for n in names)):
        point = dict(zip(names, values))
        graph = convert_at(point)
        if on_variant is not None:
            on_variant(point, graph)
        entries.append((point, graph))
    return Variants(names, entries, ranges, fixed, convert_at)


def _convert_one(source, dims, target, io_layout, input_shapes, known_inputs,
                 dequantize) -> Graph:
    from .by_suffix import load_any

    graph = load_any(source, dims=dims, input_shapes=input_shapes, known_inputs=known_inputs)
    if target is not None:
        from ..targets.pipeline import convert_for_target

        convert_for_target(graph, target, io_layout=io_layout, dequantize=dequantize)
    return graph
