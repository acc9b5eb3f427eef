"""A verify report as text: the tables and lines `webnn-convert verify` prints, which
`print(report)` prints too (the CLI adds terminal escaping, colour and rich tables)."""
from __future__ import annotations

from typing import Sequence

__all__ = ["BISECT_HINT", "COLUMNS", "table_runs", "note_lines", "report_lines",
           "aligned_lines", "summary"]

BISECT_HINT = ("run `webnn-convert verify --bisect` to find the first operation that leaves "
               "its budget (`--dump DIR` writes it as a .webnn with its inputs)")

COLUMNS = ("output", "shape", "max abs", "max rel", "max ULP", "cosine", "worst at", "result")


def table_runs(report) -> list[tuple[str, list[tuple[str, ...]]]]:
    """(title, rows) per comparison: the graph's runtime, then each further opinion."""
    runs = [(f"{report.graph_runtime} vs {report.source_runtime}", report.outputs)]
    runs += [(f"{label} vs {report.source_runtime}", results)
             for label, results in report.others.items()]
    return [(title, [_row(o) for o in results]) for title, results in runs]


def _row(o) -> tuple[str, ...]:
    return (o.name, str(o.shape), f"{o.max_abs:.3g}", f"{o.max_rel:.3g}",
            "-" if o.max_ulp is None else str(o.max_ulp),
            "-" if o.cosine is None else f"{o.cosine:.6f}",
            "-" if o.worst_index is None else str(o.worst_index),
            "pass" if o.passed else f"FAIL: {o.reason}")


def note_lines(report) -> list[str]:
    """The lines under the tables: oracle figures, inputs, layouts, seed and bounds, warnings
    (each starting "warning: "), the verdict ("pass" or "mismatch") and, on a mismatch, a hint."""
    from .notes import bounds_in_words

    lines = []
    for o in report.outputs:  # the verdict against the float64 oracle, when it was computed
        figures = []
        if "sourceVsF64" in o.extra:
            figures.append(f"source vs f64 {o.extra['sourceVsF64']:.3g}, webnn vs f64 "
                           f"{o.extra['webnnVsF64']:.3g}")
        if "sourceNoise" in o.extra:
            figures.append(f"source's own spread {o.extra['sourceNoise']:.3g} "
                           f"({o.extra['sourceNoiseFrom']})")
        if "sourceF64VsF64" in o.extra:
            figures.append(f"source in float64 vs f64 {o.extra['sourceF64VsF64']:.3g}")
        if figures or o.rule.endswith("normwise"):
            rule = (f"normwise {o.norm_error:.3g} <= {o.norm_bound:.3g} replaces cosine; "
                    if o.rule.endswith("normwise") else "")
            lines.append(f"{o.name}: {rule}{'; '.join(figures)}")
        if "decidedBy" in o.extra:
            lines.append(f"  decided by: {o.extra['decidedBy']}")
    if report.dropped:
        lines.append("not compared (empty, so not in the graph: WebNN has no empty tensors): "
                     + ", ".join(f"{d['name']} {d['shape']}" for d in report.dropped))
    made = "; ".join(f"{name} {d.get('made', d.get('range'))}"
                     for name, d in report.inputs.items())
    lines.append(f"inputs: {made}")
    for side, table in report.permuted.items():
        for name, perm in table.items():
            lines.append(f"layout: the graph's {side[:-1]} '{name}' is the source's transposed "
                         f"by {perm}; " + ("made in the source's layout, transposed for the "
                                           "graph" if side == "inputs" else
                                           "transposed back before comparison"))
    bounds = "; ".join(f"{o.name} {bounds_in_words(o.bounds)}" for o in report.outputs)
    lines.append(f"seed {report.seed}; bounds: {bounds}; {report.session_options}")
    if report.oracle:
        lines.append(f"float64 oracle: {report.oracle}; source in float64: {report.source_f64}")
    lines += [f"warning: {warning}" for warning in report.warnings]
    lines.append("pass" if report.passed else "mismatch")
    if not report.passed:
        lines.append(f"hint: {BISECT_HINT}")
    return lines


def aligned_lines(columns: Sequence[str], rows: Sequence[Sequence[str]],
                  title: str | None = None) -> list[str]:
    """A table as plain text: the title, then the header and rows in aligned columns."""
    widths = [max([len(name), *(len(row[i]) for row in rows)]) for i, name in enumerate(columns)]
    lines = [title] if title else []
    for row in [list(columns), *rows]:
        cells = [cell.ljust(w) for cell, w in zip(row[:-1], widths)] + [row[-1]]
        lines.append("  ".join(cells).rstrip())
    return lines


def report_lines(report) -> list[str]:
    """Everything `webnn-convert verify` prints for `report` when its output is piped."""
    lines = []
    for title, rows in table_runs(report):
        lines += aligned_lines(COLUMNS, rows, title)
    return lines + note_lines(report)


def summary(report) -> str:
    """One line: the verdict, how many outputs, and the worst error."""
    results = [*report.outputs, *(o for rs in report.others.values() for o in rs)]
    failed = sum(not o.passed for o in results)
    worst = max(results, key=lambda o: o.max_abs, default=None)
    verdict = "passed" if report.passed else f"mismatch ({failed} failed)"
    worst_text = "" if worst is None else f", worst max abs {worst.max_abs:.3g} ({worst.name})"
    return (f"<VerifyReport {verdict}: {len(report.outputs)} output"
            f"{'s' * (len(report.outputs) != 1)}{worst_text}; {report.source} vs "
            f"{report.graph_runtime}>")
