"""ONNX's own type and shape inference, run where a crash cannot take the converter down.

The importer asks ONNX's shape inference (C++) for the element type of every value. On a
hostile model that C++ code can crash the whole process: onnx 1.23's LayerNormalization
inference, for one, dereferences out of bounds when `axis` is 2**31 and the process dies of a
segmentation fault. So the whole-model inference runs in a forked child that sends back only the
types; if the child dies, the model is refused with one line. The importer's other uses of
shape inference (estimating a fold's size, typing an If branch) run isolated the same way.

Isolation is for model files (import_onnx, which converter.load and the CLI use); a fork costs
a few milliseconds (about 20 on a loaded 2-core machine), so import_model, given a proto the
caller built or parsed itself, runs inference in process unless asked to isolate it.
"""
from __future__ import annotations

import json
import os
import signal
from typing import Callable

import onnx

from ...errors import FormatError

__all__ = ["inferred_types", "isolated"]


def inferred_types(model: onnx.ModelProto, where: str, isolate: bool = True) -> dict[str, int]:
    """Element types ONNX's type inference gives every value (bool stays bool); FormatError
    when the inference crashes on the model (with `isolate`)."""
    found = isolated(lambda: _infer(model), where, isolate)
    return {name: int(elem) for name, elem in (found or {}).items()}


def isolated(compute: Callable[[], object], where: str, isolate: bool = True):
    """compute()'s JSON-able result, computed in a forked child so that a crash of ONNX's C++
    code kills only the child; None when the child fails without crashing. FormatError when
    it crashes. Without `isolate`, or without fork (Windows), it runs here."""
    if not isolate or not hasattr(os, "fork"):
        return compute()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, send the result as JSON, and leave without cleanup
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
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
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
