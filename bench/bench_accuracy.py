"""The accuracy cost of `--weights float16|int8|int4` on image classifiers over real photos.

    python bench/bench_accuracy.py [--models squeezenet resnet50] [--weights float16 int8 int4]
                                   [--runtimes ort chromium] [--samples 64]

Seeded uniform inputs never move a light classifier's choice (one or two classes first in all
64 rows), so their top-1 agreement proves little. Here each model is the light one with its head
fitted to tell four real photos apart (converter.testing.light_models.light_classifier) and the
inputs are `--samples` seeded crops of those photos (converter.testing.real_images, seed 0; the
head was fitted on seed 1's), given to converter.measure_accuracy as one sample each, as `verify
--weights W --inputs DIR` gives a folder of sample subfolders. Per model, weights type and
runtime: the weights' ratio to float32's, top-1 and top-5 agreement with the float source on
ONNX Runtime, the worst sample's cosine, how many classes the source ranked first (the inputs
moving its choice), and the accuracy verdict by the scheme's default bounds. ort runs the graph
converted without a target on ONNX Runtime; chromium converts it for --target chromium-litert
and runs it in headless Chromium's WebNN (all samples in one page visit). Prints a Markdown
table. Takes minutes (the light resnet50's 64 source runs, each time).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def measure(source: Path, crops, weights: str, runtime: str) -> dict:
    import converter
    from converter.verification.accuracy import measure_accuracy, weights_bytes

    target = "chromium-litert" if runtime == "chromium" else None
    before = weights_bytes(converter.convert(source, target=target))
    graph = converter.convert(source, target=target, weights=weights)
    name = next(iter(graph.inputs))
    start = time.perf_counter()
    report = measure_accuracy(source, graph, weights=weights, bytes_before=before,
                              given_samples=[(f"{i:02d}", {name: crop})
                                             for i, crop in enumerate(crops)],
                              runtime=runtime)
    (out,) = report.outputs
    return {"ratio": report.ratio, "top1": out.top1, "top5": out.top5, "cosine": out.cosine,
            "classes": out.source_classes, "verdict": report.verdict,
            "seconds": time.perf_counter() - start}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["squeezenet", "resnet50"])
    parser.add_argument("--weights", nargs="+", default=["float16", "int8", "int4"])
    parser.add_argument("--runtimes", nargs="+", default=["ort", "chromium"],
                        choices=["ort", "chromium"])
    parser.add_argument("--samples", type=int, default=64)
    args = parser.parse_args(argv)

    from converter.testing.light_models import light_classifier
    from converter.testing.real_images import imagenet_inputs

    crops = imagenet_inputs(args.samples)
    print(f"{args.samples} real crops (seed 0) of 4 photos; heads fitted on seed 1's crops\n")
    print("| model | weights | runtime | weights ratio | top-1 | top-5 | worst cosine | "
          "source classes | verdict | s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for model in args.models:
            source = light_classifier(model, folder)
            for weights in args.weights:
                for runtime in args.runtimes:
                    m = measure(source, crops, weights, runtime)
                    print(f"| light {model} | {weights} | {runtime} | {m['ratio']:.3f}x | "
                          f"{m['top1']:.4f} | {m['top5']:.4f} | {m['cosine']:.6f} | "
                          f"{m['classes']} | {m['verdict']} | {m['seconds']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
