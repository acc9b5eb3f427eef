"""Hostile inputs to compressed weights: `--accuracy` strings, `--block-size` values, and weight
values (NaN, infinities, float32's extremes, denormals, an all-zero channel) for
`--weights int8|int4`.

  accuracy-*     verify tiny_cnn.onnx --weights float16 --samples 1 --accuracy S: exit 2 with one
                 error line, or a valid parse that exits 0 or 1 (the accuracy verdict); a bound
                 that is not ASCII digits (Arabic-Indic ٠.٩, which Python's float() takes) is
                 refused (must_refuse).
  block-size-*   convert the tiny llama decoder --weights int4 --block-size N: a size int4 cannot
                 use is exit 2, one error line, nothing written; a size larger than every weight's
                 reduction dim quantizes nothing (exit 0, no int4 in the manifest), as the
                 option's help says (weights shorter than a block stay float32).
  values-*       a MatMul, Gemm or Conv whose weight holds hostile values, converted with
                 --weights int8|int4 to .onnx and .webnn: exit 0; a non-finite weight is kept
                 float32 and listed (-v); every dequantizeLinear scale is finite and positive;
                 the .onnx, run on ONNX Runtime (ORT_DISABLE_ALL, as verify runs it), gives no
                 NaN or infinity where the float model gives none.
The checks that load a graph or start ONNX Runtime run in a fresh interpreter (this file run as
a script): tools/fuzz.py forks its runs, and a process holding ORT's threads must not fork.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from fuzz_surfaces import Made

ROOT = Path(__file__).resolve().parents[1]
_FLOAT_MAX = float(np.finfo(np.float32).max)


def _lines(out: Path) -> list[str]:
    return "\n".join((out / n).read_text("utf-8", "replace")
                     for n in ("stdout.txt", "stderr.txt")).splitlines()


def _one_error(out: Path, exit_code: int | None, ok: tuple[int, ...]) -> str | None:
    """Exit 2 with exactly one error line, or an exit in `ok`."""
    if exit_code in ok:
        return None
    if exit_code != 2:
        return f"exit {exit_code}"
    errors = [line for line in _lines(out) if line.lower().startswith("error:")]
    return None if len(errors) == 1 else f"{len(errors)} error lines, not 1"


# -- --accuracy ----------------------------------------------------------------------------------
def accuracy(text: str, refuse: bool):
    def make(folder: Path, root: Path) -> Made:
        entry = folder / "m.onnx"
        entry.write_bytes((ROOT / "models" / "tiny_cnn.onnx").read_bytes())
        escaped = text.replace("{", "{{").replace("}", "}}")  # fuzz.py formats each argument
        args = ["--weights", "float16", "--samples", "1", "--accuracy", escaped]
        return Made(entry, {"verify": (args, [])}, must_refuse=refuse,
                    outcome=lambda out, code: _one_error(out, code, () if refuse else (0, 1)))
    return make


ACCURACY_STRINGS: list[tuple[str, str, bool]] = [  # (name, --accuracy, only a refusal is safe)
    ("unknown-metric", "bogus>=1", True),
    ("control-characters", "cosine>=0.9\x1b]52;c;QQ==\x07\x1b[2J\r\nFORGED", True),
    ("bidi-override", "cosine\u202e>=0.5", True),
    ("overflow-1e999", "cosine>=1e999", True),
    ("nan", "cosine>=nan", True),
    ("minus-inf", "max_abs<=-inf", True),
    ("arabic-indic-digits", "cosine>=\u0660.\u0669", True),
    ("fullwidth-digits", "cosine>=\uff10.\uff19", True),
    ("underscore-digits", "cosine>=0.9_9", True),
    ("hex-float", "cosine>=0x1p-1", True),
    ("100k-characters", "cosine>=0." + "9" * 100_000, False),  # a number: 1.0, unmet
    ("100k-metric", "c" * 100_000 + ">=0.5", True),
    ("commas", "," * 1000, True),
    ("empty-item", "cosine>=0.5,,top1>=0.5", True),
    ("wrong-direction", "cosine<=0.5", True),
    ("named-twice", "cosine>=0.5,cosine>=0.6", True),
    ("no-classifier-for-tokens", "tokens>=0.5", True),
    ("valid-spaced", " cosine >= 0.5 , max_abs <= 1 ", False),
    ("valid-line-separator", "cosine>=0.5\u2028", False),
    ("valid-unmet", "max_abs<=0", False),
]


# -- --block-size --------------------------------------------------------------------------------
def _nothing_quantized(out: Path) -> str | None:
    manifest = out / "out.manifest.json"
    if not manifest.is_file():
        return "no manifest written"
    types = {t["dataType"] for t in json.loads(manifest.read_text())["tensors"].values()}
    return f"quantized ({sorted(types & {'int4', 'uint4', 'int8'})})" \
        if types & {"int4", "uint4", "int8"} else None


def _quantized(out: Path) -> str | None:
    return None if _nothing_quantized(out) else "nothing quantized"


def block_size(value: str, expect: str):
    """`expect`: "refused" (exit 2), "nothing" (exit 2, or 0 with nothing quantized),
    "quantized" (exit 0, int4 weights written)."""
    def make(folder: Path, root: Path) -> Made:
        entry = folder / "decoder_model.onnx"
        entry.write_bytes((ROOT / "models" / "optimum-tiny" / "llama" / "decoder_model.onnx")
                          .read_bytes())
        args = ["--dim", "batch_size=1", "--dim", "sequence_length=4", "-o", "{out}/out.webnn",
                "--weights", "int4", "--block-size", value]
        outputs = ["out.webnn", "out.manifest.json", "out.weights"]

        def outcome(out: Path, code: int | None) -> str | None:
            if expect == "quantized":
                return f"exit {code}" if code != 0 else _quantized(out)
            problem = _one_error(out, code, (0,) if expect == "nothing" else ())
            return problem or (_nothing_quantized(out) if code == 0 else None)
        return Made(entry, {"convert.webnn": (args, outputs)}, must_refuse=expect == "refused",
                    outcome=outcome)
    return make


BLOCK_SIZES = [("minus-1", "-1", "refused"), ("0", "0", "refused"), ("1", "1", "refused"),
               ("abc", "abc", "refused"), ("2.5", "2.5", "refused"),
               ("24-divides-nothing", "24", "refused"), ("1e30", str(10**30), "nothing"),
               ("2**63", str(2**63), "nothing"), ("16", "16", "quantized")]


# -- weight values -------------------------------------------------------------------------------
def _poisoned(kind: str, shape: tuple[int, ...], channel_axis: int) -> np.ndarray:
    """Seeded normal weights whose channel 3 (along `channel_axis`) holds `kind`."""
    w = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    channel = tuple(3 if axis == channel_axis else slice(None) for axis in range(len(shape)))
    part = w[channel].copy()
    flat = part.reshape(-1)  # a view of the contiguous copy
    if kind == "nan":
        flat[5] = np.nan
    elif kind == "inf":
        flat[5] = np.inf
    elif kind == "minus-inf":
        flat[5] = -np.inf
    elif kind == "float-max":  # both extremes in one channel: their sum is finite in float
        flat[5], flat[6] = _FLOAT_MAX, -_FLOAT_MAX
    elif kind == "denormal":
        part[...] = np.float32(1e-40) * np.sign(part)
    elif kind == "smallest-denormal":
        part[...] = np.float32(1.4e-45)
    elif kind == "zero-channel":
        part[...] = 0
    else:
        raise ValueError(kind)
    w[channel] = part
    return w


def _weight_model(op: str, kind: str):
    vi = helper.make_tensor_value_info
    if op == "MatMul":
        w = _poisoned(kind, (64, 16), 1)
        node, x, y = helper.make_node("MatMul", ["x", "w"], ["y"]), [1, 64], [1, 16]
    elif op == "Gemm":
        w = _poisoned(kind, (16, 64), 0)
        node, x, y = helper.make_node("Gemm", ["x", "w"], ["y"], transB=1), [1, 64], [1, 16]
    else:
        w = _poisoned(kind, (8, 4, 3, 3), 0)
        node, x, y = helper.make_node("Conv", ["x", "w"], ["y"]), [1, 4, 6, 6], [1, 8, 4, 4]
    graph = helper.make_graph([node], "values", [vi("x", TensorProto.FLOAT, x)],
                              [vi("y", TensorProto.FLOAT, y)], [numpy_helper.from_array(w, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def weight_values(op: str, kind: str, weights: str):
    def make(folder: Path, root: Path) -> Made:
        entry = folder / "m.onnx"
        entry.write_bytes(_weight_model(op, kind).SerializeToString())
        commands = {
            "convert.onnx": (["-o", "{out}/o.onnx", "--weights", weights, "-v"], ["o.onnx"]),
            "convert.webnn": (["-o", "{out}/o.webnn", "--weights", weights, "-v"],
                              ["o.webnn", "o.manifest.json", "o.weights"]),
        }

        def outcome(out: Path, code: int | None) -> str | None:
            if code != 0:
                return f"exit {code}"
            listed = [line for line in _lines(out) if "values not finite" in line]
            if kind in ("nan", "inf", "minus-inf") and not any(
                    line.rstrip().endswith(": w") for line in listed):
                return "the non-finite weight is not listed as kept float32"
            output = out / ("o.onnx" if (out / "o.onnx").is_file() else "o.webnn")
            done = subprocess.run([sys.executable, __file__, str(entry), str(output)],
                                  capture_output=True, text=True, timeout=120,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
            return (done.stdout + done.stderr).strip()[-300:] or None
        return Made(entry, commands, outcome=outcome)
    return make


VALUE_KINDS = ("nan", "inf", "minus-inf", "float-max", "denormal", "smallest-denormal",
               "zero-channel")


def _dequantized(q: np.ndarray, scale: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """dequantizeLinear's values: (q - zero) * scale, a blockwise scale repeated over its block."""
    for axis in range(q.ndim):
        if scale.shape[axis] != q.shape[axis]:
            scale = np.repeat(scale, q.shape[axis] // scale.shape[axis], axis=axis)
            zero = np.repeat(zero, q.shape[axis] // zero.shape[axis], axis=axis)
    with np.errstate(over="ignore"):
        return (q.astype(np.float32) - zero.astype(np.float32)) * scale


def _check_output(source: Path, output: Path) -> str | None:
    """Why the compressed `output` of `source` is unsafe, or None (run in a fresh process)."""
    if output.suffix == ".webnn":
        from converter import load

        graph = load(output)
        triples = [[operand.constant.numpy() for operand in op.inputs[:3]]
                   for op in graph.operations if op.op_type == "dequantizeLinear"]
    else:
        import onnx

        model = onnx.load(output)
        inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        triples = []
        for node in model.graph.node:
            if node.op_type == "DequantizeLinear":
                q, scale, zero = (inits[name] for name in node.input[:3])
                if scale.ndim == 1 and q.ndim > 1:  # per axis: broadcast along `axis`
                    axis = next((a.i for a in node.attribute if a.name == "axis"), 1) % q.ndim
                    shape = [len(scale) if a == axis else 1 for a in range(q.ndim)]
                    scale, zero = scale.reshape(shape), zero.reshape(shape)
                triples.append([q, scale, zero])
    bad = [s for _, s, _ in triples if not (np.all(np.isfinite(s)) and np.all(s > 0))]
    if bad:
        return f"{len(bad)} of {len(triples)} scales not finite and positive"
    if any(not np.all(np.isfinite(_dequantized(*t))) for t in triples):
        return "a dequantized weight is not finite"
    if output.suffix != ".onnx":
        return None
    import onnxruntime as ort

    # As verify runs both sides: ORT's own fusions (a dequantizeLinear into a quantized matmul)
    # would judge ORT's arithmetic at float32's edge, not the file's.
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    results = []
    for path in (source, output):
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        feed = session.get_inputs()[0]
        x = np.random.default_rng(1).random(list(feed.shape), dtype=np.float32)
        results.append(session.run(None, {feed.name: x})[0])
    want, got = results
    if np.any(~np.isfinite(got) & np.isfinite(want)):
        return "the compressed model gives NaN or infinity where the float model gives a number"
    return None


WEIGHTS: list[tuple[str, object]] = [
    *[(f"accuracy-{name}", accuracy(text, refuse)) for name, text, refuse in ACCURACY_STRINGS],
    *[(f"block-size-{name}", block_size(value, expect)) for name, value, expect in BLOCK_SIZES],
    *[(f"values-{op.lower()}-{kind}-{weights}", weight_values(op, kind, weights))
      for op, weights in (("MatMul", "int8"), ("Gemm", "int4"), ("Conv", "int8"))
      for kind in VALUE_KINDS],
]

if __name__ == "__main__":
    problem = _check_output(Path(sys.argv[1]), Path(sys.argv[2]))
    print(problem or "", end="")
