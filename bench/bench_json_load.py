"""Loading speed of large `webnn-graph-json` files (issue 10's number: >= 50 MB/s).

    python bench/bench_json_load.py [--mb 100] [--runs 3]

Writes a graph whose constants are `inlineBytes` lists (the case that was slow: the schema
checked every byte, about 8 s per MB) totalling about --mb megabytes of JSON, then loads it
with `converter.formats.load_graph` in a fresh process --runs times. Reports the file size,
the best wall and CPU time (parse, structure check, byte check, graph build and verify) and
MB/s, as a Markdown table (paste into docs/reference/performance.md). Target: >= 50 MB/s.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

_LOAD = """
import sys, time
from converter.formats import load_graph
start, cpu = time.perf_counter(), time.process_time()
graph = load_graph(sys.argv[1])
print(time.perf_counter() - start, time.process_time() - cpu, len(graph.constants))
"""


def write_graph(path: Path, megabytes: float, pieces: int = 8) -> int:
    """A JSON graph adding `pieces` inline uint8 constants to one input; returns its size."""
    rng = np.random.default_rng(0)
    # Random bytes average 4.57 characters each in a ", "-separated list.
    per_piece = int(megabytes * 1e6 / 4.57 / pieces)
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"format": "webnn-graph-json", "version": 2, "name": "big",\n')
        f.write(f'"inputs": {{"x": {{"dataType": "uint8", "shape": [{per_piece}]}}}},\n')
        f.write('"consts": {\n')
        for i in range(pieces):
            values = rng.integers(0, 256, per_piece, dtype=np.uint8)
            f.write(f'"c{i}": {{"dataType": "uint8", "shape": [{per_piece}], "init": '
                    f'{{"kind": "inlineBytes", "bytes": [')
            f.write(", ".join(map(str, values.tolist())))
            f.write("]}}" + (",\n" if i < pieces - 1 else "\n"))
        f.write("},\n")
        nodes, last = [], "x"
        for i in range(pieces):
            nodes.append({"id": f"a{i}", "op": "add", "inputs": [last, f"c{i}"]})
            last = f"a{i}"
        f.write(f'"nodes": {json.dumps(nodes)},\n"outputs": {{"y": "{last}"}}}}\n')
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0, help="JSON size to generate (MB)")
    parser.add_argument("--runs", type=int, default=3, help="loads, each in a fresh process")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.json"
        size = write_graph(path, args.mb)
        times, cpus = [], []
        for _ in range(args.runs):
            proc = subprocess.run([sys.executable, "-c", _LOAD, str(path)], capture_output=True,
                                  text=True, cwd=ROOT)
            if proc.returncode != 0:
                raise SystemExit(f"load failed:\n{proc.stderr}")
            wall, cpu, _ = proc.stdout.split()
            times.append(float(wall))
            cpus.append(float(cpu))
    best, cpu = min(times), min(cpus)
    # CPU time too: on a shared machine the wall time says more about the neighbours.
    print(f"| JSON file | load, wall (best of {args.runs}) | speed | CPU time | speed by CPU "
          f"| target |")
    print("|---|---|---|---|---|---|")
    print(f"| {size / 1e6:.1f} MB, inlineBytes | {best:.2f} s | {size / 1e6 / best:.0f} MB/s "
          f"| {cpu:.2f} s | {size / 1e6 / cpu:.0f} MB/s | >= 50 MB/s |")


if __name__ == "__main__":
    main()
