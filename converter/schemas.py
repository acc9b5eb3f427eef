"""JSON Schemas (draft 2020-12) of the JSON files the converter reads and writes.

Every JSON file is checked against its schema when it is read, so a malformed file fails with
the JSON path of what is wrong instead of a KeyError deep inside a reader.

The schema files live in the repository's `schemas/` folder; an installed wheel carries them
as `converter/schemas/` (see pyproject.toml), which is looked at first.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from .errors import ConverterError, FormatError

__all__ = ["SCHEMA_NAMES", "schema_path", "load_schema", "validate"]

SCHEMA_NAMES = ("webnn-graph-json", "weights-manifest", "target", "zoo-manifest", "zoo-report",
                "verify-report")

_HERE = Path(__file__).resolve().parent
_SEARCH = (_HERE / "schemas", _HERE.parent / "schemas")


def schema_path(schema_name: str) -> Path:
    """The file of a schema: `converter/schemas/NAME.schema.json`, else `<repo>/schemas/...`."""
    if schema_name not in SCHEMA_NAMES:
        raise ConverterError(f"unknown schema '{schema_name}'",
                             fix=f"use one of {', '.join(SCHEMA_NAMES)}")
    for folder in _SEARCH:
        candidate = folder / f"{schema_name}.schema.json"
        if candidate.is_file():
            return candidate
    raise ConverterError(f"schema file {schema_name}.schema.json not found",
                         where=" or ".join(str(f) for f in _SEARCH),
                         fix="reinstall webnn-converter; the schemas ship with it")


@functools.cache
def load_schema(schema_name: str) -> dict[str, Any]:
    from jsonschema import Draft202012Validator  # imported on first use: it is slow to load

    schema = json.loads(schema_path(schema_name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return schema


@functools.cache
def _validator(schema_name: str):
    from jsonschema import Draft202012Validator

    # Local $refs are inlined once: resolving them per instance is a third of the validation
    # time of a graph with thousands of nodes. The schemas have no recursive references.
    schema = load_schema(schema_name)
    return Draft202012Validator(_inline_refs(schema, schema.get("$defs", {})))


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = _inline_refs(defs[ref[len("#/$defs/"):]], defs)
            rest = {k: _inline_refs(v, defs) for k, v in node.items() if k != "$ref"}
            return {**target, **rest}
        return {k: _inline_refs(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


def _document_order(obj: Any) -> dict[tuple, int]:
    """Each JSON path of the document mapped to its position in a pre-order walk."""
    order: dict[tuple, int] = {}
    stack: list[tuple[tuple, Any]] = [((), obj)]
    while stack:
        path, node = stack.pop()
        order[path] = len(order)
        if isinstance(node, dict):
            children = [(path + (k,), v) for k, v in node.items()]
        elif isinstance(node, list):
            children = [(path + (i,), v) for i, v in enumerate(node)]
        else:
            continue
        stack.extend(reversed(children))
    return order


def validate(obj: Any, schema_name: str, where: str) -> None:
    """Raise FormatError naming the JSON path of the first violation of the schema.

    Args:
        obj: the parsed JSON document.
        schema_name: one of SCHEMA_NAMES.
        where: the file (or other origin) the document came from, for the message.
    """
    errors = list(_validator(schema_name).iter_errors(obj))
    if not errors:
        return
    # The first violation in document order, so the message points at the earliest place to
    # fix; among several at that place, best_match picks the most specific (it descends into
    # anyOf alternatives), which is the one that tells the user what to change.
    order = _document_order(obj)
    first = min(order.get(tuple(e.absolute_path), len(order)) for e in errors)
    from jsonschema.exceptions import best_match

    error = best_match(e for e in errors
                       if order.get(tuple(e.absolute_path), len(order)) == first)
    raise FormatError(f"{error.json_path}: {error.message}", where=where,
                      fix=f"the file must follow the {schema_name} schema "
                          f"({schema_path(schema_name).name})")
