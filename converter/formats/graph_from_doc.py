"""GraphDoc -> Graph: the reading rules both forms share.

1. Inputs and constants are declared first (a constant's bytes come from the weights file,
   its @scalar value, or its inline bytes); then nodes in file order, then outputs.
2. A node's positional operands fill the op's operands in the spec's order, then its
   operand-valued options (bias, scale, initialHiddenState ...) in the order the spec's options
   dictionary declares them. An operand-valued option may instead be given by name
   (`bias=b`, `"bias": "b"`), never both ways.
3. concat takes its operands as one list (`concat([a, b], axis=1)`) or spread out.
4. Every other `name=value` is the op's non-operand argument or option under its spec name;
   the strings "Infinity", "-Infinity" and "NaN" stand for those numbers.
5. A node may only read names defined above it: inputs, constants, earlier results.

Problems are collected node by node (a node that reads a broken node's result is skipped, as
its problem is a consequence): one problem raises that problem, located at its line; several
raise GraphInvalidError listing every one.
"""
from __future__ import annotations

import difflib
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import ConverterError, FormatError, GraphInvalidError, WeightsError
from .. import ops as _ops  # noqa: F401  (the op catalogue the IR adds operations through)
from ..ir import ConstantData, Graph, Operand
from ..ir.graph import shape_problem
from ..ops.registry import OpDef, Param, get_op
from .document import NON_FINITE, ConstDecl, GraphDoc, NodeDecl, Ref, file_error, located
from .permuted_doc import add_permuted
from .state_doc import add_state
from .weights import check_key

__all__ = ["graph_from_doc"]


def graph_from_doc(doc: GraphDoc, weights=None, *, verify: bool = True) -> Graph:
    """Build and (unless verify=False) verify the graph a GraphDoc describes.

    Args:
        doc: a parsed `.webnn` or JSON file.
        weights: a WeightsFile for @weights constants (None when the file has none).
        verify: run `graph.verify()` on the result; without it the graph is returned as
            built, for `webnn-convert validate` to list `graph.problems()`.
    """
    graph = _Reader(doc, weights).read()
    return graph.verify() if verify else graph


class _Skip(Exception):
    """A node reads the result of a node that failed; its own problem is that one."""


class _Reader:
    def __init__(self, doc: GraphDoc, weights):
        self.doc, self.weights = doc, weights
        self.graph = Graph(doc.name)
        if doc.quantized:
            self.graph.metadata["quantized"] = True
        self.defined: dict[str, str] = {}  # name -> where it is defined
        self.failed: set[str] = set()
        self.problems: list[ConverterError] = []
        self.producer: dict[str, int] = {}  # result name -> index of the first node making it
        for i, node in enumerate(doc.nodes):
            for name in node.outputs:
                self.producer.setdefault(name, i)

    def read(self) -> Graph:
        for d in self.doc.inputs:
            if self.claim(d.name, d.where):
                self.attempt(d.name, d.where, lambda: self.graph.add_input(d.name, d.data_type,
                                                                          d.shape))
        for c in self.doc.consts:
            if self.claim(c.name, c.where):
                self.attempt(c.name, c.where,
                             lambda: self.graph.add_constant(c.name, self.constant_data(c)))
        for index, node in enumerate(self.doc.nodes):
            try:
                self.add_node(index, node)
            except _Skip:
                self.failed.update(node.outputs)
            except ConverterError as e:
                self.problems.append(located(e, node.where))
                self.failed.update(node.outputs)
        self.add_outputs()
        add_state(self, self.doc.state)
        add_permuted(self, self.doc.permuted, self.doc.path)
        if len(self.problems) == 1:
            raise self.problems[0]
        if self.problems:
            raise GraphInvalidError([p.line() for p in self.problems])
        return self.graph

    # -- declarations -------------------------------------------------------------------------
    def claim(self, name: str, where: str) -> bool:
        if name in self.defined:
            self.problems.append(file_error(
                f"duplicate name '{name}'", where=where,
                fix=f"it is already defined at {self.defined[name]}; every input, constant "
                    f"and result needs its own name"))
            return False
        self.defined[name] = where
        return True

    def attempt(self, name: str, where: str, action) -> None:
        try:
            action()
        except ConverterError as e:
            self.problems.append(located(e, where))
            self.failed.add(name)

    def constant_data(self, c: ConstDecl) -> ConstantData:
        what = f"constant '{c.name}'"
        info = dtypes.info(c.data_type)
        if c.kind == "weights":
            check_key(c.key, what)
        problem = shape_problem(c.shape)
        if problem:  # before any bytes are looked at: the shape decides how many there are
            raise ConverterError(problem, where=what)
        if c.kind == "weights":
            if self.weights is None:
                raise WeightsError(f"{what} references weights key '{c.key}', but no weights "
                                   f"were given", fix="load the graph file with load_graph()")
            array = self.weights.tensor(c.key, c.data_type, c.shape, where=what)
            return ConstantData(c.data_type, c.shape, array=array, origin="weights")
        if c.kind == "scalar":
            return ConstantData(c.data_type, c.shape, fill=_fill_value(c, info), origin="scalar")
        if c.kind == "bytes":
            need = dtypes.byte_length(c.data_type, c.shape)
            if len(c.data) != need:
                raise FormatError(f"{len(c.data)} inline bytes, but {c.data_type}"
                                  f"{list(c.shape)} takes {need}", where=what)
            if info.bits == 4:
                array = np.frombuffer(c.data, dtype=np.uint8)
            else:
                array = np.frombuffer(c.data, dtype=info.numpy).reshape(c.shape)
            return ConstantData(c.data_type, c.shape, array=array, origin="bytes")
        raise FormatError(f"unknown constant kind '{c.kind}'", where=what)

    # -- nodes --------------------------------------------------------------------------------
    def add_node(self, index: int, node: NodeDecl) -> None:
        opdef = get_op(node.op)
        operands = self.node_operands(index, node, opdef)
        attrs = {}
        params = opdef.params()
        for key, value in node.options.items():
            if key in opdef.operand_options:
                continue
            if key in opdef.operands and not opdef.variadic:
                raise file_error(f"'{key}' is a positional operand of {node.op}",
                                 where=node.option_location(key),
                                 fix=f"write the operands in order: {', '.join(opdef.operands)}")
            attrs[key] = _attr_value(params.get(key), value)
        for i, name in enumerate(node.outputs):
            if name in self.defined:
                raise file_error(f"duplicate name '{name}'", where=node.output_location(i),
                                 fix=f"it is already defined at {self.defined[name]}")
        self.graph.add_operation(node.op, operands, attrs, name=node.id,
                                 output_names=list(node.outputs))
        for i, name in enumerate(node.outputs):
            self.defined[name] = node.output_location(i)

    def node_operands(self, index: int, node: NodeDecl, opdef: OpDef) -> list[Operand | None]:
        positional = list(node.inputs)
        where = [node.input_location(i) for i in range(len(positional))]
        if opdef.variadic:
            if len(positional) == 1 and isinstance(positional[0], list):
                where = where * len(positional[0])
                positional = positional[0]
            elif any(isinstance(v, list) for v in positional):
                raise file_error(f"{node.op} takes its operands as one list or spread out, "
                                 f"not both", where=node.where,
                                 fix=f"write {node.op}([a, b], ...)")
            return self.resolve(positional, where, index)
        for v, w in zip(positional, where):
            if isinstance(v, list):
                raise file_error(f"{node.op} takes its operands one by one, not as a list",
                                 where=w)
        slots = opdef.slots
        if len(positional) > len(slots):
            raise file_error(f"{node.op} takes at most {len(slots)} operands "
                             f"({', '.join(slots)}), got {len(positional)}", where=node.where,
                             fix="write non-operand arguments as name=value")
        values: list[Any] = positional + [None] * (len(slots) - len(positional))
        where += [node.where] * (len(slots) - len(where))
        for name in opdef.operand_options:
            if name not in node.options:
                continue
            slot = slots.index(name)
            ref = self.doc.operand_name(node.options[name])
            at = node.option_location(name)
            if ref is None:
                if node.options[name] is None:
                    continue
                raise file_error(f"option '{name}' of {node.op} is an operand; give its name",
                                 where=at)
            if values[slot] is not None:
                raise file_error(f"'{name}' is given both as a trailing operand and by name",
                                 where=at, fix="give it one way")
            values[slot], where[slot] = ref, at
        return self.resolve(values, where, index)

    def resolve(self, values: list[Any], where: list[str], index: int) -> list[Operand | None]:
        """The operands the values name. A name that reads a failed node's result skips this
        node, but only after every other name was checked: an undefined name is its own
        problem."""
        operands: list[Operand | None] = []
        skip = False
        for value, at in zip(values, where):
            try:
                operands.append(None if value is None else self.operand(value, at, index))
            except _Skip:
                skip = True
        if skip:
            raise _Skip()
        return operands

    def operand(self, value: Any, where: str, index: int) -> Operand:
        name = self.doc.operand_name(value)
        if name in self.failed:
            raise _Skip()
        if name in self.defined and self.graph.has_operand(name):
            return self.graph.operand(name)
        later = self.producer.get(name)
        if later is not None:
            cycle = self.cycle(index, later)
            if cycle:
                if len(cycle) > 8:  # keep the message one readable line
                    cycle = [*cycle[:4], f"... ({len(cycle) - 7} more)", *cycle[-3:]]
                raise file_error(f"cycle: {' -> '.join(cycle)}", where=where,
                                 fix="a graph has no cycles; a node reads only earlier names")
            raise file_error(f"'{name}' is used before it is defined", where=where,
                             fix=f"it is defined at {self.doc.nodes[later].where}; "
                                 f"put nodes in dependency order")
        close = difflib.get_close_matches(name, list(self.defined), n=1)
        raise file_error(f"no input, constant or result is named '{name}'", where=where,
                         fix=f"did you mean '{close[0]}'?" if close else None)

    def cycle(self, start: int, later: int) -> list[str] | None:
        """Result names along a dependency path from node `start` through node `later` back
        to `start`, or None when `later` does not depend on `start` (iterative: a chain of
        thousands of nodes must not exhaust Python's recursion limit)."""
        name = lambda i: self.doc.nodes[i].outputs[0]  # noqa: E731
        if later == start:
            return [name(start), name(start)]
        parent: dict[int, int] = {later: -1}
        stack = [later]
        while stack:
            i = stack.pop()
            for ref in _references(self.doc, self.doc.nodes[i]):
                j = self.producer.get(ref)
                if j == start:
                    path = [i]
                    while parent[path[-1]] != -1:
                        path.append(parent[path[-1]])
                    # path runs from the node reading `start` back to `later`.
                    return [name(start), *(name(k) for k in reversed(path)), name(start)]
                if j is not None and j > start and j not in parent:
                    parent[j] = i
                    stack.append(j)
        return None

    # -- outputs ------------------------------------------------------------------------------
    def add_outputs(self) -> None:
        keys: dict[str, str] = {}
        for out in self.doc.outputs:
            if out.key in keys:
                self.problems.append(file_error(
                    f"duplicate output name '{out.key}'", where=out.where,
                    fix=f"it is already an output at {keys[out.key]}"))
                continue
            keys[out.key] = out.where
            if out.operand in self.failed:
                continue
            if not self.graph.has_operand(out.operand) or out.operand not in self.defined:
                self.problems.append(file_error(
                    f"output '{out.key}' names '{out.operand}', which is not defined",
                    where=out.where))
                continue
            self.graph.set_output(out.key, self.graph.operand(out.operand))


def _references(doc: GraphDoc, node: NodeDecl) -> list[str]:
    refs: list[str] = []
    for v in node.inputs:
        for item in v if isinstance(v, list) else [v]:
            name = doc.operand_name(item)
            if name is not None:
                refs.append(name)
    for v in node.options.values():
        if isinstance(v, (Ref, str)):
            refs.append(doc.operand_name(v))
    return refs


def _attr_value(param: Param | None, value: Any) -> Any:
    """A written value as the IR stores it: words become strings, non-finite spellings
    become numbers where the argument is a number."""
    if isinstance(value, Ref):
        return value.ident
    if isinstance(value, list):
        return [_attr_value(param, v) for v in value]
    numeric = param is not None and param.kind in ("float", "floats", "number")
    if numeric and isinstance(value, str) and value in NON_FINITE:
        return NON_FINITE[value]
    return value


def _fill_value(c: ConstDecl, info: dtypes.DataTypeInfo) -> int | float:
    """The @scalar value, checked to be representable in the constant's data type."""
    what = f"constant '{c.name}'"
    value = c.value
    if isinstance(value, str) and value in NON_FINITE:
        value = NON_FINITE[value]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FormatError(f"@scalar value {value!r} is not a number", where=what)
    if info.is_float:
        limit = float(np.finfo(info.numpy).max)
        if value == value and abs(value) != float("inf") and abs(value) > limit:
            raise FormatError(f"@scalar value {value} does not fit in {c.data_type} "
                              f"(largest {limit:g})", where=what)
        return value
    if isinstance(value, float):
        if not value.is_integer():
            raise FormatError(f"@scalar value {value} is not an integer, as {c.data_type} "
                              f"needs", where=what)
        value = int(value)
    low, high = _int_range(c.data_type, info)
    if not low <= value <= high:
        raise FormatError(f"@scalar value {value} is outside {c.data_type}'s range "
                          f"[{low}, {high}]", where=what)
    return value


def _int_range(data_type: str, info: dtypes.DataTypeInfo) -> tuple[int, int]:
    if info.bits == 4:
        return (-8, 7) if info.is_signed else (0, 15)
    limits = np.iinfo(info.numpy)
    return int(limits.min), int(limits.max)
