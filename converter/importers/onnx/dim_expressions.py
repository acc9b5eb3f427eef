"""Dims named by expressions: exporters name an axis after the sum of two others (optimum's
decoders: `past_sequence_length + sequence_length` for the attention mask), which no --dim
can name. Its value follows from the dims given, so it is computed, never asked for.

    evaluate("past_sequence_length + sequence_length", {"past_sequence_length": 4,
                                                         "sequence_length": 1})   # 5

Only names, non-negative integers, `+`, `-` and `*` are read (the text comes from the model
file: it is parsed, never evaluated as Python); anything else is not an expression.
"""
from __future__ import annotations

import re
from typing import Mapping

__all__ = ["evaluate", "names_in"]

_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_.]*)|([0-9]{1,9})|([-+*]))")
MAX_TERMS = 16  # a longer "expression" is a name with odd characters, not a sum


def _tokens(text: str) -> list[tuple[str, str]] | None:
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            return None
        name, number, op = match.groups()
        tokens.append(("name", name) if name else ("number", number) if number else ("op", op))
        pos = match.end()
    # name/number, then (op, name/number) pairs: at least one operator, alternating
    if len(tokens) < 3 or len(tokens) % 2 == 0 or len(tokens) > 2 * MAX_TERMS - 1:
        return None
    for k, (kind, _) in enumerate(tokens):
        if (kind == "op") != (k % 2 == 1):
            return None
    return tokens


def names_in(text: str) -> list[str]:
    """The dim names an expression reads ([] when `text` is a plain name)."""
    tokens = _tokens(text)
    return [value for kind, value in tokens if kind == "name"] if tokens else []


def evaluate(text: str, dims: Mapping[str, int]) -> int | None:
    """The value of dim expression `text` at `dims`, or None when it is no expression or
    reads a name without a value. `*` binds before `+` and `-`."""
    tokens = _tokens(text)
    if tokens is None:
        return None
    values = []
    for kind, value in tokens[::2]:
        if kind == "name":
            if value not in dims or not isinstance(dims[value], int):
                return None
            values.append(int(dims[value]))
        else:
            values.append(int(value))
    ops = [value for _, value in tokens[1::2]]
    terms, signs = [values[0]], [1]
    for op, value in zip(ops, values[1:]):
        if op == "*":
            terms[-1] *= value
        else:
            terms.append(value)
            signs.append(1 if op == "+" else -1)
    return sum(s * t for s, t in zip(signs, terms))
