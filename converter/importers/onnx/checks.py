"""Rules of ONNX a model must follow before it is imported, each reported as the rule it breaks.

The importer walks nodes in file order and reads each value from the node that made it, so a
model that breaks one of these would otherwise import as something else (the later of two
producers wins) or fail with a misleading message ("not produced by any node" for a cycle).
"""
from __future__ import annotations

import onnx
import onnx.defs

from ...errors import FormatError
from .registry import DEFAULT_DOMAINS, Invalid
from .schema_table import declared, since_version

__all__ = ["check_model", "check_known_indices", "check_known_top_k", "check_attribute_types",
           "MIN_OPSET", "max_opset"]

_SCHEMA_DOMAINS = DEFAULT_DOMAINS + ("ai.onnx.ml",)  # the domains the onnx package defines

MIN_OPSET = 7  # the oldest default-domain opset the importer's rules are written for


def max_opset() -> int:
    """The newest default-domain opset the installed onnx package knows."""
    return onnx.defs.onnx_opset_version()


def check_model(model: onnx.ModelProto, where: str) -> None:
    """Raise FormatError for the first broken rule: text that is not UTF-8, opset range, one
    producer per value, topological order (naming a cycle when there is one), graph outputs
    that exist."""
    bad = _not_text(model, "model")
    if bad is not None:
        raise FormatError(f"{bad} is not valid UTF-8 text", where=where,
                          fix="the model file is damaged; re-export it")
    _check_opsets(model, where)
    _check_output_counts(model, where)
    graph = model.graph
    available = {t.name for t in graph.initializer} | {vi.name for vi in graph.input} \
        | {s.values.name for s in graph.sparse_initializer}
    producer: dict[str, int] = {}
    for index, node in enumerate(graph.node):
        for out in node.output:
            if not out:
                continue
            if out in producer or out in available:
                first = (f"node {_label(graph.node[producer[out]], producer[out])}"
                         if out in producer else "a graph input or initializer")
                raise FormatError(f"value '{out}' is written by {first} and again by node "
                                  f"{_label(node, index)}; an ONNX value has exactly one "
                                  f"producer", where=where)
            producer[out] = index
    for index, node in enumerate(graph.node):
        for name in node.input:
            at = producer.get(name)
            if name and at is not None and at >= index:
                raise FormatError(_order_problem(graph, producer, index, name), where=where,
                                  fix="ONNX nodes must be topologically sorted and acyclic")
    for vi in graph.output:
        if not vi.name:
            raise FormatError("a graph output has an empty name", where=where)
        if vi.name not in producer and vi.name not in available:
            raise FormatError(f"graph output '{vi.name}' is not produced by any node, "
                              f"initializer or input", where=where)


def _check_output_counts(model: onnx.ModelProto, where: str) -> None:
    """Split's num_outputs (opset 18) equals its node's output count, in every graph. ONNX's
    own shape inference sizes a vector by num_outputs before it compares the two, so a 300-byte
    file with num_outputs = 2**31 costs it seconds and gigabytes (then std::bad_alloc): the
    attribute is checked here, before that inference starts."""
    for index, node in _all_nodes(model.graph):
        if node.op_type != "Split" or node.domain not in DEFAULT_DOMAINS:
            continue
        for attribute in node.attribute:
            if attribute.name == "num_outputs" and attribute.type == attribute.INT \
                    and attribute.i != len(node.output):
                raise FormatError(f"{_label(node, index)}: num_outputs is "
                                  f"{attribute.i} but the node has {len(node.output)} outputs",
                                  where=where,
                                  fix="the model breaks an ONNX rule; fix or re-export it")


def _not_text(message, path: str) -> str | None:
    """The path of the first string field (names, op types, domains, attribute strings of
    type STRING are bytes fields) whose value is not valid UTF-8, or None. Protobuf hands such
    a value over as bytes, which would reach the importer's string handling."""
    for field, value in message.ListFields():
        if field.type not in (field.TYPE_STRING, field.TYPE_MESSAGE):
            continue
        repeated = getattr(field, "is_repeated", None)
        if repeated is None:  # protobuf before 5.x
            repeated = field.label == field.LABEL_REPEATED
        for i, item in enumerate(value if repeated else [value]):
            where = f"{path}.{field.name}" + (f"[{i}]" if repeated else "")
            if field.type == field.TYPE_STRING:
                if not isinstance(item, str):
                    return where
            else:
                found = _not_text(item, where)
                if found is not None:
                    return found
    return None


def _check_opsets(model: onnx.ModelProto, where: str) -> None:
    """The default domain's opset lies in MIN_OPSET..max_opset(). An older one is read only
    when every op the model uses means at it what it means at MIN_OPSET (ops never revised,
    such as Not-1), so the model reads as an opset-7 model; otherwise it is refused."""
    default = [o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS]
    newest = max_opset()
    fix = "convert the model to a supported opset with onnx.version_converter"
    for version in default:
        if version > newest or version < 1:
            raise FormatError(f"the model imports default-domain opset {version}; this "
                              f"converter reads opsets {MIN_OPSET} to {newest}", where=where,
                              fix=fix)
        if version < MIN_OPSET:
            changed = sorted({n.op_type for _, n in _all_nodes(model.graph)
                              if n.domain in DEFAULT_DOMAINS
                              and since_version(n.op_type, version)
                              != since_version(n.op_type, MIN_OPSET)})
            if changed:
                raise FormatError(f"the model imports default-domain opset {version}; this "
                                  f"converter reads opsets {MIN_OPSET} to {newest} (and older "
                                  f"ones only for ops unchanged since: not "
                                  f"{', '.join(changed[:5])})", where=where, fix=fix)
    uses_default = any(n.domain in DEFAULT_DOMAINS for n in model.graph.node)
    if uses_default and not default:
        raise FormatError("the model uses default-domain ops but imports no default-domain "
                          "opset", where=where, fix="add an opset_import entry for domain ''")


def check_attribute_types(node) -> None:
    """The node's attributes are those its op's ONNX schema declares: each of the declared
    type, none unknown to the op at the model's opset, none of the required ones missing;
    Invalid otherwise. ONNX Runtime refuses such a model ("Mismatched attribute type",
    "Unrecognized attribute", "Required attribute ... is missing"): a FLOAT `p` where LpPool
    declares INT is another model, not another spelling of the same one. Ops of domains the
    onnx package does not define (com.microsoft) are not checked here; their rules check the
    kind of each value they read."""
    if node.domain not in _SCHEMA_DOMAINS:
        return
    domain = "" if node.domain in DEFAULT_DOMAINS else node.domain
    attributes = declared(node.op_type, node.opset, domain)
    if attributes is None:
        return  # not defined at this opset: the rule lookup says so
    types, required = attributes
    what = f"ONNX's {node.op_type} (opset {node.opset})"
    for attribute in node.proto.attribute:
        want = types.get(attribute.name)
        if want is None:
            raise Invalid(f"attribute '{attribute.name}' is not one {what} has")
        if attribute.type != want:
            raise Invalid(f"attribute '{attribute.name}' has type "
                          f"{_attribute_type_name(attribute.type)}, but {what} declares "
                          f"{_attribute_type_name(want)}")
    missing = sorted(required - {a.name for a in node.proto.attribute})
    if missing:
        raise Invalid(f"{what} requires attribute '{missing[0]}', which the node does not set")


def _attribute_type_name(code: int) -> str:
    try:
        return onnx.AttributeProto.AttributeType.Name(code)
    except ValueError:
        return f"{code} (no such type)"


def _all_nodes(graph: onnx.GraphProto):
    """(index in its own graph, node) for every node of `graph` and of its subgraphs."""
    todo = [graph]
    while todo:
        g = todo.pop()
        for index, node in enumerate(g.node):
            yield index, node
            for a in node.attribute:
                if a.HasField("g"):
                    todo.append(a.g)
                todo.extend(a.graphs)


def _order_problem(graph, producer: dict[str, int], index: int, name: str) -> str:
    """Why node `index` reads `name` before it exists: a cycle (named) or mere disorder."""
    node = graph.node[index]
    if producer[name] == index:
        return (f"node {_label(node, index)} reads its own output '{name}': the graph has a "
                f"cycle")
    cycle = _cycle_through(graph, producer, index)
    if cycle:
        path = " -> ".join(_label(graph.node[i], i) for i in cycle + [cycle[0]])
        return f"the graph has a cycle: {path}"
    return (f"node {_label(node, index)} reads '{name}' before node "
            f"{_label(graph.node[producer[name]], producer[name])} produces it")


def _cycle_through(graph, producer: dict[str, int], start: int) -> list[int]:
    """Node indices of a cycle through `start` (following inputs back to producers), or []."""
    path, on_path, done = [start], {start}, set()
    stack = [iter(_feeders(graph, producer, start))]
    while stack:
        nxt = next(stack[-1], None)
        if nxt is None:
            stack.pop()
            finished = path.pop()
            on_path.discard(finished)
            done.add(finished)
            continue
        if nxt == start:
            return list(reversed(path))
        if nxt in done or nxt in on_path:
            continue
        path.append(nxt)
        on_path.add(nxt)
        stack.append(iter(_feeders(graph, producer, nxt)))
    return []


def _feeders(graph, producer: dict[str, int], index: int) -> list[int]:
    return [producer[n] for n in graph.node[index].input if n in producer]


def _label(node: onnx.NodeProto, index: int) -> str:
    return f"{node.op_type} '{node.name or f'{node.op_type}_{index}'}'"


# Ops whose indices input (by position) must lie within an axis of their data input (input 0).
_INDEXED = {"Gather": 1, "GatherElements": 1, "ScatterElements": 1}


def check_known_indices(ctx, node) -> None:
    """A constant index outside its axis is an invalid model (ONNX leaves the result undefined),
    reported before the node is folded or imported; run-time indices cannot be checked here."""
    position = _INDEXED.get(node.op_type)
    if position is None or node.domain not in DEFAULT_DOMAINS:
        return
    data, indices_name = node.input(0), node.input(position)
    if data is None or indices_name is None or data not in ctx.values \
            or indices_name not in ctx.values:
        return
    indices = ctx.known(indices_name)
    if indices is None or indices.size == 0 or indices.dtype.kind not in "iu":
        return
    shape = ctx.shape(data)
    axis = int(node.attr("axis", 0))
    if not -len(shape) <= axis < len(shape):
        raise Invalid(f"axis {axis} is out of range for rank {len(shape)}")
    dim = shape[axis]
    low, high = int(indices.min()), int(indices.max())
    if low < -dim or high >= dim:
        bad = low if low < -dim else high
        raise Invalid(f"index {bad} is out of range for axis {axis} of size {dim} (indices "
                      f"must lie in [{-dim}, {dim - 1}])")


def check_known_top_k(ctx, node) -> None:
    """TopK's k, when known, lies in 0..the length of its axis (ONNX's shape inference refuses
    more), checked before the node is folded: ONNX's reference implementation sizes arrays by
    k itself, so a file with k = 2**31 would ask it for 16 GiB."""
    if node.op_type != "TopK" or node.domain not in DEFAULT_DOMAINS:
        return
    if node.opset < 10:
        k = node.attr("k")  # required: its presence and type are checked before
    else:
        known = ctx.known(node.input(1))
        if known is None or known.size != 1 or known.dtype.kind not in "iu":
            return  # the rule says what is wrong with it
        k = int(known.item())
    shape = ctx.shape(node.input(0))
    axis = int(node.attr("axis", -1))
    if not -len(shape) <= axis < len(shape):
        return  # the rule says so
    if not 0 <= k <= shape[axis]:
        raise Invalid(f"k {k} is outside 0..{shape[axis]}, the length of axis {axis}")
