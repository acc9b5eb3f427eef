"""The one way text reaches the terminal: every line the CLI prints goes through here.

Model files, manifests and file names are hostile, and their strings (node, tensor and graph
names, domains, ids, paths) end up in errors, tables and report lines. Printed raw, an
`ESC ] 52` sequence would write the user's clipboard, `ESC ] 0` the window title, a CSI
clear the screen, a newline or carriage return forge a line of this tool's own output, and a
bidi override reorder what the user reads. So every printed string is `shown`: each control
character (C0, DEL, C1), each bidi control (U+061C, U+200E/F, U+202A-202E, U+2066-2069), the
line and paragraph separators (U+2028/9) and each lone surrogate (which a UTF-8 terminal
cannot take) becomes a visible escape: `\\n`, `\\r`, `\\t`, `\\x1b`, `\\u202e`. Everything
else, including a backslash, is printed as it is.

The tool's own line breaks stay real: a line is printed with `echo`, several with `echo_lines`,
so a newline inside a model string is never one. Rich output is built from `Text` objects
(`plain`), never parsed as markup, so `[bold]` or `[/]` in a name is printed as it is. JSON
output (`echo_json`) is json.dumps with ensure_ascii, which writes every control and
non-ASCII character as a `\\u` escape already. What libraries print through Python's
`warnings` and `logging` (when nothing else handles a record) is shown too
(`show_library_messages`).
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterable

import click

__all__ = ["shown", "shortened", "echo", "echo_lines", "echo_json", "plain", "console_print",
           "echo_traceback", "show_warning", "show_library_messages"]

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
                     "\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: Any) -> str:
    """`text` (str() of it) with every character a terminal would act on, or that hides or
    reorders what is read, replaced by a visible escape; one line, whatever it holds."""
    return _UNSAFE.sub(_escape, str(text))


def shortened(text: str, limit: int) -> str:
    """`text` when it has at most `limit` characters; else its start and end around a note of
    how many characters were left out (about `limit` characters in all)."""
    if len(text) <= limit:
        return text
    tail = limit // 4
    head = limit - tail
    return f"{text[:head]} ... [{len(text) - head - tail} characters left out] ... {text[-tail:]}"


def echo(text: Any = "", *, err: bool = False) -> None:
    """Print one line (`shown`) on stdout, or on stderr with `err`."""
    click.echo(shown(text), err=err)


def echo_lines(lines: Iterable[Any], *, err: bool = False) -> None:
    """Print each of `lines` as its own line (`shown`)."""
    for line in lines:
        echo(line, err=err)


def echo_json(document: Any, **dumps: Any) -> None:
    """Print `document` as JSON on stdout: ASCII only, so no string in it (a model's names)
    holds a raw control or bidi character; json.dumps escapes them all as `\\u`."""
    click.echo(json.dumps(document, ensure_ascii=True, **dumps))


def plain(text: Any, style: str = ""):
    """A rich Text of `text` (`shown`): never parsed as markup, never a control sequence."""
    from rich.text import Text

    return Text(shown(text), style=style)


# Rich wraps a line in time quadratic in its length (seconds for a megabyte): a longer line is
# left to the terminal to wrap.
_RICH_WRAPS = 4096


def console_print(console, text: Any, style: str = "") -> None:
    """Print one line (`shown`, in `style`) through a rich console."""
    line = plain(text, style)
    console.print(line, soft_wrap=len(line) > _RICH_WRAPS or None)


def echo_traceback(error: BaseException) -> None:
    """Print the traceback of `error` (and its chain) on stderr, for --debug: the frames as
    Python writes them, each exception's own message `shown`, so that a name in it cannot
    act either."""
    import traceback

    out = []
    for chunk in traceback.TracebackException.from_exception(error).format():
        if chunk.startswith("  File ") or chunk.startswith("Traceback ") \
                or chunk.startswith("\nThe above exception") \
                or chunk.startswith("\nDuring handling"):
            out.extend(shown(line) + "\n" for line in chunk.splitlines())
        else:  # an exception's type and message (or a note): one line, whatever it holds
            out.append(shown(chunk[:-1] if chunk.endswith("\n") else chunk) + "\n")
    click.echo("".join(out), err=True, nl=False)


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """`warnings.showwarning` for the CLI: the converter's own warnings (ConversionWarning: a
    dropped output, ...) as one `warning:` line, a library's with where it came from; both
    `shown`, since either may quote a model's names."""
    from converter.errors import ConversionWarning

    if issubclass(category, ConversionWarning):
        echo(f"warning: {message}", err=True)
    else:
        echo(f"{filename}:{lineno}: {category.__name__}: {message}", err=True)


def show_library_messages() -> None:
    """Route Python's warnings, and log records no handler takes (logging's last resort),
    through `shown`: a library's message may quote a model's names too."""
    import logging
    import warnings

    class Shown(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                echo(self.format(record), err=True)
            except Exception:  # as logging's own handlers: a failing record is reported
                self.handleError(record)

    warnings.showwarning = show_warning
    logging.lastResort = Shown(logging.WARNING)
