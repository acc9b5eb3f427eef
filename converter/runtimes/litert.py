"""Running a .tflite model on LiteRT (ai-edge-litert's Interpreter): the reference for TFLite.

    outputs = run_litert("model.tflite", {"input": x})   # {output tensor name: ndarray}

Feeds are matched to the model's inputs by tensor name (the names the importer gives the WebNN
graph's inputs), and outputs keyed by the model's output tensor names. A BOOL input takes the
uint8 0/1 a WebNN graph is fed; an input fed with another shape is resized first. Every
problem with the feeds is reported in one error.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..errors import ConverterError, NoSourceRuntimeError

__all__ = ["run_litert", "LiteRTSession", "LITERT_NAME", "KERNEL_SETS", "input_shapes"]

LITERT_NAME = "litert"
KERNEL_SETS = ("default", "builtin")


def run_litert(model: str | Path | bytes, feeds: Mapping[str, np.ndarray], *,
               num_threads: int | None = None, tensors: Sequence[str] = (),
               kernels: str = "default") -> dict[str, np.ndarray]:
    """Run the model once on `feeds`; returns {output tensor name: ndarray} (copies).

    `tensors` names intermediate tensors to return as well (LiteRT then keeps every tensor,
    instead of reusing their memory): for comparing inside a model, not only at its outputs.
    `kernels`: "default" (LiteRT's choice: XNNPACK where it applies) or "builtin" (LiteRT's
    own reference-style kernels, no delegate): two kernel sets, to measure LiteRT's own noise.
    """
    if kernels not in KERNEL_SETS:
        raise ConverterError(f"unknown LiteRT kernel set '{kernels}'",
                             fix=f"use one of {', '.join(KERNEL_SETS)}")
    where = "<tflite bytes>" if isinstance(model, (bytes, bytearray)) else str(model)
    interpreter = _interpreter(model, where, num_threads, keep_all=bool(tensors),
                               kernels=kernels)
    return _invoke(interpreter, feeds, where, tensors)


class LiteRTSession:
    """One Interpreter kept across invocations, so the model's resource variables carry over
    from one `run` to the next, as in a streaming app (run_litert starts afresh each call)."""

    def __init__(self, model: str | Path | bytes, *, num_threads: int | None = None,
                 tensors: Sequence[str] = ()):
        self.where = "<tflite bytes>" if isinstance(model, (bytes, bytearray)) else str(model)
        self.tensors = tuple(tensors)  # intermediate tensors every run returns too
        self.interpreter = _interpreter(model, self.where, num_threads,
                                        keep_all=bool(self.tensors))

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return _invoke(self.interpreter, feeds, self.where, self.tensors)


def _invoke(interpreter, feeds: Mapping[str, np.ndarray], where: str,
            tensors: Sequence[str]) -> dict[str, np.ndarray]:
    inputs = interpreter.get_input_details()
    problems: list[str] = []
    arrays: dict[int, np.ndarray] = {}
    resized = False
    for detail in inputs:
        name = detail["name"]
        if name not in feeds:
            problems.append(f"input '{name}' ({np.dtype(detail['dtype'])}"
                            f"{[int(d) for d in detail['shape']]}) is not fed")
            continue
        arr = np.asarray(feeds[name])
        want = np.dtype(detail["dtype"])
        if want == np.bool_ and arr.dtype == np.uint8:
            arr = arr != 0  # WebNN's bool is uint8 0/1
        elif arr.dtype != want:
            problems.append(f"input '{name}' is {want}, the feed is numpy {arr.dtype}")
            continue
        if tuple(arr.shape) != tuple(detail["shape"]):
            interpreter.resize_tensor_input(detail["index"], list(arr.shape))
            resized = True
        arrays[detail["index"]] = np.asarray(arr, order="C")  # (ascontiguousarray makes 0-d 1-d)
    names = {d["name"] for d in inputs}
    problems += [f"'{n}' is not an input of the model (inputs: {', '.join(sorted(names))})"
                 for n in feeds if n not in names]
    if problems:
        raise ConverterError("; ".join(problems), where=f"{where} feeds",
                             fix="feed each input once, with its data type")
    try:
        if resized:
            interpreter.allocate_tensors()
        for index, arr in arrays.items():
            interpreter.set_tensor(index, arr)
        interpreter.invoke()
        results = {d["name"]: np.array(interpreter.get_tensor(d["index"]))
                   for d in interpreter.get_output_details()}
        if tensors:
            index = {d["name"]: d["index"] for d in interpreter.get_tensor_details()}
            missing = [n for n in tensors if n not in index]
            if missing:
                raise ConverterError(f"no tensor named {', '.join(map(repr, missing))}",
                                     where=where)
            results.update({n: np.array(interpreter.get_tensor(index[n])) for n in tensors})
        return results
    except (RuntimeError, ValueError) as e:
        raise ConverterError(f"LiteRT failed running the model: {_first_line(e)}",
                             where=where) from None


def input_shapes(model: str | Path) -> dict[str, list[int | None]]:
    """Each input's shape as the model declares it (None where its signature leaves the dim
    open, -1), by the names feeds use."""
    details = _interpreter(model, str(model), 1).get_input_details()
    return {d["name"]: [None if int(s) < 0 else int(d["shape"][i])
                        for i, s in enumerate(d.get("shape_signature", d["shape"]))]
            for d in details}


def _interpreter(model, where: str, num_threads: int | None, keep_all: bool = False,
                 kernels: str = "default"):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    if num_threads is None:
        from ..threads import runtime_threads

        num_threads = runtime_threads()
    kwargs = {"num_threads": num_threads, "experimental_preserve_all_tensors": keep_all}
    if kernels == "builtin":
        kwargs["experimental_op_resolver_type"] = \
            OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    if isinstance(model, (bytes, bytearray)):
        kwargs["model_content"] = bytes(model)
    else:
        if not Path(model).is_file():
            raise ConverterError("no such file", where=where)
        kwargs["model_path"] = str(model)
    with _quiet_stderr() as captured, warnings.catch_warnings():
        # keep_all is asked for on purpose (to read intermediate tensors): no warning about it
        warnings.filterwarnings("ignore", message=".*experimental_preserve_all_tensors")
        try:
            interpreter = Interpreter(**kwargs)
            interpreter.allocate_tensors()
        except (RuntimeError, ValueError) as e:
            detail = _first_line(e)
            log = captured()
            custom = _unresolved_custom_ops(f"{e} {log}")
            if custom:
                raise NoSourceRuntimeError(
                    f"LiteRT has no kernel for the model's custom op{'s' * (len(custom) > 1)} "
                    f"{', '.join(custom)}", where=where,
                    fix="the ops' own runtime (MediaPipe's, say) must run the model to judge "
                        "it") from None
            if log:
                detail += f" ({log})"
            raise ConverterError(f"LiteRT cannot load the model: {detail}", where=where) \
                from None
    return interpreter


# How LiteRT's op resolver says a CUSTOM operator's code has no registered kernel
# (tensorflow/lite/core/subgraph.cc, "Encountered unresolved custom op: %s.").
_UNRESOLVED = re.compile(r"unresolved custom op: ([^.\s]+)")


def _unresolved_custom_ops(text: str) -> list[str]:
    """The custom ops LiteRT's message says it has no kernel for, each once."""
    return list(dict.fromkeys(_UNRESOLVED.findall(text)))


def _first_line(e: Exception) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__


@contextmanager
def _quiet_stderr():
    """LiteRT's C++ logs to file descriptor 2 ("Created TensorFlow Lite XNNPACK delegate"):
    keep it off the user's terminal, and hand the log's last line to an error message."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # no real stderr (captured, embedded)
        yield lambda: ""
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), fd)
        try:
            def last_line() -> str:
                sink.seek(0)
                lines = [ln for ln in sink.read().decode("utf-8", "replace").splitlines()
                         if ln.strip() and not ln.startswith("INFO:")]
                return lines[-1].strip() if lines else ""

            yield last_line
        finally:
            os.dup2(saved, fd)
            os.close(saved)
