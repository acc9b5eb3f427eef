"""Weights-file sizes with `--weights float16|int8|int4` (issue 29's numbers).

    python bench/bench_weights.py [--models tiny_cnn squeezenet resnet50 llama] [--target T]

For each model, `convert MODEL -o OUT.webnn --weights W` (converter.convert) for every type of
WEIGHT_TYPES, without a target unless --target names one: the NAME.weights file's bytes and
their ratio to float32's; for int8/int4 also the bytes of the weights the integer_weights pass
quantized, before (float32) and after (integers, scales and zero points), and that ratio. Goals:
int8 <= 0.27x of the file on the image classifiers; int4 about 8x smaller matmul weights on the
tiny decoder, scales counted (with float32 scales a block of 32 int4 values costs 16 + 4 bytes
against 128: 6.4x at best).

Models: models/tiny_cnn.onnx, the light_* classifiers (converter.testing.light_models, seeded
weights; by default squeezenet and resnet50, as bench_browser uses) and the tiny Llama decoder
models/optimum-tiny/llama/decoder_model.onnx at batch 1, sequence 8. Prints a Markdown table.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LLAMA = ROOT / "models" / "optimum-tiny" / "llama" / "decoder_model.onnx"
DEFAULT_MODELS = ("tiny_cnn", "squeezenet", "resnet50", "llama")


def _source(name: str, folder: Path) -> tuple[Path, dict]:
    if name == "tiny_cnn":
        return ROOT / "models" / "tiny_cnn.onnx", {}
    if name == "llama":
        return LLAMA, {"batch_size": 1, "sequence_length": 8}
    from converter.testing.light_models import light_model

    return light_model(name, folder, seed=0), {}


def measure(name: str, weights: str, folder: Path, target: str | None) -> dict:
    """The weights file's bytes for one model and type, and what the weights pass reports."""
    from converter.conversion.by_suffix import load_any, write_any
    from converter.targets.pipeline import convert_for_target, store_weights

    source, dims = _source(name, folder)
    graph = load_any(source, dims=dims or None)
    if target is not None:
        report = convert_for_target(graph, target, weights=weights)
        counts = dict(report.passes).get("integer_weights")
        counts = counts.counts if counts is not None else {}
    elif weights != "float32":
        counts = store_weights(graph, weights)[0][1].counts
    else:
        counts = {}
    out = folder / f"{name}_{weights}.webnn"
    write_any(graph, out)
    return {"file": out.with_suffix(".weights").stat().st_size,
            "before": counts.get("bytes_before"), "after": counts.get("bytes_after")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS))
    parser.add_argument("--target", default=None)
    args = parser.parse_args()
    from converter.passes.weight_types import WEIGHT_TYPES

    print(f"target: {args.target or 'none'}\n")
    print("| model | weights | .weights bytes | vs float32 | quantized weights "
          "(float32 -> stored) | ratio |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            base = None
            for weights in WEIGHT_TYPES:
                m = measure(name, weights, Path(tmp), args.target)
                base = base or m["file"]
                quantized = ratio = ""
                if m["before"]:
                    quantized = f"{m['before']:,} -> {m['after']:,}"
                    ratio = f"{m['before'] / m['after']:.2f}x smaller"
                print(f"| {name} | {weights} | {m['file']:,} | {m['file'] / base:.3f}x | "
                      f"{quantized} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
