"""webnn-converter: convert models between ONNX, TFLite and W3C WebNN graphs, and prove it.

The Python API:
    graph = converter.load("model.onnx", dims={"batch": 1})   # or a .webnn / .json graph
    graph = converter.convert("model.onnx", "out.webnn", target="coreml")  # load, rewrite, save
    graph = converter.convert("model.onnx", "out.webnn", verify=True)  # raises on a mismatch
    converter.save(graph, "out.webnn")                         # or .json, .onnx, .tflite, .js
    violations = converter.check(graph, "chromium-litert")     # what will not run there
    outputs = converter.run(graph, {"x": array})               # on ONNX Runtime
    session = converter.Session(graph); session.step(feeds)    # state carried between steps
    report = converter.verify("model.onnx", seed=0)            # source runtime vs WebNN graph
    report = converter.verify("model.onnx", "out.webnn")       # a graph converted earlier
    print(report)                                              # the table `verify` prints
    report = converter.verify("model.onnx", target="coreml", inputs={"x": array})
    report = converter.verify_steps("wake.tflite", steps=20)   # stateful: step by step
    graph = converter.load_decoder("model.onnx", capacity=64)  # a KV cache as state
    result = converter.generate(graph, prompt_ids, max_new_tokens=32)   # greedy tokens
    loop = converter.load_seq2seq("t5/decoder_model_merged.onnx")  # encoder_model.onnx beside
    loop.encode({"input_ids": ids}); converter.generate(loop, loop.start_tokens, 16)
    graph = converter.convert("model.onnx", "small.webnn", weights="int8")  # or float16, int4
    report = converter.measure_accuracy("model.onnx", "int8", samples=16)  # vs the float source
    b = converter.GraphBuilder("tiny")            # build graphs the way MLGraphBuilder does
    variants = converter.convert("bert.onnx", "bert.webnn", dims={"sequence": [8, 16, 32]})
    outputs = converter.run("bert.webnn", feeds, dims={"sequence": 16})

Every function taking a graph takes a Graph (or Variants) or the path of a file `load` reads.
A missing file raises MissingFileError, a FileNotFoundError; every error on bad input is a
ConverterError whose str() is one line (what, where, what to do).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .errors import (ConverterError, FormatError, GraphInvalidError, MissingFileError,
                     OpValidationError, ParseError, UnsupportedError, VerificationError,
                     AccuracyError,
                     WeightsError)

__version__ = "0.1.0"

# ONNX Runtime's telemetry (1DS, on Linux and macOS) starts when onnxruntime is imported: it
# writes TMPDIR/.ses and, under ~/.cache/Microsoft, a device id and an event database, and
# would upload events. A converter leaves nothing behind and sends nothing, and only this
# variable, set before that import, stops it all (onnxruntime.disable_telemetry_events(),
# called after the import, is too late for the files; it still stops the events when the
# caller imported onnxruntime before this package).
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
if "onnxruntime" in sys.modules and hasattr(sys.modules["onnxruntime"],
                                            "disable_telemetry_events"):
    sys.modules["onnxruntime"].disable_telemetry_events()

if TYPE_CHECKING:
    from .ops.builder import GraphBuilder
    from .runtimes.session import Session
    import numpy as np

    from .dynamic.variants import Variants
    from .ir import ConstantData, Graph, Operand, Operation, TensorDesc
    from .targets import Target
    from .targets.check import Violation
    from .verification.core import VerifyReport
    from .verification.steps import StepsReport

# Imported on first use (PEP 562), so `import converter` and `webnn-convert --version` do not
# pay for numpy and the op catalogue.
_LAZY = {"GraphBuilder": ".ops.builder", "ConstantData": ".ir", "Graph": ".ir", "Operand": ".ir",
         "Operation": ".ir", "TensorDesc": ".ir", "Session": ".runtimes.session",
         "generate": ".state.generation", "load_decoder": ".state.generation",
         "load_seq2seq": ".state.seq2seq",
         "Variants": ".dynamic.variants"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        if _LAZY[name] == ".ir":
            importlib.import_module(".ops", __name__)  # the IR's op lookups (ir/semantics.py)
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'converter' has no attribute '{name}'")


def __dir__() -> list[str]:
    """The lazy names too, so that dir() and help(converter) list GraphBuilder, Session..."""
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "__version__", "load", "convert", "save", "check", "run", "verify", "verify_steps", "Session", "GraphBuilder",
    "generate", "load_decoder", "load_seq2seq",
    "Graph", "Operand", "Operation", "Variants",
    "ConstantData", "TensorDesc", "ConverterError", "FormatError", "GraphInvalidError",
    "MissingFileError", "OpValidationError", "ParseError", "UnsupportedError",
    "VerificationError", "WeightsError", "AccuracyError", "measure_accuracy",
]


def load(path: str | os.PathLike, dims: Mapping[str, int] | None = None,
         input_shapes: Mapping[str, Sequence[int]] | None = None, *,
         known_inputs: Mapping | None = None, verify: bool = True,
         max_tensor_bytes: int | str | None = None,
         max_total_bytes: int | str | None = None) -> Graph | Variants:
    """A WebNN graph from an `.onnx` model (imported; `dims` sets symbolic dimensions,
    `input_shapes` whole input shapes, `known_inputs` fixes inputs' values) or a
    `.webnn`/`.json` graph file with its weights: for a file holding the model at several dims,
    a `converter.dynamic.Variants` (or with `dims` the graph at those).

    `max_tensor_bytes` and `max_total_bytes` (bytes, or sizes such as "2GiB") bound what the
    import computes and holds: one value (default 1 GiB) and all of them (default twice the
    model's weights, at least 256 MiB); see converter.budget.
    """
    from .budget import limits
    from .conversion.by_suffix import load_any

    with limits(max_tensor_bytes, max_total_bytes):
        return load_any(path, dims=dims, input_shapes=input_shapes, known_inputs=known_inputs,
                        verify=verify, variants=True)


def convert(source: str | os.PathLike, output: str | os.PathLike | None = None, *,
            target: str | Path | Target | None = None, io_layout: str | None = None,
            dims: Mapping[str, Any] | None = None,
            input_shapes: Mapping[str, Sequence[int]] | None = None,
            known_inputs: Mapping[str, Any] | None = None, dequantize: bool = False,
            weights: str = "float32", block_size: int | None = None, compute: str = "float32",
            verify: bool = False, **tolerances: Any) -> Graph | Variants:
    """`webnn-convert convert` as a function: load `source` (as `load` does), rewrite it for
    `target` when given (a built-in target's name, a target file or a Target; `io_layout`
    "nchw"/"nhwc" sets the layout of its 4-D inputs and outputs), and write `output` when
    given, in the format its suffix names (as `save` does). Returns the graph.

    A dim given several values (a list, or a `(lo, hi)` range) converts once per value and
    returns a `converter.dynamic.Variants` (written as one .webnn/.json/.js with shared weights).

    `dequantize` (with `target`) stores quantized weights as float, as the CLI's --dequantize.
    `weights="float16"` stores float32 weights of 256 bytes or more as float16, each cast back to
    float32 in the graph (the CLI's --weights float16; one value of each dim only).
    `weights="int8"` stores conv2d/convTranspose2d/matmul/gemm weights of 256 bytes or more as
    int8 with one float32 scale per output channel, `weights="int4"` matmul/gemm weights as int4
    with one scale per `block_size` values along the reduction dim (None: 32, leaving float32
    a weight it does not divide; a size given must divide each), each read through
    dequantizeLinear (kept int4 where `target` takes it, else widened exactly); a .tflite
    output refuses int4 (the CLI's --weights and --block-size).
    `compute="float16"` computes each op in float16 where `target` (without one: the portable
    target, the spec's op table) takes its float16 form, its float32 constants stored as
    float16; normalizations, softmax and accumulating reductions stay float32, and the graph's
    inputs and outputs stay float32 (the CLI's --compute; a .tflite output refuses it).
    `verify=True` checks the result against `source` on its own runtime before anything is
    written (each variant at its dims), as the CLI's --verify (`tolerances`: seed, atol, rtol,
    ulp, as `verify` takes them): on a mismatch it raises VerificationError, whose `report`
    prints the figures, and writes nothing; on a pass it returns the graph as without it.
    With compressed `weights`, the float policy judges the same conversion uncompressed, and
    the result gets its own accuracy verdict against the float source (`accuracy`= bounds,
    else the scheme's default; over `samples`= seeded inputs, 16 by default, as
    measure_accuracy): AccuracyError, writing nothing, when it misses them.
    When no runtime can run the source (a TFLite custom op LiteRT has no kernel for) and the
    graph agrees with its own float64 evaluation, it warns (ConversionWarning, "unjudged: no
    source runtime"), writes and returns the graph.

    Raises UnsupportedError listing what still breaks the target after its passes, and
    ConverterError when `output` (or its manifest, weights or page) is a file the conversion
    reads (the source, its graph files, its external data), or would replace the weights of
    another graph file named alike: nothing is written then.
    """
    from .files.guard import tracking

    if io_layout is not None and target is None:
        raise ConverterError("io_layout applies with a target", fix="give target= too")
    if dequantize and target is None:
        raise ConverterError("dequantize applies with a target", fix="give target= too")
    if tolerances and not verify:
        raise ConverterError(f"{', '.join(tolerances)} applies with verify=True",
                             fix="give verify=True too")
    taken = {"seed", "atol", "rtol", "ulp", "oracle", "accuracy", "samples"}
    if set(tolerances) - taken:
        raise TypeError(f"convert() got unexpected keyword arguments "
                        f"{sorted(set(tolerances) - taken)}")
    if weights == "float32" and {"accuracy", "samples"} & set(tolerances):
        raise ConverterError("accuracy and samples apply with compressed weights",
                             fix="give weights='float16' (or another scheme) too")
    from .passes.weight_types import check_block_size, check_weights, refuse_output

    from .passes.float16_compute import check_compute
    from .passes.weight_types import refuse_compute_output

    check_block_size(check_weights(weights), block_size)
    refuse_output(weights, output)
    refuse_compute_output(check_compute(compute), output)
    changed = f"weights={weights!r}" if weights != "float32" else \
        f"compute={compute!r}" if compute != "float32" else None
    if changed and dims and any(not isinstance(v, int) for v in dims.values()):
        raise ConverterError(f"{changed} converts one value of each dim",
                             where="dims", fix="convert each value apart")
    with tracking():  # the files read (external data too) are never the ones written
        return _convert(source, output, target, io_layout, dims, input_shapes, known_inputs,
                        dequantize, (weights, block_size, compute),
                        tolerances if verify else None)


def _convert(source, output, target, io_layout, dims, input_shapes, known_inputs, dequantize,
             stored_as, tolerances):
    weights, block_size, compute = stored_as
    from .conversion.by_suffix import load_any, refuse_overwriting, write_any

    if output is not None:
        refuse_overwriting([source], output)
    if dims and any(not isinstance(v, int) for v in dims.values()):
        from .conversion.variants import convert_variants

        result = convert_variants(source, dims, target=target, io_layout=io_layout,
                                  input_shapes=input_shapes, known_inputs=known_inputs,
                                  dequantize=dequantize)
        checks = [(graph, {**result.fixed, **point}) for point, graph in result.entries]
    else:
        result = load_any(source, dims=dims, input_shapes=input_shapes,
                          known_inputs=known_inputs)
        if target is not None:
            from .targets.pipeline import convert_for_target

            convert_for_target(result, target, io_layout=io_layout, dequantize=dequantize,
                               weights=weights, block_size=block_size, compute=compute)
        elif weights != "float32" or compute != "float32":
            from .targets.pipeline import store_weights

            store_weights(result, weights, block_size, compute)
        checks = [(result, dims)]
    if tolerances is not None and weights != "float32":  # the float conversion, then accuracy
        _verify_compressed(source, result, target, io_layout, dims, input_shapes, known_inputs,
                           dequantize, weights, dict(tolerances))
    elif tolerances is not None:  # before writing: a graph that does not match is not published
        for graph, at in checks:
            report = verify(source, graph, dims=at, input_shapes=input_shapes,
                            known_inputs=known_inputs, **tolerances)
            if report.verdict == "mismatch":
                raise VerificationError(report, where=str(source))
            if not report.passed:  # no runtime runs the source: said, not raised
                import warnings

                from .errors import ConversionWarning

                warnings.warn(ConversionWarning(
                    f"{source}: {report.verdict} ({report.unjudged}); the graph agrees with "
                    f"its own float64 evaluation"), stacklevel=2)
    if output is not None:
        write_any(result, output)
    return result


def _verify_compressed(source, compressed, target, io_layout, dims, input_shapes, known_inputs,
                       dequantize, weights, tolerances) -> None:
    """convert(weights=..., verify=True): the same conversion uncompressed judged by the float
    policy (VerificationError), the compressed one by its accuracy (AccuracyError)."""
    from .conversion.by_suffix import load_any
    from .verification.accuracy import DEFAULT_SAMPLES, measure_accuracy as measure, weights_bytes

    bounds, samples = tolerances.pop("accuracy", None), tolerances.pop("samples", None)
    floating = load_any(source, dims=dims, input_shapes=input_shapes, known_inputs=known_inputs)
    if target is not None:
        from .targets.pipeline import convert_for_target

        convert_for_target(floating, target, io_layout=io_layout, dequantize=dequantize)
    report = verify(source, floating, dims=dims, input_shapes=input_shapes,
                    known_inputs=known_inputs, **tolerances)
    if report.verdict == "mismatch":
        raise VerificationError(report, where=str(source))
    before, floating = weights_bytes(floating), None
    accuracy = measure(source, compressed, weights=weights, bytes_before=before,
                       samples=samples or DEFAULT_SAMPLES, seed=tolerances.get("seed", 0),
                       known_inputs=known_inputs, accuracy=bounds)
    if not accuracy.passed:
        raise AccuracyError(accuracy, where=str(source))


def measure_accuracy(source: str | os.PathLike, weights: str, *,
                     target: str | Path | Target | None = None, io_layout: str | None = None,
                     dims: Mapping[str, int] | None = None,
                     input_shapes: Mapping[str, Sequence[int]] | None = None,
                     known_inputs: Mapping[str, Any] | None = None, samples: int = 16,
                     seed: int = 0, feeds: Mapping[str, np.ndarray] | None = None,
                     runtime: str = "ort", accuracy: str | None = None,
                     block_size: int | None = None, compute: str = "float32"):
    """`webnn-convert verify --weights` 's accuracy report as a function: `source` converted
    (for `target`) twice, with float32 weights (its size is the "before") and with `weights`
    ("float16", "int8", "int4" with `block_size`; computing in `compute`: see convert),
    the second run on `runtime` against the float source on its own runtime
    over `samples` seeded inputs (seed, seed + 1, ...; or `feeds`). Returns the
    AccuracyReport: .passed against `accuracy` ('cosine>=0.999,top1>=0.99') or the scheme's
    default (verification.accuracy_bounds.DEFAULT_ACCURACY), .lines(), .to_json()."""
    from .verification.accuracy import measure_accuracy as measure, weights_bytes
    from .verification.accuracy_bounds import bounds_for

    bounds_for(weights, accuracy)  # a malformed bound fails before any conversion
    floating = convert(source, target=target, io_layout=io_layout, dims=dims,
                       input_shapes=input_shapes, known_inputs=known_inputs)
    before, floating = weights_bytes(floating), None
    compressed = convert(source, target=target, io_layout=io_layout, dims=dims,
                         input_shapes=input_shapes, known_inputs=known_inputs, weights=weights,
                         block_size=block_size, compute=compute)
    return measure(source, compressed, weights=weights, bytes_before=before, samples=samples,
                   seed=seed, feeds=feeds, known_inputs=known_inputs, runtime=runtime,
                   accuracy=accuracy)


def check(graph: Graph | str | os.PathLike, target: str | Path | Target) -> list[Violation]:
    """Every way `graph` (a Graph, or a file `load` reads) breaks `target` (a built-in name, a
    target file or a Target): an empty list when it fits."""
    from .targets.check import check as _check

    if not hasattr(graph, "operations"):
        graph = load(graph)
    return _check(graph, target)


def save(graph: Graph | Variants, path: str | os.PathLike) -> list[Path]:
    """Save a graph by the path's suffix: `.webnn` or `.json` (plus manifest and weights), or
    `.onnx` (the ONNX lowering; past 2 GiB with its weights in NAME.onnx.data beside it).
    Returns the paths written; on failure nothing is left behind.
    """
    from .conversion.by_suffix import write_any

    return write_any(graph, path)


def run(graph: Graph | Variants | str | os.PathLike, feeds: Mapping[str, np.ndarray],
        runtime: str = "ort", *, dims: Mapping[str, int] | None = None
        ) -> dict[str, np.ndarray]:
    """Execute a graph (or a file `load` reads) on `feeds` (input name -> ndarray); outputs by
    graph output name. For Variants (a model at several dims), `dims` picks the one to run.

    A bool feed is accepted for a uint8 input: WebNN has no bool, so an input that was bool in
    the source is uint8 (0 or 1) in the graph.
    """
    from .runtimes.execute import run as _run
    from .verification.core import as_graph_feeds

    if isinstance(graph, (str, os.PathLike)):
        graph = load(graph)
    graph = _at_dims(graph, dims)
    return _run(graph, as_graph_feeds(graph, feeds), runtime=runtime)


def _at_dims(graph, dims):
    """The graph of Variants at `dims`; a Graph as it is (dims= then applies to variants only)."""
    if hasattr(graph, "entries"):
        return graph.at(dims)
    if dims:
        raise ConverterError("dims= picks one of several variants; this graph has one shape",
                             fix="drop dims=, or load/convert the model at several dims")
    return graph


def verify(source: str | os.PathLike, graph: Graph | Variants | str | os.PathLike | None = None,
           *,
           target: str | Path | Target | None = None, io_layout: str | None = None,
           inputs: Mapping[str, np.ndarray] | None = None, seed: int = 0,
           **options: Any) -> VerifyReport:
    """Parity of a source model (on its own runtime) and its WebNN graph.

    `graph` defaults to `source` converted now (with `target`'s rewrites when given, at
    `io_layout` as `convert` takes it, and the `dims`, `input_shapes`, `known_inputs`
    options); `inputs` gives some or all inputs' values (name -> array; bool accepted for a
    bool source input), the others are seeded (`seed`). Inputs and outputs the graph takes or
    gives transposed (converted with io_layout, now or earlier: the graph file records it)
    are fed and compared in the source's layout: `inputs` are in the source model's layout.
    Further options (atol, rtol, ulp, runtime, oracle, ...): see converter.verification.core.verify.
    `graph` may be the path of a `.webnn`/`.json` graph (loaded as `load` does) or of an
    emitted `.js` module, run in Chromium (runtime="chromium") at `dims`, or Variants (a model
    at several dims): the one at `dims` is verified. `print(report)` shows what
    `webnn-convert verify` prints; `report.passed` is the verdict.
    """
    from .verification.core import verify as _verify

    if isinstance(graph, (str, os.PathLike)) and Path(graph).suffix.lower() != ".js":
        options.setdefault("graph_path", os.fspath(graph))
        graph = load(graph)

    if graph is not None and hasattr(graph, "entries"):
        graph = graph.at(options.get("dims"))

    if graph is None and target is not None:
        graph = convert(source, target=target, io_layout=io_layout, dims=options.get("dims"),
                        input_shapes=options.get("input_shapes"),
                        known_inputs=options.get("known_inputs"))
    elif target is not None:
        raise ConverterError("target= rewrites the graph verify converts; a graph is given",
                             fix="give graph= or target=, not both")
    elif io_layout is not None:
        raise ConverterError("io_layout applies with a target", fix="give target= too")
    if inputs is not None:
        options["feeds"] = {**options.get("feeds", {}), **inputs}
    return _verify(source, graph, seed=seed, **options)


def verify_steps(source: str | os.PathLike, graph: Graph | None = None, steps: int = 20, seed: int = 0,
                 **options: Any) -> StepsReport:
    """Step-wise parity of a stateful model and its graph; see converter.verification.steps."""
    from .verification.steps import verify_steps as _verify_steps

    return _verify_steps(source, graph, steps=steps, seed=seed, **options)
