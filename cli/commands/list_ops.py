"""`webnn-convert ops`: the op catalogue, one row per WebNN op."""
from __future__ import annotations

import click

from converter.catalogue import catalogue

from ..terminal import echo, echo_json


def _ranks(r: dict) -> str:
    lo, hi = r["min"], r["max"]
    return str(lo) if lo == hi else f"{lo}-{hi if hi is not None else 'N'}"


@click.command("ops")
@click.option("--json", "as_json", is_flag=True, help="Print the catalogue as JSON.")
def command(as_json: bool) -> None:
    """List every WebNN op the converter knows: its operands' data types and ranks.

    The limits are the spec's (allowed data types and ranks); `--json` also gives the
    required ones, each op's arguments and options with defaults, and the source ops that
    import to it.
    """
    rows = catalogue()
    if as_json:
        echo_json(rows, indent=1)
        return
    from ..tables import print_table

    table = []
    for row in rows:
        sources = "; ".join(f"{fmt}: {', '.join(ops)}" for fmt, ops in row["importedFrom"].items()
                            if ops)
        first = True
        for operand, lim in row["limits"].items():
            if operand.startswith("output"):
                continue
            table.append((row["name"] if first else "", row["family"] if first else "", operand,
                          ", ".join(lim["dataTypes"]), _ranks(lim["rankRange"]),
                          sources if first else ""))
            first = False
    print_table(("op", "family", "operand", "data types", "ranks", "imported from"), table)
    echo(f"{len(rows)} ops")
