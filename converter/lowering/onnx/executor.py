"""The executor: a WebNN graph lowered to ONNX and run on ONNX Runtime.

    run_once = prepare(graph)             # lowered and loaded once
    outputs = run_once({"x": x})          # {output name: ndarray}, feeds checked first

`converter.runtimes.execute.run(graph, feeds)` is the entry point that also picks the runtime; the
passes that evaluate a subgraph (constant folding) call `prepare` here directly, below the
layer of the runtimes.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ...errors import ConverterError, UnsupportedError
from ...ir import Graph
from ...formats.weights import release_constant_pages
from ...ir.feeds import check_feeds
from . import lower

__all__ = ["prepare", "run_on_ort"]

# Constants of at least this size go to ORT as OrtValues over the graph's own arrays instead
# of being copied into the serialized model (which also keeps big models under protobuf's 2 GiB).
_EXTERNAL_MIN_BYTES = 1 << 20
# When the graph's big constants add up to at least this, ORT reads them from a temporary
# external-data file instead: ORT copies OrtValue initializers into its session (measured on
# resnet50: +230 MiB for 98 MiB of weights), while a file's data it maps and reads once
# (+130 MiB), and writing the file releases the graph's own mapped pages as it goes.
_VIA_FILE_MIN_BYTES = 32 << 20
# External data is placed at multiples of this in the file, so ORT may map it (its mapping
# needs offsets aligned to the allocation granularity: 64 KiB covers every platform).
_FILE_ALIGN = 1 << 16


def run_on_ort(graph: Graph, feeds: Mapping[str, np.ndarray], opset: int | None = None
               ) -> dict[str, np.ndarray]:
    """Execute `graph` once on ONNX Runtime; returns {output name: ndarray}."""
    check_feeds(graph, feeds)  # feed mistakes first: they are the caller's, not the graph's
    return prepare(graph, opset)(feeds)


def prepare(graph: Graph, opset: int | None = None):
    """Lower `graph` once for ONNX Runtime; returns run(feeds) -> {output name: ndarray}, for
    callers that run the same graph many times (a Session's steps)."""
    problems = graph.problems()
    if problems:
        raise ConverterError(problems[0], where=f"graph '{graph.name}'",
                             fix="the graph must be valid to run; see `webnn-convert validate`")
    lowered = lower(graph, opset, external_min_bytes=_EXTERNAL_MIN_BYTES)
    # Copying the small constants into the model faulted in their pages and, by readahead,
    # their big neighbours' (54 MB of resnet50's 91 MB): drop them before ORT reads its copy.
    release_constant_pages(graph)
    session = _ort_session(lowered)
    names = list(graph.outputs)
    quiet = _ort_run_options()

    def run_once(feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        arrays = check_feeds(graph, feeds)
        try:
            values = session.run([lowered.outputs[n] for n in names], arrays, quiet)
        except Exception as e:  # ORT's own exception types; report them as ours
            raise ConverterError(f"ONNX Runtime failed running the lowered model: {e}",
                                 where="executor") from e
        return {name: np.asarray(v) for name, v in zip(names, values)}

    return run_once


def _ort_run_options():
    import onnxruntime as ort

    options = ort.RunOptions()
    options.log_severity_level = 4
    return options


def _set_threads(options) -> None:
    """ONNX Runtime's pool as wide as WEBNN_CONVERTER_THREADS says, when it says."""
    from ...threads import runtime_threads

    threads = runtime_threads()
    if threads is not None:
        options.intra_op_num_threads = threads


def _ort_session(lowered):
    try:
        import onnxruntime as ort
    except ImportError:  # pragma: no cover - onnxruntime is a dependency
        raise UnsupportedError(["onnxruntime is not installed"],
                               fix="pip install onnxruntime") from None
    options = ort.SessionOptions()
    # No graph optimizations: fusions replace op sequences with kernels of other numerics
    # (the executor's job is the graph's), and even the basic ones (a convolution folded with
    # its batch norm) write fused copies of the weights, which doubled the memory of verify.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4  # failures reach the caller as ConverterError, not stderr
    _set_threads(options)
    try:
        if sum(a.nbytes for a in lowered.external.values()) >= _VIA_FILE_MIN_BYTES:
            return _session_via_file(ort, lowered, options)
        if lowered.external:
            names = list(lowered.external)
            options.add_external_initializers(
                names, [ort.OrtValue.ortvalue_from_numpy(lowered.external[n]) for n in names])
        return ort.InferenceSession(lowered.model.SerializeToString(), options,
                                    providers=["CPUExecutionProvider"])
    except Exception as e:  # ORT raises its own exception types; report them as ours
        raise ConverterError(f"ONNX Runtime rejected the lowered model: {e}",
                             where="executor") from e


def _session_via_file(ort, lowered, options):
    """An ORT session over the lowered model saved with its big constants as external data in
    a temporary folder, removed once the session has loaded it (the model proto is copied, so
    `lowered` keeps its in-memory markers). The folder is named by its owner: one a killed run
    left is removed by the next run that makes one (owned_paths.py)."""
    import shutil
    import tempfile
    from pathlib import Path

    import onnx

    from ...formats._files import signals_held
    from ...formats.owned_paths import make_owned_folder

    model = onnx.ModelProto()
    model.CopyFrom(lowered.model)  # small: the big constants are not in it
    tmp = None
    try:
        with signals_held():  # made and known, or not made
            tmp = make_owned_folder(Path(tempfile.gettempdir()), "exec")
        return _load_via_file(ort, lowered, model, options, tmp)
    finally:
        if tmp is not None:
            with signals_held():  # a second stop must not leave it half removed
                shutil.rmtree(tmp, ignore_errors=True)


def _load_via_file(ort, lowered, model, options, tmp):
    """The session over `model`, written with its big constants to folder `tmp`."""
    from ...formats.weights import release_mapped_pages

    offset = 0
    with open(tmp / "weights.bin", "wb") as f:
        for tensor in model.graph.initializer:
            arr = lowered.external.get(tensor.name)
            if arr is None:
                continue
            pad = -offset % _FILE_ALIGN
            f.write(bytes(pad))
            offset += pad
            raw = memoryview(arr.reshape(-1).view(np.uint8))
            f.write(raw)
            release_mapped_pages(raw)  # the graph's pages: ORT holds the data from here
            del tensor.external_data[:]
            for key, value in (("location", "weights.bin"), ("offset", str(offset)),
                               ("length", str(arr.nbytes))):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
            offset += arr.nbytes
    model_path = tmp / "model.onnx"
    model_path.write_bytes(model.SerializeToString())
    return ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
