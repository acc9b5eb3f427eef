"""One model of a zoo run: fetch, convert, check per target, verify per runtime.

    result = run_job(spec)     # in this process; the runner calls it in a child process:
    python -m converter.zoo.job SPEC.json RESULT.json [--memory MB] [--hook MODULE:FUNCTION]

`spec` is `ZooEntry.spec()` plus the run's options (`targets`, `runtimes`, and
ZooOptions.job_options(): `weights`, `accuracy`, `samples`, `compute`). The result is a
JSON-ready dict (see schemas/zoo-report.schema.json, `models[]`). A model's failures are its
result, never an exception: `unsupported` (the importer or a target refuses something; every
reason listed), `error` (a bad file, a runtime that fails), `mismatch` (parity fails). The
runner adds `timeout` and `crash`, which only a process watching this one can see.

The child limits its writable memory (RLIMIT_DATA) before importing anything heavy, so a model
that needs too much memory fails in its own process. Python reports that as MemoryError, which
is recorded as a crash of kind `out-of-memory`; a native allocator that aborts instead kills
the process, which the runner records as a crash.

`--hook MODULE:FUNCTION` is for the test suite only: the function is called with the spec
before the job runs, so tests can make a process segfault or hang on purpose (see
tests/zoo/faults.py). The product never passes it.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["run_job", "run_spec_file", "worst", "NO_TARGET", "MODEL_FILE"]

NO_TARGET = "webnn"   # the label of the graph as imported, when the run names no target
MODEL_FILE = "model-file"  # the error kind of a local model file missing or refused
_FIRST_REASONS = 5    # how many of a target's violations a result keeps verbatim


def worst(statuses) -> str:
    from .manifest import STATUSES

    return max(statuses, key=STATUSES.index, default="verified")


def run_job(spec: dict[str, Any]) -> dict[str, Any]:
    """Validate one model; never raises for the model's own faults (see the module doc)."""
    from ..errors import ConverterError, UnsupportedError

    started = time.perf_counter()
    result: dict[str, Any] = {"id": spec["id"], "sha256": None, "status": "verified",
                              "error": None,
                              "unsupported": [], "ops": None, "transposes": None,
                              "opHistogram": {}, "targets": [],
                              "times": {"fetch": 0.0, "convert": 0.0}}
    try:
        source = _locate(spec, result)
        t = time.perf_counter()
        graph = _load(spec, source)
        result["times"]["convert"] = round(time.perf_counter() - t, 4)
        hist = graph.op_histogram()
        result.update(ops=len(graph.operations), transposes=hist.get("transpose", 0),
                      opHistogram=dict(sorted(hist.items())))
        # The first variant takes the graph just imported (a target rewrites it in place);
        # each further one imports its own.
        for target in spec.get("targets") or [None]:
            result["targets"].append(_variant(spec, source, target, graph))
            graph = None
        result["status"] = worst(v["status"] for v in result["targets"])
    except UnsupportedError as e:
        result.update(status="unsupported", unsupported=list(e.items),
                      error={"kind": "unsupported", "message": e.line()})
    except ConverterError as e:
        result.update(status="error", error={"kind": _error_kind(e), "message": e.line()})
    except MemoryError:
        result.update(status="crash", error={"kind": "out-of-memory",
                                             "message": "the job ran out of memory"})
    except Exception as e:  # a bug of ours on this model: recorded, and the run goes on
        result.update(status="error", error={"kind": "internal",
                                             "message": f"{type(e).__name__}: {e}"})
    result["times"]["job"] = round(time.perf_counter() - started, 4)
    return result


def _error_kind(e) -> str:
    from ..errors import FormatError, GraphInvalidError, OpValidationError

    if getattr(e, "model_file", False):  # see _locate
        return MODEL_FILE
    if isinstance(e, FormatError):
        return "format"
    if isinstance(e, (OpValidationError, GraphInvalidError)):
        return "invalid-graph"
    return "converter"


def _locate(spec: dict, result: dict) -> Path:
    """The model file, fetched when it is a package's; a local one opened by the model-file
    rules (inside the manifest's folder, regular, unhidden, one link) and hashed here, under
    the job's timeout, its hash checked if the manifest gives one. A local file that is
    missing or breaks those rules is an error of kind `model-file`, which never meets an
    expectation."""
    import hashlib

    from ..errors import ConverterError
    from .fetch import fetch_model
    from .files import open_local_model

    t = time.perf_counter()
    if spec.get("source"):
        path = fetch_model(spec["source"])
        result["sha256"] = spec["source"]["sha256"]
    else:
        path = Path(spec["path"])
        digest = hashlib.sha256()
        try:
            with open_local_model(path, Path(spec["folder"])) as f:  # the manifest's
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    digest.update(chunk)
        except ConverterError as e:
            e.model_file = True
            raise
        except OSError as e:  # a read error: the file is there but cannot be used
            error = ConverterError(f"the model file cannot be read ({e.strerror or e})",
                                   where=str(path))
            error.model_file = True
            raise error from None
        result["sha256"] = digest.hexdigest()
        if spec.get("sha256") and result["sha256"] != spec["sha256"]:
            raise ConverterError(f"sha256 {result['sha256']} differs from the manifest's",
                                 where=str(path), fix="the file changed: update `sha256`")
    result["times"]["fetch"] = round(time.perf_counter() - t, 4)
    return path


def _load(spec: dict, source: Path):
    from ..conversion.by_suffix import load_any

    if source.suffix.lower() != f".{spec['format']}":  # the readers pick by suffix
        from ..errors import ConverterError

        raise ConverterError(f"a {spec['format']} model must have the .{spec['format']} suffix",
                             where=str(source))
    return load_any(source, dims=spec.get("dims") or None,
                    input_shapes=spec.get("inputShapes") or None,
                    known_inputs=_const_inputs(spec) or None)


def _const_inputs(spec: dict) -> dict:
    import numpy as np

    return {k: np.asarray(v) for k, v in (spec.get("constInputs") or {}).items()}


def _variant(spec: dict, source: Path, target: str | None, graph=None) -> dict[str, Any]:
    """The graph for one target (or as imported): its check, then parity on every runtime.
    `graph`: the model as imported, if the caller has it and needs it no more."""
    from .. import verify
    from ..errors import ConverterError, UnsupportedError

    out: dict[str, Any] = {"target": target or NO_TARGET, "status": "verified", "check": None,
                           "ops": None, "transposes": None, "parity": {}, "error": None,
                           "times": {}}
    if graph is None:
        graph = _load(spec, source)
    # As `verify --compute`: the graph verified computes in --compute; with --weights it is
    # the compressed graph that does (compressed.py), this one stays the float32 reference.
    compute = spec.get("compute", "float32") if spec.get("weights", "float32") == "float32" \
        else "float32"
    if target is None and compute != "float32":  # the portable target's float16 ops
        from ..targets.pipeline import store_weights

        t = time.perf_counter()
        store_weights(graph, "float32", compute=compute)
        out["times"]["compute"] = round(time.perf_counter() - t, 4)
    if target is not None:
        from ..targets.pipeline import convert_for_target

        t = time.perf_counter()
        try:
            convert_for_target(graph, target, compute=compute)
            out["check"] = {"passed": True, "violations": 0, "reasons": []}
        except UnsupportedError as e:
            violations = getattr(e, "violations", None)
            if violations is None:  # refused before the check: not a target verdict
                raise
            out["check"] = {"passed": False, "violations": len(violations),
                            "reasons": [v.line() for v in violations[:_FIRST_REASONS]]}
            out.update(status="unsupported",
                       error={"kind": "target", "message": f"{len(violations)} violations"})
        out["times"]["target"] = round(time.perf_counter() - t, 4)
        if out["status"] != "verified":
            return out
    out["ops"] = len(graph.operations)
    out["transposes"] = sum(op.op_type == "transpose" for op in graph.operations)
    tol = spec.get("tolerances") or {}
    statuses = []
    for runtime in spec.get("runtimes") or ["ort"]:
        if runtime.startswith("device:"):  # the record of this run only, not an earlier one
            from ..devices.client import forget_last_run

            forget_last_run()
        t = time.perf_counter()
        try:
            if graph.state:  # stateful: every step compared, each side keeping its state
                from ..verification.steps import verify_steps

                report = verify_steps(source, graph, steps=STATE_STEPS,
                                      seed=spec.get("seed", 0), runtime=runtime,
                                      atol=tol.get("atol"), rtol=tol.get("rtol"),
                                      ulp=tol.get("ulp"))
            else:
                report = verify(source, graph, seed=spec.get("seed", 0), runtime=runtime,
                                known_inputs=_const_inputs(spec) or None,
                                atol=tol.get("atol"), rtol=tol.get("rtol"), ulp=tol.get("ulp"))
            outputs = [{"name": o.name, "passed": o.passed, "maxAbs": _num(o.max_abs),
                        "maxUlp": o.max_ulp, "cosine": _num(o.cosine), "reason": o.reason}
                       for o in report.outputs]
            entry = {"passed": report.passed, "outputs": outputs, "error": None}
            statuses.append("verified" if report.passed else "mismatch")
        except UnsupportedError as e:
            entry = {"passed": False, "outputs": [], "error": e.line()}
            statuses.append("unsupported")
        except ConverterError as e:
            entry = {"passed": False, "outputs": [], "error": e.line()}
            if isinstance(getattr(e, "stage", None), str):  # chromium's: how far it got
                entry["stage"] = e.stage
            statuses.append("error")
        out["times"][f"run:{runtime}"] = round(time.perf_counter() - t, 4)
        if runtime.startswith("device:"):  # built, ran, and how long each took there
            from ..devices.client import last_run

            entry["device"] = last_run()
        elif runtime == "chromium":  # how long its page took to build and run the graph
            from ..runtimes.chromium import last_times

            entry["pageTimes"] = last_times()
        out["parity"][runtime] = entry
    failed = None
    if spec.get("weights", "float32") != "float32":  # zoo --weights: compressed.py
        from .compressed import measure_variant

        added, more, failed = measure_variant(spec, source, target, graph, _load,
                                              _const_inputs(spec) or None)
        out.update(added)
        statuses += more
    out["status"] = worst(statuses)
    if failed and all(e["passed"] for e in out["parity"].values()):
        out["error"] = {"kind": "accuracy", "message": failed}
    elif out["status"] != "verified":
        first = next((e["error"] for e in out["parity"].values() if e["error"]), None)
        out["error"] = {"kind": "runtime" if first else "parity",
                        "message": first or "; ".join(
                            f"{rt} {o['name']}: {o['reason']}" for rt, e in out["parity"].items()
                            for o in e["outputs"] if not o["passed"])}
    return out


# Steps a stateful model is compared over (the acceptance: 20 consecutive steps).
STATE_STEPS = 20


def _num(value):
    """JSON has no inf/nan: they are written as strings so the record stays valid JSON."""
    if value is None:
        return None
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    return value


def _die_with_parent() -> None:
    """Linux: be killed when the runner's thread that started this process goes away, so a
    runner killed with SIGKILL leaves no job behind (it runs in its own session)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return


def _limit_memory(megabytes: int) -> None:
    """Cap the memory the job (and what it starts) can write to.

    RLIMIT_DATA, not RLIMIT_AS: since Linux 4.7 it counts private writable mappings (numpy's
    and the runtimes' buffers), but not address space reserved and never written, which
    Chromium (for --runtime chromium) reserves by gigabytes and would fail to start under an
    address-space cap. Under a lower hard limit already set (`ulimit -d`), that one holds.
    """
    import resource

    limit = megabytes * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:  # a cap set above ours (a shell's ulimit) stays in force:
        limit = min(limit, hard)         # raising it is refused, and would be no cap of ours
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def run_spec_file(spec_path: Path, out_path: Path, memory: int | None,
                  hook: str | None) -> None:
    """The job of one process: limits, the test hook, the job, and its result written whole.

    Called by `main` in a fresh process and by a warm worker (converter/zoo/warm.py) in the
    child it forks for each model.
    """
    _die_with_parent()
    if memory:
        _limit_memory(memory)
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    if hook:
        import importlib

        module, _, function = hook.partition(":")
        getattr(importlib.import_module(module), function)(spec)
    result = run_job(spec)
    tmp = out_path.with_suffix(".part")
    tmp.write_text(json.dumps(result), encoding="utf-8")
    os.replace(tmp, out_path)  # the runner reads a whole result or none


def main(argv: list[str]) -> int:
    args = list(argv)
    memory = hook = None
    if "--memory" in args:
        i = args.index("--memory")
        memory = int(args[i + 1])
        del args[i:i + 2]
    if "--hook" in args:
        i = args.index("--hook")
        hook = args[i + 1]
        del args[i:i + 2]
    run_spec_file(Path(args[0]), Path(args[1]), memory, hook)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
