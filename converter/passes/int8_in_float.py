"""int8 ops in float32, for backends that refuse an op's int8 form (or do not list it).

Chromium 153's LiteRT backend lists `concat` for int8, yet `build()` fails ("Failed to allocate
tensors") when an int8 concat reads a graph input (a TFLite resource variable imported as state
is one): LiteRT wants quantization parameters on int8 tensors, and a graph input has none. The
target names such ops in its `int8InFloat` list; this pass rewrites each of them whose result is
int8 into

    cast(op(cast(x0, float32), cast(x1, float32), ...), int8)

which is exact: float32 holds every int8 value, and the ops listed only move values (concat),
so the float result holds int8 values that the last cast returns unchanged.

The same rewrite serves ops that a target does not list for int8 at all but does for float32,
when they compute exactly in float32 (EXACT_IN_FLOAT: data movement, and maxPool2d, whose
result is one of its inputs; a nearest-neighbor resample2d). Chromium 153's LiteRT backend
takes pad, maxPool2d and resample2d in float32 (pad and maxPool2d in uint8 too), not int8, and
a statically quantized TFLite model (ai-edge-quantizer's static_wi8_ai8) pads, max-pools and
upsamples int8 values. Without a target nothing changes.
"""
from __future__ import annotations

from ..errors import ConverterError
from ..ir import Graph, Operand, Operation
from . import PassContext, PassResult, graph_pass
from .cleanup import replace_results
from .target_fit import operand_slots

__all__ = ["EXACT_IN_FLOAT", "MOVES_VALUES", "int8_in_float", "lacks_int8", "rewritten_ops"]

# The ops whose result elements are copies of input elements: computing them in float32 and
# casting back is exact. Another op in a target's list is refused rather than approximated.
MOVES_VALUES = frozenset({"concat", "slice", "reshape", "transpose", "expand", "gather",
                          "split", "reverse", "tile", "pad"})
# The ops whose int8 result is exact when computed in float32 from the same values: those that
# move values, and maxPool2d (each result element is one of its window's elements); so is a
# nearest-neighbor resample2d (lacks_int8 checks its mode: a linear one interpolates).
EXACT_IN_FLOAT = MOVES_VALUES | {"maxPool2d"}


def lacks_int8(op: Operation, target) -> bool:
    """Whether `target` refuses `op`'s int8 operands but takes every one of them as float32:
    an op of EXACT_IN_FLOAT whose results are int8 (an operand the file does not list is taken
    as the target's check takes it: unrestricted)."""
    nearest = op.op_type == "resample2d" and op.attr("mode") == "nearest-neighbor"
    if (op.op_type not in EXACT_IN_FLOAT and not nearest) or not target.supports(op.op_type) \
            or not all(o.data_type == "int8" for o in op.outputs):
        return False
    refused = False
    for name, operand in operand_slots(op):
        types = (target.operand_limits(op.op_type, name) or {}).get("dataTypes")
        if types is None or operand.data_type != "int8" or "int8" in types:
            continue
        if "float32" not in types:
            return False
        refused = True
    return refused


def rewritten_ops(graph: Graph, target) -> list:
    """The operations the pass computes in float32 on `target` (what `check` reports): those
    of a type the target lists whose results are int8, and those lacks_int8 names."""
    listed = list(getattr(target, "int8_in_float", []) or [])
    for name in listed:
        if name not in MOVES_VALUES:
            raise ConverterError(f"int8InFloat lists '{name}', which does not only move values",
                                 where=f"target '{target.name}'",
                                 fix=f"list only {', '.join(sorted(MOVES_VALUES))}")
    if target is None:
        return []
    return [op for op in graph.operations if (op.op_type in listed
            and all(o.data_type == "int8" for o in op.outputs)) or lacks_int8(op, target)]


@graph_pass("int8_in_float")
def int8_in_float(graph: Graph, ctx: PassContext) -> PassResult:
    rewritten = 0
    for op in rewritten_ops(graph, ctx.target):
        widened = []
        for i, operand in enumerate(op.inputs):
            if operand is None or operand.data_type != "int8":
                widened.append(operand)
                continue
            cast = graph.add_operation("cast", [operand], {"dataType": "float32"},
                                       name=f"{op.name}/in{i}/float32", before=op)
            widened.append(cast.output)
        in_float = graph.add_operation(op.op_type, widened, dict(op.attrs),
                                       name=f"{op.name}/float32", before=op)
        back = [graph.add_operation("cast", [o], {"dataType": "int8"},
                                    name=f"{op.name}/out{j}/int8", before=op).output
                for j, o in enumerate(in_float.outputs)]
        replace_results(graph, op, back, take_names=True)
        rewritten += 1
    return PassResult(rewritten > 0, {"int8_ops_in_float": rewritten})
