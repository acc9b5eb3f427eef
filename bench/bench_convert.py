"""Conversion speed and memory, and the ONNX lowering's latency (issue 3's numbers).

    python bench/bench_convert.py [--models resnet50 vgg19] [--runs 20] [--paths ...]

For each randomized light_* model (converter.testing.light_models):
  * baseline: `onnx.load` of the model plus writing every initializer's bytes to one file, the
    least any converter must do; ours: `webnn-convert convert MODEL -o OUT.webnn`. Each runs in
    a fresh process; wall time and peak resident memory (VmHWM) are taken from the child.
    Targets: ours <= 2x the baseline's time (squeezenet, where start-up dominates: <= 1.2x),
    peak memory <= 1.5x the weights' size.
  * as a user sees it: the children cache bytecode (PYTHONDONTWRITEBYTECODE is dropped from
    their environment, so they do not recompile the project each time), every command runs
    once untimed first, then all of a model's commands run in turn --repeat times (interleaved,
    so load on the machine hits every side alike); times are medians, peaks the largest.
  * every other path (--paths): `-o .onnx`, `-o .tflite`, `-o .js`, `--target chromium-litert`,
    and `verify` (two runtimes: goal <= 2.5x the weights); time relative to `-o .webnn`.
  * latency: ONNX Runtime on the source model vs on the ONNX lowering of the converted graph,
    same session options (1 thread, sequential), median of --runs runs after warm-up.
    Target: <= 1.05x.
Prints a Markdown table (paste into docs/reference/performance.md).
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

_BASELINE = """
import sys, onnx
m = onnx.load(sys.argv[1])
with open(sys.argv[2], "wb") as f:
    for t in m.graph.initializer:
        f.write(t.raw_data)
"""


# The children's environment: as an installed user's, with bytecode cached (ours sets
# PYTHONDONTWRITEBYTECODE, which would make every child recompile the project's modules).
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _child(args: list[str]) -> tuple[float, int]:
    """Run a child process; its wall time (s) and peak RSS (bytes)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _MEASURE, *args], capture_output=True,
                          text=True, cwd=ROOT, env=_ENV)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"child failed: {' '.join(args)}\n{proc.stderr}")
    return elapsed, json.loads(proc.stdout.strip().splitlines()[-1])["peak_kb"] * 1024


# Runs the measured program in this child and reports the child's own peak RSS. It reads VmHWM
# (the high-water mark of this process's address space, fresh at exec): ru_maxrss would not do,
# as Linux carries it across fork and exec, so a child would inherit the parent's peak. Ours runs
# as the `webnn-convert` script does (cli.script.run, which leaves without the interpreter's
# teardown once exit handlers have run), so the peak is reported from an exit handler.
_MEASURE = """
import atexit, json, sys

def report():
    with open("/proc/self/status") as f:
        peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    print(json.dumps({"peak_kb": peak}), flush=True)

atexit.register(report)
kind = sys.argv[1]
if kind == "baseline":
    sys.argv = ["baseline", *sys.argv[2:]]
    exec(compile(%r, "baseline", "exec"))
else:
    from cli.script import run
    sys.argv = ["webnn-convert", *sys.argv[2:]]
    run()
""" % _BASELINE


# The other paths of issue 13, as CLI arguments for a source model and an output stem.
PATHS = {
    "-o .onnx": lambda src, stem: ["convert", str(src), "-o", f"{stem}.out.onnx"],
    "-o .tflite": lambda src, stem: ["convert", str(src), "-o", f"{stem}.tflite"],
    "-o .js": lambda src, stem: ["convert", str(src), "-o", f"{stem}.js"],
    "--target chromium-litert": lambda src, stem: ["convert", str(src), "-o",
                                                   f"{stem}.t.webnn", "--target",
                                                   "chromium-litert"],
    "verify": lambda src, stem: ["verify", str(src)],
}


def _latency(model_bytes_or_path, runs: int) -> float:
    import numpy as np
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(model_bytes_or_path, opts, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.random.default_rng(0).random(i.shape).astype(np.float32)
             for i in session.get_inputs()}
    for _ in range(3):
        session.run(None, feeds)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _timed(commands: dict[str, list[str]], repeat: int) -> dict[str, tuple[float, int]]:
    """Each command's median wall time and largest peak RSS: every command runs once untimed
    (the bytecode cache and the page cache warm up), then all of them in turn `repeat` times."""
    for args in commands.values():
        _child(args)
    times: dict[str, list[float]] = {key: [] for key in commands}
    peaks: dict[str, int] = {key: 0 for key in commands}
    for _ in range(repeat):
        for key, args in commands.items():
            t, m = _child(args)
            times[key].append(t)
            peaks[key] = max(peaks[key], m)
    return {key: (statistics.median(times[key]), peaks[key]) for key in commands}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", nargs="+", default=["resnet50", "vgg19"])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5,
                    help="timed runs of each command (after one untimed); medians are reported")
    ap.add_argument("--latency", nargs="*", default=["resnet50"],
                    help="models whose lowering latency is measured")
    ap.add_argument("--paths", nargs="*", default=list(PATHS),
                    help=f"other paths measured beside `-o .webnn` ({', '.join(PATHS)})")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    import converter
    from converter.lowering.onnx import to_onnx
    from converter.testing.light_models import light_model

    rows, paths = [], []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name in args.models:
            src = light_model(name, tmp, seed=0)
            graph = converter.load(src)
            weights = graph.constant_bytes()
            del graph
            commands = {"baseline": ["baseline", str(src), str(tmp / "w.bin")],
                        "ours": ["ours", "convert", str(src), "-o", str(tmp / f"{name}.webnn")]}
            commands.update({path: ["ours", *PATHS[path](src, tmp / name)]
                             for path in args.paths})
            measured = _timed(commands, args.repeat)
            (base_t, base_m), (ours_t, ours_m) = measured["baseline"], measured["ours"]
            row = {"model": name, "weights_mb": weights / 2**20, "baseline_s": base_t,
                   "ours_s": ours_t, "time_ratio": ours_t / base_t, "peak_mb": ours_m / 2**20,
                   "memory_ratio": ours_m / weights}
            if name in args.latency:
                lowered = to_onnx(converter.load(tmp / f"{name}.webnn")).SerializeToString()
                t_src = _latency(str(src), args.runs)
                t_low = _latency(lowered, args.runs)
                row.update(ort_source_ms=t_src * 1e3, ort_lowered_ms=t_low * 1e3,
                           latency_ratio=t_low / t_src)
            rows.append(row)
            for path in args.paths:
                t, m = measured[path]
                paths.append({"model": name, "path": path, "peak_mb": m / 2**20,
                              "memory_ratio": m / weights, "time_ratio": t / ours_t,
                              "goal": 2.5 if path == "verify" else 1.5})
    print("| model | weights MB | onnx.load + write s | convert s | ratio (<= 2) | peak MB | "
          "peak / weights (<= 1.5) | ORT source ms | ORT lowered ms | ratio (<= 1.05) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        lat = (f"{r['ort_source_ms']:.1f} | {r['ort_lowered_ms']:.1f} | {r['latency_ratio']:.3f}"
               if "latency_ratio" in r else "- | - | -")
        print(f"| {r['model']} | {r['weights_mb']:.0f} | {r['baseline_s']:.2f} | {r['ours_s']:.2f}"
              f" | {r['time_ratio']:.2f} | {r['peak_mb']:.0f} | {r['memory_ratio']:.2f} | {lat} |")
    print(f"\n(medians of {args.repeat} interleaved runs after one untimed run each, bytecode "
          f"cached; squeezenet, where start-up dominates, has the goal <= 1.2)")
    if paths:
        print("\n| model | path | peak MB | peak / weights | goal | time vs `-o .webnn` |")
        print("|---|---|---|---|---|---|")
        for p in paths:
            print(f"| {p['model']} | {p['path']} | {p['peak_mb']:.0f} | {p['memory_ratio']:.2f} | "
                  f"<= {p['goal']} | {p['time_ratio']:.2f} |")


if __name__ == "__main__":
    main()
