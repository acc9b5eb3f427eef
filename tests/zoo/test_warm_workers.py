"""Warm workers: models run in children forked from a worker that imported everything once,
still one process per model, and a worker killed from outside costs one model only."""
from __future__ import annotations

import os

import pytest

from converter.zoo import ZooOptions, run_zoo
from converter.zoo.runner import _child_env, run_warm
from converter.zoo.warm import WarmWorker

from .conftest import make_synthetic
from .faults import KILL_WORKER_HOOK


def test_a_lost_worker_costs_its_model_and_a_new_one_goes_on(tmp_path):
    manifest = make_synthetic.write_manifest(tmp_path, ["add", "conv_relu"])
    run = run_zoo(manifest, ZooOptions(jobs=1, timeout=60, hook=KILL_WORKER_HOOK),
                  results_path=tmp_path / "r.jsonl")
    by_id = {r["id"]: r for r in run.results}
    assert by_id["add"]["status"] == "crash"
    assert by_id["add"]["error"]["kind"] == "signal"
    assert "zoo worker" in by_id["add"]["error"]["message"]
    assert by_id["conv_relu"]["status"] == "verified"


def test_one_worker_runs_model_after_model_and_lives_on(tmp_path):
    manifest = make_synthetic.write_manifest(tmp_path, ["add"])
    spec = {**make_synthetic_spec(manifest, "add")}
    worker = WarmWorker(_child_env())
    try:
        first, lost1 = run_warm(worker, spec, ZooOptions(timeout=60))
        second, lost2 = run_warm(worker, spec, ZooOptions(timeout=60))
        assert (lost1, lost2) == (False, False)
        assert first["status"] == second["status"] == "verified"
        # the worker lives on: both children were forked by the same process
        assert worker._proc.poll() is None
        assert worker._proc.pid != os.getpid()
    finally:
        worker.close()
    assert worker._proc.returncode is not None


def make_synthetic_spec(manifest, model_id: str) -> dict:
    from converter.zoo.manifest import load_manifest

    (entry,) = load_manifest(manifest).select([model_id])
    return entry.spec()


def test_with_several_jobs_the_biggest_models_start_first(tmp_path):
    from converter.zoo.manifest import ZooEntry
    from converter.zoo.runner import longest_first

    sizes = {"small": 10, "big": 3000, "missing": None, "medium": 500, "tie": 500}
    entries = []
    for name, size in sizes.items():
        path = tmp_path / f"{name}.onnx"
        if size is not None:
            path.write_bytes(bytes(size))
        entries.append(ZooEntry(id=name, format="onnx", path=path))
    assert [e.id for e in longest_first(entries)] == ["big", "medium", "tie", "small", "missing"]


def _warm_worker_children() -> list[int]:
    """Pids of this process's children that are zoo warm workers (read from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        if ppid == os.getpid() and b"converter.zoo.warm" in cmdline:
            found.append(int(entry))
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table from /proc")
def test_the_worker_starts_before_the_manifest_loads_and_goes_when_it_fails(tmp_path,
                                                                           monkeypatch):
    # The worker's imports overlap the manifest's loading: it exists when it is read, one
    # worker however many jobs...
    from converter.errors import FormatError
    from converter.zoo import runner

    seen = []

    def failing_load(path):
        seen.append(_warm_worker_children())
        raise FormatError("not a manifest", where=str(path))

    monkeypatch.setattr(runner, "load_manifest", failing_load)
    with pytest.raises(FormatError):
        run_zoo(tmp_path / "zoo.json", ZooOptions(jobs=2), results_path=tmp_path / "r.jsonl")
    assert len(seen) == 1 and len(seen[0]) == 1
    # ...and a run that stops there leaves none behind.
    assert _warm_worker_children() == []


def test_more_jobs_than_models_closes_the_idle_workers(tmp_path):
    manifest = make_synthetic.write_manifest(tmp_path, ["add"])
    run = run_zoo(manifest, ZooOptions(jobs=3, timeout=60), results_path=tmp_path / "r.jsonl")
    assert [r["status"] for r in run.results] == ["verified"]
    assert _warm_worker_children() == []


@pytest.mark.parametrize("targets", [["chromium-litert"], []])
def test_a_warm_worker_has_imported_what_its_models_jobs_use(tmp_path, targets):
    # A child forked from the worker imports again whatever the worker had not: checked here
    # the way the worker runs, in a fresh interpreter that imported everything first.
    import json
    import subprocess
    import sys

    manifest = make_synthetic.write_manifest(tmp_path, ["add", "conv_relu", "matmul_softmax"])
    code = (
        "import json, sys\n"
        "from converter.zoo import warm\n"
        "from converter.zoo.manifest import load_manifest\n"  # the parent's part
        f"entries = load_manifest({str(manifest)!r}).select(None)\n"
        "for name in [m for m in sys.modules if m.startswith('jsonschema')]:\n"
        "    del sys.modules[name]\n"
        f"warm._import_everything(targets={bool(targets)})\n"
        "before = set(sys.modules)\n"
        "from converter.zoo.job import run_job\n"
        f"statuses = [run_job({{**e.spec(), 'targets': {targets!r}, 'runtimes': ['ort']}})"
        "['status'] for e in entries]\n"
        "print(json.dumps([statuses, sorted(set(sys.modules) - before), sorted(before)]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_child_env())
    assert proc.returncode == 0, proc.stderr
    statuses, new, imported = json.loads(proc.stdout.strip().splitlines()[-1])
    assert statuses == ["verified"] * 3
    assert [m for m in new if m.split(".")[0] in ("converter", "onnx", "onnxruntime",
                                                  "jsonschema", "numpy")] == []
    # ...and, for a run without targets, nothing they never use (40 ms of the worker's start).
    unused = {"jsonschema", "converter.targets.pipeline", "converter.passes._all"}
    assert (unused & set(imported) == set()) == (not targets)


def test_one_worker_runs_the_jobs_at_once(tmp_path):
    # Two models whose jobs each wait until both have started: at --jobs 2 the one worker
    # forks both children at once, and each is a process of its own.
    from .faults import MEET_HOOK

    manifest = make_synthetic.write_manifest(tmp_path, ["add", "conv_relu"])
    (tmp_path / "meet.json").write_text('{"count": 2, "seconds": 60}')
    run = run_zoo(manifest, ZooOptions(jobs=2, timeout=120, hook=MEET_HOOK),
                  results_path=tmp_path / "r.jsonl")
    assert [r["status"] for r in run.results] == ["verified", "verified"]
    pids = {(tmp_path / f"{i}.here").read_text() for i in ("add", "conv_relu")}
    assert len(pids) == 2 and str(os.getpid()) not in pids
    assert _warm_worker_children() == []


def test_at_one_job_the_same_models_never_meet(tmp_path):
    # The check above can fail: run one at a time, the first job waits for a second that
    # cannot start, and dies of it (the hook's exit code 3 is that model's crash).
    from .faults import MEET_HOOK

    manifest = make_synthetic.write_manifest(tmp_path, ["add", "conv_relu"])
    (tmp_path / "meet.json").write_text('{"count": 2, "seconds": 1}')
    run = run_zoo(manifest, ZooOptions(jobs=1, timeout=120, hook=MEET_HOOK),
                  results_path=tmp_path / "r.jsonl")
    assert run.results[0]["status"] == "crash"


def test_each_job_gets_its_share_of_the_cores(monkeypatch):
    from converter.threads import THREADS_ENV
    from converter.zoo import runner

    monkeypatch.delenv(THREADS_ENV, raising=False)
    monkeypatch.setattr(runner, "_cores", lambda: 8)
    assert [runner._child_env(jobs)[THREADS_ENV] for jobs in (1, 2, 3, 8, 16)] == \
        ["8", "4", "2", "1", "1"]
    assert THREADS_ENV not in runner._child_env()  # a lone job (Ray's) keeps the default
    monkeypatch.setenv(THREADS_ENV, "3")  # the user's own choice stands
    assert runner._child_env(2)[THREADS_ENV] == "3"


def test_the_workers_rehearsal_verifies_and_leaves_nothing(tmp_path, monkeypatch, capfd):
    # The worker runs one made-up model through a whole job before its first fork (so the
    # children inherit warm code); that job must be a real one that passes, must write nothing
    # to the worker's stdout (the protocol's channel) and must leave no file behind.
    import tempfile

    from converter.zoo.warm import _rehearse

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = _rehearse()
    assert result["status"] == "verified", result["error"]
    assert result["ops"] == 6 and result["targets"][0]["parity"]["ort"]["passed"]
    assert capfd.readouterr().out == ""
    assert list(tmp_path.iterdir()) == []


def test_children_collect_garbage_but_never_walk_what_the_worker_made(tmp_path):
    # The worker imports with the collector off and freezes what it made before its first
    # fork: each child collects its own garbage, and the worker's objects (numpy, onnx, ONNX
    # Runtime, the converter: some 90,000 for a run without targets; none without the freeze)
    # are out of every collection.
    import json

    from .faults import COLLECTOR_HOOK

    manifest = make_synthetic.write_manifest(tmp_path, ["add"])
    run = run_zoo(manifest, ZooOptions(jobs=1, timeout=120, hook=COLLECTOR_HOOK),
                  results_path=tmp_path / "r.jsonl")
    assert run.results[0]["status"] == "verified"
    state = json.loads((tmp_path / "add.gc.json").read_text())
    assert state["enabled"] is True and state["frozen"] > 50_000


def test_a_models_wall_time_leaves_out_the_workers_start(monkeypatch):
    # The first model of a run waits for the worker's imports; that wait is the run's start,
    # not the model's time (bench/bench_zoo.py splits a run by the models' walls). A clock
    # that only the worker moves: 5 s of start, then 0.25 s for the model.
    import json
    from pathlib import Path

    from converter.zoo import runner

    clock = [100.0]
    monkeypatch.setattr(runner.time, "perf_counter", lambda: clock[0])

    class StartingWorker:  # as WarmWorker: run() waits for the start too, if not yet done
        ready = False

        def wait_ready(self):
            if not self.ready:
                clock[0] += 5.0
                self.ready = True

        def run(self, request, timeout):
            self.wait_ready()
            clock[0] += 0.25
            Path(request["out"]).write_text(json.dumps(
                {"id": "m", "status": "verified", "times": {"job": 0.2}}))
            return 0

    result, lost = runner.run_warm(StartingWorker(), {"id": "m"}, ZooOptions())
    assert (result["status"], result["times"], lost) == \
        ("verified", {"job": 0.2, "wall": 0.25}, False)
