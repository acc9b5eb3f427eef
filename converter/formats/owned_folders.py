"""Working folders named by the run that owns them, so that a later run can remove one whose
owner was killed (SIGKILL, the OOM killer: no cleanup of our own runs then) and never one a live
run is using.

A folder's name holds its owner's stamp: the machine (a hash of /etc/machine-id, else the host
name), the boot (the start of /proc/sys/kernel/random/boot_id), the PID namespace, the process
id and the process's start time (clock ticks since boot, /proc/PID/stat). Every run that makes
such a folder first removes those of the same kind in the same place whose owner is gone: the
same machine and PID namespace, and either a boot that has ended or a process id that is not
running any more, or is running a process that started at another time (the id was reused).
What it cannot judge it leaves: another machine's folder (a shared file system), another PID
namespace's (a container's), anything on a system without /proc, a name not in this form, a
link, a folder of another user.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import socket
import stat
from pathlib import Path

__all__ = ["make_owned_folder", "remove_stale_folders", "own_stamp"]

_NAME = re.compile(r"\.?webnn-(?P<kind>[a-z]+)\.(?P<host>[0-9a-f]{8})\.(?P<boot>[0-9a-f]{8})"
                   r"\.(?P<ns>\d+)\.(?P<pid>\d+)\.(?P<start>\d+)\.[0-9a-f]{8}(?:\.[a-z]+)?")


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
    ident = _first_line("/etc/machine-id") or socket.gethostname()
    return hashlib.sha256(ident.encode()).hexdigest()[:8]


def _pid_namespace() -> int | None:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


def own_stamp() -> dict[str, str] | None:
    """This process's stamp as the folder names hold it; None without /proc (not Linux)."""
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


def remove_stale_folders(parent: Path, kind: str) -> None:
    """Remove the folders of `kind` in `parent` whose owner is gone (see the module's doc)."""
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
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
            shutil.rmtree(path, ignore_errors=True)


def make_owned_folder(parent: Path, kind: str, *, hidden: bool = False,
                      suffix: str = "") -> Path:
    """A new folder in `parent` (mode 0700) named with this process's stamp, after removing
    the stale folders of the same kind there. Without /proc the stamp is all zeros, which no
    run removes."""
    remove_stale_folders(parent, kind)
    own = own_stamp() or dict.fromkeys(("ns", "pid", "start"), "0") | \
        {"host": "0" * 8, "boot": "0" * 8}
    stamp = ".".join(own[k] for k in ("host", "boot", "ns", "pid", "start"))
    while True:
        name = f"{'.' if hidden else ''}webnn-{kind}.{stamp}.{os.urandom(4).hex()}{suffix}"
        path = Path(parent) / name
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
            return path
