"""Running `webnn-convert` as a real process with its output piped, or on a pseudo-terminal
(where rich lays tables out, colours and animates: what a user at a terminal gets)."""
from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
import tty
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# As the `webnn-convert` script runs (cli.script.run, with its quick exit).
_CLI = "from cli.script import run; run()"


def command(*args) -> list[str]:
    return [sys.executable, "-c", _CLI, *map(str, args)]


def _env(extra: dict | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES")}
    return {**env, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", **(extra or {})}


def run_piped(args, cwd, timeout=300, env=None) -> tuple[int, bytes]:
    """Exit status and stdout + stderr (bytes, in that order) of the command, piped."""
    done = subprocess.run(command(*args), cwd=cwd, capture_output=True, timeout=timeout,
                          env=_env(env))
    return done.returncode, done.stdout + done.stderr


def run_on_terminal(args, cwd, timeout=300, columns=80, env=None) -> tuple[int, bytes]:
    """Exit status and every byte written to the terminal (stdout and stderr both on one
    pseudo-terminal of `columns` columns, in raw mode: the bytes as the program wrote them,
    no newline translation)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    tty.setraw(slave)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the last writer closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        child = subprocess.Popen(command(*args), cwd=cwd, stdin=subprocess.DEVNULL,
                                 stdout=slave, stderr=slave, env=_env(env),
                                 start_new_session=True)
        os.close(slave)
        slave = -1
        try:
            code = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise
        reader.join(timeout=30)
    finally:
        if slave != -1:
            os.close(slave)
        os.close(master)
    return code, b"".join(chunks)
