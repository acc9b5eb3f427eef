"""The model x device matrix of a device run, as words: what the HTML and Markdown reports
each render (and escape) their own way.

    columns = matrix_columns(doc)     # [(runtime, where)], or [] when no model has cells
    cell_lines(cell)                  # ["verified", "built in 2.1 ms", "ran in 0.4 ms"]

Every string here that a device, a model or a results file gave (a device's name, browser,
platform and user agent: whoever opened the page chose them; an error's words) is returned
as it is: the renderers escape it.
"""
from __future__ import annotations

from .report_json import format_number

__all__ = ["matrix_columns", "cell_lines", "cell_of", "where_line"]


def matrix_columns(doc: dict) -> list[tuple[str, dict]]:
    """The matrix's columns, one per runtime of the run, each with where it ran (the first
    cell of that runtime says); [] when the run was not on devices."""
    found: dict[str, dict] = {}
    for model in doc["models"]:
        for cell in model.get("cells") or []:
            found.setdefault(cell["runtime"], cell["device"])
    if not found:
        return []
    return [(r, found[r]) for r in doc["options"]["runtimes"] if r in found]


def cell_of(model: dict, runtime: str) -> dict | None:
    return next((c for c in model.get("cells") or [] if c["runtime"] == runtime), None)


def where_line(where: dict) -> str:
    """`NAME: BROWSER on PLATFORM, deviceType TYPE`, the parts it has."""
    parts = [str(where.get("name"))]
    if where.get("browser"):
        parts.append(f": {where['browser']}")
        if where.get("platform"):
            parts.append(f" on {where['platform']}")
    if where.get("deviceType"):
        parts.append(f", deviceType {where['deviceType']}")
    return "".join(parts)


def _ms(value) -> str:
    return f" in {format_number(value)} ms" if value is not None else ""


def cell_lines(cell: dict) -> tuple[str, list[str]]:
    """(the verdict, the lines under it): built (or why not), ran, and for a lost device why;
    the times as the device's page measured them."""
    lines = []
    if cell.get("lost"):
        lines.append(str(cell["lost"]))
    if cell.get("built") is True:
        lines.append("built" + _ms(cell.get("buildMs")))
    elif cell.get("built") is False:
        lines.append("not built" + (f": {cell['notBuilt']}" if cell.get("notBuilt") else ""))
    elif cell.get("notBuilt") and not cell.get("lost"):
        lines.append(f"failed: {cell['notBuilt']}")
    if cell.get("ran"):
        lines.append("ran" + _ms(cell.get("runMs")))
    elif cell.get("built"):
        lines.append("did not run")
    if cell.get("resumed"):
        lines.append("from an earlier run")
    return str(cell["verdict"]), lines
