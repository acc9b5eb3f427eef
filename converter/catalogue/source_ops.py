"""The importers' rule tables as data: what `webnn-convert ops --source onnx|tflite` prints.

One entry per source op a rule is registered for (ONNX: by domain and op type, with the
opsets its rules start at; TFLite: by builtin name or `CUSTOM:<code>`), saying what it becomes:
the WebNN op its rule emits, or "composition" of the ops the rule declares (`webnn=` in
`onnx_op` / `tflite_op`); "some of" them when one rule serves several source ops, as its
declared list is then their union. A rule that declares no WebNN op computes its outputs at conversion
time (Shape, Range ...) or expands into other rules; its entry says "see rule" and names it.
"""
from __future__ import annotations

import inspect
from collections import Counter
from typing import Any

__all__ = ["SOURCES", "source_ops", "source_op"]

SOURCES = ("onnx", "tflite")


def _becomes(webnn: list[str], rule, shared: int) -> dict[str, Any]:
    if shared > 1 and len(webnn) > 1:
        # One rule for several source ops declares the union of what they emit: this op
        # emits some of these, which cannot be told without importing it.
        return {"becomes": "some of", "webnnOps": list(webnn), "ruleSharedBy": shared}
    if len(webnn) == 1:
        return {"becomes": webnn[0], "webnnOps": list(webnn)}
    if webnn:
        return {"becomes": "composition", "webnnOps": list(webnn)}
    doc = (inspect.getdoc(rule) or "").split("\n", 1)[0].strip()
    where = f"{rule.__module__}.{rule.__qualname__}"
    return {"becomes": "see rule", "webnnOps": [], "rule": where,
            **({"note": doc} if doc else {})}


def _onnx() -> list[dict[str, Any]]:
    from ..importers import importer_tables
    from ..importers.onnx.registry import rule_versions

    rules = rule_versions()  # imports every rule module, filling importer_tables too
    shared = Counter(versions[-1][1] for versions in rules.values())
    rows = []
    for (domain, op_type), versions in sorted(rules.items()):
        label = op_type if not domain else f"{domain}:{op_type}"
        since = [v for v, _ in versions]
        rows.append({"source": "onnx", "op": label, "domain": domain or "ai.onnx",
                     "supported": True, "opsets": f"{since[0]}+", "ruleSince": since,
                     **_becomes(importer_tables["onnx"].get(label, []), versions[-1][1],
                                 shared[versions[-1][1]])})
    return rows


def _tflite() -> list[dict[str, Any]]:
    from ..importers import importer_tables
    from ..importers.tflite.registry import known_ops, rule_for

    shared = Counter(rule_for(name) for name in known_ops())
    return [{"source": "tflite", "op": name, "supported": True,
             **_becomes(importer_tables["tflite"].get(name, []), rule_for(name),
                        shared[rule_for(name)])}
            for name in known_ops()]


def source_ops(source: str) -> list[dict[str, Any]]:
    """Every source op the `source` importer has a rule for, sorted by name."""
    if source == "onnx":
        return _onnx()
    if source == "tflite":
        return _tflite()
    raise ValueError(f"unknown source format {source!r}; known: {', '.join(SOURCES)}")


def source_op(source: str, op: str) -> dict[str, Any]:
    """The entry of `op` (case-insensitive), or an unsupported entry with the reason."""
    wanted = op.strip().casefold()
    for row in source_ops(source):
        if row["op"].casefold() == wanted:
            return row
    name, reason = (_onnx_refusal if source == "onnx" else _tflite_refusal)(op.strip())
    return {"source": source, "op": name, "supported": False, "reason": reason}


def _onnx_refusal(op: str) -> tuple[str, str]:
    from ..importers.onnx.schema_table import _table  # the ops ONNX defines, per domain

    domain, _, op_type = op.rpartition(":")
    domain = "" if domain in ("", "ai.onnx") else domain
    for name in _table()["ops"].get(domain, {}):
        if name.casefold() == op_type.casefold():
            label = name if not domain else f"{domain}:{name}"
            return label, f"no import rule; ONNX op {label} is not supported"
    return op, f"no import rule; {op} is not an ONNX op the converter knows of"


def _tflite_refusal(op: str) -> tuple[str, str]:
    from ..importers.tflite.model_file import OP_NAMES
    from ..importers.tflite.registry import NOT_IMPORTED

    name = op.upper() if not op.upper().startswith("CUSTOM:") else "CUSTOM:" + op[7:]
    if name in NOT_IMPORTED:
        return name, f"not imported: {NOT_IMPORTED[name]}"
    if name in OP_NAMES.values():
        return name, f"no import rule; TFLite op {name} is not supported"
    return op, f"no import rule; {op} is not a TFLite builtin op the converter knows of"
