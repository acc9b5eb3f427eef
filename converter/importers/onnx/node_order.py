"""The order the importer reads a graph's nodes in.

The file's order, except where a subgraph (If's branches, Loop's and Scan's bodies) reads a
value of the enclosing graph that a later node makes. check_model holds direct inputs to
ONNX's rule that nodes are topologically sorted, but values a subgraph captures are easy to
miss: ONNX Runtime's quantizer reorders nodes and can leave an If ahead of the node making a
value its branch reads. ONNX Runtime sorts every graph itself and runs such a model, so the
nodes are sorted here too, stably: the file's order wherever it already works, a node held back
only until what it (or any subgraph inside it) reads exists. A capture that closes a cycle is
refused, naming the nodes on it.
"""
from __future__ import annotations

import heapq

import onnx

from ...errors import FormatError

__all__ = ["node_order", "captured"]

_FIX = "ONNX nodes must be topologically sorted and acyclic"


def _subgraphs(node: onnx.NodeProto):
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            yield attribute.g
        elif attribute.type == onnx.AttributeProto.GRAPHS:
            yield from attribute.graphs


def captured(graph: onnx.GraphProto) -> set[str]:
    """The names `graph` (nested subgraphs included) reads from the graphs around it: what its
    nodes read that it does not define as an input, initializer or node output."""
    defined = {vi.name for vi in graph.input} | {t.name for t in graph.initializer} \
        | {s.values.name for s in graph.sparse_initializer} \
        | {out for node in graph.node for out in node.output if out}
    read: set[str] = set()
    for node in graph.node:
        read.update(name for name in node.input if name)
        for sub in _subgraphs(node):
            read |= captured(sub)
    read.update(vi.name for vi in graph.output)  # an output may pass an outer value through
    return read - defined


def node_order(graph: onnx.GraphProto, where: str) -> list[int]:
    """Indices of graph.node in the order to import them (see the module docstring)."""
    producer = {out: i for i, node in enumerate(graph.node) for out in node.output if out}
    needs: list[set[int]] = []
    late = False
    for index, node in enumerate(graph.node):
        names = set(name for name in node.input if name)
        for sub in _subgraphs(node):
            names |= captured(sub)
        wanted = {producer[name] for name in names if name in producer}
        late = late or any(w >= index for w in wanted)
        needs.append(wanted)
    if not late:
        return list(range(len(graph.node)))  # the file's order works as it is
    users: dict[int, list[int]] = {}
    waiting = [len(w) for w in needs]
    for index, wanted in enumerate(needs):
        for w in wanted:
            users.setdefault(w, []).append(index)
    ready = [i for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        index = heapq.heappop(ready)  # the earliest node in the file that can go next
        order.append(index)
        for user in users.get(index, ()):
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, user)
    if len(order) < len(graph.node):
        stuck = [i for i, n in enumerate(waiting) if n > 0][:4]
        names = ", ".join(f"{graph.node[i].op_type} '{graph.node[i].name or i}'" for i in stuck)
        raise FormatError(f"the graph has a cycle through a subgraph's captured values "
                          f"(nodes {names} each wait for another)", where=where, fix=_FIX)
    return order
