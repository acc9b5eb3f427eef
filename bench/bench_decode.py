"""Decode speed in the browser: greedy decoding of the tiny Llama through our emitted module vs
onnxruntime-web's WebNN EP driving the same ONNX model, in the same Chromium.

    python bench/bench_decode.py [--precisions fp32 int4 int4-dequantized] [--runs 5]
                                 [--warmup 1]

The model is models/tiny-llama/{fp32,int4} (onnxruntime-genai's builder, models/
make_tiny_llama.py). Ours: the decoder imported with a fixed-capacity KV cache (40 rows; one
graph for every step, converter.load_decoder), converted with `--target chromium-litert`
and written as a module (`write_js`); the page opens the module's createSession, whose caches
stay on the context as MLTensors, and steps it. ORT-web: onnxruntime-web 1.30 (npm, installed
once into the cache as bench_browser.py does) with `executionProviders: [{name: 'webnn',
deviceType: 'cpu'}]`, the model and its external data loaded by URL, the same capacity fixed
with freeDimensionOverrides, each step's present.* fed back as past_key_values.*. Both decode
the same 4-token prompt one token a step and then 32 new tokens, the argmax taken in
JavaScript; the tokens of both are printed and must be equal (the bench says so if not).
`int4-dequantized` is the int4 model converted with `--dequantize` (our weights float32 at
conversion time instead of int4 kept for the backend): what keeping int4 costs or saves.

ORT-web runs twice: as documented by default (every output back to JavaScript, the caches
uploaded again each step) and with `preferredOutputLocation: 'ml-tensor'` for the present.*
outputs (the caches stay on the WebNN context, as ours do).

Prints whether each runtime's tokens are the source's on ONNX Runtime, then, per precision and
runtime: setup (import or session creation, weights, build), the prefill (the prompt's 4 steps),
the median decode time of the 31 tokens after the first, tokens per second over those, and the
ratio of our tokens per second to that runtime's (above 1: ours faster).
Medians over --runs greedy runs after --warmup. Served from a stdlib HTTP server on 127.0.0.1.
"""
from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench_browser():
    spec = importlib.util.spec_from_file_location("bench_browser",
                                                  ROOT / "bench" / "bench_browser.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare(precision: str, root: Path) -> dict:
    """A served folder for one precision (`fp32`, `int4` or `int4-dequantized`): our module
    and the source ONNX model; the spec."""
    from converter.emit.javascript import write_js
    from converter.targets import load_target
    from converter.targets.pipeline import convert_for_target
    from converter.testing import decoding

    folder = root / precision
    folder.mkdir()
    dequantize = precision.endswith("-dequantized")
    source = decoding.source(precision.removesuffix("-dequantized"))
    for name in ("model.onnx", "model.onnx.data"):
        shutil.copy2(source.parent / name, folder / name)
    graph = decoding.fixed_cache_graph(source)
    convert_for_target(graph, load_target("chromium-litert"), dequantize=dequantize)
    write_js(graph, folder / "decoder.js")
    pairs = decoding.cache_pairs()
    return {"module": f"./{precision}/decoder.js", "onnx": f"./{precision}/model.onnx",
            "onnxData": f"./{precision}/model.onnx.data", "onnxDataName": "model.onnx.data",
            "ortModule": "./ort/ort.all.min.mjs", "ortWasm": "./ort/",
            "prompt": list(decoding.PROMPT), "newTokens": decoding.NEW_TOKENS,
            "capacity": decoding.CAPACITY, "vocab": decoding.VOCAB,
            "kvHeads": decoding.KV_HEADS, "head": decoding.HEAD,
            "pasts": [p for p, _ in pairs], "presents": [q for _, q in pairs],
            "dims": {"batch_size": 1, "sequence_length": 1,
                     "past_sequence_length": decoding.CAPACITY,
                     "total_sequence_length": decoding.CAPACITY,
                     "kv_cache_dim": decoding.HEAD}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--precisions", nargs="+", default=["fp32", "int4", "int4-dequantized"],
                    choices=["fp32", "int4", "int4-dequantized"])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from converter.state.generation import generate_on_onnxruntime
    from converter.testing import decoding

    bench_browser = _bench_browser()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-decode-") as tmp:
        root = Path(tmp)
        bench = bench_browser.BenchBrowser(root, bench_browser.ort_web_dist(),
                                           script=ROOT / "bench" / "bench_decode.js")
        try:
            for precision in args.precisions:
                spec = {**prepare(precision, root), "runs": args.runs, "warmup": args.warmup}
                ours = bench.run("decodeOurs", spec)
                ort = bench.run("decodeOrt", spec)
                kept = bench.run("decodeOrt", {**spec, "keepCaches": True})
                rows.append((precision, ours, ort, kept))
                want = generate_on_onnxruntime(
                    decoding.source(precision.removesuffix("-dequantized")), decoding.PROMPT,
                    decoding.NEW_TOKENS).tokens
                for name, r in (("ours", ours), ("ORT-web", ort), ("ORT-web ml-tensor", kept)):
                    same = "the source's tokens on ONNX Runtime" if r["tokens"] == want else \
                        f"OTHER TOKENS than the source's on ONNX Runtime: {r['tokens']} " \
                        f"vs {want}"
                    print(f"{precision} {name}: {same}", file=sys.stderr)
        finally:
            bench.close()
    print("| model | runtime | setup ms | prefill ms (4 steps) | decode ms (31 tokens) | "
          "tokens/s | ours / this tokens/s |")
    print("|---|---|---|---|---|---|---|")
    for precision, ours, ort, kept in rows:
        for name, r in (("ours (createSession)", ours), ("ORT-web WebNN EP", ort),
                        ("ORT-web WebNN EP, caches as ml-tensor", kept)):
            ratio = ours["tokensPerSecond"] / r["tokensPerSecond"]
            print(f"| tiny Llama {precision} | {name} | {r['setupMs']:.0f} | "
                  f"{r['prefillMs']:.2f} | {r['decodeMs']:.2f} | {r['tokensPerSecond']:.0f} | "
                  f"{'' if r is ours else f'{ratio:.2f}'} |")


if __name__ == "__main__":
    main()
