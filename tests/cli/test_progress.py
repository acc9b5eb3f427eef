"""The phase line of long commands: on a terminal after the delay, never when piped, erased at
the end, never on stdout."""
from __future__ import annotations

import io
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


def test_a_quick_command_prints_nothing():
    out, console = _terminal()
    with phases(True, delay=5.0, console=console) as say:
        say("reading small.onnx")
    time.sleep(0.1)
    assert out.getvalue() == ""


def test_not_a_terminal_prints_nothing(capsys):
    with phases(None, delay=0.0) as say:   # under pytest, stderr is not a terminal
        say("reading")
        time.sleep(0.1)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
