"""ONNX's own type and shape inference, run where a crash cannot take the converter down.

The importer asks ONNX's shape inference (C++) for the element type of every value. On a
hostile model that C++ code can crash the whole process: onnx 1.23's LayerNormalization
inference, for one, dereferences out of bounds when `axis` is 2**31 and the process dies of a
segmentation fault. So the whole-model inference runs in a forked child that sends back only the
types; if the child dies, the model is refused with one line. The importer's other uses of
shape inference (estimating a fold's size, typing an If branch) run isolated the same way.

Isolation is for model files (import_onnx, which converter.load and the CLI use); a fork costs
a few milliseconds (about 20 on a loaded 2-core machine), so import_model, given a proto the
caller built or parsed itself, runs inference in process unless asked to isolate it. The
whole-model inference does not hold the import up: `start_inference` forks the child and
returns at once, and the importer waits for the answer only when a rule first asks a value's
type (`PendingType`), or at the end of the import, which also reports a crash (see
InferenceRun.finish).
"""
from __future__ import annotations

import json
import os
import signal
from typing import Callable

import onnx

from ...errors import FormatError
from .forked import ForkedChild

__all__ = ["inferred_types", "isolated", "start_inference", "InferenceRun", "PendingType"]


def inferred_types(model: onnx.ModelProto, where: str, isolate: bool = True) -> dict[str, int]:
    """Element types ONNX's type inference gives every value (bool stays bool); FormatError
    when the inference crashes on the model (with `isolate`)."""
    found = isolated(lambda: _infer(model), where, isolate)
    return {name: int(elem) for name, elem in (found or {}).items()}


class InferenceRun:
    """The whole-model type inference of one import, answering when first asked.

    Created by `start_inference`; `get(name)` (a value's inferred type, or None) and `finish()`
    wait for the answer once. `finish()` must be called when the import ends, however it ends:
    it reaps the child and raises FormatError if inference crashed on the model, which is then
    the import's error (as it was when inference ran before the first node).
    """

    def __init__(self, answer: Callable[[], object]):
        self._answer = answer
        self._types: dict[str, int] | None = None
        self._error: FormatError | None = None

    def _wait(self) -> dict[str, int]:
        if self._types is None:
            if self._error is not None:  # the child is reaped: the same answer again
                raise self._error
            try:
                found = self._answer()
            except FormatError as e:
                self._error = e
                raise
            self._types = {name: int(elem) for name, elem in (found or {}).items()}
        return self._types

    def get(self, name: str) -> int | None:
        return self._wait().get(name)

    def finish(self) -> None:
        self._wait()


class PendingType:
    """A value's ONNX type, known once the inference answers: its inferred type, else
    `fallback(arg)` (the type of what the rule produced)."""

    __slots__ = ("run", "name", "fallback", "arg")

    def __init__(self, run: InferenceRun, name: str, fallback: Callable, arg) -> None:
        self.run, self.name, self.fallback, self.arg = run, name, fallback, arg

    def resolve(self) -> int:
        return self.run.get(self.name) or self.fallback(self.arg)


def start_inference(model: onnx.ModelProto, where: str, isolate: bool = True) -> InferenceRun:
    """Start ONNX's type inference of the whole model (in a forked child with `isolate`) and
    return without waiting for it; see InferenceRun."""
    return InferenceRun(_isolated_answer(lambda: _infer(model), where, isolate))


def isolated(compute: Callable[[], object], where: str, isolate: bool = True):
    """compute()'s JSON-able result, computed in a forked child so that a crash of ONNX's C++
    code kills only the child; None when the child fails without crashing. FormatError when
    it crashes. Without `isolate`, or without fork (Windows), it runs here."""
    return _isolated_answer(compute, where, isolate)()


def _isolated_answer(compute: Callable[[], object], where: str, isolate: bool
                     ) -> Callable[[], object]:
    """Start `isolated`'s work; the function returned waits for its result (call it once)."""
    if not isolate or not hasattr(os, "fork"):
        result = compute()
        return lambda: result
    read_end, write_end = os.pipe()
    child = ForkedChild(lambda: _child(compute, read_end, write_end), parent_closes=(write_end,))
    try:
        child.start()
    except BaseException:  # a stop during the fork, or just after it
        child.end()
        os.close(read_end)
        raise
    return lambda: _answer(child, read_end, where)


def _child(compute: Callable[[], object], read_end: int, write_end: int) -> None:
    """The forked child: compute, send the result as JSON, and leave without cleanup."""
    status = 1
    try:
        import faulthandler

        faulthandler.disable()  # a crash here is expected and reported by the parent
        os.close(read_end)
        with os.fdopen(write_end, "wb") as out:
            out.write(json.dumps(compute()).encode())
        status = 0
    finally:
        os._exit(status)


def _answer(child: ForkedChild, read_end: int, where: str):
    try:
        with os.fdopen(read_end, "rb") as f:
            data = f.read()
        status = child.wait()
    finally:
        child.end()  # a stop while waiting: the child is killed, not left to finish
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig
        raise FormatError(f"ONNX's own shape inference crashed on this model ({name}): it is "
                          f"malformed", where=where,
                          fix="check it with onnx.checker.check_model(model, full_check=True)")
    if os.WEXITSTATUS(status) != 0 or not data:
        return None  # the child failed without crashing: as when inference raises
    return json.loads(data)


def _infer(model: onnx.ModelProto) -> dict[str, int]:
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:  # inference is a convenience for types; rules still type every result
        inferred = model
    types = {}
    for vi in (*inferred.graph.value_info, *inferred.graph.output, *inferred.graph.input):
        elem = vi.type.tensor_type.elem_type
        if elem:
            types[vi.name] = elem
    return types
