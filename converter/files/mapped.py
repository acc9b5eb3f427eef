"""Model files read through memory maps, safe from another program shrinking them meanwhile.

A model's weights are read as views of its memory-mapped files (the ONNX model and its external
data, a .tflite model, a graph's .weights), never copied. But a page of a mapping that lies past
the file's end once another program truncates or rewrites it cannot be read: the kernel sends
SIGBUS, which Python cannot catch, and the process dies with "Bus error" (exit 135), saying
nothing and leaving its half-written outputs behind.

So while a command runs (`guarding()`, opened by the command line around every command), each
mapped file is held with a read lease (Linux's fcntl F_SETLEASE). Another program that opens it
for writing or truncates it is made to wait (up to /proc/sys/fs/lease-break-time, 45 s by
default), and this process is told (SIGIO): the command then stops where it is, as on Ctrl-C
(its saves remove their temporary files), with one line naming the file (`FileChanging`, exit
2). The other program goes on once this one has exited; no page is ever read past the end.

Where a lease cannot be had (a file of another user, a file system without leases, a file
another program has open for writing right now) the file is read into memory instead of mapped:
nothing can shrink under a copy. Where the platform has no leases (not Linux), or outside a
command (the library, in a process that may live long and rewrite its files), files are mapped
as they always were. What remains: a command whose main thread stays inside one call into a
runtime for longer than the lease-break time may still meet SIGBUS after that time.
"""
from __future__ import annotations

import _thread
import contextlib
import mmap
import os
import signal
import threading
import weakref
from typing import Iterator

__all__ = ["map_file", "guarding", "FileChanging"]

try:
    import fcntl
    _LEASES = hasattr(fcntl, "F_SETLEASE") and hasattr(signal, "SIGIO")
except ImportError:  # Windows
    fcntl = None
    _LEASES = False


class FileChanging(KeyboardInterrupt):
    """Another program began to change a file this command reads through a memory map.

    A KeyboardInterrupt, like cli.main.Stopped, so that it unwinds through everything
    (`except Exception` blocks included) as Ctrl-C does, removing unfinished saves."""

    def __init__(self, path: str, what: str):
        super().__init__(path)
        self.path, self.what = path, what

    def line(self) -> str:
        return (f"{self.path}: another program opened the {self.what} for writing or truncated "
                f"it while it was being read; nothing was written; run again once that program "
                f"is done with it")


class _Leases:
    """The leases one command holds: descriptor -> (path, what) for each mapped file."""

    def __init__(self) -> None:
        self.held: dict[int, tuple[str, str]] = {}
        self.breaking: tuple[str, str] | None = None
        self.over = threading.Event()

    def on_sigio(self, signum, frame) -> None:
        if self.breaking is None:
            for fd, (path, what) in list(self.held.items()):
                try:
                    pending = fcntl.fcntl(fd, fcntl.F_GETLEASE) != fcntl.F_RDLCK
                except OSError:
                    continue
                if pending:  # a lease being broken reads as the type it is broken to
                    self.breaking = (path, what)
                    threading.Thread(target=self._ask_again, daemon=True).start()
                    break
        if self.breaking is not None:
            raise FileChanging(*self.breaking)

    def _ask_again(self) -> None:
        """Raise FileChanging again every second until the command is over: an exception
        raised by a signal handler is lost when it lands in a finalizer or a callback (Python
        prints "Exception ignored" and goes on), and the lease must not wait on a command
        that goes on. Cleanups hold SIGIO (formats._files.signals_held), so none is cut."""
        while not self.over.wait(1.0):
            _thread.interrupt_main(signal.SIGIO)

    def let_go(self, fd: int) -> None:
        """End one lease (its mapping is gone, or the command is over)."""
        if self.held.pop(fd, None) is not None:
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
            os.close(fd)

    def release(self) -> None:
        for fd in list(self.held):
            self.let_go(fd)


_ACTIVE: _Leases | None = None


@contextlib.contextmanager
def guarding() -> Iterator[None]:
    """Hold a read lease on every file `map_file` maps from here on, and stop with
    FileChanging when another program starts to change one; the leases are let go on leaving.
    Only on the main thread (where signal handlers live) and where leases exist; else a no-op."""
    global _ACTIVE
    if not _LEASES or _ACTIVE is not None \
            or threading.current_thread() is not threading.main_thread():
        yield
        return
    leases = _Leases()
    previous = signal.signal(signal.SIGIO, leases.on_sigio)
    _ACTIVE = leases
    try:
        yield
    finally:
        _ACTIVE = None
        leases.over.set()
        leases.release()  # first: a SIGIO after this is about no lease of ours
        signal.signal(signal.SIGIO, previous)


def map_file(fd: int, path: str, what: str) -> mmap.mmap | memoryview | bytes:
    """The whole of the open regular file `fd`, read-only: a memory map, leased while a command
    runs, or a read-only copy where no lease can be had (see the module docstring). `path` and
    `what` ("weights file") name it in FileChanging's line. The caller may close `fd`."""
    size = os.fstat(fd).st_size
    if size == 0:
        return b""
    leases = _ACTIVE
    if leases is None:
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    lease_fd = os.dup(fd)  # the lease lives as long as this descriptor: until the command ends
    try:
        fcntl.fcntl(lease_fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
    except OSError:  # not our file, no leases on this file system, open for writing elsewhere
        os.close(lease_fd)
        return _copy(fd, size, path)
    leases.held[lease_fd] = (str(path), what)
    # Mapped once leased: its size now stays until we are told, so every page can be read.
    mapping = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    # A mapping no view uses any more needs no lease: let it go then, not only at the end (a
    # command reading many models would otherwise hold a descriptor for each).
    weakref.finalize(mapping, leases.let_go, lease_fd)
    return mapping


def _copy(fd: int, size: int, path: str) -> memoryview:
    """The file's bytes in memory, read-only like a map (and, not being a map, never given
    back to the kernel page by page: formats.weights releases mapped pages only)."""
    from ..errors import FormatError

    data = bytearray(size)
    view = memoryview(data)
    done = 0
    while done < size:
        got = os.preadv(fd, [view[done:]], done)
        if got == 0:
            raise FormatError(f"the file shrank to {done} bytes while it was read ({size} "
                              f"before)", where=str(path), fix="another program is changing "
                              "it: run again once it is done")
        done += got
    return view.toreadonly()
