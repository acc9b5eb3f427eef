"""Regenerate converter/importers/onnx/onnx_schemas.json from the installed onnx package.

For every version of every op the onnx package defines (default domain and ai.onnx.ml), the
table keeps what the importer's attribute check reads: each attribute's name and AttributeProto
type code, and which attributes are required; and, per domain, the newest opset it covers.
Building ONNX's own schema registry costs about 9 ms and 7 MB the first time a conversion asks
it (converter/importers/onnx/schema_table.py says why the table is enough).

Usage: python tools/gen_onnx_schemas.py   (rerun after raising the onnx package's version)
"""
from __future__ import annotations

import json
from pathlib import Path

import onnx
import onnx.defs

OUT = Path(__file__).resolve().parent.parent / "converter" / "importers" / "onnx" \
    / "onnx_schemas.json"
DOMAINS = ("", "ai.onnx.ml")  # the domains the importer checks


def table() -> dict:
    ops: dict[str, dict[str, list]] = {domain: {} for domain in DOMAINS}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain not in DOMAINS:
            continue
        attributes = {name: int(a.type) for name, a in sorted(schema.attributes.items())}
        required = sorted(name for name, a in schema.attributes.items() if a.required)
        ops[schema.domain].setdefault(schema.name, []).append(
            [schema.since_version, attributes, required])
    for versions in (v for domain in ops.values() for v in domain.values()):
        versions.sort(key=lambda entry: entry[0])
    newest = {"": onnx.defs.onnx_opset_version(), "ai.onnx.ml": onnx.defs.onnx_ml_opset_version()}
    return {"onnx": onnx.__version__, "newest": newest, "ops": ops}


if __name__ == "__main__":
    OUT.write_text(json.dumps(table(), sort_keys=True, separators=(",", ":")) + "\n",
                   encoding="utf-8")
    print(f"wrote {OUT}")
