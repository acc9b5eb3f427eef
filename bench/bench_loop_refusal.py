"""CPU time to refuse ONNX Loops nested in Loops that pass the unrolling budget (issue 26).

    python bench/bench_loop_refusal.py [--runs 3]

Builds the hostile files of tests/security/test_unrolling_budget.py (three Loops of 100
iterations, nested: a million body copies asked for), one per way its loops end, and runs
`webnn-convert convert` on each in a fresh process --runs times. Reports, as a Markdown table,
the best user+system CPU seconds and peak RSS of each refusal and the line it printed.
Target: under 1 s CPU for every file whose condition the import can count up front.
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CONDITIONS = ["fixed", "iteration", "counter", "opaque"]


def run_once(src: Path, out: Path) -> tuple[float, int, str]:
    """(CPU seconds, peak RSS in KB, stderr's last line) of one refusal in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "cli.main", "convert", str(src), "-o",
                           str(out)], capture_output=True, text=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 2:
        raise SystemExit(f"{src.name}: expected a refusal (exit 2), got {done.returncode}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, after.ru_maxrss, done.stderr.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from tests.security.test_unrolling_budget import _loops

    print("| loops end on | CPU s (best) | peak RSS MB | refusal |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for cond in CONDITIONS:
            src = Path(tmp) / f"loops_{cond}.onnx"
            src.write_bytes(_loops(100, 3, cond=cond))
            results = [run_once(src, Path(tmp) / "out.webnn") for _ in range(args.runs)]
            cpu = min(r[0] for r in results)
            rss = max(r[1] for r in results) / 1024
            reason = results[0][2].split(": ", 3)[-1][:90]
            print(f"| {cond} | {cpu:.2f} | {rss:.0f} | {reason}... |")


if __name__ == "__main__":
    main()
