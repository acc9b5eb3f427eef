"""Graph state: values a model carries from one call to the next.

A WebNN graph is a pure function, so state is declared around it, never inside it: each
`StateVar` pairs a graph input (the value before the step) with a graph output (the value after
it) of the same data type and shape, and gives the value the first step starts from. A caller
that knows nothing of state still has a valid graph: it feeds the state input and reads the
next-state output like any other.

    graph.declare_state("stream/states", "stream/states/next", initial=ConstantData(...))

The initial value is either zeros (`initial=None`) or a constant (a ConstantData of the pair's
type and shape, written to the weights file like any constant). A value computed once from
inputs (a second graph) is not supported yet.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes
from .operand import ConstantData

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["StateVar", "state_problems", "initial_value"]


@dataclass
class StateVar:
    """One state pair: graph input `input` is fed what output `output` gave the step before."""

    input: str  # a key of graph.inputs
    output: str  # a key of graph.outputs
    initial: ConstantData | None = None  # None: zeros

    @property
    def initial_kind(self) -> str:
        return "zeros" if self.initial is None else "constant"


def initial_value(graph: "Graph", var: StateVar) -> np.ndarray:
    """The value the first step feeds `var`'s input (a fresh, writable array)."""
    operand = graph.inputs[var.input]
    if var.initial is None:
        return np.zeros(operand.shape, dtypes.numpy_dtype(operand.data_type))
    return np.array(var.initial.numpy(), dtype=dtypes.numpy_dtype(operand.data_type))


def state_problems(graph: "Graph") -> list[str]:
    """Every way the state declaration disagrees with the graph, one sentence each."""
    problems: list[str] = []
    inputs: set[str] = set()
    outputs: set[str] = set()
    for var in graph.state:
        where = f"state '{var.input}' -> '{var.output}'"
        if var.input in inputs:
            problems.append(f"{where}: input '{var.input}' is the state of two pairs")
        if var.output in outputs:
            problems.append(f"{where}: output '{var.output}' is the next state of two pairs")
        inputs.add(var.input)
        outputs.add(var.output)
        source = graph.inputs.get(var.input)
        target = graph.outputs.get(var.output)
        if source is None:
            problems.append(f"{where}: the graph has no input '{var.input}'")
        if target is None:
            problems.append(f"{where}: the graph has no output '{var.output}'")
        if source is None or target is None:
            continue
        if source.desc != target.desc:
            problems.append(f"{where}: the input is {source.desc}, the output {target.desc}; "
                            f"a state keeps its data type and shape")
        init = var.initial
        if init is not None and (init.data_type, init.shape) != (source.data_type, source.shape):
            problems.append(f"{where}: the initial value is {init.data_type}{list(init.shape)}, "
                            f"the state {source.desc}")
    return problems
