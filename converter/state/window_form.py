"""The fixed-capacity form of a decoder whose cache grows by a Concat (optimum's exports): a
past of N-1 rows slides, so one static graph serves every step.

Each step the model appends the new token's rows to the N-1 past rows (N rows of present);
the next past is the present without its oldest row, the graph's state output. The newest row
is always the last, so the filled rows sit at the end of the window: the model's attention mask
is ones there and zeros on the rows not yet filled, which the model's attention masks out (as it
does for left padding), and position_ids give each token its place (the past's length no longer
does). The first step is a step like the others, every past row masked: no empty past.

The graph takes the mask the way the buffer form does (converter.generation.DecoderLoop feeds
both alike): [1, N], ones on the rows filled so far and this step's, from the left. It reverses
that order with a gather before the model reads it: ones on the first k rows of the given mask
are ones on the last k rows of the window.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np

from ..errors import ConverterError
from ..ir import Graph
from .kv_cache import DecoderSpec

__all__ = ["load_window"]


def load_window(spec: DecoderSpec, capacity: int, dims: Mapping[str, int] | None) -> Graph:
    """The decoder of `spec` as a window of `capacity` rows, one token a step; its present
    outputs are the next past (N-1 rows), so each pair is a state of one shape (not yet
    declared)."""
    from ..importers.onnx import import_onnx

    if capacity < 2:
        raise ConverterError(f"--cache-capacity {capacity}: a sliding cache keeps N-1 past rows "
                             f"beside the new one", where=str(spec.path),
                             fix="give --cache-capacity 2 or more")
    path = Path(spec.path)
    graph = import_onnx(path, dims=spec.dims(past=capacity - 1, step=1, extra=dims),
                        input_shapes=spec.input_shapes(capacity),
                        known_inputs=spec.known(capacity - 1))
    _reverse_mask(graph, spec.attention_mask, capacity)
    for past, present in spec.pairs:
        full = graph.outputs.get(present)
        if full is None or len(full.shape) <= spec.seq_axis or \
                full.shape[spec.seq_axis] != capacity:
            got = "no such output" if full is None else f"shape {list(full.shape)}"
            raise ConverterError(f"'{present}' has {got} where a past of {capacity - 1} rows "
                                 f"and one new token make {capacity} rows on axis "
                                 f"{spec.seq_axis}: the model does not append the new rows "
                                 f"to '{past}'", where=str(path),
                                 fix="step its concat form on ort: run/verify --prompt IDS "
                                     "--steps N without --cache-capacity")
        starts = [0] * len(full.shape)
        starts[spec.seq_axis] = 1
        sizes = list(full.shape)
        sizes[spec.seq_axis] -= 1
        op = graph.add_operation("slice", [full], {"starts": starts, "sizes": sizes},
                                 name=graph.fresh_name(f"{present}/window"))
        graph.set_output(present, op.outputs[0])
    graph.remove_unused()
    return graph


def _reverse_mask(graph: Graph, name: str | None, capacity: int) -> None:
    """Readers of input `name` read it back to front along its last axis."""
    if name is None or name not in graph.inputs:
        raise ConverterError("the decoder has no attention mask input, which a sliding cache "
                             "needs to mask its empty rows",
                             fix="run its concat form: run/verify --prompt IDS --steps N "
                                 "without --cache-capacity")
    mask = graph.inputs[name]
    order = graph.add_constant(graph.fresh_name(f"{name}/order"),
                               np.arange(capacity - 1, -1, -1, dtype=np.int32))
    op = graph.add_operation("gather", [mask, order], {"axis": len(mask.shape) - 1},
                             name=graph.fresh_name(f"{name}/reversed"), before=graph.operations[0]
                             if graph.operations else None)
    mask.replace_all_uses_with(op.outputs[0], replace_graph_outputs=True)
    op.replace_input(0, mask)  # the gather itself reads the input
