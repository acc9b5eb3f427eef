"""`webnn-convert probe --runtime chromium|device[:NAME[:TYPE]] -o T.json`: what a backend's
build() takes and computes right, as a target file."""
from __future__ import annotations

from pathlib import Path

import click

from converter.errors import ConverterError

from ..options import use
from ..terminal import echo, echo_json


@click.command("probe")
@use("runtime", "server", "output", "json")
@click.option("--op", "ops", multiple=True, metavar="OP",
              help="Probe this op only (repeatable; default: every op the backend lists; "
                   "'constant': the largest constant build() takes).")
def command(runtime: str, output: str, as_json: bool, ops: tuple[str, ...]) -> None:
    """Run one-op graphs on a backend and write what it takes as a target file (-o, .json).

    Each op the backend's opSupportLimits() lists runs over every data type the spec allows
    its main operand, pad over each mode, the element-wise ops at each end of their listed
    rank range, and constants of growing size until build() refuses one. Each case records
    whether build() took it and whether its outputs are within the case's bounds of the
    float64 reference. The target file is the backend's own opSupportLimits(), narrowed by
    refusedDataTypes (a listed type no case of the op built), refusedOptions (a value that did
    not build where another did), the rank ranges build() took and maxConstantByteLength (the
    largest constant it took); `check --target T.json` and `convert --target T.json` take it.
    Cases that build but compute outside their bounds, and unlisted types that build, are
    named in its notes; what is not probed is listed with why. --runtime chromium probes the
    local headless Chromium; device[:NAME[:TYPE]] a device that has the page of
    `webnn-convert serve` open, one job per case: a case that hangs is recorded when the
    server gives up on it (serve --job-timeout), one that crashes the page once the page is
    reloaded.
    """
    from converter.probe import run_probe
    from converter.probe.backends import check_runtime
    from converter.probe.target import probed_target, write_target

    check_runtime(runtime)
    path = Path(output)
    if path.suffix.lower() != ".json":
        raise ConverterError("a probed target is written as a .json target file",
                             where=output, fix="name the output T.json")
    if not path.parent.is_dir():  # said before the probe runs, not after
        raise ConverterError("the folder does not exist", where=str(path.parent),
                             fix="create it first")
    probe = run_probe(runtime, ops=ops or None, say=lambda line: echo(line, err=True))
    doc = probed_target(probe)
    write_target(doc, path)
    extension = doc["webnn-converter"]
    if as_json:
        echo_json({"runtime": runtime, "browser": probe.browser, "target": str(path),
                   "refusedDataTypes": extension.get("refusedDataTypes", {}),
                   "refusedOptions": extension.get("refusedOptions", {}),
                   "maxConstantByteLength": extension.get("maxConstantByteLength"),
                   "cases": [r.to_json() for r in probe.results],
                   "notProbed": probe.skipped}, indent=1)
        return
    for r in probe.results:
        if r.listed and not r.built:
            echo(f"{r.name}: refused by build(): {r.error}")
        elif r.built and r.computed is False:
            echo(f"{r.name}: builds, computes outside its bounds: {r.mismatch}")
        elif r.built and not r.listed:
            echo(f"{r.name}: builds, though opSupportLimits() does not list {r.data_type}")
    results = probe.results
    unlisted = sum(not r.listed for r in results)
    for line in probe.skipped:
        echo(f"not probed: {line}")
    echo(f"{probe.browser}: {len(results)} cases ({unlisted} of types it does not list), "
         f"{sum(r.built for r in results)} built, "
         f"{sum(r.computed is True for r in results)} within bounds"
         + (f", constants up to {extension['maxConstantByteLength']} bytes"
            if "maxConstantByteLength" in extension else "") + f"; wrote {path}")
