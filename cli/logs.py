"""The runtimes' own logging: silent unless `--debug`.

ONNX Runtime's default logger prints coloured warnings (ANSI escapes) on stderr for things the
converter already reports in its own words; LiteRT's C++ logging does the same. Our sessions
set their own severity; this quiets the process-wide loggers too, for the commands that run a
runtime (it imports onnxruntime, which those commands import anyway).
"""
from __future__ import annotations

import os

ORT_ERROR = 3  # onnxruntime's severity levels: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal
ORT_WARNING = 2


def quiet_runtimes(debug: bool) -> None:
    """Errors only from ORT's default logger and LiteRT's logging; with `debug`, warnings too."""
    if not debug:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # read when LiteRT loads
    try:
        import onnxruntime
    except ImportError:  # pragma: no cover - onnxruntime is a dependency
        return
    onnxruntime.set_default_logger_severity(ORT_WARNING if debug else ORT_ERROR)


def debugging() -> bool:
    """Whether the root command was given --debug."""
    import click

    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.find_root().params.get("debug"))
