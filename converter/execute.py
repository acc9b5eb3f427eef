"""Run a WebNN graph: lower it to ONNX and execute it on ONNX Runtime.

    outputs = run(graph, {"x": np.ones((1, 3, 8, 8), np.float32)})

Feeds are checked against the graph's inputs first (names, data types, shapes), and every
problem is reported in one error. Results are keyed by the graph's output names.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from . import dtypes
from .errors import ConverterError, UnsupportedError
from .ir import Graph

__all__ = ["run", "prepare", "check_feeds", "RUNTIMES"]

RUNTIMES = ("ort", "chromium")
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


def check_feeds(graph: Graph, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The feeds as ndarrays, or a ConverterError listing every mismatch with the graph's inputs."""
    problems: list[str] = []
    arrays: dict[str, np.ndarray] = {}
    for name, operand in graph.inputs.items():
        if name not in feeds:
            problems.append(f"input '{name}' ({operand.desc}) is not fed")
            continue
        arr = np.asarray(feeds[name])
        want = dtypes.numpy_dtype(operand.data_type).newbyteorder("=")
        if arr.dtype.newbyteorder("=") != want:
            problems.append(f"input '{name}' is {operand.data_type}, the feed is numpy {arr.dtype}")
        elif tuple(arr.shape) != operand.shape:
            problems.append(f"input '{name}' has shape {list(operand.shape)}, the feed has "
                            f"{list(arr.shape)}")
        arrays[name] = np.asarray(arr, dtype=want, order="C")  # (ascontiguousarray makes 0-d 1-d)
    for name in feeds:
        if name not in graph.inputs:
            problems.append(f"'{name}' is not an input of the graph "
                            f"(inputs: {', '.join(graph.inputs) or 'none'})")
    if problems:
        raise ConverterError("; ".join(problems), where=f"graph '{graph.name}' feeds",
                             fix="feed each input once, with its exact data type and shape")
    return arrays


def run(graph: Graph, feeds: Mapping[str, np.ndarray], runtime: str = "ort", *,
        opset: int | None = None) -> dict[str, np.ndarray]:
    """Execute `graph` on `feeds`; returns {output name: ndarray}.

    runtime "ort": the graph lowered to ONNX, on ONNX Runtime; "chromium": the graph emitted as
    JavaScript, on a real headless Chromium's WebNN (`webnn-convert browser-install`).
    """
    if runtime not in RUNTIMES:
        raise ConverterError(f"unknown runtime '{runtime}'",
                             fix=f"use one of {', '.join(RUNTIMES)}")
    if runtime == "chromium":
        from .runtimes.chromium import run_chromium

        return run_chromium(graph, feeds)
    check_feeds(graph, feeds)  # feed mistakes first: they are the caller's, not the graph's
    return prepare(graph, opset)(feeds)


def prepare(graph: Graph, opset: int | None = None):
    """Lower `graph` once for ONNX Runtime; returns run(feeds) -> {output name: ndarray}, for
    callers that run the same graph many times (a Session's steps)."""
    problems = graph.problems()
    if problems:
        raise ConverterError(problems[0], where=f"graph '{graph.name}'",
                             fix="the graph must be valid to run; see `webnn-convert validate`")
    from .lowering.onnx import lower

    lowered = lower(graph, opset, external_min_bytes=_EXTERNAL_MIN_BYTES)
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


def _ort_session(lowered):
    try:
        import onnxruntime as ort
    except ImportError:  # pragma: no cover - onnxruntime is a dependency
        raise UnsupportedError(["onnxruntime is not installed"],
                               fix="pip install onnxruntime") from None
    options = ort.SessionOptions()
    # Basic optimizations only (constant folding, dead code): the extended fusions replace
    # op sequences with kernels of different numerics, and the executor's job is the graph's.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.log_severity_level = 4  # failures reach the caller as ConverterError, not stderr
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
    `lowered` keeps its in-memory markers)."""
    import tempfile
    from pathlib import Path

    import onnx

    from .formats.weights import release_mapped_pages

    model = onnx.ModelProto()
    model.CopyFrom(lowered.model)  # small: the big constants are not in it
    with tempfile.TemporaryDirectory(prefix="webnn-exec-") as tmp:
        offset = 0
        with open(Path(tmp) / "weights.bin", "wb") as f:
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
        model_path = Path(tmp) / "model.onnx"
        model_path.write_bytes(model.SerializeToString())
        return ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
