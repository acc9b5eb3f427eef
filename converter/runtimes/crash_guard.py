"""A source runtime's first run of a model, in a forked child: a model that crashes the runtime
(ONNX Runtime dies of SIGSEGV loading some float16 models) is one error line, not the end of
the converter with no message.

    outputs = guarded_run(key, lambda: run_here(...), what="ONNX Runtime", where=path,
                          fix="...")

The first run of a model (`key`: its file's identity and how it is run) happens in a child,
which sends its outputs back as .npy records (no pickle: the child ran a hostile model); a
crash there is a ConverterError here. A model a child has run to the end is trusted: its
later runs (the decoder's steps, the noise runs) happen in this process, at no extra cost.
Where there is no fork, every run happens in this process.
"""
from __future__ import annotations

import io
import json
import os
from typing import BinaryIO, Callable, Hashable, Mapping

import numpy as np

from ..errors import ConverterError

__all__ = ["guarded_run", "can_guard"]

_TRUSTED: set = set()  # keys of models a child has run to the end
_HEADER_LIMIT = 1 << 20


def can_guard() -> bool:
    return hasattr(os, "fork")


def guarded_run(key: Hashable | None, run: Callable[[], Mapping[str, np.ndarray]], *,
                what: str, where: str, fix: str) -> dict[str, np.ndarray]:
    """run()'s outputs; the first time for `key`, computed in a forked child. A ConverterError
    of run() is raised here as it was raised there; the child's death (a signal, an exit) is
    a ConverterError "<what> crashed ..." at `where`, with `fix`."""
    if key is None or key in _TRUSTED or not can_guard():
        return dict(run())
    from ..importers.onnx.forked import ForkedChild

    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as f, \
            ForkedChild(lambda: _child(run, read_end, write_end),
                        parent_closes=(write_end,)) as child:
        header = f.readline(_HEADER_LIMIT)
        if not header.endswith(b"\n"):  # the child died before it could say anything
            raise ConverterError(f"{what} crashed running the model ({_status(child.wait())})",
                                 where=where, fix=fix)
        found = json.loads(header)
        if "error" in found:
            child.wait()
            error = found["error"]
            raise _error_class(error.get("kind"))(str(error.get("what")),
                                                  where=error.get("where"), fix=error.get("fix"))
        # Read whole, then parsed: numpy reads a real file through its descriptor, past
        # what the line above has buffered.
        records = io.BytesIO(f.read())
        outputs = {}
        for name in found["outputs"]:
            try:
                outputs[str(name)] = np.lib.format.read_array(records, allow_pickle=False)
            except (ValueError, EOFError, OSError):
                raise ConverterError(f"{what} crashed running the model "
                                     f"({_status(child.wait())})", where=where,
                                     fix=fix) from None
        status = child.wait()
    if status != 0:
        raise ConverterError(f"{what} crashed running the model ({_status(status)})",
                             where=where, fix=fix)
    _TRUSTED.add(key)
    return outputs


def _child(run: Callable[[], Mapping[str, np.ndarray]], read_end: int, write_end: int) -> None:
    """The forked child: run, send the outputs or the error; never returns."""
    status = 1
    try:
        import faulthandler

        faulthandler.disable()  # a crash here is reported by the parent, in one line
        os.close(read_end)
        with os.fdopen(write_end, "wb") as out:
            try:
                outputs = {name: _sendable(value) for name, value in run().items()}
            except ConverterError as e:
                _send_header(out, {"error": {"what": e.what, "where": e.where, "fix": e.fix,
                                             "kind": type(e).__name__}})
            except Exception as e:  # noqa: BLE001 - the runtime's own failure, as one line
                first = (str(e).splitlines() or [""])[0]
                _send_header(out, {"error": {"what": f"{type(e).__name__}: {first}"}})
            else:
                _send_header(out, {"outputs": list(outputs)})
                for value in outputs.values():  # through a buffer: numpy would write a
                    record = io.BytesIO()          # real file past the header's buffer
                    np.lib.format.write_array(record, value, allow_pickle=False)
                    out.write(record.getbuffer())
        status = 0
    finally:
        os._exit(status)


def _error_class(kind) -> type[ConverterError]:
    """The converter's error class the child raised (NoSourceRuntimeError, say), where it is
    made as ConverterError is; else ConverterError itself."""
    from .. import errors

    cls = getattr(errors, str(kind), None) if str(kind) in errors.__all__ else None
    if isinstance(cls, type) and issubclass(cls, ConverterError) \
            and cls.__init__ is ConverterError.__init__:
        return cls
    return ConverterError


def _sendable(value) -> np.ndarray:
    """An output as an .npy record can hold it without pickle (ORT's strings: unicode)."""
    value = np.asarray(value)
    if value.dtype == object:
        return value.astype(str)
    return value


def _send_header(out: BinaryIO, header: dict) -> None:
    out.write(json.dumps(header).encode() + b"\n")


def _status(status: int) -> str:
    from ..importers.onnx.forked import ended

    return f"it {ended(status)}"
