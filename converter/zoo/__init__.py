"""Model-zoo batch validation: many models, every target, one report.

    from converter.zoo import ZooOptions, run_zoo, build_report, write_reports
    run = run_zoo("models/zoo.json", ZooOptions(jobs=2, targets=["chromium-litert"]),
                  resume=True)    # results kept in the cache: store.default_results_path
    doc = build_report(run)
    write_reports(doc, ["out.html", "out.md"])  # .json, .md or .html by the suffix, atomically
    run.missed()                       # ids whose result is not the manifest's `expect`

Modules: manifest (the model list), files (reading and writing hostile files), job (one
model, in a child process), store (results as JSON lines, for --resume), runner (scheduling
and isolation), lanes (a run on devices: each device's own queue, worked at the same time as
the others), cells (one model on one device, and the model made of its cells), ray_executor
(the same jobs on a Ray cluster), baseline (an earlier run to compare with), report_json /
report_md / report_html (the three views of one report), report_matrix (the model x device
matrix both pages show).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import ConverterError
from .manifest import STATUSES, ZooEntry, ZooManifest, load_manifest
from .report_json import build_report
from .runner import ZooOptions, ZooRun, run_zoo

__all__ = ["STATUSES", "ZooEntry", "ZooManifest", "ZooOptions", "ZooRun", "load_manifest",
           "run_zoo", "build_report", "write_report", "write_reports", "render_report",
           "check_report_suffix", "REPORT_SUFFIXES"]

REPORT_SUFFIXES = (".json", ".md", ".html")


def check_report_suffix(path: str | Path) -> None:
    """Refuse a report file whose suffix names none of the formats."""
    suffix = Path(path).suffix.lower()
    if suffix not in REPORT_SUFFIXES + (".htm",):
        raise ConverterError(f"cannot write a {suffix or 'suffix-less'} report",
                             where=str(path), fix=f"give one of {', '.join(REPORT_SUFFIXES)}")


def render_report(doc: dict, path: str | Path) -> str:
    """A report built by `build_report`, as the text of the format the suffix names."""
    check_report_suffix(path)
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        from .report_json import render_json

        return render_json(doc)
    if suffix == ".md":
        from .report_md import render_markdown

        return render_markdown(doc)
    from .report_html import render_html

    return render_html(doc)


def write_reports(doc: dict, paths: list[str | Path]) -> list[Path]:
    """Write every report, all or none: each is rendered, written to a temporary file beside
    it and made durable, then all are renamed into place. A failure (a full disk) leaves every
    report as it was, no temporary file, and raises one line naming the report it was
    writing."""
    from ..formats._files import AtomicSave

    texts = [(Path(p), render_report(doc, p)) for p in paths]  # every error before any write
    with AtomicSave() as save:
        for path, text in texts:
            save.write_text(path, text)
        return save.commit()


def write_report(doc: dict, path: str | Path) -> Path:
    """Write one report (atomically, see `write_reports`)."""
    return write_reports(doc, [path])[0]
