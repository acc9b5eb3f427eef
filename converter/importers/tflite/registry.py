"""TFLite import rules, keyed by builtin op name (`CONV_2D`) or `CUSTOM:<code>`.

    @tflite_op("RELU", webnn=("relu",))
    def relu(ctx, op):
        return [ctx.emit("relu", [ctx.real(0)])]

A rule receives the ImportContext and the Operator, and returns the op's outputs in order:
WebNN operands (in the real-valued domain for quantized tensors: the context quantizes them to
the output tensor's type), numpy arrays for values known at conversion time, or None for an
output nobody can read. It raises `Unsupported(reason)` for what WebNN cannot express.
`webnn` lists the WebNN ops the rule emits, for `webnn-convert ops`.
"""
from __future__ import annotations

from typing import Callable, Sequence

from .. import importer_tables

__all__ = ["tflite_op", "rule_for", "Unsupported", "known_ops", "NOT_IMPORTED"]

_RULES: dict[str, Callable] = {}


class Unsupported(Exception):
    """Raised by a rule: this op cannot become WebNN, and why (one sentence)."""


def tflite_op(*names: str, webnn: Sequence[str] = ()):
    def register(rule: Callable) -> Callable:
        for name in names:
            if name in _RULES:
                raise ValueError(f"TFLite rule {name} registered twice")
            _RULES[name] = rule
            targets = importer_tables.setdefault("tflite", {}).setdefault(name, [])
            targets.extend(w for w in webnn if w not in targets)
        return rule

    return register


def rule_for(name: str) -> Callable | None:
    return _RULES.get(name)


def known_ops() -> list[str]:
    """Every TFLite op name a rule is registered for, sorted."""
    return sorted(_RULES)


_CONTROL_FLOW = "control flow (it calls other subgraphs) has no WebNN form"
# Ops that are reported with a reason of their own instead of "no WebNN equivalent".
NOT_IMPORTED: dict[str, str] = {
    "WHILE": _CONTROL_FLOW, "IF": _CONTROL_FLOW,
    "CALL": _CONTROL_FLOW, "STABLEHLO_WHILE": _CONTROL_FLOW, "STABLEHLO_CASE": _CONTROL_FLOW,
    "HASHTABLE": "hash tables have no WebNN form",
    "HASHTABLE_FIND": "hash tables have no WebNN form",
    "HASHTABLE_IMPORT": "hash tables have no WebNN form",
    "HASHTABLE_SIZE": "hash tables have no WebNN form",
    "WHERE": "its output shape depends on the input's values; WebNN shapes are static",
    "UNIQUE": "its output shape depends on the input's values; WebNN shapes are static",
    "NON_MAX_SUPPRESSION_V4": "its output shape depends on the input's values",
    "NON_MAX_SUPPRESSION_V5": "its output shape depends on the input's values",
    "DELEGATE": "a delegate's node runs code outside the model",
}
