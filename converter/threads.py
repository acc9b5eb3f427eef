"""How many threads a runtime (ONNX Runtime, LiteRT) may use in this process.

Left alone, each runtime takes what it likes (ONNX Runtime: a thread a core, spinning while it
waits for work). A process that shares the cores with others doing the same, such as a zoo job
beside `--jobs N - 1` others, sets WEBNN_CONVERTER_THREADS, so that N jobs on N cores do not
each run a pool as wide as the machine and fight over it.
"""
from __future__ import annotations

import os

from .errors import ConverterError

__all__ = ["THREADS_ENV", "runtime_threads"]

THREADS_ENV = "WEBNN_CONVERTER_THREADS"
_MOST = 1024


def runtime_threads() -> int | None:
    """The thread count the runtimes are to use, or None for their own choice."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if not value:
        return None
    count = int(value) if value.isdigit() else 0
    if not 1 <= count <= _MOST:
        raise ConverterError(f"{THREADS_ENV}={value!r} is not a thread count",
                             where=THREADS_ENV,
                             fix=f"set it to a whole number from 1 to {_MOST}, or unset it")
    return count
