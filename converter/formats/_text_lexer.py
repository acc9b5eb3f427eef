"""The lexer of the `.webnn` text form.

Tokens: identifiers (`[A-Za-z_/$][A-Za-z0-9_./]*`), numbers (`-?digits[.digits][e[+-]digits]`),
"strings" (JSON escapes), `@words`, and the punctuation `{ } [ ] ( ) , ; : =`. `#` starts a
comment that runs to the end of the line.

Two comment forms carry what the syntax cannot, and other readers skip them as comments:

    #@name IDENT "original name"    IDENT stands for an operand whose real name is not an
                                    identifier (`serving_default_input:0`); anywhere in the file.
    #@output "output name"          the next item of the outputs block is returned under this
                                    name rather than under the operand's own.
    #@state "input" "output" INIT   a state pair (state_doc.py); anywhere in the file.
    #@permuted input|output "name" [PERM]
                                    that input/output is the source model's value transposed
                                    by PERM (ir/io_permutations.py); anywhere in the file.

The file is hostile, so what one token, and the whole text, can make the lexer hold is bounded
before it is matched: a name, string, @word or directive of more than MAX_TOKEN_CHARS, a number
of more than MAX_NUMBER_CHARS, more than MAX_TOKENS tokens, or a text over MAX_TEXT_CHARS is
refused at its line (a 16 MB string took 2 GB before).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ParseError
from ._files import LONE_SURROGATE

if TYPE_CHECKING:
    from .document import ConstDecl

__all__ = ["Token", "Directive", "tokenize", "IDENT", "is_identifier", "quote", "number_text",
           "init_text",
           "STRING", "MAX_TOKEN_CHARS", "MAX_NUMBER_CHARS", "MAX_TOKENS", "MAX_TEXT_CHARS"]

# A name, string, @word or directive line: real ones are far shorter (ONNX names run to a few
# hundred characters); the bound keeps each match, and what it holds, small.
MAX_TOKEN_CHARS = 1 << 16
# A number: int64 and float64 need 25 characters; Python refuses ints of over 4300 digits.
MAX_NUMBER_CHARS = 1000
# Tokens in one file (each held as an object of about 100 bytes): real graphs have a few dozen
# per operation, so this takes graphs of some 60,000 operations.
MAX_TOKENS = 1 << 21
# The text itself: about 3 characters a token in real files (inline bytes are small).
MAX_TEXT_CHARS = 32 << 20

IDENT = r"[A-Za-z_/$][A-Za-z0-9_./]*"
_IDENT = re.compile(IDENT)
_IDENT_FULL = re.compile(IDENT + r"\Z")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
# Runs of plain characters matched whole and never backtracked into (possessive): the old
# `(?:[^"\\\n]|\\.)*` kept a backtracking entry per character, ~125 bytes each.
STRING = r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"'
_STRING_RE = re.compile(STRING)
_NAME_DIRECTIVE = re.compile(rf"#@name[ \t]+({IDENT})[ \t]+({STRING})[ \t]*\Z")
_OUTPUT_DIRECTIVE = re.compile(rf"#@output[ \t]+({STRING})[ \t]*\Z")
_PUNCT = set("{}[](),;:=")


def is_identifier(text: str) -> bool:
    return bool(_IDENT_FULL.match(text))


def quote(text: str) -> str:
    """A string literal for `text` (JSON escapes, which the reader decodes)."""
    return json.dumps(text, ensure_ascii=False)


@dataclass(frozen=True)
class Directive:
    kind: str  # "name", "output", "state" or "permuted"
    ident: str | None  # the identifier a `#@name` gives a name to
    value: str  # the real name (`#@state`, `#@permuted`: the text after the word)
    line: int
    column: int


@dataclass(frozen=True, slots=True)  # slots: a file may have millions
class Token:
    kind: str  # "ident", "number", "string", "at", "punct", "eof"
    text: str  # as written
    value: Any  # str for ident/string/at (the word after @)/punct, int or float for number
    line: int
    column: int
    # `#@output` directives written just before this token.
    directives: tuple[Directive, ...] = ()

    def describe(self) -> str:
        if self.kind == "eof":
            return "the end of the file"
        return f"'{self.text}'" if len(self.text) <= 40 else f"'{self.text[:37]}...'"


def number_text(v: int | float) -> str:
    """A number as the text form writes it: ints as they are, floats by repr."""
    if isinstance(v, bool):
        raise TypeError("a boolean is not a number")
    if isinstance(v, int):
        return str(v)
    return repr(float(v))


def init_text(c: ConstDecl) -> str:
    """A constant's init as the text form writes it (@weights, @scalar, @bytes)."""
    if c.kind == "weights":
        return f"@weights({quote(c.key)})"
    if c.kind == "scalar":
        return f"@scalar({number_text(c.value)})"
    return f"@bytes([{', '.join(str(b) for b in c.data)}])"


def tokenize(text: str, path: str) -> tuple[list[Token], list[Directive]]:
    """The tokens of `text` (ending with an eof token) and its `#@name`, `#@state` and
    `#@permuted` directives."""
    tokens: list[Token] = []
    names: list[Directive] = []
    pending: list[Directive] = []
    i, line, line_start, n = 0, 1, 0, len(text)

    def fail(what: str, at: int, fix: str | None = None):
        raise ParseError(what, path=path, line=line, column=at - line_start + 1, fix=fix)

    def emit(kind: str, raw: str, value: Any, at: int) -> None:
        if len(tokens) >= MAX_TOKENS:
            fail(f"the file has more than {MAX_TOKENS} tokens", at,
                 "no graph needs that many; the file is corrupt or hostile")
        tokens.append(Token(kind, raw, value, line, at - line_start + 1, tuple(pending)))
        pending.clear()

    def too_long(what: str, at: int, limit: int = MAX_TOKEN_CHARS) -> None:
        fail(f"{what} runs past {limit} characters", at,
             "no graph needs one that long; the file is corrupt or hostile")

    if n > MAX_TEXT_CHARS:
        fail(f"the text has {n} characters, over the limit of {MAX_TEXT_CHARS}", 0,
             "no graph needs that much text; weights belong in the .weights file")
    while i < n:
        ch = text[i]
        if ch == "\n":
            i += 1
            line, line_start = line + 1, i
        elif ch in " \t\r\ufeff":
            i += 1
        elif ch == "#":
            end = text.find("\n", i)
            end = n if end < 0 else end
            # only these are read
            if text.startswith(("#@name", "#@output", "#@state", "#@permuted"), i):
                if end - i > MAX_TOKEN_CHARS:
                    too_long("a #@ directive", i)
                directive = _directive(text[i:end].rstrip("\r"), path, line,
                                       i - line_start + 1)
                if directive is not None:
                    (pending if directive.kind == "output" else names).append(directive)
            i = end
        elif ch == '"':
            window = min(n, i + MAX_TOKEN_CHARS + 2)  # the quotes and what they may hold
            m = _STRING_RE.match(text, i, window)
            if m is None:
                if window < n and text.find("\n", i, window) < 0:
                    too_long("a string", i)
                fail("unterminated string", i, 'close it with " on the same line')
            emit("string", m.group(), _decode(m.group(), path, line, i - line_start + 1), i)
            i = m.end()
        elif ch in "0123456789-":
            m = _NUMBER.match(text, i, min(n, i + MAX_NUMBER_CHARS + 1))
            if m is None:
                fail("'-' must start a number", i, "write negative numbers as -1, -0.5")
            if m.end() - i > MAX_NUMBER_CHARS:
                too_long("a number", i, MAX_NUMBER_CHARS)
            raw = m.group()
            if m.end() < n and (text[m.end()].isalpha() or text[m.end()] in "_$"):
                fail(f"'{raw}{text[m.end()]}' is neither a number nor an identifier", i,
                     "identifiers start with a letter, '_', '/' or '$'")
            value: Any = int(raw) if m.group(1) is None and m.group(2) is None else float(raw)
            if isinstance(value, float) and value in (float("inf"), float("-inf")):
                fail(f"the number {raw} is out of range", i)
            emit("number", raw, value, i)
            i = m.end()
        elif ch == "@":
            m = _IDENT.match(text, i + 1, min(n, i + 2 + MAX_TOKEN_CHARS))
            if m is None:
                fail("'@' must be followed by a word", i,
                     "use @weights, @scalar, @bytes or @quantized")
            if m.end() - m.start() > MAX_TOKEN_CHARS:
                too_long("an @word", i)
            emit("at", "@" + m.group(), m.group(), i)
            i = m.end()
        elif ch in _PUNCT:
            emit("punct", ch, ch, i)
            i += 1
        else:
            m = _IDENT.match(text, i, min(n, i + MAX_TOKEN_CHARS + 1))
            if m is None:
                fail(f"unexpected character {ch!r}", i,
                     "identifiers use ASCII letters, digits, '_', '.', '/' (and a leading '$')")
            if m.end() - i > MAX_TOKEN_CHARS:
                too_long("a name", i)
            emit("ident", m.group(), m.group(), i)
            i = m.end()
    emit("eof", "", None, i)
    if tokens[-1].directives:
        d = tokens[-1].directives[0]
        raise ParseError("#@output is not followed by an output", path=path, line=d.line,
                         column=d.column, fix="put it on the line before the output it names")
    return tokens, names


def _directive(comment: str, path: str, line: int, column: int) -> Directive | None:
    """A `#@name` / `#@output` / `#@state` / `#@permuted` comment as a Directive; None for any
    other."""
    word = re.match(r"#@(name|output|state|permuted)\b", comment)
    if word is None:
        return None
    if word.group(1) in ("state", "permuted"):  # their syntax is their reader's
        return Directive(word.group(1), None, comment[word.end():], line, column)
    if word.group(1) == "name":
        m = _NAME_DIRECTIVE.match(comment)
        if m is None:
            raise ParseError("malformed #@name directive", path=path, line=line, column=column,
                             fix='write it as: #@name identifier "real name"')
        return Directive("name", m.group(1), _decode(m.group(2), path, line, column), line, column)
    m = _OUTPUT_DIRECTIVE.match(comment)
    if m is None:
        raise ParseError("malformed #@output directive", path=path, line=line, column=column,
                         fix='write it as: #@output "output name"')
    return Directive("output", None, _decode(m.group(1), path, line, column), line, column)


def _decode(literal: str, path: str, line: int, column: int) -> str:
    try:
        text = json.loads(literal, strict=False)
    except json.JSONDecodeError:
        raise ParseError(f"bad escape in string {literal}", path=path, line=line, column=column,
                         fix='use \\" \\\\ \\n \\t or \\uXXXX') from None
    if LONE_SURROGATE.search(text):
        raise ParseError(f"string {literal} holds a lone surrogate escape, which is no character",
                         path=path, line=line, column=column,
                         fix="write a character outside the BMP as a surrogate pair or as itself")
    return text
