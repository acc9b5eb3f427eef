"""Model-zoo batch validation: many models, every target, one report.

    from converter.zoo import ZooOptions, run_zoo, build_report, write_report
    run = run_zoo("models/zoo.json", ZooOptions(jobs=2, targets=["chromium-litert"]),
                  resume=True)    # results kept in the cache: store.default_results_path
    doc = build_report(run)
    write_report(doc, "out.html")      # .json, .md or .html by the suffix
    run.regressions()                  # ids whose status differs from the manifest's `expect`

Modules: manifest (the model list), job (one model, in a child process), store (results as
JSON lines, for --resume), runner (scheduling and isolation), ray_executor (the same jobs on a
Ray cluster), report_json / report_md / report_html (the three views of one report).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import ConverterError
from .manifest import STATUSES, ZooEntry, ZooManifest, load_manifest
from .report_json import build_report, write_json
from .runner import ZooOptions, ZooRun, run_zoo

__all__ = ["STATUSES", "ZooEntry", "ZooManifest", "ZooOptions", "ZooRun", "load_manifest",
           "run_zoo", "build_report", "write_report", "REPORT_SUFFIXES"]

REPORT_SUFFIXES = (".json", ".md", ".html")


def write_report(doc: dict, path: str | Path) -> Path:
    """Write a report built by `build_report` in the format the suffix names."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        return write_json(doc, path)
    if suffix == ".md":
        from .report_md import write_markdown

        return write_markdown(doc, path)
    if suffix in (".html", ".htm"):
        from .report_html import write_html

        return write_html(doc, path)
    raise ConverterError(f"cannot write a {suffix or 'suffix-less'} report", where=str(path),
                         fix=f"give one of {', '.join(REPORT_SUFFIXES)}")
