"""Running a source model on its own runtime: the reference run, and the runs that measure the
runtime's own float32 noise.

    outputs = run_source(path, feeds)             # ORT at DISABLE_ALL, as the executor runs
    double, why_not = run_source_f64(path, feeds)  # the model in float64, where its runtime can
    others = source_alternates(path, feeds)        # {label: outputs} with other kernels ...

ONNX Runtime runs the source with the same session options as the executor runs our lowered
graph: ORT_DISABLE_ALL, every node by its own kernel. Fusions swap in kernels with other
numerics, and even the basic ones (a convolution folded with its batch norm) write fused copies
of the weights, which would hold every weight twice; so a reported difference is never our own
setup, and each runtime holds the weights once. Its noise is measured at ENABLE_ALL, on the
input moved by one ULP, and, where ORT has double kernels for every op, on a float64 copy of
the model.
LiteRT's noise: its builtin kernels against its default (XNNPACK) ones, and the input moved by
one ULP.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from ..errors import ConverterError
from ..threads import runtime_threads

__all__ = ["run_source", "run_source_f64", "source_alternates", "SESSION_OPTIONS",
           "ONE_ULP_LABEL", "release_freed_memory"]

SESSION_OPTIONS = {".onnx": "ONNX Runtime at ORT_DISABLE_ALL on both sides",
                   ".tflite": "LiteRT with its default kernels (XNNPACK)"}
ONE_ULP_LABEL = "input moved 1 ULP"

_ORT_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16,
              "tensor(double)": np.float64, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
              "tensor(uint32)": np.uint32, "tensor(uint64)": np.uint64, "tensor(int8)": np.int8,
              "tensor(uint8)": np.uint8, "tensor(int16)": np.int16, "tensor(uint16)": np.uint16,
              "tensor(bool)": np.bool_}


def run_source(path: Path, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The reference run: ORT at the executor's optimisation level, or LiteRT's default."""
    if path.suffix.lower() == ".tflite":
        from .litert import run_litert

        return run_litert(path, feeds)
    return run_onnx(path, feeds)


def run_onnx(path: Path | bytes, feeds: Mapping[str, np.ndarray], *, level: str = "none",
             where: str | None = None) -> dict[str, np.ndarray]:
    """Run an ONNX model (a path or serialized bytes) on ORT's CPU provider at `level`."""
    import onnxruntime as ort

    where = where or str(path)
    options = ort.SessionOptions()
    options.graph_optimization_level = {
        "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[level]
    options.log_severity_level = 4  # failures reach the caller as ConverterError
    threads = runtime_threads()
    if threads is not None:
        options.intra_op_num_threads = threads
    try:
        model = path if isinstance(path, bytes) else _external_view(Path(path), options)
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as e:  # ORT's own errors: the source cannot be the reference
        raise ConverterError(f"ONNX Runtime cannot load the source model: {_first_line(e)}",
                             where=where, fix="the source runtime must run the model to "
                                              "verify against it") from None
    # Names and type strings only: a NodeArg keeps the whole session alive (pybind ties it to
    # its parent), which would hold every weight past the `del session` below.
    model_inputs = {i.name: i.type for i in session.get_inputs()}
    static = {i.name: [int(d) for d in i.shape] for i in session.get_inputs()
              if all(isinstance(d, int) and d >= 0 for d in i.shape)}
    names = [o.name for o in session.get_outputs()]
    ort_feeds = {}
    for name, value in feeds.items():
        if name not in model_inputs:
            continue
        np_type = _ORT_TYPES.get(model_inputs[name])
        value = np.asarray(value).astype(np_type) if np_type else np.asarray(value)
        shape = static.get(name)
        if shape is not None and value.ndim <= 1 and len(shape) != value.ndim \
                and value.size == int(np.prod(shape, dtype=np.int64)):
            # A --const value given as a number or a flat list, for a declared static shape
            # of another rank (optimum's use_cache_branch is [1]): the import reads it so, and
            # so does ORT now. (Feeds of the input's rank are left alone: a wrong one is
            # refused by ORT, naming it.)
            value = value.reshape(shape)
        ort_feeds[name] = value
    try:
        return dict(zip(names, session.run(names, ort_feeds)))
    except Exception as e:
        raise ConverterError(f"ONNX Runtime failed running the source model: {_first_line(e)}",
                             where=where) from None
    finally:
        del session
        release_freed_memory()


# Initializers at least this big are read by ORT from the source file as external data.
_VIEW_MIN_BYTES = 1 << 20


def _external_view(path: Path, options) -> str | bytes:
    """The model for ORT to load: its path, or, when it holds big initializers inline, its
    bytes without them, each marked as external data at its own offset in the source file.

    Loading the file itself, ORT parses every weight into the protobuf and then copies each
    into a tensor: twice the weights. Given the offsets it reads each weight once, from the
    file, and the numerics are the same (the same bytes, the same session options). Small
    initializers stay inline: ORT's shape inference reads shape inputs only from inline data.
    """
    import onnx

    from ..importers.onnx.wire import WireError, map_model

    try:
        stripped, raws, mapped = map_model(path)
    except (OSError, WireError):
        return str(path)  # ORT reads it itself and reports what is wrong with it
    if not any(raw is not None and raw.nbytes >= _VIEW_MIN_BYTES for raw in raws):
        return str(path)
    real = path.resolve()  # the file mapped, under its own name and folder
    base = np.frombuffer(mapped, np.uint8, count=1).ctypes.data
    model = onnx.ModelProto()
    model.ParseFromString(stripped)
    for tensor, raw in zip(model.graph.initializer, raws):
        if raw is None:
            continue
        if raw.nbytes < _VIEW_MIN_BYTES:
            tensor.raw_data = bytes(raw)
            continue
        offset = np.frombuffer(raw, np.uint8, count=1).ctypes.data - base
        tensor.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (("location", real.name), ("offset", str(offset)),
                           ("length", str(raw.nbytes))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
    # ORT resolves external data of a model given as bytes against this folder, and only
    # inside it: the source's own folder, where the model was allowed to be read.
    options.add_session_config_entry("session.model_external_initializers_file_folder_path",
                                     str(real.parent))
    return model.SerializeToString()


def release_freed_memory() -> None:
    """Hand memory freed by a finished ORT session back to the system (glibc keeps big freed
    blocks for reuse otherwise), so the next runtime's peak does not stack on the last one's."""
    import ctypes
    import sys

    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):  # not glibc (musl): nothing to trim
            pass


def run_source_f64(path: Path, feeds: Mapping[str, np.ndarray]
                   ) -> tuple[dict[str, np.ndarray] | None, str]:
    """The source model computed in float64, and a note saying how or why not.

    Only ONNX: a copy of the model with every float32 tensor made double (initializers,
    Constant and ConstantOfShape values, Cast targets, inputs and outputs). ORT lacks double
    kernels for some ops (Conv among them); then there is no float64 source run.
    """
    if path.suffix.lower() != ".onnx":
        return None, f"{path.suffix} sources cannot run in float64"
    import onnx

    try:
        model = double_copy(onnx.load(str(path)))
        return run_onnx(model.SerializeToString(), feeds, where=f"{path} (float64 copy)"), \
            "ONNX Runtime on a float64 copy of the model"
    except (ConverterError, ValueError, onnx.checker.ValidationError) as e:
        line = e.line() if isinstance(e, ConverterError) else _first_line(e)
        return None, f"no float64 run: {line}"


def double_copy(model):
    """A copy of an ONNX model computing in double wherever it computed in float."""
    import onnx
    from onnx import TensorProto, numpy_helper

    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph

    def widen(tensor) -> None:
        if tensor.data_type == TensorProto.FLOAT:
            tensor.CopyFrom(numpy_helper.from_array(
                numpy_helper.to_array(tensor).astype(np.float64), tensor.name))

    for tensor in graph.initializer:
        widen(tensor)
    for info in (*graph.input, *graph.output):
        if info.type.tensor_type.elem_type == TensorProto.FLOAT:
            info.type.tensor_type.elem_type = TensorProto.DOUBLE
    del graph.value_info[:]  # inferred float32 types would contradict the copy
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                widen(attr.t)
            elif attr.type == onnx.AttributeProto.GRAPH:
                raise ValueError(f"{node.op_type} has a subgraph; not widened")
            elif node.op_type == "Cast" and attr.name == "to" and attr.i == TensorProto.FLOAT:
                attr.i = TensorProto.DOUBLE
    return out


def source_alternates(path: Path, feeds: Mapping[str, np.ndarray],
                     float_inputs: set[str]) -> dict[str, dict[str, np.ndarray]]:
    """The source run other ways, whose spread is the runtime's own float32 noise.

    `float_inputs` names the feeds that may be moved by one ULP (graph inputs of a float type;
    an input fixed at conversion time stays as it is). A run that fails is left out: these
    runs only widen what counts as noise, they are never the reference.
    """
    runs: dict[str, Callable[[], dict[str, np.ndarray]]] = {}
    moved = {name: (np.nextafter(v, np.inf).astype(v.dtype) if name in float_inputs else v)
             for name, v in ((n, np.asarray(v)) for n, v in feeds.items())}
    if path.suffix.lower() == ".tflite":
        from .litert import run_litert

        runs["LiteRT builtin kernels vs XNNPACK"] = lambda: run_litert(path, feeds,
                                                                       kernels="builtin")
        runs[ONE_ULP_LABEL] = lambda: run_litert(path, moved)
    else:
        runs["ORT_ENABLE_ALL vs ORT_DISABLE_ALL"] = lambda: run_onnx(path, feeds, level="all")
        runs[ONE_ULP_LABEL] = lambda: run_onnx(path, moved)
    found = {}
    for label, go in runs.items():
        try:
            found[label] = go()
        except ConverterError:  # left out
            pass
    return found


def _first_line(e: Exception) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__
