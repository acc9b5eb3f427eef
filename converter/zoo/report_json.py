"""The zoo report as data: the one document the JSON, Markdown and HTML reports are all made of.

    doc = build_report(run)            # checked against schemas/zoo-report.schema.json
    render_json(doc)                   # the .json report's text (converter.zoo.write_reports
                                       # writes any of the three)

Rendering the Markdown and HTML from this document (not from the run) is what makes the three
reports agree: they cannot count differently.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ..schemas import validate
from .baseline import DEFAULT_GROWTH, Baseline, compare, load_baseline, worst_parity
from .manifest import STATUSES

__all__ = ["build_report", "render_json", "REPORT_FORMAT", "format_number", "describe_worst",
           "describe_runtime", "worst_parity", "model_seconds", "printable",
           "describe_accuracy", "accuracy_runtimes", "computed_in"]

REPORT_FORMAT = "webnn-converter-zoo-report"


def build_report(run, baseline: str | Path | Baseline | None = None,
                 growth: float = DEFAULT_GROWTH) -> dict[str, Any]:
    """The report of a ZooRun: options, a summary and every model's result.

    summary.missed lists the models whose result is not their manifest's `expect`. Only with
    `baseline` (an earlier run's results file or JSON report, or one loaded already with
    baseline.load_baseline, as the command does before any model runs) is anything
    "regressed": every model that changed status or whose worst error grew more than `growth`
    times is listed under summary.baseline and in summary.regressions."""
    results = run.results
    by_target: dict[str, Counter] = {}
    for r in results:
        variants = r.get("targets") or []
        if variants:
            for v in variants:
                by_target.setdefault(v["target"], Counter())[v["status"]] += 1
        else:  # failed before any target was tried: it counts as that for every target
            for target in run.options.targets or ["webnn"]:
                by_target.setdefault(target, Counter())[r["status"]] += 1
    kinds = Counter(r["error"]["kind"] for r in results if r.get("error"))
    for r in results:  # a target's own failure inside a model that otherwise converted
        if not r.get("error"):
            kinds.update(v["error"]["kind"] for v in r.get("targets", []) if v.get("error"))
    status_counts = Counter(r["status"] for r in results)
    regressions: list[str] = []
    compared = None
    if baseline is not None:
        if not isinstance(baseline, Baseline):
            baseline = load_baseline(baseline)
        changes = compare(results, baseline.results, growth)
        compared = {"path": str(baseline.path), "errorGrowth": growth, "changes": changes}
        changed = {c["id"] for c in changes}
        regressions = [r["id"] for r in results if r["id"] in changed]
    doc = {
        "format": REPORT_FORMAT, "version": 1, "manifest": run.manifest,
        "converterVersion": run.converter_version, "options": run.options.to_json(),
        "wallSeconds": run.wall_seconds,
        "summary": {
            "models": len(results),
            "byStatus": {s: status_counts.get(s, 0) for s in STATUSES},
            "byTarget": {t: {s: c.get(s, 0) for s in STATUSES} for t, c in by_target.items()},
            "errorKinds": dict(sorted(kinds.items())),
            "meetExpect": sum(r.get("meetsExpect") is True for r in results),
            "missed": run.missed(),
            "regressions": regressions,
            "resumed": list(run.resumed),
        },
        "models": results,
    }
    if compared is not None:
        doc["summary"]["baseline"] = compared
    validate(doc, "zoo-report", "zoo report")
    return doc


def render_json(doc: dict) -> str:
    return json.dumps(doc, indent=1) + "\n"


# C0 and C1 controls, DEL, the Unicode line and paragraph separators, lone surrogates.
# Bidi controls too (as cli/terminal.py shows them): a user agent's U+202E would reverse
# what a report shows after it ("exe.png" for "gnp.exe").
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
                      r"\ud800-\udfff]")


def printable(text) -> str:
    """`text` with every control character shown as a `\\xNN` (or `\\uNNNN`) escape: a report
    read in a terminal or a browser must not carry an ESC sequence, a NUL, a line break or a
    bidi override from a model's (or a device's) string, and a lone surrogate cannot even be written as UTF-8."""
    def shown(match: re.Match) -> str:
        point = ord(match.group())
        return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"

    return _CONTROL.sub(shown, str(text))


def model_seconds(result: dict) -> float:
    """A model's wall time as the runner saw it (its job's own time if it was resumed)."""
    times = result.get("times") or {}
    return float(times.get("wall", times.get("job", 0.0)))


def describe_worst(result: dict, runtime: str) -> str | None:
    """The worst output on one runtime in words (`name: max abs .., ULP .., cosine ..`), or
    None. The reports give each runtime its own cell: one runtime's failure must not hide
    behind another's number."""
    out = worst_parity(result, runtime)
    if out is None:
        return None
    return (f"{out['name']}: max abs {format_number(out['maxAbs'])}, "
            f"ULP {format_number(out['maxUlp'])}, cosine {format_number(out['cosine'], fixed=6)}")


def describe_runtime(result: dict, runtime: str) -> str | None:
    """What one runtime made of a model: its worst output (`describe_worst`), else the error
    it failed with, else None (it never ran: the model failed before parity)."""
    text = describe_worst(result, runtime)
    if text is not None:
        return text
    for variant in result.get("targets", []):
        entry = variant.get("parity", {}).get(runtime)
        if entry and entry.get("error"):
            return f"failed: {entry['error']}"
    return None


def accuracy_runtimes(doc: dict) -> list[str]:
    """The runtimes that get an accuracy column: every one, in a run with --weights."""
    return list(doc["options"]["runtimes"]) if doc["options"].get("weights") else []


def describe_accuracy(result: dict, runtime: str) -> str | None:
    """What the compressed graph (zoo --weights) cost on one runtime, per target: the verdict,
    the weights' size ratio, the worst cosine and top-1 agreement, or the error; None when it
    was not measured (the model failed before)."""
    variants = result.get("targets", [])
    parts = []
    for v in variants:
        acc = (v.get("accuracy") or {}).get(runtime)
        if acc is None:
            continue
        ratio = (v.get("weights") or {}).get("ratio")
        size = "-" if ratio is None else f"{format_number(ratio, fixed=3)}x"
        if "error" in acc:
            text = f"weights {size}; failed: {acc['error']}"
        else:
            cosines = [o["cosine"] for o in acc["outputs"] if isinstance(o["cosine"], float)]
            top1 = [o["top1"] for o in acc["outputs"] if o["top1"] is not None]
            missed = "".join(f" {c['metric']} of {c['output']} {format_number(c['value'], 10)}"
                             f" against {c['bound']};" for c in acc["checks"]
                             if not c["passed"])
            text = (f"{acc['verdict']}:{missed} weights {size}, cosine "
                    f"{format_number(min(cosines) if cosines else None, fixed=6)}, top-1 "
                    f"{format_number(min(top1) if top1 else None, fixed=4)}")
        parts.append(text if len(variants) == 1 else f"{v['target']}: {text}")
    return "; ".join(parts) or None


def computed_in(result: dict) -> str | None:
    """The float type a result's graphs computed in when it is not float32 (zoo --compute),
    for the row of each report; None for float32 (the default says nothing)."""
    compute = result.get("compute")
    return None if compute in (None, "float32") else str(compute)


def format_number(value, digits: int = 3, fixed: int | None = None) -> str:
    """A report number as people read it: `-` when absent, integers whole, floats in `digits`
    significant digits (or `fixed` decimals, for a cosine), `inf`/`nan` as words."""
    if value is None:
        return "-"
    if isinstance(value, bool) or isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if fixed is not None:
        return f"{value:.{fixed}f}"
    return f"{value:.{digits}g}"
