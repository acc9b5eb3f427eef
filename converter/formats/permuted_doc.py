"""The boundary permutations a conversion made (`--io-layout`, converter/ir/io_permutations.py) in
graph files, where readers without the feature skip them and still see a valid graph.

Text form: one `#@permuted` comment an input or output, right after the header:

    #@permuted input "image" [0, 2, 3, 1]
    #@permuted output "mask" [0, 2, 3, 1]

JSON form: a top-level `permuted` member (webnn-graph ignores members it does not know):

    "permuted": {"inputs": {"image": [0, 2, 3, 1]}, "outputs": {"mask": [0, 2, 3, 1]}}

Either says: the graph's value there is the source model's value transposed by the list
(axis i of the graph's value is axis perm[i] of the source's).
"""
from __future__ import annotations

import json
import re
from typing import Any

from ..errors import ParseError
from .document import file_error

__all__ = ["parse_directive", "render_directives", "add_permuted", "from_json", "to_json"]

_STRING = r'"(?:[^"\\\n]|\\.)*"'
_DIRECTIVE = re.compile(rf"[ \t]+(input|output)[ \t]+({_STRING})[ \t]+"
                        r"\[([0-9,\s]*)\][ \t]*\Z")
_MAX_RANK = 16  # a permutation longer than any operand's rank is refused as it is read


def parse_directive(rest: str, path: str, line: int, column: int,
                    into: dict[str, dict[str, list[int]]]) -> None:
    """A `#@permuted` comment (the text after the word) added to `into`."""
    def fail(what: str) -> None:
        raise ParseError(what, path=path, line=line, column=column,
                         fix='write it as: #@permuted input "name" [0, 2, 3, 1]')

    m = _DIRECTIVE.match(rest)
    if m is None:
        fail("malformed #@permuted directive")
    try:
        name = json.loads(m.group(2))
    except json.JSONDecodeError:
        fail("bad escape in a #@permuted name")
    items = [t.strip() for t in m.group(3).split(",")]
    if len(items) > _MAX_RANK or not all(t.isdigit() for t in items):
        fail(f"#@permuted gives {m.group(3).strip()!r}: not a list of at most {_MAX_RANK} axes")
    side = into.setdefault(m.group(1) + "s", {})
    if name in side:
        fail(f"#@permuted {m.group(1)} '{name}' is given twice")
    side[name] = [int(t) for t in items]


def render_directives(table: dict[str, dict[str, list[int]]]) -> list[str]:
    return [f"#@permuted {side[:-1]} {json.dumps(name, ensure_ascii=False)} "
            f"[{', '.join(map(str, perm))}]"
            for side in ("inputs", "outputs") for name, perm in table.get(side, {}).items()]


def from_json(value: Any) -> dict[str, dict[str, list[int]]]:
    """The `permuted` member (already checked against the schema)."""
    return {side: {k: list(v) for k, v in entries.items()}
            for side, entries in (value or {}).items()}


def to_json(table: dict[str, dict[str, list[int]]]) -> dict[str, Any]:
    return {side: dict(entries) for side, entries in table.items() if entries}


def add_permuted(reader, table: dict[str, dict[str, list[int]]], where: str) -> None:
    """Record the doc's permutations on the graph being read (after its inputs and outputs);
    a record that does not fit the graph goes to the reader's problems."""
    from ..ir.io_permutations import KEY, check_declared

    if not table:
        return
    problems = check_declared(reader.graph, table)
    for what in problems:
        reader.problems.append(file_error(what, where=where,
                                          fix="fix or drop the permuted record"))
    if not problems:
        reader.graph.metadata[KEY] = {side: dict(entries) for side, entries in table.items()}
