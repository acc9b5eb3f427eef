"""Ops that ONNX defines as functions of other ops, imported by expanding that definition:
LinearAttention and CausalConvWithState (whose bodies the schema builds for the node's
attributes and input types) and SwiGLU.

The function body is the op's specification, so expanding it is exact, not an approximation.
Its nodes are renamed into the node's own namespace (two expansions must not share names),
its formal inputs and outputs bound to the node's, attribute references replaced by the
node's attribute values, and the result imported inline like an If branch, op by op (a
body's Scan is unrolled by its own rule).
"""
from __future__ import annotations

import onnx

from ..context import ImportContext, OnnxNode
from ..registry import Unsupported, onnx_op
from .control_flow import import_body


def _function(ctx: ImportContext, node: OnnxNode) -> onnx.FunctionProto:
    """The op's function body for the model's opset (the newest version not above it)."""
    domain = node.domain or ""
    schema = onnx.defs.get_schema(node.op_type, node.opset, domain=domain)
    fixed = [v for v in schema.function_opset_versions if v <= node.opset]
    dependent = [v for v in schema.context_dependent_function_opset_versions
                 if v <= node.opset]
    data = None
    if fixed and (not dependent or max(fixed) >= max(dependent)):
        data = schema.get_function_with_opset_version(max(fixed))
    elif dependent:
        types = []
        for name in node.inputs:
            if name is None:
                types.append(onnx.TypeProto())
                continue
            types.append(onnx.helper.make_tensor_type_proto(ctx.onnx_type(name),
                                                            list(ctx.shape(name))))
        data = schema.get_context_dependent_function_with_opset_version(
            max(dependent), node.proto.SerializeToString(), [t.SerializeToString() for t in types])
    if not data:
        raise Unsupported(f"ONNX gives no function body for {node.op_type} at opset "
                          f"{node.opset}")
    function = onnx.FunctionProto()
    function.ParseFromString(data)
    return function


def _attribute_values(node: OnnxNode, function: onnx.FunctionProto) -> dict:
    values = {a.name: a for a in function.attribute_proto}  # the function's defaults
    values.update({a.name: a for a in node.proto.attribute})
    return values


def _rename_graph(graph: onnx.GraphProto, names: dict[str, str]) -> None:
    """Outer names a subgraph reads, renamed (its own names are left: ONNX scopes them)."""
    for inner in graph.node:
        inner.input[:] = [names.get(n, n) for n in inner.input]
        for attr in inner.attribute:
            for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)):
                _rename_graph(sub, names)


def expand(ctx: ImportContext, node: OnnxNode):
    function = _function(ctx, node)
    prefix = f"{node.name}/"
    names = {formal: actual or "" for formal, actual in
             zip(function.input, [n or "" for n in node.inputs])}
    names.update({formal: actual for formal, actual in
                  zip(function.output, [n or "" for n in node.outputs]) if actual})
    for proto in function.node:
        for out in proto.output:
            if out and out not in names:
                names[out] = prefix + out
    attributes = _attribute_values(node, function)
    nodes = []
    for proto in function.node:
        copy = onnx.NodeProto()
        copy.CopyFrom(proto)
        copy.name = prefix + (proto.name or proto.op_type)
        copy.input[:] = [names.get(n, n) if n else "" for n in proto.input]
        copy.output[:] = [names.get(n, n) if n else "" for n in proto.output]
        kept = []
        for attr in copy.attribute:
            if attr.ref_attr_name:
                if attr.ref_attr_name not in attributes:
                    continue  # an unset optional attribute: the inner op's default applies
                value = onnx.AttributeProto()
                value.CopyFrom(attributes[attr.ref_attr_name])
                value.name = attr.name
                attr = value
            for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH
                        else list(attr.graphs)):
                _rename_graph(sub, names)
            kept.append(attr)
        del copy.attribute[:]
        copy.attribute.extend(kept)
        nodes.append(copy)
    wanted = [n for n in node.outputs if n]
    body = onnx.helper.make_graph(nodes, f"{node.op_type}_function", [],
                                  [onnx.helper.make_empty_tensor_value_info(n) for n in wanted])
    results = iter(import_body(ctx, node, body, "function body"))
    return [next(results) if n else None for n in node.outputs]


for _op, _since in (("LinearAttention", 27), ("CausalConvWithState", 27), ("SwiGLU", 28)):
    onnx_op(_op, since=_since, webnn=())(expand)
