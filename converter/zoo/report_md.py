"""The zoo report as a Markdown page: a summary, one table row per model, then what failed.

    write_markdown(build_report(run), "out.md")
"""
from __future__ import annotations

from pathlib import Path

from .manifest import STATUSES
from .report_json import describe_worst, format_number, model_seconds

__all__ = ["render_markdown", "write_markdown", "TABLE_HEADER"]

TABLE_HEADER = ("model", "status", "expected", "targets", "worst output", "ops", "transposes",
                "convert s", "wall s")


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _targets(result: dict) -> str:
    parts = []
    for v in result.get("targets", []):
        check = v.get("check")
        extra = f" ({check['violations']} violations)" if check and not check["passed"] else ""
        parts.append(f"{v['target']}: {v['status']}{extra}")
    return "; ".join(parts) or "-"


def _worst(result: dict) -> str:
    return describe_worst(result) or "-"


def _expected(result: dict) -> str:
    if result.get("expect") is None:
        return "-"
    return f"{result['expect']} ({'met' if result['meetsExpect'] else 'REGRESSED'})"


def _baseline(base: dict | None) -> list[str]:
    if base is None:
        return []
    lines = ["", f"Compared with `{base['path']}`: {len(base['changes'])} changes (status, or "
                 f"worst error grown more than x{format_number(base['errorGrowth'])})."]
    for c in base["changes"]:
        if c["kind"] == "status":
            lines.append(f"- **{c['id']}**: was {c['before']}, now {c['after']}")
        else:
            lines.append(f"- **{c['id']}**: worst error {format_number(c['before'])} -> "
                         f"{format_number(c['after'])} (x{format_number(c['factor'])})")
    return lines


def render_markdown(doc: dict) -> str:
    s = doc["summary"]
    lines = [f"# Model zoo: {s['models']} models", "",
             f"Manifest `{doc['manifest']}`, converter {doc['converterVersion']}, "
             f"{doc['options']['jobs']} jobs, {doc['wallSeconds']:.1f} s wall; targets: "
             f"{', '.join(doc['options']['targets']) or 'none'}; runtimes: "
             f"{', '.join(doc['options']['runtimes'])}.", "",
             "| status | models |", "| --- | ---: |"]
    lines += [f"| {status} | {s['byStatus'][status]} |" for status in STATUSES]
    lines += ["", f"{s['meetExpect']} of {s['models']} meet their expected outcome; "
                  f"regressed: {', '.join(s['regressions']) or 'none'}."]
    if s["resumed"]:
        lines.append(f"Taken from an earlier run (--resume): {len(s['resumed'])}.")
    lines += _baseline(s.get("baseline"))
    lines += ["", "| " + " | ".join(TABLE_HEADER) + " |",
              "| " + " | ".join("---:" if h.endswith(" s") or h in ("ops", "transposes")
                                else "---" for h in TABLE_HEADER) + " |"]
    for r in doc["models"]:
        row = (r["id"], r["status"], _expected(r), _targets(r), _worst(r),
               format_number(r["ops"]), format_number(r["transposes"]),
               f"{r['times'].get('convert', 0.0):.2f}", f"{model_seconds(r):.2f}")
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    failed = [r for r in doc["models"] if r["status"] != "verified"]
    if failed:
        lines += ["", "## Not verified", ""]
        for r in failed:
            message = r["error"]["message"] if r.get("error") else ""
            lines.append(f"- **{r['id']}** ({r['status']}"
                         f"{', ' + r['error']['kind'] if r.get('error') else ''}): "
                         f"{_cell(message)}")
            lines += [f"  - {_cell(item)}" for item in r.get("unsupported", [])]
            for v in r.get("targets", []):
                if v.get("check") and not v["check"]["passed"]:
                    lines += [f"  - {_cell(reason)}" for reason in v["check"]["reasons"]]
    return "\n".join(lines) + "\n"


def write_markdown(doc: dict, path: str | Path) -> Path:
    path = Path(path)
    path.write_text(render_markdown(doc), encoding="utf-8")
    return path
