"""The graph: named inputs, constants, operations in topological order, named outputs."""
from __future__ import annotations

import heapq
import re
from typing import Any, Iterable

import numpy as np

from .. import dtypes
from ..errors import ConverterError, GraphInvalidError
from .operand import ConstantData, Operand, TensorDesc
from .operation import Operation
from .semantics import get_op, infer
from .state import StateVar

__all__ = ["Graph"]


class Graph:
    """A WebNN graph.

    Operations are kept in topological order: `add_operation` appends (its inputs must exist
    already), `add_operation(..., before=op)` inserts. Every operand has a unique name. Output
    names are the names users feed and read by; they map to operands.
    """

    def __init__(self, name: str = "graph"):
        self.name = name
        self.inputs: dict[str, Operand] = {}
        self.constants: dict[str, Operand] = {}
        self.operations: list[Operation] = []
        self.outputs: dict[str, Operand] = {}
        self._operands: dict[str, Operand] = {}
        self._op_names: set[str] = set()
        self._counters: dict[str, int] = {}
        self.metadata: dict[str, Any] = {}
        # State pairs (input before a step, output after it): see state.py.
        self.state: list[StateVar] = []

    # -- names --------------------------------------------------------------------------------
    def operand(self, name: str) -> Operand:
        try:
            return self._operands[name]
        except KeyError:
            raise ConverterError(f"no operand named '{name}'", where=f"graph '{self.name}'") from None

    def has_operand(self, name: str) -> bool:
        return name in self._operands

    def has_node_name(self, name: str) -> bool:
        return name in self._op_names

    def operands(self) -> Iterable[Operand]:
        return self._operands.values()

    def fresh_name(self, base: str) -> str:
        """A name not yet used by any operand or operation, derived from `base`."""
        base = base or "t"
        if base not in self._operands and base not in self._op_names:
            return base
        stem = re.sub(r"_\d+$", "", base)
        n = self._counters.get(stem, 0)
        while True:
            n += 1
            candidate = f"{stem}_{n}"
            if candidate not in self._operands and candidate not in self._op_names:
                self._counters[stem] = n
                return candidate

    def _claim(self, operand: Operand) -> Operand:
        if operand.name in self._operands:
            raise ConverterError(f"duplicate name '{operand.name}'", where=f"graph '{self.name}'",
                                 fix="every input, constant and result needs its own name")
        operand.graph = self
        self._operands[operand.name] = operand
        return operand

    # -- building -----------------------------------------------------------------------------
    def add_input(self, name: str, data_type: str, shape) -> Operand:
        _check_desc(name, data_type, shape)
        op = self._claim(Operand(name, data_type, shape, "input"))
        self.inputs[name] = op
        return op

    def add_constant(self, name: str, data: ConstantData | np.ndarray, data_type: str | None = None,
                     shape=None) -> Operand:
        """Add a constant. `data` is ConstantData, or an ndarray taken as it is (not copied)."""
        if isinstance(data, np.ndarray):
            dt = data_type or dtypes.from_numpy(data.dtype)
            shp = tuple(data.shape) if shape is None else tuple(shape)
            arr = data
            if dtypes.info(dt).bits >= 8 and arr.dtype != dtypes.numpy_dtype(dt):
                arr = arr.astype(dtypes.numpy_dtype(dt))
            data = ConstantData(dt, shp, array=arr)
        _check_desc(name, data.data_type, data.shape)
        op = self._claim(Operand(name, data.data_type, data.shape, "constant", constant=data))
        self.constants[name] = op
        return op

    def add_operation(self, op_type: str, inputs: list[Operand | None], attrs: dict | None = None,
                      *, name: str | None = None, output_names: list[str] | None = None,
                      before: Operation | None = None) -> Operation:
        """Validate and add one operation; its output operands are created from the shape rule.

        Args:
            op_type: the MLGraphBuilder method name.
            inputs: operands in the op's slot order (see Operation); trailing None may be left out.
            attrs: non-operand arguments and options by spec name.
            name: the node id; by default derived from the op type.
            output_names: names for the results; by default the node id (one result) or
                `id_0`, `id_1`... (several).
            before: insert before this operation instead of appending.
        """
        opdef = get_op(op_type)
        inputs = opdef.pad_inputs(list(inputs))
        for operand in inputs:
            if operand is not None and operand.graph is not self:
                raise ConverterError(f"operand '{operand.name}' belongs to another graph",
                                     where=f"{op_type}")
        attrs = dict(attrs or {})
        node = name or self.fresh_name(op_type)
        if node in self._op_names:
            raise ConverterError(f"duplicate node name '{node}'", where=f"graph '{self.name}'")
        results = infer(op_type, [o.desc if o is not None else None for o in inputs], attrs,
                        node=node)
        if output_names is None:
            output_names = [node] if len(results) == 1 else [
                self.fresh_name(f"{node}_{i}") for i in range(len(results))]
        if len(output_names) != len(results):
            raise ConverterError(
                f"{len(output_names)} result names given, the op has {len(results)} results",
                where=f"{op_type} '{node}'")
        op = Operation(op_type, node, attrs)
        op.graph = self
        op.set_inputs(inputs)
        for i, (out_name, desc) in enumerate(zip(output_names, results)):
            out = Operand(out_name, desc.data_type, desc.shape, "intermediate")
            out.producer, out.index = op, i
            try:
                self._claim(out)
            except ConverterError:
                op.set_inputs([])
                for made in op.outputs:
                    del self._operands[made.name]
                raise
            op.outputs.append(out)
        self._op_names.add(node)
        if before is None:
            self.operations.append(op)
        else:
            self.operations.insert(self.operations.index(before), op)
        return op

    def set_output(self, name: str, operand: Operand) -> None:
        if operand.graph is not self:
            raise ConverterError(f"operand '{operand.name}' belongs to another graph",
                                 where=f"output '{name}'")
        self.outputs[name] = operand

    def declare_state(self, input_name: str, output_name: str,
                      initial: ConstantData | np.ndarray | None = None) -> StateVar:
        """Pair graph input `input_name` with graph output `output_name` as one state, which
        starts at `initial` (zeros when None). The pair names the interface, as users feed and
        read it: it does not follow an operand's rename (passes that retype an input keep its
        name on a new operand). verify() checks the pair still fits."""
        if isinstance(initial, np.ndarray):
            operand = self.inputs.get(input_name)
            data_type = operand.data_type if operand is not None else \
                dtypes.from_numpy(initial.dtype)
            initial = ConstantData(data_type, initial.shape,
                                   array=initial.astype(dtypes.numpy_dtype(data_type)))
        var = StateVar(input_name, output_name, initial)
        self.state.append(var)
        return var

    # -- editing ------------------------------------------------------------------------------
    def remove_operation(self, op: Operation, *, safe: bool = True) -> None:
        """Detach and drop an operation. With `safe`, refuse if a result is still read."""
        if safe:
            for out in op.outputs:
                if out._uses or out.is_graph_output():
                    raise ConverterError(f"result '{out.name}' is still used",
                                         where=f"{op.op_type} '{op.name}'")
        op.set_inputs([])
        for out in op.outputs:
            self._operands.pop(out.name, None)
            out.graph = None
        self.operations.remove(op)
        self._op_names.discard(op.name)
        op.graph = None

    def remove_operand(self, operand: Operand) -> None:
        """Drop an unused graph input or constant."""
        if operand._uses or operand.is_graph_output():
            raise ConverterError(f"operand '{operand.name}' is still used")
        table = self.inputs if operand.kind == "input" else self.constants
        if operand.kind == "intermediate":
            raise ConverterError(f"'{operand.name}' is a result; remove its operation instead")
        del table[operand.name]
        del self._operands[operand.name]
        operand.graph = None

    def rename(self, operand: Operand, new_name: str) -> None:
        if new_name == operand.name:
            return
        if new_name in self._operands:
            raise ConverterError(f"duplicate name '{new_name}'", where=f"graph '{self.name}'")
        del self._operands[operand.name]
        for table in (self.inputs, self.constants):
            if operand.name in table:
                table[new_name] = table.pop(operand.name)
        operand.name = new_name
        self._operands[new_name] = operand

    def rename_operation(self, op: Operation, new_name: str) -> None:
        """Give an operation (a node id) a new name that no operand or operation has."""
        if new_name == op.name:
            return
        if new_name in self._op_names:
            raise ConverterError(f"duplicate node name '{new_name}'", where=f"graph '{self.name}'")
        self._op_names.discard(op.name)
        op.name = new_name
        self._op_names.add(new_name)

    def set_input_shape(self, operand: Operand, shape) -> None:
        """Change a graph input's shape (a layout pass presenting it transposed). The caller
        rewires its readers; verify() then checks they agree with the new shape."""
        if operand.kind != "input" or self.inputs.get(operand.name) is not operand:
            raise ConverterError(f"'{operand.name}' is not a graph input")
        _check_desc(operand.name, operand.data_type, shape)
        operand.shape = tuple(int(d) for d in shape)

    def replace_operand(self, old: Operand, new: Operand) -> None:
        """Every reader of `old`, graph outputs included, reads `new` instead."""
        old.replace_all_uses_with(new, replace_graph_outputs=True)

    def sort(self) -> None:
        """Put the operations back in topological order, keeping the current order where it is
        already valid (passes that insert ops anywhere call this once at the end)."""
        position = {id(op): i for i, op in enumerate(self.operations)}
        waiting: dict[int, int] = {}
        readers: dict[int, list[Operation]] = {}
        ready: list[tuple[int, int, Operation]] = []
        for op in self.operations:
            producers = {id(o.producer) for o in op.inputs
                         if o is not None and o.producer is not None}
            waiting[id(op)] = len(producers)
            for p in producers:
                readers.setdefault(p, []).append(op)
            if not producers:
                heapq.heappush(ready, (position[id(op)], id(op), op))
        ordered = []
        while ready:
            _, _, op = heapq.heappop(ready)
            ordered.append(op)
            for reader in readers.get(id(op), ()):
                waiting[id(reader)] -= 1
                if waiting[id(reader)] == 0:
                    heapq.heappush(ready, (position[id(reader)], id(reader), reader))
        if len(ordered) != len(self.operations):
            stuck = [op.name for op in self.operations if waiting[id(op)] > 0][:5]
            raise ConverterError(f"the graph has a cycle through {', '.join(stuck)}",
                                 where=f"graph '{self.name}'")
        self.operations = ordered

    def remove_unused(self) -> int:
        """Drop operations whose results nobody reads and constants nobody reads; return how
        many operations went. Graph inputs stay: they are the graph's interface."""
        removed = 0
        for op in reversed(list(self.operations)):
            if all(not out._uses and not out.is_graph_output() for out in op.outputs):
                self.remove_operation(op)
                removed += 1
        for const in list(self.constants.values()):
            if not const._uses and not const.is_graph_output():
                self.remove_operand(const)
        return removed

    # -- views --------------------------------------------------------------------------------
    def producers(self) -> dict[str, Operation]:
        return {out.name: op for op in self.operations for out in op.outputs}

    def op_histogram(self) -> dict[str, int]:
        hist: dict[str, int] = {}
        for op in self.operations:
            hist[op.op_type] = hist.get(op.op_type, 0) + 1
        return dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))

    def constant_bytes(self) -> int:
        return sum(c.constant.nbytes for c in self.constants.values())

    def input_descs(self) -> dict[str, TensorDesc]:
        return {k: v.desc for k, v in self.inputs.items()}

    def output_descs(self) -> dict[str, TensorDesc]:
        return {k: v.desc for k, v in self.outputs.items()}

    def to_networkx(self):
        """A networkx MultiDiGraph view (nodes: operation names; edges keyed by input slot).

        For analysis only: passes edit the graph through its own methods, never through this.
        """
        import networkx as nx

        g = nx.MultiDiGraph()
        for op in self.operations:
            g.add_node(op.name, op_type=op.op_type)
        for op in self.operations:
            for slot, operand in enumerate(op.inputs):
                if operand is not None and operand.producer is not None:
                    g.add_edge(operand.producer.name, op.name, key=slot, operand=operand.name)
        return g

    # -- checks -------------------------------------------------------------------------------
    def problems(self) -> list[str]:
        """Every broken invariant, one sentence each; empty when the graph is valid."""
        from .verify import graph_problems

        return graph_problems(self)

    def verify(self) -> "Graph":
        """Raise GraphInvalidError listing every broken invariant; return self when valid."""
        found = self.problems()
        if found:
            raise GraphInvalidError(found, where=f"graph '{self.name}'")
        return self

    def __repr__(self) -> str:
        return (f"Graph({self.name!r}: {len(self.inputs)} inputs, {len(self.constants)} constants, "
                f"{len(self.operations)} operations, {len(self.outputs)} outputs)")


def _check_desc(name: str, data_type: str, shape) -> None:
    """The spec's checks on an MLOperandDescriptor."""
    if not isinstance(name, str) or not name:
        raise ConverterError("an input or constant needs a non-empty name")
    dtypes.info(data_type)
    problem = shape_problem(shape)
    if problem:
        raise ConverterError(problem, where=f"operand '{name}'")


def shape_problem(shape) -> str | None:
    """Why a shape is not a valid WebNN shape, or None when it is."""
    if len(shape) > dtypes.MAX_RANK:
        return f"rank {len(shape)} exceeds {dtypes.MAX_RANK}, the most axes the converter handles"
    count = 1
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            return f"dimension {d!r} is not an integer; WebNN shapes are static"
        if d <= 0:
            return f"dimension {d} must be greater than 0"
        if d > dtypes.MAX_DIMENSION:
            return f"dimension {d} exceeds {dtypes.MAX_DIMENSION}"
        count *= int(d)
    if count > dtypes.MAX_ELEMENT_COUNT:
        return (f"shape {list(shape)} has {count} elements, more than the spec's limit "
                f"{dtypes.MAX_ELEMENT_COUNT}")
    return None
