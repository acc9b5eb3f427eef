"""State declarations in graph files, written so that readers without the feature still see a
valid pure graph: a state input is an ordinary input and its next value an ordinary output; only
the pairing and the initial value are extra, in a place such readers skip.

Text form: one `#@state` comment a pair, right after the header (a comment to other readers):

    #@state "stream/states" "stream/states/next" zeros
    #@state "cache" "cache/next" @weights("cache/initial")
    #@state "count" "count/next" @scalar(1)

JSON form: a top-level `state` list (webnn-graph ignores members it does not know):

    "state": [{"input": "stream/states", "output": "stream/states/next",
               "init": {"kind": "weights", "ref": "cache/initial"}}]

The initial value is written like a constant (`zeros`, or a constant's init: `weights` by key
in the weights file, `scalar`, inline bytes); its data type and shape are the state input's.
Names are the input's name and the output's name as users feed and read them.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..errors import ParseError
from ._text_lexer import STRING, init_text
from .document import ConstDecl, file_error, located

__all__ = ["StateDecl", "parse_directive", "render_directive", "state_from_json",
           "state_to_json", "add_state"]

_STRING = STRING  # the lexer's: linear, whatever the line holds
_NUMBER = r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|\"(?:Infinity|-Infinity|NaN)\""
_DIRECTIVE = re.compile(rf"[ \t]+({_STRING})[ \t]+({_STRING})[ \t]+(.*?)[ \t]*\Z")
_WEIGHTS = re.compile(rf"@weights\(\s*({_STRING})\s*\)\Z")
_SCALAR = re.compile(rf"@scalar\(\s*({_NUMBER})\s*\)\Z")
_BYTES = re.compile(r"@bytes\(\s*\[([0-9,\s]*)\]\s*\)\Z")
_JSON_KINDS = {"weights": "weights", "scalar": "scalar", "inlineBytes": "bytes"}


@dataclass
class StateDecl:
    """One state pair as written; `init` is None for zeros, else a constant declaration
    whose data type and shape are filled in from the input when the graph is read."""

    input: str
    output: str
    init: ConstDecl | None = None
    where: str = ""


def _init_name(input_name: str) -> str:
    return f"initial value of state '{input_name}'"


# -- text -----------------------------------------------------------------------------------------
def parse_directive(rest: str, path: str, line: int, column: int) -> StateDecl:
    """A `#@state` comment (the text after `#@state`) as a StateDecl."""
    def fail(what: str) -> None:
        raise ParseError(what, path=path, line=line, column=column,
                         fix='write it as: #@state "input" "output" zeros '
                             '(or @weights("key"), @scalar(number), @bytes([...]))')

    m = _DIRECTIVE.match(rest)
    if m is None:
        fail("malformed #@state directive")
    try:
        input_name, output_name = json.loads(m.group(1)), json.loads(m.group(2))
    except json.JSONDecodeError:
        fail("bad escape in a #@state name")
    if not input_name or not output_name:
        fail("#@state gives an empty name")
    where = f"{path}:{line}:{column}"
    decl = StateDecl(input_name, output_name, None, where)
    init = m.group(3)
    if init == "zeros":
        return decl
    const = ConstDecl(_init_name(input_name), "float32", (), "weights", where=where)
    if (w := _WEIGHTS.match(init)) is not None:
        const.key = json.loads(w.group(1))
    elif (s := _SCALAR.match(init)) is not None:
        const.kind, const.value = "scalar", json.loads(s.group(1))
    elif (b := _BYTES.match(init)) is not None:
        items = [t.strip() for t in b.group(1).split(",") if t.strip()]
        values = [int(t) for t in items]
        if any(v > 255 for v in values):
            fail("a #@state byte is out of range (0 to 255)")
        const.kind, const.data = "bytes", bytes(values)
    else:
        fail(f"unknown #@state initial value {init!r}")
    decl.init = const
    return decl


def render_directive(decl: StateDecl) -> str:
    init = "zeros" if decl.init is None else init_text(decl.init)  # as constants' inits
    return f"#@state {json.dumps(decl.input, ensure_ascii=False)} " \
           f"{json.dumps(decl.output, ensure_ascii=False)} {init}"


# -- JSON -----------------------------------------------------------------------------------------
def state_from_json(items: list[dict[str, Any]], path: str) -> list[StateDecl]:
    """The `state` member (already checked against the schema) as StateDecls."""
    decls = []
    for i, item in enumerate(items):
        where = f"{path} $.state[{i}]"
        init = item["init"]
        decl = StateDecl(item["input"], item["output"], None, where)
        if init["kind"] != "zeros":
            const = ConstDecl(_init_name(item["input"]), "float32", (),
                              _JSON_KINDS[init["kind"]], where=where)
            if const.kind == "weights":
                const.key = init["ref"]
            elif const.kind == "scalar":
                const.value = init["value"]
            else:
                const.data = bytes(init["bytes"])
            decl.init = const
        decls.append(decl)
    return decls


def state_to_json(decls: list[StateDecl]) -> list[dict[str, Any]]:
    out = []
    for d in decls:
        c = d.init
        if c is None:
            init: dict[str, Any] = {"kind": "zeros"}
        elif c.kind == "weights":
            init = {"kind": "weights", "ref": c.key}
        elif c.kind == "scalar":
            init = {"kind": "scalar", "value": c.value}
        else:
            init = {"kind": "inlineBytes", "bytes": list(c.data)}
        out.append({"input": d.input, "output": d.output, "init": init})
    return out


# -- Graph <-> doc --------------------------------------------------------------------------------
def add_state(reader, decls: list[StateDecl]) -> None:
    """Declare the doc's state on the graph being read (after its inputs and outputs);
    problems go to the reader's list, located at the declaration."""
    from ..errors import ConverterError

    graph = reader.graph
    for decl in decls:
        operand = graph.inputs.get(decl.input)
        if operand is None:
            reader.problems.append(file_error(
                f"state input '{decl.input}' is not an input of the graph", where=decl.where))
            continue
        if decl.output not in graph.outputs:
            reader.problems.append(file_error(
                f"state output '{decl.output}' is not an output of the graph", where=decl.where))
            continue
        initial = None
        if decl.init is not None:
            decl.init.data_type, decl.init.shape = operand.data_type, operand.shape
            try:
                initial = reader.constant_data(decl.init)
            except ConverterError as e:
                reader.problems.append(located(e, decl.where))
                continue
        graph.declare_state(decl.input, decl.output, initial)

