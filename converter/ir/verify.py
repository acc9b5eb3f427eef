"""Graph invariants. `graph_problems` lists every broken one; `Graph.verify()` raises with them.

The invariants:
  1. every operand has a unique name and belongs to this graph;
  2. operations are in topological order: each input is a graph input, a constant, or a result
     of an earlier operation (this also rules out cycles and names used before they are defined);
  3. use lists agree with operation inputs, and each result knows its producer and index;
  4. each operation passes the catalogue's checks, and its recorded results have the shapes and
     data types its shape rule computes; the constant indices of gather, gatherElements,
     gatherND, scatterElements and scatterND lie within the axes they index
     (constant_indices.py);
  5. each constant's data has the operand's data type, shape and byte length;
  6. there is at least one output, and no output is a graph input or a constant (the spec's
     build() rejects both);
  7. each declared state pairs an input and an output of one data type and shape (state.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ConverterError
from .constant_indices import index_problem
from .graph import shape_problem
from .semantics import infer
from .state import state_problems

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["graph_problems"]


def graph_problems(graph: "Graph") -> list[str]:
    problems: list[str] = []
    add = problems.append
    known: set[int] = set()  # ids of operands defined so far, in order

    for table, kind in ((graph.inputs, "input"), (graph.constants, "constant")):
        for key, operand in table.items():
            if operand.name != key or operand.kind != kind:
                add(f"{kind} '{key}' is registered under the wrong name or kind")
            if operand.graph is not graph or graph._operands.get(operand.name) is not operand:
                add(f"{kind} '{key}' does not belong to the graph")
            problem = shape_problem(operand.shape)
            if problem:
                add(f"{kind} '{key}': {problem}")
            known.add(id(operand))
    for key, operand in graph.constants.items():
        data = operand.constant
        if data is None:
            add(f"constant '{key}' has no data")
            continue
        if data.data_type != operand.data_type or data.shape != operand.shape:
            add(f"constant '{key}': its data is {data.data_type}{list(data.shape)}, the operand "
                f"{operand.data_type}{list(operand.shape)}")
        if data.fill is None:
            # the held array's size is raw_bytes()'s, without laying out a strided view
            if data.held.nbytes != data.nbytes:
                add(f"constant '{key}': {data.held.nbytes} bytes of data, its shape "
                    f"needs {data.nbytes}")

    op_names: set[str] = set()
    for op in graph.operations:
        where = f"{op.op_type} '{op.name}'"
        if op.name in op_names:
            add(f"{where}: duplicate node name")
        op_names.add(op.name)
        if op.graph is not graph:
            add(f"{where}: does not belong to the graph")
        for slot, operand in enumerate(op.inputs):
            if operand is None:
                continue
            if id(operand) not in known:
                if operand.graph is not graph:
                    add(f"{where}: input '{operand.name}' is not defined in the graph")
                else:
                    add(f"{where}: input '{operand.name}' is used before it is defined "
                        f"(operations out of order, or a cycle)")
            if (op, slot) not in [(u.op, u.index) for u in operand._uses]:
                add(f"{where}: operand '{operand.name}' does not list its use at slot {slot}")
        for i, out in enumerate(op.outputs):
            if out.producer is not op or out.index != i:
                add(f"{where}: result '{out.name}' does not name it as producer")
            if graph._operands.get(out.name) is not out:
                add(f"{where}: result '{out.name}' is not registered in the graph")
            known.add(id(out))
        try:
            attrs = dict(op.attrs)
            results = infer(op.op_type, [o.desc if o is not None else None for o in op.inputs],
                            attrs, node=op.name)
        except ConverterError as e:
            add(e.line())
            continue
        if len(results) != len(op.outputs):
            add(f"{where}: has {len(op.outputs)} results, the op gives {len(results)}")
        for out, want in zip(op.outputs, results):
            if out.desc != want:
                add(f"{where}: result '{out.name}' is {out.desc}, the op gives {want}")
        problem = index_problem(op)
        if problem:
            add(f"{where}: {problem}")

    for operand in graph.operands():
        for use in operand._uses:
            if use.op.graph is not graph or use.index >= len(use.op.inputs) \
                    or use.op.inputs[use.index] is not operand:
                add(f"operand '{operand.name}': stale use by '{use.op.name}' slot {use.index}")

    if not graph.outputs:
        add("the graph has no outputs")
    for key, operand in graph.outputs.items():
        if operand.graph is not graph or graph._operands.get(operand.name) is not operand:
            add(f"output '{key}' names an operand that is not in the graph")
        elif operand.kind != "intermediate":
            add(f"output '{key}' is {operand.kind} '{operand.name}'; an output must be the "
                f"result of an operation")
    problems += state_problems(graph)
    return problems
