"""What the IR asks of the op catalogue, which lives in the layer above it.

The IR core knows operands, operations and graphs, not what any op computes. Adding an
operation needs the op's slot layout and shape rule, and `Graph.verify()` re-runs the shape
rules; both live in `converter.ops` (one module per op family). So that `ir` never imports
`ops` (the layers are ir -> ops -> everything else, tests/test_import_layers.py), `converter.ops`
hands its two lookups to the IR when it is imported:

    semantics.provide(get_op, infer)      # in converter/ops/__init__.py

Everything that builds graphs (the importers, the passes, the builder, `converter.Graph`)
imports `converter.ops` first; code that imports only `converter.ir` and adds operations gets
one clear error instead of a silent guess.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..errors import ConverterError

if TYPE_CHECKING:
    from ..ops.registry import OpDef
    from .operand import TensorDesc

__all__ = ["provide", "get_op", "infer"]

_provided: dict[str, Callable[..., Any]] = {}


def provide(get_op: Callable[[str], "OpDef"],
            infer: Callable[..., list["TensorDesc"]]) -> None:
    """Called once by converter.ops: the op table lookup and the shape-rule entry point."""
    _provided["get_op"] = get_op
    _provided["infer"] = infer


def _lookup(name: str) -> Callable[..., Any]:
    try:
        return _provided[name]
    except KeyError:
        raise ConverterError("the op catalogue is not loaded, so operations cannot be added or "
                             "checked", where="converter.ir",
                             fix="import converter.ops (or use converter.Graph / "
                                 "converter.GraphBuilder, which load it)") from None


def get_op(op_type: str) -> "OpDef":
    return _lookup("get_op")(op_type)


def infer(op_type: str, inputs: list, attrs: dict, *, node: str | None = None
          ) -> list["TensorDesc"]:
    return _lookup("infer")(op_type, inputs, attrs, node=node)
