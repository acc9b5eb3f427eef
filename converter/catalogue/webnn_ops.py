"""The op catalogue as data: what `webnn-convert ops` prints and tools read.

Each op's operands carry their allowed data types and rank range from the spec's tables, with
"same as X" resolved to X's values (and kept as `sameAs`), plus which source ops import to it
(filled by the importers' tables as they register).
"""
from __future__ import annotations

from typing import Any

from ..importers import importer_tables
from ..ops.registry import OpDef, all_ops

__all__ = ["catalogue", "importer_tables"]


def _resolve(limits: dict, name: str, key: str, seen=()) -> Any:
    value = limits[name][key]
    if isinstance(value, dict) and "sameAs" in value:
        ref = value["sameAs"]
        if ref in seen or ref not in limits:
            raise ValueError(f"unresolvable sameAs {ref!r}")
        return _resolve(limits, ref, key, (*seen, name))
    return value


def _operand_entry(opdef: OpDef, name: str) -> dict:
    limits = opdef.limits
    entry = {
        "dataTypes": list(_resolve(limits, name, "dataTypes")),
        "rankRange": dict(_resolve(limits, name, "rankRange")),
        "requiredDataTypes": list(limits[name]["requiredDataTypes"]),
        "requiredRankRange": dict(limits[name]["requiredRankRange"]),
    }
    for key in ("dataTypes", "rankRange"):
        if "sameAs" in limits[name][key]:
            entry.setdefault("sameAs", {})[key] = limits[name][key]["sameAs"]
    if "condition" in limits[name]:
        entry["condition"] = limits[name]["condition"]
    return entry


def _param(p) -> dict:
    out: dict[str, Any] = {"name": p.name, "kind": p.kind}
    if p.default is not None and repr(p.default) != "REQUIRED":
        out["default"] = p.default
    if repr(p.default) == "REQUIRED":
        out["required"] = True
    if p.choices:
        out["choices"] = list(p.choices)
    if p.length is not None:
        out["length"] = p.length
    return out


def _load_importers() -> None:
    from ..importers import onnx, tflite  # noqa: F401  (registering rules fills importer_tables)

    onnx.rules.load_all()  # the ONNX rule modules otherwise load as models need them


def catalogue() -> list[dict]:
    """One entry per MLGraphBuilder op, sorted by name, with the source ops importing to it."""
    _load_importers()
    rows = []
    for name, opdef in all_ops().items():
        imported_from = {fmt: sorted(src for src, targets in table.items() if name in targets)
                         for fmt, table in importer_tables.items()}
        rows.append({
            "name": name,
            "family": opdef.family,
            "operands": list(opdef.operands),
            "operandOptions": list(opdef.operand_options),
            "arguments": [_param(p) for p in opdef.arguments],
            "options": [_param(p) for p in opdef.options],
            "limits": {n: _operand_entry(opdef, n) for n in opdef.limits},
            "importedFrom": imported_from,
        })
    return rows
