"""A forked child the importer computes something in, whose stops are never lost.

A stop (Ctrl-C, SIGTERM, SIGHUP) handled while os.fork() runs its after-fork hooks in the
parent (logging registers one in every process) raises its exception inside a hook, where
Python prints and drops it: the stop is lost, and a parent that goes on to wait for a child that
never answers waits forever. A stop handled just after fork() returns, before the caller holds
the child's pid, leaves a child nobody ends. So `ForkedChild` forks with the stops held: in the
parent they are recorded and raised once the child's pid is kept (the child is then ended
first), and the child starts with them blocked and the parent's own handlers back in place, so
that one sent to it during the fork reaches it as it would have before.
"""
from __future__ import annotations

import os
import signal
from typing import Callable, NoReturn

from ...formats._files import signals_held

__all__ = ["ForkedChild", "STOPS", "ended"]

STOPS = {getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)}


class ForkedChild:
    """A child process running `work()` (which must leave with os._exit; leaving otherwise
    exits with status 1: the child never returns into the parent's stack).

    `start()` forks and returns self, or, when a stop arrives during the fork, ends the child
    and raises the stop. Once started, `wait()` reaps the child and returns its wait status,
    and `end()` kills and reaps a child not reaped yet (it is what leaving a `with` block
    does, however the block ends).

    `parent_closes`: file descriptors for the child alone (a pipe's write end). The parent
    closes them as it forks, with the stops held, so they are closed exactly once whatever
    arrives (closing one twice could close a descriptor reused meanwhile by another thread).
    """

    def __init__(self, work: Callable[[], NoReturn], parent_closes: tuple[int, ...] = ()
                 ) -> None:
        self._work = work
        self._parent_closes = parent_closes
        self.pid: int | None = None
        self._reaped = False

    def start(self) -> "ForkedChild":
        try:
            with signals_held() as handlers:
                # Blocked too, so that the child starts with them blocked until its handlers
                # are back (a stop it is sent meanwhile then waits instead of being recorded
                # by a handler it no longer leaves); the parent unblocks them at once.
                mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
                try:
                    self.pid = os.fork()
                    if self.pid == 0:
                        self._run_child(handlers, mask)
                finally:  # the parent only: the child never leaves _run_child
                    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                    for fd in self._parent_closes:
                        os.close(fd)
                    self._parent_closes = ()
        except BaseException:  # a stop held during the fork, raised now that the pid is kept
            self.end()
            raise
        return self

    def _run_child(self, handlers: dict, mask) -> NoReturn:
        try:
            for signum, handler in handlers.items():
                signal.signal(signum, handler)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            self._work()
        finally:
            os._exit(1)

    def wait(self) -> int:
        """Wait for the child to end; its wait status."""
        _, status = os.waitpid(self.pid, 0)
        self._reaped = True
        return status

    def end(self) -> None:
        if self.pid and not self._reaped:  # returned or raised before the child ended
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self._reaped = True

    def __enter__(self) -> "ForkedChild":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.end()


def ended(status: int) -> str:
    """How a child process ended, from its wait status: "died of SIGSEGV", "exited with
    status 3"."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig
        return f"died of {name}"
    return f"exited with status {os.WEXITSTATUS(status)}"
