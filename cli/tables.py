"""Tables on stdout: fitted to the terminal on a terminal, plain aligned text when piped.

On a terminal, rich lays a table out in the terminal's width: long cells wrap between words
(a word longer than its column folds), and the short columns (names, layouts, counts) keep
their full width, so no column is dropped or cut. Piped into a file or another program, a table
is plain text: one line per row, columns padded to their widest cell, never wrapped, so that
`grep` and `cut` see whole rows. Every command that prints a table also has `--json`.

Every cell is printed as cli.terminal shows text: control and bidi characters as visible
escapes, nothing read as rich markup. On a terminal, a cell longer than LONGEST_CELL characters
(a hostile model's multi-megabyte name) keeps its start and end and says how much was left out,
and a note under the table says so: rich's folding takes time quadratic in a cell's length
(minutes for a few megabytes). Piped output and `--json` keep every cell whole.
"""
from __future__ import annotations

import shutil
import sys
from typing import Sequence

from .terminal import echo, plain, shortened, shown

_SHORT = 24  # a column whose cells all fit in this many characters is never squeezed
LONGEST_CELL = 1000  # on a terminal, a longer cell is shortened (see above)


def terminal_width() -> int | None:
    """The terminal's width in columns when stdout is a terminal; None when it is piped."""
    stream = sys.stdout
    if not (hasattr(stream, "isatty") and stream.isatty()):
        return None
    return shutil.get_terminal_size().columns


def console():
    """A rich console for the lines around tables: soft-wrapped (never broken) when piped.
    Print on it with cli.terminal.console_print."""
    from rich.console import Console  # only when printing: rich is slow to import

    width = terminal_width()
    return Console(highlight=False, width=width, soft_wrap=width is None)


def print_table(columns: Sequence[str], rows: Sequence[Sequence[str]], title: str | None = None,
                width: int | None = None) -> None:
    """Print one table: rich within `width` (default: the terminal's) when stdout is a
    terminal, plain aligned columns when it is not and no width is given. Cells and title are
    any text (a model's names): they are `shown`, never read as markup."""
    columns = [shown(name) for name in columns]
    rows = [[shown(cell) for cell in row] for row in rows]
    width = width or terminal_width()
    if width is None:
        _plain(columns, rows, title)
        return
    from rich.console import Console
    from rich.table import Table

    long = sum(len(cell) > LONGEST_CELL for row in rows for cell in row)
    rows = [[shortened(cell, LONGEST_CELL) for cell in row] for row in rows]
    table = Table(box=None, title=plain(title) if title else None, title_justify="left")
    for i, name in enumerate(columns):
        longest = max([len(name), *(len(row[i]) for row in rows)])
        if longest <= _SHORT:
            table.add_column(plain(name), no_wrap=True, min_width=longest)
        else:
            table.add_column(plain(name), overflow="fold", ratio=1)  # wraps between words
    for row in rows:
        table.add_row(*(plain(cell) for cell in row))
    Console(highlight=False, width=width).print(table)
    if long:
        echo(f"({long} cell{'s' * (long > 1)} longer than {LONGEST_CELL} characters shortened "
             f"here; piped output and --json hold {'them' if long > 1 else 'it'} whole)")


def _plain(columns: Sequence[str], rows: Sequence[Sequence[str]], title: str | None) -> None:
    from converter.verification.text import aligned_lines  # what str(VerifyReport) prints too

    for line in aligned_lines(columns, rows, title):
        echo(line)
