"""The command group run as a program, the way both entry points run it: the `webnn-convert`
script (cli/script.py, which pauses the collector before the group and click are imported) and
`python -m cli.main` (main.py's `__main__` block, which is the group's own module). It takes
the group as an argument, so that neither entry point and this module import each other."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import click

__all__ = ["launch"]


def launch(group: click.Group) -> None:
    """Run `group` on the command line, then leave without tearing the interpreter down.

    A normal exit finalizes every module and collects the objects numpy, onnx and protobuf
    made: 20-40 ms after a small model's conversion, 6 ms once start-up's objects are frozen
    (cli/collector.py). Nothing of ours needs that teardown: files are committed or removed by
    their `with` blocks, and the browser is closed by an exit handler. So once the command is
    done, exit handlers run and stdout/stderr are flushed, as a normal exit does, and the
    process ends at once. If some other non-daemon thread is still alive (a library's), the
    normal exit runs instead, which waits for it.
    """
    from .commands import command_in, load_command
    from .terminal import show_library_messages

    show_library_messages()  # the process is ours: a library's warning is shown as ours are

    # The command's module (numpy, the converter) is imported here, near the bottom of the
    # call stack, not deep inside click's resolution of the command. CPython keeps frames in
    # 16 KiB chunks and maps a new chunk for a call that crosses a chunk's end, unmapping it on
    # return; numpy's typing modules, imported deep in click, made some 1,800 calls straddle
    # such an end: 1,800 mmap/munmap pairs, 40 ms of a small model's 200 ms conversion.
    named = command_in(sys.argv[1:])
    if named is not None:
        group.add_command(load_command(named))

    try:
        group(prog_name="webnn-convert")
        code = 0
    except SystemExit as e:
        code = e.code
    _leave(code)


def _leave(code) -> None:
    """Exit with `code` (as SystemExit takes it) after exit handlers and flushing only."""
    import threading

    if any(t is not threading.main_thread() and t.is_alive() and not t.daemon
           for t in threading.enumerate()):
        sys.exit(code)
    if code is None:
        code = 0
    elif not isinstance(code, int):  # SystemExit("text"): the text on stderr, status 1
        from .terminal import echo

        echo(code, err=True)
        code = 1
    import atexit
    import os

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: as Python's own exit, status 120
            code = code or 120
    os._exit(code)
