"""What a long command is doing, on stderr, while it does it.

    with phases() as say:
        say("reading model.onnx")
        graph = load(...)
        say("verifying: the source on ONNX Runtime, the graph on the executor")
        ...

A transient spinner line (rich) that names the current phase. It appears only
on a terminal, and only once the command has run for `delay` seconds (2 by default): a quick
command prints nothing, a piped or redirected one never gets escape codes, and stdout (results)
is never touched. When it stops, the line is erased.
"""
from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

__all__ = ["phases", "DELAY"]

DELAY = 2.0
_LONGEST = 200  # characters of the phase's text shown


@contextmanager
def phases(enabled: bool | None = None, *, delay: float = DELAY, console=None
           ) -> Iterator[Callable[[str], None]]:
    """A function naming the current phase. `enabled` None: on when stderr is a terminal.
    `console` (a rich Console) is for tests; by default one on stderr."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield lambda text: None
        return
    from rich.console import Console

    from .terminal import plain, shortened

    console = console or Console(stderr=True)
    lock = threading.Lock()
    state = {"text": "", "status": None, "closed": False}

    def show() -> None:
        with lock:
            if state["closed"]:
                return
            state["status"] = console.status(state["text"], spinner="dots")
            state["status"].start()

    def say(text: str) -> None:
        with lock:
            # A path or name is text, never markup ("[x]" stays) nor a control sequence, and
            # short enough for rich to lay out at every refresh.
            state["text"] = plain(shortened(text, _LONGEST))
            if state["status"] is not None:
                state["status"].update(state["text"])

    timer = threading.Timer(delay, show)
    timer.daemon = True
    timer.start()
    try:
        yield say
    finally:
        timer.cancel()
        with lock:
            state["closed"] = True
            if state["status"] is not None:
                state["status"].stop()
