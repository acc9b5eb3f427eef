"""The zoo report as a Markdown page: a summary, one table row per model, the model x device
matrix of a run on devices, then what failed.

    render_markdown(build_report(run))   # the page's text; converter.zoo.write_reports
                                         # writes it

Every string that comes from a manifest, a model, a runtime, a results file or a baseline
(ids, paths, target names, output names, error messages, reasons) is hostile: people publish
this page through mkdocs, pandoc and previews that pass raw HTML. So each such string is
written as a code span (`code`), which no Markdown renderer reads HTML or links in, and made
inert even for one that did: control characters (ESC, newlines, NUL) are shown as `\\xNN`
escapes, `<`, `>` and `&` are HTML-escaped, the span's fence is longer than any run of
backticks inside, and in a table `|` is escaped so that it cannot end the cell. Only our own
words and numbers are written as they are.
"""
from __future__ import annotations

import html
import re

from .manifest import STATUSES
from .report_json import (accuracy_runtimes, computed_in, describe_accuracy,
                          describe_runtime, format_number, model_seconds, printable)

__all__ = ["render_markdown", "code", "table_header"]

_BACKTICKS = re.compile(r"`+")


def code(text, table: bool = False) -> str:
    """`text` as an inert Markdown code span (see the module doc); `table` for a table cell."""
    text = html.escape(printable(text), quote=False)
    if not text:
        return '""'  # a code span cannot be empty
    fence = "`" * (1 + max((len(run) for run in _BACKTICKS.findall(text)), default=0))
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") or not text else ""
    span = f"{fence}{pad}{text}{pad}{fence}"  # a space keeps a backtick off the fence
    return span.replace("|", "\\|") if table else span


def table_header(runtimes: list[str], measured: list[str] = ()) -> tuple[str, ...]:
    """The model table's columns: one worst-output column per runtime, and with --weights
    one accuracy column per runtime (`measured`)."""
    return ("model", "status", "expected", "targets",
            *(f"worst on {runtime}" for runtime in runtimes),
            *(f"accuracy on {runtime}" for runtime in measured),
            "ops", "transposes", "convert s", "wall s")


def _accuracy(result: dict, runtime: str) -> str:
    text = describe_accuracy(result, runtime)
    return "-" if text is None else code(text, table=True)


def _compression(options: dict) -> str:
    """The run's --weights and the bounds its accuracy is judged by, for the header line."""
    if not options.get("weights"):
        return ""
    bounds = options.get("accuracy")
    return (f"; weights {code(options['weights'])}, accuracy over {options['samples']} "
            f"samples, bounds {code(bounds) if bounds else 'the scheme default'}")


def _status(status) -> str:
    """A status: ours (the report schema holds it to the six) as a word, else a code span."""
    return status if status in STATUSES else code(status)


def _targets(result: dict) -> str:
    parts = []
    for v in result.get("targets", []):
        check = v.get("check")
        extra = f" ({check['violations']} violations)" if check and not check["passed"] else ""
        parts.append(f"{code(v['target'], table=True)}: {_status(v['status'])}{extra}")
    compute = computed_in(result)
    if compute is not None:
        parts.append(f"compute {code(compute, table=True)}")
    return "; ".join(parts) or "-"


def _runtime(result: dict, runtime: str) -> str:
    text = describe_runtime(result, runtime)
    return "-" if text is None else code(text, table=True)


def _expected(result: dict) -> str:
    if result.get("expect") is None:
        return "-"
    return f"{_status(result['expect'])} ({'met' if result['meetsExpect'] else 'MISSED'})"


def _value(value) -> str:
    """A baseline's before/after: a number as a number, anything else as a code span."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return format_number(value)
    return _status(value) if isinstance(value, str) else code(value)


def _baseline(base: dict | None) -> list[str]:
    if base is None:
        return []
    lines = ["", f"Compared with {code(base['path'])}: {len(base['changes'])} changes (status, "
                 f"or worst error grown more than x{format_number(base['errorGrowth'])})."]
    for c in base["changes"]:
        if c["kind"] == "status":
            lines.append(f"- {code(c['id'])}: was {_value(c['before'])}, now "
                         f"{_value(c['after'])}")
        else:
            lines.append(f"- {code(c['id'])}: worst error {_value(c['before'])} -> "
                         f"{_value(c['after'])} (x{_value(c['factor'])})")
    return lines


def _ids(ids: list[str]) -> str:
    return ", ".join(code(i) for i in ids) or "none"


def _matrix(doc: dict) -> list[str]:
    """The model x device matrix of a device run: a table of where each column ran (device,
    browser, platform, deviceType, user agent), then one row per model; every device's and
    model's string a code span (whoever opened the page chose them)."""
    from .report_matrix import cell_lines, cell_of, matrix_columns

    columns = matrix_columns(doc)
    if not columns:
        return []
    lines = ["", "## Model x device", "",
             "| column | device | browser | platform | deviceType | user agent |",
             "| --- | --- | --- | --- | --- | --- |"]
    for runtime, where in columns:
        lines.append("| " + " | ".join(
            "-" if value is None else code(value, table=True)
            for value in (runtime, where.get("name"), where.get("browser"),
                          where.get("platform"), where.get("deviceType"),
                          where.get("userAgent"))) + " |")
    lines += ["", "| model | " + " | ".join(code(r, table=True) for r, _ in columns) + " |",
              "| --- | " + " | ".join("---" for _ in columns) + " |"]
    for model in doc["models"]:
        cells = []
        for runtime, _ in columns:
            cell = cell_of(model, runtime)
            if cell is None:
                cells.append("-")
                continue
            verdict, details = cell_lines(cell)
            cells.append("; ".join([_verdict(verdict)]
                                   + [code(line, table=True) for line in details]))
        lines.append(f"| {code(model['id'], table=True)} | " + " | ".join(cells) + " |")
    return lines


def _verdict(verdict) -> str:
    return "**device lost**" if verdict == "device lost" else _status(verdict)


def render_markdown(doc: dict) -> str:
    s, options = doc["summary"], doc["options"]
    measured = accuracy_runtimes(doc)
    header = table_header(options["runtimes"], measured)
    lines = [f"# Model zoo: {s['models']} models", "",
             f"Manifest {code(doc['manifest'])}, converter {code(doc['converterVersion'])}, "
             f"{options['jobs']} jobs, {doc['wallSeconds']:.1f} s wall; targets: "
             f"{', '.join(code(t) for t in options['targets']) or 'none'}; runtimes: "
             f"{', '.join(code(r) for r in options['runtimes'])}; compute "
             f"{code(options.get('compute', 'float32'))}{_compression(options)}.", "",
             "| status | models |", "| --- | ---: |"]
    lines += [f"| {status} | {s['byStatus'][status]} |" for status in STATUSES]
    lines += ["", f"{s['meetExpect']} of {s['models']} meet their expected outcome; "
                  f"missed: {_ids(s['missed'])}."]
    if "baseline" in s:
        lines.append(f"Regressed since the baseline: {_ids(s['regressions'])}.")
    if s["resumed"]:
        lines.append(f"Taken from an earlier run (--resume): {len(s['resumed'])}.")
    lines += _baseline(s.get("baseline"))
    lines += ["", "| " + " | ".join(header) + " |",
              "| " + " | ".join("---:" if h.endswith(" s") or h in ("ops", "transposes")
                                else "---" for h in header) + " |"]
    for r in doc["models"]:
        row = (code(r["id"], table=True), _status(r["status"]), _expected(r), _targets(r),
               *(_runtime(r, runtime) for runtime in options["runtimes"]),
               *(_accuracy(r, runtime) for runtime in measured),
               format_number(r["ops"]), format_number(r["transposes"]),
               f"{r['times'].get('convert', 0.0):.2f}", f"{model_seconds(r):.2f}")
        lines.append("| " + " | ".join(row) + " |")
    lines += _matrix(doc)
    failed = [r for r in doc["models"] if r["status"] != "verified"]
    if failed:
        lines += ["", "## Not verified", ""]
        for r in failed:
            error = r.get("error") or {}
            lines.append(f"- {code(r['id'])} ({_status(r['status'])}"
                         f"{', ' + code(error['kind']) if error else ''}): "
                         f"{code(error.get('message', ''))}")
            lines += [f"  - {code(item)}" for item in r.get("unsupported", [])]
            for v in r.get("targets", []):
                if v.get("check") and not v["check"]["passed"]:
                    lines += [f"  - {code(reason)}" for reason in v["check"]["reasons"]]
    return "\n".join(lines) + "\n"
