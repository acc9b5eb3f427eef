"""The parity bounds of one output under the tolerance policy (shared/reference/tolerances.md):

  * a quantized output (int8/uint8 from quantizeLinear, through ops that only move values):
    within one quantization step;
  * a float32 output computed in float16 inside the graph (a float32 boundary around a
    float16 model, as transformers.js's fp16 files are): the float16 bounds, atol = rtol =
    1e-2, the report saying so (float16_notes);
  * otherwise the policy for its data type (parity.default_bounds).
"""
from __future__ import annotations

from ..ir import Graph
from .parity import Bounds, default_bounds

__all__ = ["output_bounds", "computed_in_float16", "float16_notes"]


def output_bounds(graph: Graph, name: str) -> Bounds:
    """The parity bounds of one output: one quantization step for a quantized output (an
    int8/uint8 result of quantizeLinear, or of ops that only move such values: an NCHW
    exporter's transpose after the last quantized op), else the policy for its data type."""
    operand = graph.outputs[name]
    if operand.data_type in ("int8", "uint8") and _quantized(operand):
        return Bounds(atol=1.0, rtol=0.0)
    if operand.data_type == "float32" and computed_in_float16(operand):
        return default_bounds("float16")
    return default_bounds(operand.data_type)


def computed_in_float16(operand) -> bool:
    """Whether a value is computed in float16 on its way from the graph's inputs: some
    operation before it gives a float16 result from a value that is not a constant (a
    float32 boundary around a float16 model, as transformers.js's fp16 files are). Casting
    float16 weights up to compute in float32 is not: that computes in float32."""
    seen: set[int] = set()
    stack = [operand]
    while stack:
        value = stack.pop()
        producer = value.producer
        if producer is None or id(producer) in seen:
            continue
        seen.add(id(producer))
        live = [x for x in producer.inputs if x is not None and not x.is_constant]
        if live and any(out.data_type == "float16" for out in producer.outputs):
            return True
        stack.extend(live)
    return False


def float16_notes(graph: Graph, names) -> list[str]:
    """The report's note on outputs given float32 but computed in float16."""
    inside = [n for n in names if n in graph.outputs
              and graph.outputs[n].data_type == "float32"
              and computed_in_float16(graph.outputs[n])]
    if not inside:
        return []
    return [f"{', '.join(inside)} {'is' if len(inside) == 1 else 'are'} float32 at the "
            "boundary but computed in float16 inside the graph: judged by the float16 bounds "
            "(atol = rtol = 1e-2), as the tolerance policy has it for a float32 model "
            "computed in float16"]


def _quantized(operand) -> bool:
    """Whether every value of an int8/uint8 operand comes from a quantizeLinear, through ops
    that only move values (each of their int8 inputs must come from one too)."""
    from ..passes.int8_in_float import MOVES_VALUES

    seen: set[int] = set()
    stack = [operand]
    while stack:
        value = stack.pop()
        producer = value.producer
        if producer is None:  # a graph input or constant: integers of their own
            return False
        if id(producer) in seen:
            continue
        seen.add(id(producer))
        if producer.op_type == "quantizeLinear":
            continue
        if producer.op_type not in MOVES_VALUES | {"identity"}:
            return False
        stack.extend(x for x in producer.inputs
                     if x is not None and x.data_type == value.data_type)
    return True
