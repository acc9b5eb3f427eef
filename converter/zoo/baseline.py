"""A zoo run compared with an earlier one: what changed status, whose worst error grew.

    baseline = load_baseline("last-week.jsonl")     # a results file, or a .json report
    changes = compare(doc["models"], baseline.results, growth=10.0)

The manifest's `expect` only says whether a model still does what it was expected to do; an
error that grows a hundredfold but stays within tolerance passes that check. A baseline catches
it: every model whose status differs from the earlier run, and every model whose worst max abs
error (over all targets, runtimes and outputs) grew by more than `growth` times, is a change,
with both values kept so a report can show them side by side. Errors below `ERROR_FLOOR` count
as the floor, so a bit-exact model that picks up float32 rounding (0 -> 1e-8) is not a
"growth by infinity".

A baseline is a file the user names, so it is read like any other hostile input, and before
any model runs (a bad one costs nothing): at most MAX_BASELINE_BYTES, strict JSON nested at
most MAX_NESTING deep, and every result shaped as compare() reads it.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConverterError
from ..formats._files import parse_json
from .files import MAX_BASELINE_BYTES, read_bounded

__all__ = ["Baseline", "load_baseline", "compare", "worst_error", "worst_parity",
           "DEFAULT_GROWTH", "ERROR_FLOOR"]

DEFAULT_GROWTH = 10.0
# How a run writes a non-finite max abs error (JSON has no inf or nan): str(float(...)).
NON_FINITE = ("inf", "-inf", "nan")
ERROR_FLOOR = 1e-7
_FLOAT64_MAX = sys.float_info.max


@dataclass(frozen=True)
class Baseline:
    path: Path
    results: dict[str, dict[str, Any]]  # id -> that model's result in the earlier run


def load_baseline(path: str | Path) -> Baseline:
    """An earlier run: from the JSON-lines results file a run appends to (the last record of
    an id wins; of a run on devices, the last of each model and device, the model the worst
    of them) or from a `.json` report. Anything else is refused in one line."""
    path = Path(path)
    where = str(path)
    fix = "give the results file of an earlier run (.jsonl) or its JSON report (.json)"
    raw = read_bounded(path, "baseline", MAX_BASELINE_BYTES, fix=fix)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConverterError(f"the baseline is not UTF-8 text ({e.reason} at byte {e.start})",
                             where=where, fix=fix) from None
    results: list[tuple[str, Any]] = []  # (where, result)
    if path.suffix.lower() == ".jsonl":
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                record = parse_json(line, f"{where}:{number}", "baseline")
                if not isinstance(record, dict) or "result" not in record:
                    raise ConverterError("not a record of a zoo results file (no `result`)",
                                         where=f"{where}:{number}", fix=fix)
                results.append((f"{where}:{number}", record["result"]))
    else:
        doc = parse_json(text, where, "baseline")
        if not isinstance(doc, dict) or not isinstance(doc.get("models"), list):
            raise ConverterError("not a zoo report (no `models` list)", where=where, fix=fix)
        results = [(f"{where}: $.models[{i}]", r) for i, r in enumerate(doc["models"])]
    by_id: dict[str, dict] = {}
    cells: dict[str, dict[str, dict]] = {}  # a run on devices: id -> runtime -> its record
    for place, result in results:
        _check_result(result, place, fix)
        cell = result.get("cell")
        if isinstance(cell, dict) and isinstance(cell.get("runtime"), str):
            cells.setdefault(result["id"], {})[cell["runtime"]] = result
        else:
            by_id[result["id"]] = result
    for model, records in cells.items():
        by_id[model] = _of_cells(model, list(records.values()))
    return Baseline(path, by_id)


def _of_cells(model: str, records: list[dict]) -> dict:
    """A model of a run on devices from its cells' records (one per device, the last of each
    kept): the worst of their statuses, and every device's parity, as compare() reads them."""
    from .job import worst
    from .manifest import STATUSES

    statuses = [r["status"] if r["status"] in STATUSES else "error" for r in records]
    return {"id": model, "status": worst(statuses),
            "targets": [v for r in records for v in r.get("targets", [])]}


def _check_result(result: Any, where: str, fix: str) -> None:
    """Refuse a result that compare() could not read: an `id` and `status`, and targets,
    parity and outputs of the shapes a run writes."""
    def bad(what: str) -> ConverterError:
        return ConverterError(f"not a zoo result: {what}", where=where, fix=fix)

    if not isinstance(result, dict) or not isinstance(result.get("id"), str):
        raise bad("no `id`")
    if not isinstance(result.get("status"), str):
        raise bad("no `status`")
    variants = result.get("targets", [])
    if not isinstance(variants, list):
        raise bad("`targets` is not a list")
    for variant in variants:
        if not isinstance(variant, dict) or not isinstance(variant.get("target"), str) or \
                not isinstance(variant.get("parity", {}), dict):
            raise bad("a target that is not an object with a `target` name and a `parity` "
                      "object")
        for entry in variant.get("parity", {}).values():
            outputs = entry.get("outputs", []) if isinstance(entry, dict) else None
            if not isinstance(outputs, list) or not all(
                    isinstance(o, dict) and isinstance(o.get("maxAbs"), (int, float, str,
                                                                         type(None)))
                    for o in outputs):
                raise bad("a runtime's `outputs` is not a list of outputs with `maxAbs`")
            # A run writes a non-finite error as one of these strings (job._num); float() would
            # read '１e-9' or '1_0' too, a small error the run never measured.
            if any(isinstance(o["maxAbs"], str) and o["maxAbs"] not in NON_FINITE
                   for o in outputs):
                raise bad("a `maxAbs` string other than " + ", ".join(NON_FINITE))
            # compare() reads an error as a float: an integer past float64's range (a digit
            # run of 310 and more) would stop it with an OverflowError after every model ran.
            if any(isinstance(o["maxAbs"], int) and abs(o["maxAbs"]) > _FLOAT64_MAX
                   for o in outputs):
                raise bad("a `maxAbs` beyond a float64's range")


def worst_error(result: dict) -> float | None:
    """The largest max abs error of a result, inf for a non-finite one, None without parity."""
    out = worst_parity(result)
    if out is None:
        return None
    value = out["maxAbs"]
    if isinstance(value, (int, float)):
        return float(value)
    # non-finite values are written as strings: NON_FINITE ("nan" counts as worst)
    return -math.inf if value == "-inf" else math.inf


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


def worst_parity(result: dict, runtime: str | None = None) -> dict | None:
    """The output with the largest max abs error over every target and runtime (or over the
    targets on `runtime` only), or None."""
    worst = None
    wanted = runtime
    for variant in result.get("targets", []):
        for runtime, entry in variant.get("parity", {}).items():
            if wanted is not None and runtime != wanted:
                continue
            for out in entry.get("outputs", []):
                value = out["maxAbs"] if isinstance(out["maxAbs"], (int, float)) else float("inf")
                if worst is None or value > worst[0]:
                    worst = (value, {**out, "runtime": runtime, "target": variant["target"]})
    return worst[1] if worst else None
