"""`-o X.onnx` past protobuf's 2 GiB (issue 29): time, peak memory, and ONNX Runtime's outputs.

    python bench/bench_onnx_external.py [--gib 2.2] [--dir /tmp] [--keep]

Builds an external-data ONNX model of about --gib GiB of float32 weights (embedding tables
looked up by an int64 input and summed: cheap to run, every table read), its data file
written a table at a time, never held whole; converts it with `webnn-convert convert SRC -o
OUT.onnx` in a fresh process (wall time and peak RSS, VmHWM, from the child), then runs the
source and the output on ONNX Runtime, one after the other, and checks their outputs are
equal. The output must be OUT.onnx plus OUT.onnx.data, peak RSS within the project's memory
figure for conversions (<= 1.31x the weights). Deletes everything unless --keep; checks the
folder has room for both models first.
"""
from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ROWS, WIDTH = 65536, 1024  # one table: 256 MiB of float32


def build(folder: Path, gib: float) -> tuple[Path, int]:
    """SRC.onnx and SRC.onnx.data: y = sum_k table_k[ids]; returns the path and the bytes of
    weights. Each table is written to the data file as it is made."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper

    tables = max(1, round(gib * (1 << 30) / (ROWS * WIDTH * 4)))
    src, data = folder / "src.onnx", folder / "src.onnx.data"
    inits, nodes, offset = [], [], 0
    rng = np.random.default_rng(0)
    with open(data, "wb") as f:
        for k in range(tables):
            table = rng.standard_normal((ROWS, WIDTH), dtype=np.float32)
            f.write(table.tobytes())
            tensor = onnx.TensorProto(name=f"table{k}", data_type=T.FLOAT, dims=[ROWS, WIDTH],
                                      data_location=T.EXTERNAL)
            for key, value in (("location", data.name), ("offset", str(offset)),
                               ("length", str(table.nbytes))):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
            offset += table.nbytes
            inits.append(tensor)
            nodes.append(helper.make_node("Gather", [f"table{k}", "ids"], [f"g{k}"]))
            del table
    nodes.append(helper.make_node("Sum", [f"g{k}" for k in range(tables)], ["y"]))
    graph = helper.make_graph(nodes, "tables", [helper.make_tensor_value_info("ids", T.INT64,
                                                                              [4])],
                              [helper.make_tensor_value_info("y", T.FLOAT, [4, WIDTH])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    src.write_bytes(model.SerializeToString())
    return src, offset


def convert(src: Path, out: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of `webnn-convert convert SRC -o OUT` in a child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cli.main", "convert", str(src), "-o",
                           str(out)], capture_output=True, text=True, cwd=ROOT)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"convert failed:\n{done.stderr}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak <= before:
        print("(peak RSS not above an earlier child's: the figure is an upper bound)")
    return elapsed, peak * 1024


def ort_output(path: Path, ids: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (result,) = session.run(None, {session.get_inputs()[0].name: ids})
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.2)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    need = 2 * args.gib * (1 << 30) * 1.05
    free = shutil.disk_usage(args.dir).free
    if free < need:
        raise SystemExit(f"{args.dir} has {free / 2**30:.1f} GiB free; this needs "
                         f"{need / 2**30:.1f}")
    folder = Path(tempfile.mkdtemp(prefix="bench-onnx-external-", dir=args.dir))
    try:
        src, weights = build(folder, args.gib)
        out = folder / "out" / "model.onnx"
        out.parent.mkdir()
        elapsed, peak = convert(src, out)
        written = sorted(p.name for p in out.parent.iterdir())
        ids = np.array([0, 1, ROWS // 2, ROWS - 1], np.int64)
        want = ort_output(src, ids)
        got = ort_output(out, ids)
        equal = np.array_equal(got, want)
        print("| weights GiB | convert s | peak RSS GiB | RSS / weights | files | "
              "ORT outputs equal |")
        print("|---|---|---|---|---|---|")
        print(f"| {weights / 2**30:.2f} | {elapsed:.1f} | {peak / 2**30:.2f} | "
              f"{peak / weights:.2f}x | {', '.join(written)} | {equal} |")
        if not equal or written != ["model.onnx", "model.onnx.data"]:
            raise SystemExit(1)
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
