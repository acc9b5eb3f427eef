"""`webnn-convert zoo MANIFEST`: validate a collection of models, each in its own process."""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import click

from converter.errors import ConverterError
from converter.zoo import REPORT_SUFFIXES, STATUSES, ZooOptions, build_report, \
    check_report_suffix, load_manifest, run_zoo, write_reports
from converter.zoo.baseline import DEFAULT_GROWTH, load_baseline
from converter.zoo.files import check_outputs
from converter.zoo.job import MODEL_FILE
from converter.zoo.report_json import format_number
from converter.zoo.runner import EXECUTORS
from converter.zoo.store import default_results_path

from ..numbers import Choice, Decimal, Integer
from ..options import use
from ..terminal import echo, echo_json, echo_lines, shortened, shown


@click.command("zoo")
@click.argument("manifest", type=click.Path(dir_okay=False))
@click.option("--jobs", "-j", type=Integer(min=1), default=1, show_default=True,
              help="How many models run at the same time (one process each; each model's "
                   "runtimes get that share of the cores unless WEBNN_CONVERTER_THREADS "
                   "says otherwise). On devices: how many ort jobs at a time; each device, "
                   "and chromium, runs one at a time.")
@click.option("--timeout", type=Decimal(min=0, min_open=True), default=600.0,
              show_default=True, help="Seconds a model may take, fetching and hashing its "
                                      "file included; then its process is killed and it is "
                                      "recorded as `timeout`.")
@click.option("--memory", type=Integer(min=64), default=4096, show_default=True,
              metavar="MB", help="Address-space limit of each model's process, in MB.")
@use("target", "runtime", repeat=True)
@click.option("--report", "reports", multiple=True, type=click.Path(dir_okay=False),
              metavar="FILE", help=f"Write a report ({', '.join(REPORT_SUFFIXES)} by the "
                                   f"suffix; repeatable). All are written at the end, "
                                   f"atomically: all or none.")
@click.option("--results", "results_path", default=None, type=click.Path(dir_okay=False),
              help="The JSON-lines file each result is appended to as it finishes. Default: "
                   "one file per manifest in the cache (WEBNN_CONVERTER_CACHE, default "
                   "~/.cache/webnn-converter/zoo/), never the working directory.")
@click.option("--resume", is_flag=True, help="Keep the results file and skip the models it "
                                             "already has a result for (same options; on "
                                             "devices, each model x device cell the same "
                                             "device ran: name, user agent, platform, "
                                             "deviceTypes).")
@click.option("--baseline", type=click.Path(), metavar="FILE",
              help="An earlier run's results (.jsonl) or JSON report, read before any model "
                   "runs: every model whose status changed, or whose worst error grew more "
                   "than --error-growth times, counts as regressed (both values shown). "
                   "Without it nothing is 'regressed'.")
@click.option("--error-growth", type=Decimal(min=1, min_open=True),
              default=DEFAULT_GROWTH, show_default=True, metavar="FACTOR",
              help="With --baseline: how many times a model's worst max abs error may grow.")
@click.option("--only", "only", multiple=True, metavar="ID",
              help="Run only this model (repeatable).")
@click.option("--executor", type=Choice(EXECUTORS), default="local", show_default=True,
              help="Run the jobs here, or on a Ray cluster (`pip install "
                   "'webnn-converter[ray]'`).")
@click.option("--ray-address", metavar="ADDR", help="With --executor ray: the cluster to join "
                                                    "(default: start a local one).")
@use("weights", "accuracy", "samples", "compute", "json")
def command(manifest, jobs, timeout, memory, target_name, runtime, reports, results_path,
            resume, baseline, error_growth, only, executor, ray_address, weights, accuracy,
            samples, compute, as_json):
    """Convert and verify every model of MANIFEST (.json or .toml) for every --target.

    -t/--target T (repeatable): convert for T and check it too; without it each model's
    graph is verified as imported. --runtime (repeatable, default ort): where the graphs run
    for parity; device: on every device connected to the server `webnn-convert serve`
    started last here (device:NAME: that one; add --runtime chromium for this machine's
    Chromium as one more device). On devices, each model is a job per device, each device
    works through its own queue while the others do theirs (one job at a time each, as local
    chromium; ort --jobs at a time), and the reports hold a model x device matrix: built (or
    why not), ran, the verdict, the build and run times each page measured, and the device,
    browser and deviceType. A device that disconnects: the job it ran and those left in its
    queue are "device lost" (the model an error), the others go on. At most one --target.
    --weights float16|int8|int4: each graph is also converted with its weights so stored
    and measured against the float source on every runtime (weights size before and after,
    errors, worst cosine, top-1/top-5 over --samples inputs), judged by --accuracy or the
    scheme's default: a miss makes the model a mismatch (error kind `accuracy`).
    --compute float16: each graph computes in float16 where the target (without one: the
    portable target) takes it and is verified as `verify --compute float16` verifies it, its
    float16-computed outputs by the float16 bounds (with --weights: the compressed graph
    computes so, the float graph verified as float32); each result says which it was
    converted to compute in.

    Each model gets a status: verified, mismatch, unsupported, error, timeout or crash, and
    meets its manifest entry's `expect` or misses it (an entry without `expect` expects
    verified; a local model file that is missing or refused meets no expectation).

    Exit 0 when every model meets its `expect` (and, with --baseline, none regressed: changed
    status or grew its worst error past --error-growth); 1 otherwise, naming each model and
    why; 2 on bad input, before any model runs: a manifest that is not plain data (a package
    that is not a plain name and version, a path outside the manifest's folder), a bad
    --baseline, an output (--report, --results) that is an input or another output, or a
    device named that is not connected.
    """
    for path in reports:
        try:
            check_report_suffix(path)
        except ConverterError as e:
            raise click.BadParameter(e.line(), param_hint="--report") from None
        if not Path(path).parent.is_dir():  # found now, not after every model has run
            raise ConverterError("the report's folder does not exist", where=path,
                                 fix="create it first")
    if ray_address and executor != "ray":
        raise click.UsageError("--ray-address applies with --executor ray")
    if weights == "float32" and (accuracy is not None or samples is not None):
        raise click.UsageError("--accuracy and --samples apply with --weights "
                               "float16|int8|int4 (the accuracy of the compressed graphs)")
    targets = list(target_name)
    options = ZooOptions(jobs=jobs, timeout=timeout, memory=memory, targets=targets,
                         runtimes=_every_device(list(runtime)), executor=executor,
                         ray_address=ray_address, weights=weights,
                         accuracy=_bounds_text(accuracy),
                         samples=samples or ZooOptions.samples, compute=compute)
    # Everything the run reads is read and checked before anything is written or run.
    loaded = load_manifest(manifest)
    earlier = load_baseline(baseline) if baseline is not None else None
    reads = loaded.inputs() + ([("the baseline", earlier.path)] if earlier else []) + \
        [("--target", Path(t)) for t in targets if Path(t).suffix and Path(t).is_file()]
    results_file = results_path or default_results_path(loaded.path)
    check_outputs(reads, [("--results" if results_path else "the results file", results_file)]
                  + [("--report", path) for path in reports])
    quiet = as_json or not sys.stderr.isatty()
    if quiet:
        run = run_zoo(loaded, options, only=list(only), results_path=results_file,
                      resume=resume)
    else:
        run = _with_progress(loaded, options, list(only), results_file, resume)
    doc = build_report(run, baseline=earlier, growth=error_growth)
    write_reports(doc, list(reports))
    if as_json:
        echo_json(doc, indent=1)
    else:
        _summary(doc)
    failed = _why_failed(doc)
    if failed:
        echo_lines(failed, err=True)
        raise SystemExit(1)


def _bounds_text(accuracy: dict | None) -> str | None:
    """--accuracy as parsed, spelled again for the jobs' specs (plain JSON)."""
    if accuracy is None:
        return None
    from converter.verification.accuracy_bounds import bound_text

    return ",".join(bound_text(metric, bound) for metric, bound in accuracy.items())


def _every_device(runtimes: list[str]) -> list[str]:
    """`device` as device:NAME for each device connected now (chromium, this machine's own
    browser, only when named too); device:NAME:TYPE is not a zoo runtime (each device runs
    on its default deviceType). The jobs find the server as `serve` recorded it."""
    if any(r.count(":") > 1 for r in runtimes):
        raise click.BadParameter("the zoo runs each device on its default deviceType: give "
                                 "device or device:NAME", param_hint="--runtime")
    if "device" not in runtimes:
        return list(dict.fromkeys(runtimes))
    from converter.devices.client import devices

    names = [d["name"] for d in devices()]
    if not names:
        raise ConverterError("no device is connected to the device server",
                             fix="open the URL `webnn-convert serve` printed on each device")
    expanded = []
    for runtime in runtimes:
        expanded += [f"device:{n}" for n in names] if runtime == "device" else [runtime]
    return list(dict.fromkeys(expanded))


def _with_progress(manifest, options, only, results_path, resume):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
        TimeElapsedColumn

    with Progress(TextColumn("zoo"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}", markup=False), transient=True) as progress:
        task = progress.add_task("", total=None)

        def advance(result, done, total):
            # A manifest's id is any text: shown, and short enough for rich to lay out.
            progress.update(task, completed=done, total=total,
                            description=shortened(shown(f"{result['id']}: {result['status']}"),
                                                  _LONGEST_ID))

        return run_zoo(manifest, options, only=only, results_path=results_path, resume=resume,
                       on_result=advance)


_LONGEST_ID = 200  # characters of a model's id on the progress line


def _summary(doc: dict) -> None:
    s = doc["summary"]
    counts = ", ".join(f"{s['byStatus'][st]} {st}" for st in STATUSES if s["byStatus"][st])
    echo(f"{s['models']} models in {doc['wallSeconds']:.1f} s: {counts}"
         + (f" ({len(s['resumed'])} from an earlier run)" if s["resumed"] else ""))
    for target, c in s["byTarget"].items():
        echo(f"  {target}: " + ", ".join(f"{c[st]} {st}" for st in STATUSES if c[st]))
    for runtime in doc["options"]["runtimes"]:  # a run on devices: each column's verdicts
        verdicts = Counter(c["verdict"] for r in doc["models"] for c in r.get("cells") or []
                           if c["runtime"] == runtime)
        if verdicts:
            echo(f"  on {runtime}: " + ", ".join(f"{n} {v}" for v, n in verdicts.items()))


def _why_failed(doc: dict) -> list[str]:
    """Up to two lines: the models that missed their expectation (what they did instead), and
    with a baseline those that regressed against it (what changed)."""
    s = doc["summary"]
    lines = []
    if s["missed"]:
        by_id = {r["id"]: r for r in doc["models"]}
        lines.append("missed: " + ", ".join(_missed(by_id[i]) for i in s["missed"]))
    if s["regressions"]:
        reasons: dict[str, list[str]] = {i: [] for i in s["regressions"]}
        for c in s["baseline"]["changes"]:
            if c["kind"] == "status":
                reasons[c["id"]].append(f"was {c['before']}, now {c['after']}")
            else:
                reasons[c["id"]].append(
                    f"worst error {format_number(c['before'])} -> "
                    f"{format_number(c['after'])}, x{format_number(c['factor'])}")
        lines.append("regressed: " + ", ".join(f"{i} ({'; '.join(why)})"
                                               for i, why in reasons.items()))
    return lines


def _missed(result: dict) -> str:
    error = result.get("error") or {}
    if error.get("kind") == MODEL_FILE:
        return f"{result['id']} ({error['message']})"
    return f"{result['id']} ({result['status']}, expected {result['expect']})"
