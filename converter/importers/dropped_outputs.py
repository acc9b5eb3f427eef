"""Graph outputs an import leaves out because they hold no values, shared by every importer.

WebNN has no empty tensors, so an output with a 0 dimension cannot be built. It carries nothing
a caller could read, though, and real exports have them: optimum's merged decoders (T5, BART,
Marian, Whisper) give the with-past branch empty placeholders for the cross-attention presents
([0, heads, 1, head_dim]), which stopped whole conversions. Such an output is left out: the
graph records it in `graph.metadata["dropped_outputs"]` and a DroppedOutputWarning names it
(the CLI prints one "warning:" line per output). An empty value an op needs as an operand is
still refused where the op reads it, and a model whose every output is empty is refused.
"""
from __future__ import annotations

import warnings
from typing import Sequence

from ..errors import ConversionWarning, UnsupportedError
from ..ir import Graph

__all__ = ["DroppedOutputWarning", "drop_empty_output", "dropped_outputs", "announce_dropped"]

_KEY = "dropped_outputs"


class DroppedOutputWarning(ConversionWarning):
    """A model output left out of the converted graph (its message says which and why)."""


def drop_empty_output(graph: Graph, name: str, shape: Sequence[int]) -> None:
    """Leave output `name` (of `shape`, which has a 0) out of `graph`: recorded, and announced
    by announce_dropped once the import has succeeded."""
    graph.metadata.setdefault(_KEY, []).append({"name": name, "shape": [int(d) for d in shape]})


def dropped_outputs(graph: Graph) -> list[dict]:
    """[{"name", "shape"}] of the outputs the import left out, in the model's order."""
    return list(graph.metadata.get(_KEY, []))


def announce_dropped(graph: Graph, where: str) -> None:
    """At the end of a successful import: one DroppedOutputWarning per output left out, or an
    UnsupportedError naming each when every output was (there would be nothing to compute)."""
    dropped = dropped_outputs(graph)
    if dropped and not graph.outputs:
        raise UnsupportedError(
            [f"graph output '{d['name']}' is empty ('{d['name']}' has shape {d['shape']}, "
             f"with a 0 dimension); WebNN has no empty tensors, and no output of the model "
             f"holds values"
             for d in dropped], where=where, fix="export the model with outputs that hold values")
    for d in dropped:
        warnings.warn(DroppedOutputWarning(
            f"{where}: output '{d['name']}' dropped: it is empty (shape {d['shape']}) and "
            f"WebNN has no empty tensors; the converted graph has no such output"),
            stacklevel=3)
