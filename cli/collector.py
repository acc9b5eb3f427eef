"""The cyclic garbage collector, paused while a command starts.

Starting a command imports click, numpy, onnx and the converter: some 35,000 objects that live
as long as the process. The collector walks them again and again as they are made (86 young
and 8 middle collections while a small model converts: 11 ms of its 160 ms) and finds nothing
to free. So the `webnn-convert` script (cli.script.run) pauses it (`pause`), and it resumes
once the command's modules are imported (`resume`): what exists then is frozen out of every
later collection (gc.freeze), and everything made after is collected as usual. The group
resumes it as soon as it has found the command; `convert` resumes it itself, after importing
the reader its source needs (the onnx package is most of its start-up). Reference counting
frees objects as always while paused; only cyclic garbage made during start-up would be kept,
and importing makes next to none.
"""
from __future__ import annotations

import gc

__all__ = ["pause", "resume"]

_paused = False


def pause() -> None:
    """Stop the collector until `resume` (the `webnn-convert` script's first step)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Freeze what exists and collect again; nothing when `pause` did not stop the collector
    (the API, tests calling `main`), and nothing the second time."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
