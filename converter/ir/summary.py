"""What a graph holds, in numbers: the content of `webnn-convert inspect`."""
from __future__ import annotations

from typing import Any

from .graph import Graph

__all__ = ["summarize"]


def summarize(graph: Graph) -> dict[str, Any]:
    """Inputs, outputs, op histogram, constant count and bytes, transpose count; and, for a
    graph converted with --io-layout, the inputs and outputs it transposed (`permuted`)."""
    from .io_permutations import described

    hist = graph.op_histogram()
    permuted = described(graph)
    info = {
        "name": graph.name,
        "inputs": {k: {"dataType": d.data_type, "shape": list(d.shape)}
                   for k, d in graph.input_descs().items()},
        "outputs": {k: {"dataType": d.data_type, "shape": list(d.shape)}
                    for k, d in graph.output_descs().items()},
        "operations": len(graph.operations),
        "opHistogram": hist,
        "constants": len(graph.constants),
        "constantBytes": graph.constant_bytes(),
        "transposes": hist.get("transpose", 0),
    }
    if permuted:
        info["permuted"] = permuted
    return info
