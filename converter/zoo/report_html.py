"""The zoo report as one self-contained HTML page: a summary, three charts, the model x device
matrix of a run on devices, the model table.

    render_html(build_report(run))    # the page's text; converter.zoo.write_reports writes it

The charts (status per target, error kinds, wall time per model) are inline SVG drawn here and
the style is inline CSS: the page loads nothing, so it renders offline and can be attached to
a CI run as a single file.
"""
from __future__ import annotations

import html

from .manifest import STATUSES
from .report_json import (accuracy_runtimes, computed_in, describe_accuracy, describe_runtime,
                          format_number, model_seconds, printable)

__all__ = ["render_html", "STATUS_COLOURS", "kind_colours", "matrix_section"]

STATUS_COLOURS = {"verified": "#2e7d32", "mismatch": "#f9a825", "unsupported": "#757575",
                  "error": "#c62828", "timeout": "#6a1b9a", "crash": "#000000"}
LOST_COLOUR = "#ad1457"  # a matrix cell whose device went away
_NEUTRAL = "#546e7a"  # bars that stand for no one status
_BAR_H, _GAP, _LABEL_W, _PLOT_W = 22, 8, 190, 460

_STYLE = """
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;
 max-width:1180px;padding:0 1rem;color:#1b1b1b;background:#fafafa}
h1{font-size:1.6rem;margin-bottom:.2rem} h2{font-size:1.2rem;margin-top:2rem}
.meta{color:#555;margin-top:0}
.cards{display:flex;flex-wrap:wrap;gap:.6rem;margin:1rem 0}
.card{background:#fff;border:1px solid #ddd;border-radius:8px;padding:.6rem 1rem;min-width:7rem}
.card b{display:block;font-size:1.5rem}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:1rem}
figure{background:#fff;border:1px solid #ddd;border-radius:8px;margin:0;padding:.8rem}
figcaption{font-weight:600;margin-bottom:.4rem}
svg text{font:12px system-ui,sans-serif;fill:#222}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}
th,td{border-bottom:1px solid #e3e3e3;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#f0f0f0;position:sticky;top:0} td.num{text-align:right;font-variant-numeric:tabular-nums}
.status{color:#fff;border-radius:4px;padding:0 .4rem;white-space:nowrap}
.regressed{color:#c62828;font-weight:600} .ok{color:#2e7d32}
.legend span{margin-right:.8rem;white-space:nowrap}
.legend i{display:inline-block;width:.8rem;height:.8rem;margin-right:.25rem;vertical-align:-1px}
details{margin:.2rem 0} code{font-size:12px}
th[data-sort]{cursor:pointer} th[data-sort]::after{content:" \\2195";color:#999}
.filters{margin:.5rem 0} .filters input,.filters select{font:inherit;margin-right:.6rem}
#matrix td{white-space:normal} #matrix small{color:#555;display:block}
"""

# Sorting (click a header; again to reverse) and filtering (text and status) of the model
# table. Inline so the page stays one offline file; cells sort by their data-v when they have
# one (numbers), else by their text.
_TABLE_SCRIPT = """
const table = document.getElementById('models'), body = table.tBodies[0];
const rows = Array.from(body.rows), text = document.getElementById('filter-text'),
      status = document.getElementById('filter-status');
function key(row, i) {
  const cell = row.cells[i], v = cell.dataset.v;
  return v === undefined ? cell.textContent.trim().toLowerCase() : parseFloat(v);
}
table.querySelectorAll('th[data-sort]').forEach(th => th.addEventListener('click', () => {
  const i = th.cellIndex, down = th.dataset.dir !== 'asc';
  th.dataset.dir = down ? 'asc' : 'desc';
  rows.sort((a, b) => { const x = key(a, i), y = key(b, i);
    return (x < y ? -1 : x > y ? 1 : 0) * (down ? 1 : -1); });
  rows.forEach(r => body.appendChild(r));
}));
function filter() {
  const t = text.value.trim().toLowerCase(), s = status.value;
  rows.forEach(r => { r.hidden = (s && r.dataset.status !== s) ||
                                 (t && !r.textContent.toLowerCase().includes(t)); });
}
text.addEventListener('input', filter); status.addEventListener('change', filter);
"""


def escape(text) -> str:
    """Any string for HTML text or a quoted attribute: control characters shown as escapes
    (report_json.printable), then HTML-escaped."""
    return html.escape(printable(text), quote=True)


def _badge(status: str) -> str:
    return (f'<span class="status" style="background:{STATUS_COLOURS[status]}">'
            f'{escape(status)}</span>')


def _legend() -> str:
    return '<div class="legend">' + "".join(
        f'<span><i style="background:{c}"></i>{s}</span>' for s, c in STATUS_COLOURS.items()
    ) + "</div>"


def _svg(height: int, body: list[str], label: str) -> str:
    width = _LABEL_W + _PLOT_W + 70
    return (f'<svg role="img" aria-label="{escape(label)}" viewBox="0 0 {width} {height}" '
            f'width="100%" style="max-width:{width}px" xmlns="http://www.w3.org/2000/svg">'
            + "".join(body) + "</svg>")


def status_chart(by_target: dict[str, dict[str, int]]) -> str:
    """One stacked bar per target: how many models ended in each status."""
    body, y = [], _GAP
    for target, counts in by_target.items():
        total = sum(counts.values()) or 1
        x = _LABEL_W
        body.append(f'<text x="{_LABEL_W - 6}" y="{y + 15}" text-anchor="end">'
                    f'{escape(target)}</text>')
        for status in STATUSES:
            n = counts.get(status, 0)
            if not n:
                continue
            w = _PLOT_W * n / total
            body.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{_BAR_H}" '
                        f'fill="{STATUS_COLOURS[status]}"><title>{escape(target)}: {n} '
                        f'{status}</title></rect>')
            if w >= 18:
                body.append(f'<text x="{x + w / 2:.1f}" y="{y + 15}" text-anchor="middle" '
                            f'style="fill:#fff">{n}</text>')
            x += w
        body.append(f'<text x="{_LABEL_W + _PLOT_W + 6}" y="{y + 15}">{total}</text>')
        y += _BAR_H + _GAP
    return _svg(y, body, "status per target")


def bar_chart(items: list[tuple[str, float]], unit: str, label: str,
              colour: str | dict[str, str] = "#1565c0") -> str:
    """Horizontal bars, one per (name, value), scaled to the largest value; `colour` one for
    all bars or one per name."""
    if not items:
        return f"<p>No {escape(label)}.</p>"
    top = max(v for _, v in items) or 1.0
    body, y = [], _GAP
    for name, value in items:
        w = max(_PLOT_W * value / top, 1.0)
        body.append(f'<text x="{_LABEL_W - 6}" y="{y + 15}" text-anchor="end">'
                    f'{escape(name if len(name) <= 26 else name[:25] + "…")}</text>')
        fill = colour if isinstance(colour, str) else colour[name]
        body.append(f'<rect x="{_LABEL_W}" y="{y}" width="{w:.1f}" height="{_BAR_H}" '
                    f'fill="{fill}"><title>{escape(name)}: {value:g} {unit}</title></rect>')
        body.append(f'<text x="{_LABEL_W + w + 4:.1f}" y="{y + 15}">{value:g}{unit}</text>')
        y += _BAR_H + _GAP
    return _svg(y, body, label)


def kind_colours(models: list[dict]) -> dict[str, str]:
    """Each error kind in the colour of the status its models ended in (one colour per status
    everywhere on the page: an `unsupported` kind is the unsupported grey, never the error red);
    a kind shared by models of several statuses gets a neutral colour."""
    statuses: dict[str, set[str]] = {}
    for r in models:
        kinds = [r["error"]["kind"]] if r.get("error") else \
            [v["error"]["kind"] for v in r.get("targets", []) if v.get("error")]
        for kind in kinds:
            statuses.setdefault(kind, set()).add(r["status"])
    return {kind: STATUS_COLOURS[next(iter(s))] if len(s) == 1 else _NEUTRAL
            for kind, s in statuses.items()}


def _targets_cell(result: dict) -> str:
    parts = []
    for v in result.get("targets", []):
        check = v.get("check")
        extra = ""
        if check and not check["passed"]:
            reasons = "".join(f"<li><code>{escape(r)}</code></li>" for r in check["reasons"])
            extra = (f"<details><summary>{check['violations']} violations</summary>"
                     f"<ul>{reasons}</ul></details>")
        parts.append(f"{escape(v['target'])}: {_badge(v['status'])}{extra}")
    compute = computed_in(result)
    if compute is not None:
        parts.append(f"compute {escape(compute)}")
    return "<br>".join(parts) or "-"


def _runtime_cell(result: dict, runtime: str) -> str:
    text = describe_runtime(result, runtime)
    cell = escape(text) if text else "-"
    for variant in result.get("targets", []):  # a device's own record: built, ran, times
        done = (variant.get("parity", {}).get(runtime) or {}).get("device")
        if done:
            cell += "<br>" + escape(_device_line(done))
    return cell


def _device_line(done: dict) -> str:
    if not done.get("built"):
        return "not built"
    line = "built" + (f" in {format_number(done['buildMs'])} ms" if done.get("buildMs") is not
                      None else "")
    if not done.get("ran"):
        return line + ", did not run"
    return line + ", ran" + (f" in {format_number(done['runMs'])} ms" if done.get("runMs") is
                             not None else "")


def matrix_section(doc: dict) -> str:
    """The model x device matrix of a device run (report_matrix), or nothing. The column
    heads name each device (its user agent in the tooltip); every device's and model's
    string is escaped: whoever opened the page chose them."""
    from .report_matrix import cell_lines, cell_of, matrix_columns, where_line

    columns = matrix_columns(doc)
    if not columns:
        return ""
    heads = "".join(f'<th title="{escape(where.get("userAgent") or "")}">{escape(runtime)}'
                    f"<small>{escape(where_line(where))}</small></th>"
                    for runtime, where in columns)
    rows = []
    for model in doc["models"]:
        tds = []
        for runtime, _ in columns:
            cell = cell_of(model, runtime)
            if cell is None:
                tds.append("<td>-</td>")
                continue
            verdict, lines = cell_lines(cell)
            colour = STATUS_COLOURS.get(verdict, LOST_COLOUR)
            tds.append(f'<td><span class="status" style="background:{colour}">'
                       f"{escape(verdict)}</span>"
                       + "".join(f"<small>{escape(line)}</small>" for line in lines) + "</td>")
        rows.append(f"<tr><td>{escape(model['id'])}</td>{''.join(tds)}</tr>")
    agents = "".join(f"<li><code>{escape(where_line(where))}</code>: user agent "
                     f"<code>{escape(where.get('userAgent'))}</code></li>"
                     for _, where in columns if where.get("userAgent"))
    return (f'<h2>Model &times; device</h2>\n<table id="matrix"><thead><tr><th>model</th>'
            f"{heads}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            + (f"<ul>{agents}</ul>" if agents else ""))


def _detail_cell(result: dict) -> str:
    error = result.get("error")
    if not error:
        return ""
    items = "".join(f"<li><code>{escape(i)}</code></li>" for i in result.get("unsupported", []))
    body = f"<ul>{items}</ul>" if items else ""
    return (f"<details><summary>{escape(error['kind'])}</summary>"
            f"<code>{escape(error['message'])}</code>{body}</details>")


def _expect_cell(result: dict) -> str:
    if result.get("expect") is None:
        return "-"
    if result.get("meetsExpect"):
        return f'<span class="ok">{escape(result["expect"])} &#10003;</span>'
    return f'<span class="regressed">{escape(result["expect"])}: missed</span>'


def _num_cell(value, decimals: int | None = None) -> str:
    """A right-aligned number cell that sorts by value (absent values sort first)."""
    if value is None:
        return '<td class=num data-v="-1">-</td>'
    shown = f"{value:.{decimals}f}" if decimals is not None else format_number(value)
    return f'<td class=num data-v="{float(value)!r}">{shown}</td>'


def _baseline_cell(changes: list[dict] | None, summary: dict) -> str:
    if "baseline" not in summary:
        return "-"
    if not changes:
        return '<span class="ok">unchanged</span>'
    parts = []
    for c in changes:
        if c["kind"] == "status":
            parts.append(f"was {_badge(c['before'])}" if c["before"] in STATUS_COLOURS
                         else f"was {escape(str(c['before']))}")
        else:
            parts.append(f"worst error {format_number(c['before'])} &rarr; "
                         f"{format_number(c['after'])} (&times;{format_number(c['factor'])})")
    return '<span class="regressed">' + "<br>".join(parts) + "</span>"


def _baseline_line(summary: dict) -> str:
    base = summary.get("baseline")
    if base is None:
        return ""
    return (f'<p class="meta">Compared with <code>{escape(base["path"])}</code>: '
            f'{len(base["changes"])} changes (status, or worst error grown more than '
            f'&times;{format_number(base["errorGrowth"])}).</p>')


def _outcome_lines(summary: dict) -> str:
    """Which models missed their expectation; with a baseline, which regressed against it."""
    lines = []
    for label, ids, anchor in (("Missed", summary["missed"], "missed"),
                               ("Regressed", summary["regressions"], "regressions")):
        if anchor == "regressions" and "baseline" not in summary:
            continue  # nothing regresses without an earlier run to compare with
        names = ", ".join(escape(i) for i in ids) or "none"
        lines.append(f'<p id="{anchor}">{label}: <span class="{"regressed" if ids else "ok"}">'
                     f"{names}</span></p>")
    return "\n".join(lines)


def _compression(options: dict) -> str:
    """The run's --weights and the bounds its accuracy is judged by, for the header line."""
    if not options.get("weights"):
        return ""
    return (f" &middot; weights {escape(options['weights'])}, accuracy over "
            f"{escape(options['samples'])} samples, bounds "
            f"{escape(options.get('accuracy') or 'the scheme default')}")


def render_html(doc: dict) -> str:
    s, options = doc["summary"], doc["options"]
    cards = [("models", s["models"])] + [(st, s["byStatus"][st]) for st in STATUSES] + \
        [("meet expected", s["meetExpect"]), ("missed", len(s["missed"]))] + \
        ([("regressed", len(s["regressions"]))] if "baseline" in s else [])
    card_html = "".join(f'<div class="card"><b>{format_number(v)}</b>{escape(k)}</div>'
                        for k, v in cards)
    times = sorted(((r["id"], round(model_seconds(r), 2)) for r in doc["models"]),
                   key=lambda t: -t[1])
    changes: dict[str, list[dict]] = {}
    for c in s.get("baseline", {}).get("changes", []):
        changes.setdefault(c["id"], []).append(c)
    rows = []
    measured = accuracy_runtimes(doc)
    for r in doc["models"]:
        rows.append(
            f'<tr data-status="{escape(r["status"])}"><td>{escape(r["id"])}</td>'
            f'<td>{_badge(r["status"])}</td>'
            f"<td>{_expect_cell(r)}</td><td>{_baseline_cell(changes.get(r['id']), s)}</td>"
            f"<td>{_targets_cell(r)}</td>"
            + "".join(f"<td>{_runtime_cell(r, rt)}</td>" for rt in options["runtimes"])
            + "".join(f"<td>{escape(describe_accuracy(r, rt) or '-')}</td>"
                      for rt in measured) +
            f"{_num_cell(r['ops'])}{_num_cell(r['transposes'])}"
            f"{_num_cell(r['times'].get('convert', 0.0), 2)}{_num_cell(model_seconds(r), 2)}"
            f"<td>{_detail_cell(r)}</td></tr>")
    outcome = _outcome_lines(s)
    runtime_heads = "".join(f"<th data-sort>worst on {escape(rt)}</th>"
                            for rt in options["runtimes"]) + \
        "".join(f"<th data-sort>accuracy on {escape(rt)}</th>" for rt in measured)
    status_options = "".join(f'<option value="{st}">{st}</option>' for st in STATUSES)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Model zoo report: {s['models']} models</title><style>{_STYLE}</style></head>
<body>
<h1>Model zoo report</h1>
<p class="meta">Manifest <code>{escape(doc['manifest'])}</code> &middot; converter
{escape(doc['converterVersion'])} &middot; {options['jobs']} jobs ({escape(options['executor'])})
&middot; {doc['wallSeconds']:,.1f} s wall &middot; targets:
{escape(', '.join(options['targets']) or 'none')} &middot; runtimes:
{escape(', '.join(options['runtimes']))} &middot; compute
{escape(options.get('compute', 'float32'))}{_compression(options)}</p>
<div class="cards">{card_html}</div>
{_baseline_line(s)}
{outcome}
<div class="charts">
<figure><figcaption>Status per target</figcaption>{status_chart(s['byTarget'])}{_legend()}</figure>
<figure><figcaption>Error kinds</figcaption>{bar_chart(sorted(s['errorKinds'].items(),
    key=lambda kv: -kv[1]), "", "error kinds", kind_colours(doc["models"]))}</figure>
<figure><figcaption>Wall time per model (s)</figcaption>{bar_chart(times, " s",
    "time per model")}</figure>
</div>
{matrix_section(doc)}
<h2>Models</h2>
<div class="filters"><label>Filter <input id="filter-text" type="search"
placeholder="model, target, error..."></label><label>Status <select id="filter-status">
<option value="">all</option>{status_options}</select></label></div>
<table id="models"><thead><tr><th data-sort>model</th><th data-sort>status</th>
<th data-sort>expected</th><th data-sort>since baseline</th><th>targets</th>
{runtime_heads}<th data-sort>ops</th><th data-sort>transposes</th>
<th data-sort>convert s</th><th data-sort>wall s</th><th>details</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table>
<script>{_TABLE_SCRIPT}</script>
</body></html>
"""
