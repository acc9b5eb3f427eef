"""A zoo run compared with an earlier one: what changed status, whose worst error grew.

    baseline = load_baseline("last-week.jsonl")     # a results file, or a .json report
    changes = compare(doc["models"], baseline, growth=10.0)

The manifest's `expect` only says whether a model still does what it was expected to do; an
error that grows a hundredfold but stays within tolerance passes that check. A baseline catches
it: every model whose status differs from the earlier run, and every model whose worst max abs
error (over all targets, runtimes and outputs) grew by more than `growth` times, is a change,
with both values kept so a report can show them side by side. Errors below `ERROR_FLOOR` count
as the floor, so a bit-exact model that picks up float32 rounding (0 -> 1e-8) is not a
"growth by infinity".
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..errors import ConverterError

__all__ = ["load_baseline", "compare", "worst_error", "worst_parity", "DEFAULT_GROWTH", "ERROR_FLOOR"]

DEFAULT_GROWTH = 10.0
ERROR_FLOOR = 1e-7


def load_baseline(path: str | Path) -> dict[str, dict[str, Any]]:
    """id -> that model's result in an earlier run: from the JSON-lines results file a run
    appends to (the last record of an id wins) or from a `.json` report."""
    path = Path(path)
    where = str(path)
    fix = "give the results file of an earlier run (.jsonl) or its JSON report (.json)"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConverterError(f"cannot read the baseline: {e.strerror or e}", where=where,
                             fix=fix) from None
    results: list[dict] = []
    try:
        if path.suffix.lower() == ".jsonl":
            for line in text.splitlines():
                if line.strip():
                    results.append(json.loads(line)["result"])
        else:
            results = list(json.loads(text)["models"])
    except (ValueError, KeyError, TypeError) as e:
        raise ConverterError(f"not a zoo results file or report ({type(e).__name__}: {e})",
                             where=where, fix=fix) from None
    by_id: dict[str, dict] = {}
    for result in results:
        if not isinstance(result, dict) or not isinstance(result.get("id"), str):
            raise ConverterError("a result without an `id`", where=where, fix=fix)
        by_id[result["id"]] = result
    return by_id


def worst_error(result: dict) -> float | None:
    """The largest max abs error of a result, inf for a non-finite one, None without parity."""
    out = worst_parity(result)
    if out is None:
        return None
    value = out["maxAbs"]
    if isinstance(value, (int, float)):
        return float(value)
    try:  # non-finite values are written as strings ("inf", "nan")
        value = float(value)
    except (TypeError, ValueError):
        return math.inf
    return math.inf if math.isnan(value) else value


def compare(models: list[dict], baseline: dict[str, dict], growth: float = DEFAULT_GROWTH
            ) -> list[dict[str, Any]]:
    """The changes against the baseline, in the order of `models`: one entry per model that
    changed status or whose worst error grew beyond `growth` times (both, as two entries, when
    both happened). Models the baseline does not have are not changes."""
    if not growth > 1.0:
        raise ConverterError(f"error growth factor {growth} must be above 1",
                             fix="give --error-growth a factor such as 10")
    changes: list[dict[str, Any]] = []
    for result in models:
        before = baseline.get(result["id"])
        if before is None:
            continue
        if before.get("status") != result["status"]:
            changes.append({"id": result["id"], "kind": "status",
                            "before": before.get("status"), "after": result["status"]})
        old, new = worst_error(before), worst_error(result)
        if old is None or new is None:
            continue
        ratio = max(new, ERROR_FLOOR) / max(old, ERROR_FLOOR)
        if ratio > growth:
            changes.append({"id": result["id"], "kind": "error", "before": _number(old),
                            "after": _number(new), "factor": _number(ratio)})
    return changes


def _number(value: float) -> float | str:
    """A float as the report schema takes it: non-finite values as strings."""
    return value if math.isfinite(value) else str(value)


def worst_parity(result: dict) -> dict | None:
    """The output with the largest max abs error over every target and runtime, or None."""
    worst = None
    for variant in result.get("targets", []):
        for runtime, entry in variant.get("parity", {}).items():
            for out in entry.get("outputs", []):
                value = out["maxAbs"] if isinstance(out["maxAbs"], (int, float)) else float("inf")
                if worst is None or value > worst[0]:
                    worst = (value, {**out, "runtime": runtime, "target": variant["target"]})
    return worst[1] if worst else None
