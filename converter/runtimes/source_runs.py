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
the model; a model whose MatMulNBits nodes have ORT quantize their activations to int8 at run
time (accuracy_level 4) also runs with float activations, the model's math, whose distance
from the int8 run is what that quantization moves; one with DynamicQuantizeLSTM nodes runs
them as float LSTMs too, measuring what their run-time rounding moves (quantized_lstm.py);
a decoder with DynamicQuantizeLinear nodes runs with their inputs moved by float32 noise
(dynamic_quantize.py; decode.py steps it).
LiteRT's noise: its builtin kernels against its default (XNNPACK) ones, and the input moved by
one ULP.

The first run of each model (a file, or serialized bytes) happens in a forked child
(runtimes/crash_guard.py): a model that crashes its runtime is one ConverterError line.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from ..errors import ConverterError
from ..threads import runtime_threads
from .dynamic_quantize import is_dynamic_quantize, moved_activations
from .quantized_lstm import FLOAT_LSTM_LABEL, float_lstms, is_dynamic_lstm

__all__ = ["run_source", "run_source_f64", "source_alternates", "SESSION_OPTIONS",
           "ONE_ULP_LABEL", "release_freed_memory", "int8_activation_nodes",
           "dynamic_quantize_nodes", "dynamic_lstm_nodes",
           "FLOAT_ACTIVATIONS_LABEL", "FLOAT_LSTM_LABEL"]

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
        return _run_litert(path, feeds)
    return run_onnx(path, feeds)


def _run_litert(path: Path, feeds: Mapping[str, np.ndarray], kernels: str = "default"
                ) -> dict[str, np.ndarray]:
    """LiteRT's run of a .tflite file, its first in a forked child (crash_guard)."""
    import ai_edge_litert.interpreter  # noqa: F401 - here, not again in each forked child

    from .crash_guard import guarded_run
    from .litert import run_litert

    return guarded_run(_model_key(path, kernels, False),
                       lambda: run_litert(path, feeds, kernels=kernels),
                       what="LiteRT", where=str(path),
                       fix="the source runtime must run the model to verify against it: try "
                           "another ai-edge-litert version, or convert without verifying")


def run_onnx(path: Path | bytes, feeds: Mapping[str, np.ndarray], *, level: str = "none",
             where: str | None = None, float_activations: bool = False,
             float_lstm: bool = False, moved: int = 0) -> dict[str, np.ndarray]:
    """Run an ONNX model (a path or serialized bytes) on ORT's CPU provider at `level`.

    `float_activations` (a path only): run its MatMulNBits nodes at accuracy_level 0, the
    float math the model states, where accuracy_level 4 has ORT quantize their activations
    to int8 at run time (int8_activation_nodes). `float_lstm` (a path only): run each
    DynamicQuantizeLSTM as a float LSTM on its dequantized weights (quantized_lstm.py).
    `moved` (a path only; +1 or -1): each DynamicQuantizeLinear rounds its input moved by
    float32 noise in that direction (dynamic_quantize.py).

    The first run of a model happens in a forked child (runtimes/crash_guard.py): a model
    that crashes ORT is a ConverterError, not the converter's death (LiteRT's too)."""
    import onnxruntime  # noqa: F401 - here, so that a forked child need not import it again

    from .crash_guard import guarded_run

    where = where or str(path)
    return guarded_run(
        _model_key(path, level, float_activations, float_lstm, moved),
        lambda: _run_onnx_here(path, feeds, level, where, float_activations, float_lstm,
                               moved),
        what="ONNX Runtime", where=where,
        fix="the source runtime must run the model to verify against it: try another "
            "onnxruntime version, or convert without verifying")


def _model_key(path: Path | bytes, level: str, float_activations: bool,
               float_lstm: bool = False, moved: int = 0):
    """What identifies a model's run for crash_guard: the file (its identity and version), or
    the bytes' digest, with how it is run; None for a file that cannot be looked at (ORT
    then reports it)."""
    import hashlib

    if isinstance(path, bytes):
        return hashlib.sha256(path).hexdigest(), level
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return str(Path(path).resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, \
        level, float_activations, float_lstm, moved


def _run_onnx_here(path: Path | bytes, feeds: Mapping[str, np.ndarray], level: str,
                   where: str, float_activations: bool, float_lstm: bool = False,
                   moved: int = 0) -> dict[str, np.ndarray]:
    import onnxruntime as ort

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
        edits = [e for e, on in ((_float_activations, float_activations),
                                 (float_lstms, float_lstm),
                                 (lambda m: moved_activations(m, moved), moved)) if on]
        model = path if isinstance(path, bytes) else _external_view(
            Path(path), options, (lambda m: [e(m) for e in edits]) if edits else None)
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


def _external_view(path: Path, options, edit: Callable | None = None) -> str | bytes:
    """The model for ORT to load: its path, or, when it holds big initializers inline (or
    `edit` changes its nodes: edit(model) on the weightless structure), its bytes without
    them, each marked as external data at its own offset in the source file.

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
    if edit is None and not any(raw is not None and raw.nbytes >= _VIEW_MIN_BYTES
                                for raw in raws):
        return str(path)
    real = path.resolve()  # the file mapped, under its own name and folder
    base = np.frombuffer(mapped, np.uint8, count=1).ctypes.data if len(mapped) else 0
    model = onnx.ModelProto()
    model.ParseFromString(stripped)
    if edit is not None:
        edit(model)
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

    Only ONNX: a copy of the model with every float32 and float16 tensor made double
    (initializers, Constant and ConstantOfShape values, Cast targets, inputs and outputs): a
    float16 model's math without float16 rounding, which a copy keeping float16 would not
    be. ORT lacks double kernels for some ops (Conv among them); then there is no float64
    source run.
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

    narrow = (TensorProto.FLOAT, TensorProto.FLOAT16)

    def widen(tensor) -> None:
        if tensor.data_type in narrow:
            tensor.CopyFrom(numpy_helper.from_array(
                numpy_helper.to_array(tensor).astype(np.float64), tensor.name))

    for tensor in graph.initializer:
        widen(tensor)
    for info in (*graph.input, *graph.output):
        if info.type.tensor_type.elem_type in narrow:
            info.type.tensor_type.elem_type = TensorProto.DOUBLE
    del graph.value_info[:]  # inferred float32 types would contradict the copy
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                widen(attr.t)
            elif attr.type == onnx.AttributeProto.GRAPH:
                raise ValueError(f"{node.op_type} has a subgraph; not widened")
            elif node.op_type == "Cast" and attr.name == "to" and attr.i in narrow:
                attr.i = TensorProto.DOUBLE
    return out


# ONNX Runtime's MatMulNBits accuracy_level (com.microsoft contrib op): 0 unset, 1 float32,
# 2 float16, 3 bfloat16, 4 int8. On the CPU provider only 4 changes the numbers: the
# activations are quantized to int8 blockwise at run time (MLAS's CompInt8), which is the
# runtime's approximation, not the model's math; onnxruntime-genai's CPU int4 models use it.
INT8_ACTIVATIONS = 4
FLOAT_ACTIVATIONS_LABEL = ("ORT with MatMulNBits at accuracy_level 0 (float activations) "
                           "vs 4 (int8 activations)")


def int8_activation_nodes(path: Path) -> int:
    """How many MatMulNBits nodes of an ONNX model ask ORT for int8 activations
    (accuracy_level 4), If/Loop branches included; 0 for a model that cannot be read (its
    run reports that)."""
    model = _read_onnx(path)
    return 0 if model is None else sum(
        1 for node in _nbits_nodes(model)
        if _attr_int(node, "accuracy_level") == INT8_ACTIVATIONS)


def dynamic_quantize_nodes(path: Path) -> int:
    """How many DynamicQuantizeLinear nodes an ONNX model has, If/Loop branches included
    (quantize_dynamic's int8 models, transformers.js's q8): each quantizes a whole tensor with
    one scale from its own min and max, so a row's result depends on the rows computed with
    it; 0 for a model that cannot be read (its run reports that)."""
    model = _read_onnx(path)
    return 0 if model is None else sum(
        1 for node in _all_nodes(model.graph) if is_dynamic_quantize(node))


def dynamic_lstm_nodes(path: Path) -> int:
    """How many com.microsoft DynamicQuantizeLSTM nodes an ONNX model has, If/Loop branches
    included: each rounds its input and hidden state at run time (quantized_lstm.py)."""
    model = _read_onnx(path)
    return 0 if model is None else sum(1 for node in _all_nodes(model.graph)
                                       if is_dynamic_lstm(node))


def _read_onnx(path: Path):
    """The ModelProto without its weights' bytes, or None (not ONNX, or unreadable)."""
    if path.suffix.lower() != ".onnx":
        return None
    import onnx

    from ..importers.onnx.wire import WireError, map_model

    try:
        stripped, _, _ = map_model(path)
        model = onnx.ModelProto()
        model.ParseFromString(stripped)
    except (OSError, WireError, ValueError):  # ValueError: protobuf's DecodeError
        return None
    return model


def _all_nodes(graph):
    """Every node of a graph and of the subgraphs its nodes hold (If branches, Loop bodies)."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.HasField("g"):
                yield from _all_nodes(attr.g)
            for sub in attr.graphs:
                yield from _all_nodes(sub)


def _nbits_nodes(model):
    return [node for node in _all_nodes(model.graph)
            if node.op_type == "MatMulNBits" and node.domain == "com.microsoft"]


def _attr_int(node, name: str) -> int:
    return next((int(a.i) for a in node.attribute if a.name == name), 0)


def _float_activations(model) -> None:
    """Every MatMulNBits node at accuracy_level 0: ORT then computes in float32."""
    for node in _nbits_nodes(model):
        for attr in node.attribute:
            if attr.name == "accuracy_level":
                attr.i = 0


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
        runs["LiteRT builtin kernels vs XNNPACK"] = lambda: _run_litert(path, feeds,
                                                                        kernels="builtin")
        runs[ONE_ULP_LABEL] = lambda: _run_litert(path, moved)
    else:
        runs["ORT_ENABLE_ALL vs ORT_DISABLE_ALL"] = lambda: run_onnx(path, feeds, level="all")
        runs[ONE_ULP_LABEL] = lambda: run_onnx(path, moved)
        if int8_activation_nodes(path):
            runs[FLOAT_ACTIVATIONS_LABEL] = lambda: run_onnx(path, feeds,
                                                             float_activations=True)
        if dynamic_lstm_nodes(path):
            runs[FLOAT_LSTM_LABEL] = lambda: run_onnx(path, feeds, float_lstm=True)
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
