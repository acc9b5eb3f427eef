"""Working files and folders named by the run that owns them, so that a later run can remove
one whose owner was killed (SIGKILL, the OOM killer: no cleanup of our own runs then) and never
one a live run is using.

A name holds its owner's stamp: the machine (a CRC of /etc/machine-id and the host name),
the boot (the start of /proc/sys/kernel/random/boot_id), the PID namespace, the process id and
the process's start time (clock ticks since boot, /proc/PID/stat). Every run that makes such a
file or folder first removes those of the same kind in the same place whose owner is gone: of
this machine, and of a boot that has ended, or of this PID namespace with a process id that is
not running any more or runs a process that started at another time (the id was reused).
What it cannot judge it leaves: another machine's (a shared file system), another PID
namespace's (a container's), anything on a system without /proc, a name not in this form, a
link, another user's.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import zlib
from pathlib import Path

__all__ = ["make_owned_folder", "owned_name", "remove_stale", "own_stamp"]

# [.][FILE.]webnn-KIND.STAMP.RANDOM[.SUFFIX]: FILE, for a file, the name it will take.
_NAME = re.compile(r"\.?(?:.*\.)?webnn-(?P<kind>[a-z]+)\.(?P<host>[0-9a-f]{8})"
                   r"\.(?P<boot>[0-9a-f]{8})\.(?P<ns>\d+)\.(?P<pid>\d+)\.(?P<start>\d+)"
                   r"\.[0-9a-f]{8}(?:\.[a-z]+)?", re.DOTALL)


def _first_line(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.readline().strip() or None
    except OSError:
        return None


def _start_time(pid: int | str) -> int | None:
    """When process `pid` started (clock ticks since boot), None if it is not running."""
    line = _first_line(f"/proc/{pid}/stat")
    if line is None:
        return None
    # Field 22; the name (field 2, in parentheses) may itself hold spaces and parentheses.
    return int(line[line.rindex(")") + 2:].split()[19])


def _machine() -> str:
    # Both: cloned machines can share a machine id (an image's), and containers a host name.
    ident = f"{_first_line('/etc/machine-id')}/{os.uname().nodename}"
    return f"{zlib.crc32(ident.encode()):08x}"  # zlib, not hashlib: cheaper to import


def _pid_namespace() -> int | None:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


_STAMPS: dict[int, dict[str, str] | None] = {}  # by process id: a forked child has its own


def own_stamp() -> dict[str, str] | None:
    """This process's stamp as the names hold it; None without /proc (not Linux)."""
    pid = os.getpid()
    if pid not in _STAMPS:
        _STAMPS.clear()
        _STAMPS[pid] = _stamp()
    return _STAMPS[pid]


def _stamp() -> dict[str, str] | None:
    boot = _first_line("/proc/sys/kernel/random/boot_id")
    start = _start_time("self")
    ns = _pid_namespace()
    if boot is None or start is None or ns is None:
        return None
    return {"host": _machine(), "boot": boot.replace("-", "")[:8], "ns": str(ns),
            "pid": str(os.getpid()), "start": str(start)}


def _owner_gone(found: re.Match, own: dict[str, str]) -> bool:
    if found["host"] != own["host"]:
        return False  # another machine's (a shared file system): not ours to judge
    if found["boot"] != own["boot"]:
        return True  # this machine has rebooted since: every process of that boot is gone
    if found["ns"] != own["ns"]:
        return False  # another PID namespace's (a container's): its ids mean nothing here
    return str(_start_time(found["pid"])) != found["start"]  # None: not running


def remove_stale(parent: Path, kind: str) -> None:
    """Remove the files and folders of `kind` in `parent` whose owner is gone (see the
    module's doc)."""
    own = own_stamp()
    if own is None:
        return
    try:
        names = os.listdir(parent)
    except OSError:
        return  # the caller's own use of the folder reports what is wrong with it
    for name in names:
        found = _NAME.fullmatch(name)
        if not found or found["kind"] != kind or not _owner_gone(found, own):
            continue
        path = Path(parent) / name
        try:
            info = os.lstat(path)
        except OSError:
            continue  # removed meanwhile, by another run cleaning up too
        if info.st_uid != os.getuid():
            continue
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(path, ignore_errors=True)
        elif stat.S_ISREG(info.st_mode):
            with contextlib.suppress(OSError):
                os.unlink(path)


def owned_name(kind: str, *, hidden: bool = False, prefix: str = "", suffix: str = "") -> str:
    """A new name for a file or folder of `kind`, stamped with this process (all zeros
    without /proc, which no run removes). `prefix`: the name a file will take, first."""
    own = own_stamp() or dict.fromkeys(("ns", "pid", "start"), "0") | \
        {"host": "0" * 8, "boot": "0" * 8}
    stamp = ".".join(own[k] for k in ("host", "boot", "ns", "pid", "start"))
    lead = ("." if hidden else "") + (f"{prefix}." if prefix else "")
    return f"{lead}webnn-{kind}.{stamp}.{os.urandom(4).hex()}{suffix}"


def make_owned_folder(parent: Path, kind: str, *, hidden: bool = False,
                      suffix: str = "") -> Path:
    """A new folder in `parent` (mode 0700) named by `owned_name`, made after removing the
    stale ones of the same kind there."""
    remove_stale(parent, kind)
    while True:
        path = Path(parent) / owned_name(kind, hidden=hidden, suffix=suffix)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
            return path
