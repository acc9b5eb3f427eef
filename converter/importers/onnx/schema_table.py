"""The attributes each ONNX op version declares, from a table shipped with the converter.

ONNX's own schema registry (onnx.defs) costs about 9 ms and 7 MB to build the first time it is
asked: a sixth of a small model's conversion, spent on a check that reads only each attribute's
name and type and which are required. tools/gen_onnx_schemas.py writes those, for every version
of every op of the default domain and ai.onnx.ml, to onnx_schemas.json. ONNX never changes a
released op version (a change is a new version at a new opset), so the table answers for every
opset up to the newest it was made with, whatever onnx package is installed; a model at a newer
opset (made with a newer onnx package) is answered by onnx.defs itself.
tests/importers/onnx/test_schema_table.py compares the two for every op at every opset.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

__all__ = ["declared", "since_version"]

_TABLE = Path(__file__).with_name("onnx_schemas.json")


@functools.lru_cache(maxsize=1)
def _table() -> dict:
    return json.loads(_TABLE.read_text(encoding="utf-8"))


def _in_force(op_type: str, opset: int, domain: str) -> list | None:
    """[since_version, {name: AttributeProto type}, [required names]] of the version of
    `op_type` in force at `opset`; None when the op is not defined there. Past the table's
    newest opset of the domain, from onnx.defs."""
    table = _table()
    if opset > table["newest"].get(domain, -1):
        return _from_onnx(op_type, opset, domain)
    found = None
    for entry in table["ops"].get(domain, {}).get(op_type, ()):
        if entry[0] > opset:
            break
        found = entry
    return found


def _from_onnx(op_type: str, opset: int, domain: str) -> list | None:
    import onnx.defs

    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None
    return [schema.since_version, {name: int(a.type) for name, a in schema.attributes.items()},
            sorted(name for name, a in schema.attributes.items() if a.required)]


@functools.lru_cache(maxsize=None)
def declared(op_type: str, opset: int, domain: str
             ) -> tuple[dict[str, int], frozenset[str]] | None:
    """(attribute name -> AttributeProto type code, the required names) of the version of
    `op_type` in force at `opset` in `domain` ("" or "ai.onnx.ml"); None when the op is not
    defined there."""
    entry = _in_force(op_type, opset, domain)
    return None if entry is None else (dict(entry[1]), frozenset(entry[2]))


def since_version(op_type: str, opset: int, domain: str = "") -> int | None:
    """The opset that introduced the version of `op_type` in force at `opset` (None: the op
    is not defined there)."""
    entry = _in_force(op_type, opset, domain)
    return None if entry is None else entry[0]
