"""ONNX import rules, keyed by (domain, op type) and opset version.

    @onnx_op("Relu", webnn=("relu",))
    def relu(ctx, node):
        return [ctx.emit("relu", [ctx.operand(node.input(0))])]

A rule receives the ImportContext and an OnnxNode and returns the node's outputs in order: WebNN
operands, or numpy arrays for values it can compute at conversion time (Shape, Size ...). It
raises `Unsupported(reason)` for what WebNN cannot express. `since` picks the rule for a model's
opset (the newest rule whose `since` is at most the opset), as ONNX versions ops. `webnn` lists
the WebNN ops the rule emits, for `webnn-convert ops`.
"""
from __future__ import annotations

from typing import Callable, Sequence

from .. import importer_tables

__all__ = ["onnx_op", "rule_for", "Unsupported", "Invalid", "known_op_types", "rule_versions",
           "DEFAULT_DOMAINS"]

# The default ONNX domain has two spellings.
DEFAULT_DOMAINS = ("", "ai.onnx")

_RULES: dict[tuple[str, str], list[tuple[int, Callable]]] = {}


class Unsupported(Exception):
    """Raised by a rule: this node cannot become WebNN, and why (one sentence).

    `needs` names the graph inputs whose values, given at conversion time, would let the node
    import (an input WebNN takes as a plain list, such as a Reshape's shape).
    """

    def __init__(self, reason: str, needs: tuple[str, ...] = ()):
        super().__init__(reason)
        self.needs = tuple(needs)


class Invalid(Exception):
    """Raised by a rule or check: the node breaks a rule of ONNX itself (a constant index out
    of range, a required input left empty); the import fails with the rule, as a FormatError."""


def _domain(domain: str) -> str:
    return "" if domain in DEFAULT_DOMAINS else domain


def onnx_op(*op_types: str, since: int = 1, domain: str = "", webnn: Sequence[str] = ()):
    def register(rule: Callable) -> Callable:
        for op_type in op_types:
            versions = _RULES.setdefault((_domain(domain), op_type), [])
            if any(v == since for v, _ in versions):
                raise ValueError(f"ONNX rule {domain}:{op_type} since {since} registered twice")
            versions.append((since, rule))
            versions.sort(key=lambda vr: vr[0])
            label = op_type if not domain else f"{domain}:{op_type}"
            targets = importer_tables.setdefault("onnx", {}).setdefault(label, [])
            targets.extend(w for w in webnn if w not in targets)
        return rule

    return register


def rule_for(domain: str, op_type: str, opset: int) -> Callable | None:
    from .rules import load_for  # the op's rule module, imported on first use (rules/__init__)

    load_for(_domain(domain), op_type)
    versions = _RULES.get((_domain(domain), op_type))
    if not versions:
        return None
    chosen = None
    for since, rule in versions:
        if since <= opset:
            chosen = rule
    return chosen


def known_op_types() -> set[tuple[str, str]]:
    from .rules import load_all

    load_all()
    return set(_RULES)


def rule_versions() -> dict[tuple[str, str], list[tuple[int, Callable]]]:
    """Every rule: (domain, op type) -> [(since, rule)] oldest first (`webnn-convert ops
    --source onnx`); a copy, every rule module imported."""
    known_op_types()
    return {key: list(versions) for key, versions in _RULES.items()}
