"""The phase line of long commands: on a terminal after the delay, never when piped, erased at
the end, never on stdout."""
from __future__ import annotations

import io
import threading
import time

from rich.console import Console

from cli.progress import phases


def _terminal():
    out = io.StringIO()
    return out, Console(file=out, force_terminal=True, width=80)


def _shown(out: io.StringIO, text: str) -> None:
    """Wait until the spinner's thread has drawn `text` (the timer and the refresh run on
    their own threads, late on a loaded machine)."""
    deadline = time.monotonic() + 60  # a bound on waiting, not a measured time
    while text not in out.getvalue():
        assert time.monotonic() < deadline, f"{text!r} was never shown"
        time.sleep(0.01)


def test_a_long_command_names_its_phase_on_the_terminal():
    out, console = _terminal()
    with phases(True, delay=0.05, console=console) as say:
        say("reading [red]big[/red].onnx")
        _shown(out, "reading [red]big[/red].onnx")
        say("verifying")
        _shown(out, "verifying")  # while the command runs, not only in the closing redraw
    text = out.getvalue()
    assert "reading [red]big[/red].onnx" in text and "verifying" in text


def test_a_quick_command_prints_nothing(monkeypatch):
    # The timer is checked, not the clock: a block that ends before the delay cancels it, so
    # the spinner can never start (was: a 0.1 s look at a 5 s timer, which passed uncancelled).
    timers = []

    class Recorded(threading.Timer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            timers.append(self)

    monkeypatch.setattr(threading, "Timer", Recorded)
    out, console = _terminal()
    with phases(True, delay=3600.0, console=console) as say:
        say("reading small.onnx")
    [timer] = timers
    assert timer.finished.is_set()  # cancelled: its wait is over and the spinner is skipped
    timer.join(60)  # a bound on waiting for the thread to end, not a measured time
    assert not timer.is_alive()
    timer.function()  # a timer that fired as the block closed draws nothing either
    assert out.getvalue() == ""


def test_not_a_terminal_prints_nothing(capsys):
    with phases(None, delay=0.0) as say:   # under pytest, stderr is not a terminal
        say("reading")
        time.sleep(0.1)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
