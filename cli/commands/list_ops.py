"""`webnn-convert ops`: the op catalogue, one row per WebNN op; with --source, the source ops
an importer knows and what each becomes."""
from __future__ import annotations

import click

from converter.catalogue.webnn_ops import catalogue
from converter.catalogue.source_ops import SOURCES, source_op, source_ops

from ..numbers import Choice
from ..options import use
from ..terminal import echo, echo_json


def _ranks(r: dict) -> str:
    lo, hi = r["min"], r["max"]
    return str(lo) if lo == hi else f"{lo}-{hi if hi is not None else 'N'}"


@click.command("ops")
@click.argument("op", required=False)
@use("json")
@click.option("--source", type=Choice(SOURCES), default=None,
              help="List the source ops this importer knows instead, and what each becomes.")
def command(op: str | None, as_json: bool, source: str | None) -> None:
    """List every WebNN op the converter knows: its operands' data types and ranks.

    The limits are the spec's (allowed data types and ranks); `--json` also gives the
    required ones, each op's arguments and options with defaults, and the source ops that
    import to it.

    With --source onnx|tflite, list the source ops the importer has a rule for instead: the
    WebNN op each becomes, or "composition" and the ops its rule emits (ONNX: and the opset its
    rules start at). With OP (case-insensitive), just that op, or "unsupported" and why.
    """
    if source is not None:
        _source_ops(source, op, as_json)
        return
    if op is not None:
        raise click.UsageError("OP needs --source onnx|tflite")
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


def _source_ops(source: str, op: str | None, as_json: bool) -> None:
    if op is not None:
        row = source_op(source, op)
        if as_json:
            echo_json(row, indent=1)
        elif not row["supported"]:
            echo(f"{source} {row['op']}: unsupported: {row['reason']}")
        else:
            echo(f"{source} {row['op']}: supported, {_what(row)}"
                 + (f" (opset {row['opsets']})" if "opsets" in row else ""))
        return
    rows = source_ops(source)
    if as_json:
        echo_json(rows, indent=1)
        return
    from ..tables import print_table

    has_opsets = source == "onnx"
    print_table(("op", *(("opsets",) if has_opsets else ()), "becomes"),
                [(r["op"], *((r["opsets"],) if has_opsets else ()), _what(r)) for r in rows])
    echo(f"{len(rows)} {source} ops")


def _what(row: dict) -> str:
    if row["becomes"] == "composition":
        return "composition of " + ", ".join(row["webnnOps"])
    if row["becomes"] == "some of":
        return (f"some of {', '.join(row['webnnOps'])} (its rule serves "
                f"{row['ruleSharedBy']} ops)")
    if row["becomes"] == "see rule":
        return f"see rule {row['rule']}" + (f": {row['note']}" if "note" in row else "")
    return f"WebNN {row['becomes']}"
