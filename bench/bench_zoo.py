"""Wall time of the zoo over the public models: --jobs 2 against --jobs 1 (target <= 0.55x),
the whole run at --jobs 2 (target <= 5 s) and each model's overhead (target <= 0.1 s): the
runner's wall time for the model less the job's own time in its process.

    python3 bench/bench_zoo.py [--repeat N]

The run at --jobs 1 also splits its time: the models' own walls (run one after another, their
sum is the job phase) and the rest, the start (interpreter, imports, the warm worker's imports)
and the exit, which no number of jobs shortens. From these it prints the best ratio that start
allows, were the job phase halved exactly: (rest + jobs / 2) / (rest + jobs).

Each run is the real command in a fresh process (process start-up included, as a user sees it),
with a fresh results file so nothing is resumed. The models are fetched into the cache first,
so the download is not timed, and one untimed run goes first; the processes cache bytecode, as
an installed user's do (PYTHONDONTWRITEBYTECODE is dropped from their environment). The runs
at --jobs 1 and 2 alternate, so load on the machine hits both alike. Prints one line per run
and the ratio of the medians.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = "from cli.script import run; run()"  # as the `webnn-convert` script runs


_ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "PYTHONPATH": str(ROOT)}


def _warm_cache() -> None:
    sys.path.insert(0, str(ROOT))
    from converter.zoo.fetch import fetch_model

    for entry in json.loads((ROOT / "models" / "zoo.json").read_text())["models"]:
        fetch_model(entry["source"])


def _run(jobs: int, folder: Path) -> tuple[float, float, float]:
    """(wall time of the command, median overhead a model, the sum of the models' walls)."""
    results = folder / f"jobs{jobs}-{time.monotonic_ns()}.jsonl"
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CLI, "zoo", str(ROOT / "models" / "zoo.json"),
                           "--jobs", str(jobs), "--results", str(results), "--json"],
                          cwd=folder, env=_ENV,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1):  # 1: a model regressed, which is not the benchmark's
        raise SystemExit(f"zoo --jobs {jobs} failed: {proc.stderr.strip()[-500:]}")
    results = [json.loads(line)["result"] for line in results.read_text().splitlines()]
    overheads = [r["times"]["wall"] - r["times"]["job"] for r in results if "job" in r["times"]]
    return elapsed, statistics.median(overheads), sum(r["times"]["wall"] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    _warm_cache()
    times: dict[int, list[float]] = {1: [], 2: []}
    overhead: list[float] = []
    job_phase: list[float] = []  # at --jobs 1: the sum of the models' walls
    with tempfile.TemporaryDirectory() as tmp:
        _run(2, Path(tmp))  # untimed: bytecode and page caches
        for _ in range(args.repeat):
            for jobs in (1, 2):
                elapsed, per_model, walls = _run(jobs, Path(tmp))
                times[jobs].append(elapsed)
                overhead.append(per_model)
                if jobs == 1:
                    job_phase.append(walls)
                print(f"--jobs {jobs}: {elapsed:.2f} s, median overhead a model "
                      f"{per_model * 1000:.0f} ms")
    one, two = statistics.median(times[1]), statistics.median(times[2])
    print(f"median --jobs 1 {one:.2f} s, --jobs 2 {two:.2f} s (target <= 5 s): ratio "
          f"{two / one:.2f} (target <= 0.55); overhead a model {statistics.median(overhead) * 1000:.0f} ms "
          f"(target <= 100 ms) on {os.cpu_count()} cores")
    jobs = statistics.median(job_phase)
    rest = one - jobs
    print(f"--jobs 1 split: the models {jobs:.2f} s, start and exit {rest:.2f} s; with the job "
          f"phase halved exactly the ratio would be {(rest + jobs / 2) / one:.2f}; "
          f"measured job phase at --jobs 2 {two - rest:.2f} s ({(two - rest) / jobs:.2f} of "
          f"--jobs 1's)")


if __name__ == "__main__":
    main()
