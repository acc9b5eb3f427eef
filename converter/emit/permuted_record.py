"""The boundary permutations (converter/ir/io_permutations.py) in an emitted JavaScript module's
header: written by the emitters, read back by `verify --graph MODULE.js`."""
from __future__ import annotations

from ..errors import ConverterError
from ..formats._files import parse_json
from ..ir.io_permutations import described

__all__ = ["permuted_lines", "module_permutations"]

_MODULE_LINE = "export const permuted = "
_MODULE_HEADER_LINES = 64  # the record is in the module's header, before any function
_MODULE_LINE_CHARS = 1 << 20  # longer than any record of a graph's inputs and outputs


def permuted_lines(graph) -> list[str]:
    """The lines a module declares its boundary permutations with (none without a record):
    `export const permuted = {"inputs": {...}};` (ASCII JSON, which is a JavaScript literal)."""
    import json

    table = described(graph)
    if not table:
        return []
    return ["// Inputs and outputs taken/given transposed from the source model's layout "
            "(--io-layout):",
            "// value = transpose(source value, perm).",
            f"{_MODULE_LINE}{json.dumps(table, ensure_ascii=True)};"]


def module_permutations(path) -> dict[str, dict[str, list[int]]]:
    """The record a module written by convert declares in its header ({} when none)."""
    where = str(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for number in range(1, _MODULE_HEADER_LINES + 1):
                line = f.readline(_MODULE_LINE_CHARS)  # a hostile file's one huge line: cut
                if not line or line.startswith("export async function"):
                    break
                if line.startswith(_MODULE_LINE):
                    text = line[len(_MODULE_LINE):].rstrip().removesuffix(";")
                    value = parse_json(text, f"{where}:{number}", "permuted record")
                    if not isinstance(value, dict):
                        raise ConverterError("the permuted record is not an object",
                                             where=f"{where}:{number}",
                                             fix="give the module convert wrote")
                    return value
    except OSError as e:
        raise ConverterError(f"cannot read the module: {e.strerror or e}", where=where) \
            from None
    return {}
