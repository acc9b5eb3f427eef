"""Scheduling a zoo run: every model in its own process, with a time and a memory limit.

    run = run_zoo("models/zoo.json", ZooOptions(jobs=2, timeout=300,
                                                targets=["chromium-litert"]))
    run.results        # one result dict per model, in manifest order
    run.missed()       # the ids whose status is not the one the manifest expects

Each model runs in a process of its own, in a new process group, at most `jobs` at a time:
a child forked by the run's warm worker (converter/zoo/warm.py), which imported the
converter and its runtimes once, so a model costs its own work and not an interpreter's
start-up. The child caps its own writable memory at `memory` MB; the parent kills the whole
group at `timeout` seconds. So a segfault in a native runtime (a
negative exit code: `crash`), a hang (`timeout`) or a model that eats the memory (`crash`,
kind `out-of-memory`) costs that model only. Each result is appended to the store the moment
it arrives, so a killed run keeps everything finished and `resume=True` skips it.

`executor="ray"` sends the same isolated job to a Ray cluster (converter/zoo/ray_executor.py);
the store, the keys and the reports are the same.

A run whose runtimes name devices (`device:NAME`) is a device run (converter/zoo/lanes.py):
one job per model and runtime, each device working through its own queue at the same time as
the others, each cell (model x device) kept in the store under its own key.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .. import __version__
from ..errors import ConverterError
from .files import check_outputs
from .job import MODEL_FILE
from .lanes import is_device_run, lane_widths, resolve_devices
from .manifest import ZooEntry, ZooManifest, load_manifest
from .store import ResultStore, default_results_path, result_key

__all__ = ["ZooOptions", "NOT_KEYED_OPTIONS", "ZooRun", "run_zoo", "run_isolated", "run_warm", "EXECUTORS"]

EXECUTORS = ("local", "ray")
RUNTIMES = ("ort", "chromium")
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder `converter` imports from
_STDERR_TAIL = 400  # characters of a dead child's stderr kept in its result
_LIVE: set[subprocess.Popen] = set()  # job processes running now, killed on an interrupt


# The options that do not change a model's result, so are not in its resume key: how the jobs
# are scheduled, and the limits, which are kept beside each result and judged when it is read
# back (store.ResultStore.reusable). tests/zoo/test_resume_key.py holds every field to a side.
NOT_KEYED_OPTIONS = ("jobs", "timeout", "memory", "executor", "ray_address", "hook")


@dataclass
class ZooOptions:
    jobs: int = 1
    timeout: float = 600.0        # seconds of wall time per model
    memory: int | None = 4096     # MB of address space per model process; None: no limit
    targets: list[str] = field(default_factory=list)
    runtimes: list[str] = field(default_factory=lambda: ["ort"])
    executor: str = "local"
    ray_address: str | None = None
    # --weights: every graph is also converted with its weights so stored, and its accuracy
    # against the float source measured on every runtime (verification/accuracy.py), judged
    # by `accuracy` ('cosine>=0.999,top1>=0.99'; None: the scheme's default) over `samples`.
    weights: str = "float32"
    accuracy: str | None = None
    samples: int = 16  # verification.accuracy.DEFAULT_SAMPLES (tests/zoo/test_weights.py)
    # --compute: the float type each graph computes in (passes/float16_compute.py), verified
    # as `verify --compute` verifies it: with --weights, the compressed graph computes so.
    compute: str = "float32"
    # Test suite only: "module:function" called in the child with the spec before the job
    # (see converter/zoo/job.py). Never set by the command line.
    hook: str | None = None

    def to_json(self) -> dict:
        return {"jobs": self.jobs, "timeout": self.timeout, "memory": self.memory,
                "targets": self.targets, "runtimes": self.runtimes, "executor": self.executor,
                "compute": self.compute, **self.compression()}

    def compression(self) -> dict:
        """What --weights asks of every job (its spec and its resume key), or {} without it."""
        if self.weights == "float32":
            return {}
        return {"weights": self.weights, "accuracy": self.accuracy, "samples": self.samples}

    def job_options(self) -> dict:
        """What every job is given beside its manifest entry and the targets and runtimes:
        `compression()`, and the compute type when it is not float32."""
        return {**self.compression(),
                **({"compute": self.compute} if self.compute != "float32" else {})}

    def key(self, content: str, spec: dict, runtimes: list[str] | None = None,
            device: dict | None = None) -> str:
        """The resume key of a model's result under these options (store.result_key);
        `runtimes` and `device`: of one cell of a device run."""
        return result_key(content, __version__, spec, self.targets,
                          self.runtimes if runtimes is None else runtimes, self.compression(),
                          compute=self.compute, device=device)


@dataclass
class ZooRun:
    manifest: str
    options: ZooOptions
    results: list[dict[str, Any]]
    resumed: list[str]            # ids whose result came from the store
    wall_seconds: float
    converter_version: str = __version__

    def missed(self) -> list[str]:
        """The ids whose result does not meet their manifest entry's `expect` (`verified`
        unless it says otherwise). Not "regressed": that needs an earlier run to compare
        with (see baseline.py)."""
        return [r["id"] for r in self.results if r.get("meetsExpect") is not True]


def run_zoo(manifest: str | Path | ZooManifest, options: ZooOptions | None = None, *,
            only: list[str] | None = None, results_path: str | Path | None = None,
            resume: bool = False,
            on_result: Callable[[dict, int, int], None] | None = None) -> ZooRun:
    """Run every selected model (isolated), store each result as it comes, return them all.

    `on_result(result, done, total)` is called in this thread after each model (also for
    those taken from the store), e.g. to advance a progress bar. A results file that is the
    manifest or one of its local models is refused before anything is written.
    """
    options = options or ZooOptions()
    _check_options(options)
    # The worker starts first: its imports (numpy, onnx, onnxruntime) then overlap the
    # manifest's loading and validation and the models' hashing, which need no worker.
    workers = _start_workers(options) if options.executor == "local" else []
    try:
        return _run(manifest, options, workers, only, results_path, resume, on_result)
    finally:
        for worker in workers:  # if _run_local did not take it (all resumed, an error)
            worker.close()


def _run(manifest, options: ZooOptions, workers: list, only, results_path, resume,
         on_result) -> ZooRun:
    if not isinstance(manifest, ZooManifest):
        manifest = load_manifest(manifest)
    entries = manifest.select(only)
    if results_path is None:
        results_path = default_results_path(manifest.path)
    check_outputs(manifest.inputs(), [("the results file", Path(results_path))])
    devices = None
    if is_device_run(options.runtimes):  # every named device connected, before any write
        devices = resolve_devices(options.runtimes)
    store = ResultStore(results_path, resume=resume)
    keys = {e.id: options.key(e.content_id(), e.spec()) for e in entries}
    started = time.perf_counter()
    if devices is not None:
        return _run_devices(manifest, entries, options, workers, store, keys, devices,
                            on_result, started)
    by_id: dict[str, dict] = {}
    stored = {e.id: store.reusable(keys[e.id], options.timeout, options.memory)
              for e in entries}
    resumed = [e.id for e in entries if stored[e.id] is not None]
    done = 0
    for e in entries:
        if stored[e.id] is not None:
            by_id[e.id] = _finish(e, stored[e.id], keys[e.id], options.compute)
            done += 1
            if on_result:
                on_result(by_id[e.id], done, len(entries))
    todo = [e for e in entries if e.id not in by_id]
    if options.jobs > 1:
        todo = longest_first(todo)
    if options.executor == "ray":
        from .ray_executor import run_on_ray

        stream = run_on_ray(todo, options, run_isolated)
    else:
        stream = _run_local(todo, options, workers)
    try:
        for entry, raw in stream:
            result = _finish(entry, raw, keys[entry.id], options.compute)
            store.append(keys[entry.id], result,
                         {"timeout": options.timeout, "memory": options.memory})
            by_id[entry.id] = result
            done += 1
            if on_result:
                on_result(result, done, len(entries))
    finally:  # on an error here too: the running models are killed and the worker closed now
        stream.close()
    return ZooRun(str(manifest.path), options, [by_id[e.id] for e in entries], resumed,
                  round(time.perf_counter() - started, 3))


def _run_devices(manifest: ZooManifest, entries: list[ZooEntry], options: ZooOptions,
                 workers: list, store: ResultStore, keys: dict[str, str],
                 devices: dict[str, dict | None], on_result, started: float) -> ZooRun:
    """A device run (lanes.py): a job per model and runtime, each device's in its own queue;
    each cell stored under its own key, the device's identity in it."""
    from .cells import device_identity
    from .lanes import run_matrix

    contents = {e.id: e.content_id() for e in entries}

    def cell_key(entry: ZooEntry, runtime: str) -> str:
        listed = devices.get(runtime)
        return options.key(contents[entry.id], entry.spec(), [runtime],
                           device=device_identity(listed) if listed else None)

    ordered = longest_first(entries) if options.jobs > 1 else entries
    shared = SharedWorker(workers.pop(0), sum(lane_widths(options.runtimes,
                                                          options.jobs).values()), options)
    try:
        by_id, resumed = run_matrix(ordered, options, shared, store, cell_key, devices,
                                    lambda e, merged: _finish(e, merged, keys[e.id],
                                                             options.compute),
                                    on_result)
    finally:
        shared.close()
    return ZooRun(str(manifest.path), options, [by_id[e.id] for e in entries],
                  [e.id for e in entries if e.id in resumed],
                  round(time.perf_counter() - started, 3))


def longest_first(entries: list[ZooEntry]) -> list[ZooEntry]:
    """The order in which jobs start when several run at once: the biggest model files first
    (a file's size stands for its cost; a file not yet fetched counts as small). A big model
    started last keeps one worker busy while the others idle; started first, the small ones
    fill in around it (the longest-processing-time rule). Ties keep the manifest's order."""
    from .fetch import cached_model_path

    def size(entry: ZooEntry) -> int:
        path = cached_model_path(entry.source) if entry.source is not None else entry.path
        try:
            return path.stat().st_size if path is not None else 0
        except OSError:
            return 0

    return sorted(entries, key=size, reverse=True)


def _check_options(options: ZooOptions) -> None:
    if options.jobs < 1:
        raise ConverterError(f"--jobs {options.jobs}: at least 1 model must run at a time")
    if options.timeout <= 0:
        raise ConverterError(f"--timeout {options.timeout}: give a positive number of seconds")
    if options.executor not in EXECUTORS:
        raise ConverterError(f"unknown executor '{options.executor}'",
                             fix=f"use one of {', '.join(EXECUTORS)}")
    for runtime in options.runtimes:
        if runtime.startswith("device:"):  # a device of the server `serve` started last
            from ..devices.protocol import parse_runtime

            parse_runtime(runtime)
        elif runtime not in RUNTIMES:
            raise ConverterError(f"unknown runtime '{runtime}'",
                                 fix=f"use one of {', '.join(RUNTIMES)}, device:NAME")
    if is_device_run(options.runtimes):
        if options.executor != "local":
            raise ConverterError("a run on devices runs here: its jobs reach the device "
                                 "server `serve` started on this machine",
                                 where="--executor", fix="drop --executor ray")
        if len(options.targets) > 1:
            raise ConverterError("a run on devices takes at most one --target (its matrix "
                                 "is one cell per model and device)", where="--target",
                                 fix="run once per target")
    from ..passes.float16_compute import check_compute, takes_float16

    check_compute(options.compute)
    if options.targets:  # a bad target name fails the run now, not once per model
        from ..targets import load_target

        for target in options.targets:
            loaded = load_target(target)
            if options.compute == "float16" and not takes_float16(loaded):
                raise ConverterError(f"target '{loaded.name}' takes no float16 operand",
                                     where="--compute float16",
                                     fix="leave --compute out, or run that target apart")


def _finish(entry: ZooEntry, raw: dict, key: str, compute: str) -> dict:
    """A job's result with what the parent knows: key, hash, expectation and whether it is
    met, and the compute type its graphs were asked to compute in (the key holds it, so a
    result taken from the store was made so too).

    A local model file that is missing or refused (error kind `model-file`) meets no
    expectation, not even `error`: a typo in a path must not pass as the error expected."""
    result = dict(raw)
    sha256 = raw.get("sha256") or (entry.source["sha256"] if entry.source else None)
    missing = (raw.get("error") or {}).get("kind") == MODEL_FILE
    result.update(id=entry.id, key=key, sha256=sha256, format=entry.format,
                  expect=entry.expect, compute=compute,
                  meetsExpect=not missing and raw["status"] == entry.expect)
    return result


def _start_workers(options: ZooOptions) -> list:
    """The run's warm worker, started now; it imports everything while the caller goes on.

    One worker serves all `jobs` at once (it forks a child for each), so the imports are paid
    once however many jobs run; each child's runtimes get an equal share of the cores."""
    from .warm import WarmWorker

    at_once = sum(lane_widths(options.runtimes, options.jobs).values()) \
        if is_device_run(options.runtimes) else options.jobs
    return [WarmWorker(_child_env(at_once), targets=bool(options.targets))]


class SharedWorker:
    """The run's warm worker, shared by the threads that run jobs on it; a worker lost (killed
    from outside) costs the models it ran then, and the first job to see it gone starts
    another in its place."""

    def __init__(self, worker, jobs: int, options: ZooOptions):
        import threading

        self.current, self._jobs, self._options = worker, jobs, options
        self._replacing = threading.Lock()

    def run(self, spec: dict, options: ZooOptions) -> dict:
        from .warm import WarmWorker

        worker, lost = self.current, True  # a worker that failed in any way is replaced
        try:
            result, lost = run_warm(worker, spec, options)
        finally:
            if lost:  # killed from outside: the models it ran say so; a new worker goes on
                with self._replacing:
                    if self.current is worker:  # the first job to see it gone replaces it
                        worker.close()
                        self.current = WarmWorker(_child_env(self._jobs),
                                                  targets=bool(self._options.targets))
        return result

    def close(self) -> None:
        self.current.close()


def _run_local(entries: list[ZooEntry], options: ZooOptions, started: list):
    """(entry, result) pairs as the models finish, `options.jobs` at a time, on the warm
    worker `started` holds (taken out of that list: this generator closes it, and any worker
    it starts in place of a lost one)."""
    if not entries:
        return
    shared = SharedWorker(started.pop(0), options.jobs, options)
    pool = ThreadPoolExecutor(max_workers=min(options.jobs, len(entries)))
    futures = {pool.submit(shared.run, e.spec(), options): e for e in entries}
    try:
        for future in as_completed(futures):
            yield futures[future], future.result()
    finally:  # also on Ctrl-C: what finished is stored; what runs is killed, not waited for
        for future in futures:
            future.cancel()
        kill_running()
        pool.shutdown(wait=True)
        shared.close()


def run_warm(worker, spec: dict, options: ZooOptions) -> tuple[dict[str, Any], bool]:
    """Run one job in a child forked by a warm worker: (its result, whether the worker was
    lost). Same limits and the same result as `run_isolated`, without a fresh interpreter."""
    from .warm import WorkerLost

    spec = {**spec, "targets": list(options.targets), "runtimes": list(options.runtimes),
            **options.job_options()}
    with tempfile.TemporaryDirectory(prefix="webnn-zoo-") as folder:
        files = {k: Path(folder) / f for k, f in
                 (("spec", "spec.json"), ("out", "result.json"), ("err", "stderr.txt"))}
        files["spec"].write_text(json.dumps(spec), encoding="utf-8")
        request = {k: str(v) for k, v in files.items()}
        request.update(memory=options.memory, hook=options.hook)
        started = time.perf_counter()
        try:
            worker.wait_ready()  # the worker's start is the run's, not this model's time
            started = time.perf_counter()
            code = worker.run(request, options.timeout)
        except WorkerLost as e:
            return _failed(spec, "crash", "signal", str(e), started), True
        if code is None:
            return _failed(spec, "timeout", "timeout",
                           f"still running after {options.timeout:g} s; killed", started), False
        stderr = files["err"].read_bytes() if files["err"].is_file() else b""
        return _collect(spec, files["out"], code, stderr, started), False


def run_isolated(spec: dict, targets: list[str], runtimes: list[str], timeout: float,
                 memory: int | None, hook: str | None = None) -> dict[str, Any]:
    """Run one job in a fresh interpreter; its result, or a timeout/crash result for it.

    (Ray's workers call this; a local run uses its warm worker, `run_warm`.)"""
    spec = {**spec, "targets": list(targets), "runtimes": list(runtimes)}
    with tempfile.TemporaryDirectory(prefix="webnn-zoo-") as folder:
        spec_file, out_file = Path(folder) / "spec.json", Path(folder) / "result.json"
        spec_file.write_text(json.dumps(spec), encoding="utf-8")
        command = [sys.executable, "-m", "converter.zoo.job", str(spec_file), str(out_file)]
        if memory:
            command += ["--memory", str(memory)]
        if hook:
            command += ["--hook", hook]
        started = time.perf_counter()
        # A new session: the timeout kills the job and anything it started (a browser).
        child = subprocess.Popen(command, env=_child_env(), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, start_new_session=True)
        _LIVE.add(child)
        try:
            _, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(child)
            child.communicate()
            return _failed(spec, "timeout", "timeout",
                           f"still running after {timeout:g} s; killed", started)
        finally:
            _LIVE.discard(child)
        return _collect(spec, out_file, child.returncode, stderr, started)


def _child_env(jobs: int | None = None) -> dict[str, str]:
    """The environment of job processes: this checkout of the converter first on the path;
    with `jobs`, each job's runtimes limited to its share of the cores (see converter.threads)
    unless the caller's environment already sets a count."""
    from ..threads import THREADS_ENV

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(_PACKAGE_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    if jobs is not None and not env.get(THREADS_ENV):
        env[THREADS_ENV] = str(max(1, _cores() // jobs))
    return env


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _collect(spec: dict, out_file: Path, code: int, stderr: bytes, started: float) -> dict:
    """The result a job wrote, or a crash result from how its process ended."""
    if out_file.is_file():
        result = json.loads(out_file.read_text(encoding="utf-8"))
        result["times"]["wall"] = round(time.perf_counter() - started, 4)
        return result
    tail = stderr.decode("utf-8", "replace").strip()[-_STDERR_TAIL:]
    return _failed(spec, "crash", *_death(code, tail), started)


def kill_running() -> None:
    """Kill every job process still running (an interrupted run leaves none behind)."""
    from .warm import kill_children

    kill_children()
    for child in list(_LIVE):
        _kill_group(child)


def _kill_group(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _death(code: int, stderr_tail: str) -> tuple[str, str]:
    """(error kind, message) of a child that died without writing a result."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        kind = "out-of-memory" if "bad_alloc" in stderr_tail or "MemoryError" in stderr_tail \
            else "signal"
        return kind, f"killed by {name} (exit code {code})" + \
            (f": {stderr_tail.splitlines()[-1]}" if stderr_tail else "")
    last = stderr_tail.splitlines()[-1] if stderr_tail else "no message"
    kind = "out-of-memory" if "MemoryError" in stderr_tail or "bad_alloc" in stderr_tail \
        else "exit"
    return kind, f"exited with code {code} before writing a result: {last}"


def _failed(spec: dict, status: str, kind: str, message: str, started: float) -> dict:
    return {"id": spec["id"], "status": status, "error": {"kind": kind, "message": message},
            "unsupported": [], "ops": None, "transposes": None, "opHistogram": {},
            "targets": [], "times": {"wall": round(time.perf_counter() - started, 4)}}
