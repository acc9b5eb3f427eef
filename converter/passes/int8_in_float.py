"""int8 data movement in float32, for backends that list an op for int8 but refuse to build it.

Chromium 153's LiteRT backend lists `concat` for int8, yet `build()` fails ("Failed to allocate
tensors") when an int8 concat reads a graph input (a TFLite resource variable imported as state
is one): LiteRT wants quantization parameters on int8 tensors, and a graph input has none. The
target names such ops in its `int8InFloat` list; this pass rewrites each of them whose result is
int8 into

    cast(op(cast(x0, float32), cast(x1, float32), ...), int8)

which is exact: float32 holds every int8 value, and the ops listed only move values (concat),
so the float result holds int8 values that the last cast returns unchanged. Without a target,
or with an empty list, nothing changes.
"""
from __future__ import annotations

from ..errors import ConverterError
from ..ir import Graph
from . import PassContext, PassResult, graph_pass
from .cleanup import replace_results

__all__ = ["int8_in_float", "rewritten_ops", "MOVES_VALUES"]

# The ops whose result elements are copies of input elements: computing them in float32 and
# casting back is exact. Another op in a target's list is refused rather than approximated.
MOVES_VALUES = frozenset({"concat", "slice", "reshape", "transpose", "expand", "gather",
                          "split", "reverse", "tile", "pad"})


def rewritten_ops(graph: Graph, target) -> list:
    """The operations the pass computes in float32 on `target` (what `check` reports): those
    of a type the target lists whose results are int8."""
    listed = list(getattr(target, "int8_in_float", []) or [])
    for name in listed:
        if name not in MOVES_VALUES:
            raise ConverterError(f"int8InFloat lists '{name}', which does not only move values",
                                 where=f"target '{target.name}'",
                                 fix=f"list only {', '.join(sorted(MOVES_VALUES))}")
    return [op for op in graph.operations if op.op_type in listed
            and all(o.data_type == "int8" for o in op.outputs)]


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
