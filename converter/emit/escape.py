"""The one escaper for every string a model supplies that ends up in JavaScript or HTML.

Names and metadata come from the model file, which may be hostile: a graph name holding a line
separator would end a `//` comment and run the rest of the name on import. So no such string is
ever written raw: JavaScript gets a JSON string literal, ASCII only (every line terminator,
U+2028/U+2029, NUL and lone surrogates become `\\u` escapes; backticks, `${` and `*/` are inert
inside a double-quoted literal) with `<` escaped too, so that `</script` and `<!--` cannot
appear even when the module text is inlined into a page; comments quote the same literal.
HTML gets its text escaped, with lone surrogates (which UTF-8 cannot encode) replaced.
"""
from __future__ import annotations

import html
import json
import re

__all__ = ["js_string", "js_comment", "html_text"]

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def js_string(text: str) -> str:
    """A JavaScript string literal (also valid JSON) that evaluates to exactly `text`."""
    return json.dumps(text, ensure_ascii=True).replace("<", "\\u003c").replace(">", "\\u003e")


def js_comment(text: str) -> str:
    """`text` for a comment: the quoted literal, which holds no line terminator (so cannot end
    a `//` comment) and, with `*/` broken up, cannot end a `/* */` one either."""
    return js_string(text).replace("*/", "*\\u002f")


def html_text(text: str) -> str:
    """`text` for HTML element content or a quoted attribute value."""
    return html.escape(_SURROGATE.sub("\ufffd", text), quote=True)
