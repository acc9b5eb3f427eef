"""The op catalogue: every MLGraphBuilder op, one module per op family.

Importing `converter.ops` registers all families (`all_ops()` lists them) and hands the IR
its op lookups (ir/semantics.py). `GraphBuilder` (builder.py, imported on its own) is built
from this catalogue, one method per op.
"""
from ..ir import semantics
from .registry import REQUIRED, OpDef, Param, ShapeContext, all_ops, get_op, infer, op

semantics.provide(get_op, infer)  # the IR adds and checks operations through these

__all__ = ["OpDef", "Param", "ShapeContext", "REQUIRED", "all_ops", "get_op", "infer", "op"]
