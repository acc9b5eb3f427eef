"""Never overwrite what you read, nor another graph's files.

A command reads files the user named (a model, `--input`/`--const` .npy files, a graph's
manifest and weights) and files a model names itself (ONNX external data). Any of them may be
the very file an output would replace: `convert model.onnx -o model.webnn` whose external data
is `model.weights` would replace the source weights with the WGWT file it is writing. So:

  * every reader records what it opens with `note_read(path, what)` (its device and inode, and
    its resolved path) in the command's `FilesRead`, opened by `tracking()`;
  * every writer calls `check_writes(paths)` for all the files it will write (the output and
    its sidecars) before it writes any of them: an output that is, or resolves to, a file read
    is refused with one line naming both. `AtomicSave` and `StagedSave` call it for each file
    they write, so no writer can forget it; commands call it for the whole set up front.

Outside `tracking()` nothing is recorded and `check_writes` has nothing to compare with: the
command line opens it for every command, and `converter.convert` for its own load and save.

`refuse_shared_sidecars` is the other half: graph files named alike (`t.webnn`, `t.json`,
`t.js`) all keep their weights in `t.manifest.json` and `t.weights`, the names every `.webnn`
reader looks for. Writing one of them may not replace the sidecars another one still uses with
other bytes; `AtomicSave` and `StagedSave` check it as they commit (`check_shared_sidecars`).
"""
from __future__ import annotations

import contextlib
import contextvars
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import ConverterError

__all__ = ["FilesRead", "tracking", "note_read", "check_writes", "refuse_shared_sidecars",
           "check_shared_sidecars", "GRAPH_SUFFIXES", "sidecar_names"]

# The outputs that keep their weights in NAME.manifest.json and NAME.weights.
GRAPH_SUFFIXES = (".webnn", ".json", ".js")
_MANIFEST_SUFFIX = ".manifest.json"


@dataclass(frozen=True)
class _Read:
    path: str
    what: str


class FilesRead:
    """The files one command has read, by identity (device, inode) and by resolved path."""

    def __init__(self) -> None:
        self.by_identity: dict[tuple[int, int], _Read] = {}
        self.by_path: dict[str, _Read] = {}

    def note(self, path: str | Path, what: str, st: os.stat_result | None = None) -> None:
        read = _Read(str(path), what)
        resolved = os.path.realpath(path)
        self.by_path.setdefault(os.path.normcase(resolved), read)
        if st is None:
            try:
                st = os.stat(resolved)
            except OSError:  # the reader reports a missing file itself
                return
        self.by_identity.setdefault((st.st_dev, st.st_ino), read)

    def read_as(self, target: str | Path) -> _Read | None:
        """The read file that writing `target` would replace, if any."""
        resolved = os.path.realpath(target)
        found = self.by_path.get(os.path.normcase(resolved))
        if found is not None:
            return found
        try:
            st = os.stat(resolved)
        except OSError:  # does not exist yet: only its path could match
            return None
        return self.by_identity.get((st.st_dev, st.st_ino))


_SCOPE: contextvars.ContextVar[FilesRead | None] = contextvars.ContextVar(
    "webnn_converter_files_read", default=None)


@contextlib.contextmanager
def tracking() -> Iterator[FilesRead]:
    """Record the files read from here on (inside an open scope: that scope's record)."""
    current = _SCOPE.get()
    if current is not None:
        yield current
        return
    files = FilesRead()
    token = _SCOPE.set(files)
    try:
        yield files
    finally:
        _SCOPE.reset(token)


def note_read(path: str | Path, what: str, st: os.stat_result | None = None) -> None:
    """Record that the command reads `path` (`what` it is, for the message: "the external data
    of model.onnx"); `st` is the open file's fstat when the caller has it."""
    files = _SCOPE.get()
    if files is not None:
        files.note(path, what, st)


def check_writes(paths: Iterable[str | Path]) -> None:
    """Raise ConverterError, before anything is written, if writing any of `paths` would
    replace a file this command reads."""
    files = _SCOPE.get()
    if files is None:
        return
    for target in paths:
        read = files.read_as(target)
        if read is not None:
            raise ConverterError(
                f"writing it would replace {read.path} ({read.what}), which is an input "
                f"of this command",
                where=str(target),
                fix="write the output under another name or in another folder")


def sidecar_names(path: str | Path) -> tuple[Path, Path]:
    """NAME.manifest.json and NAME.weights beside the graph or module file NAME.suffix."""
    path = Path(path)
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    return path.with_name(stem + _MANIFEST_SUFFIX), path.with_name(stem + ".weights")


def refuse_shared_sidecars(path: str | Path, staged: dict[Path, Path]) -> None:
    """Raise when committing `path`'s NAME.manifest.json and NAME.weights (`staged`: final
    path -> the complete file about to replace it) would change the weights of another graph
    file named alike (NAME.webnn, NAME.json or NAME.js beside it).

    Whose they are is told by the names alone, as every `.webnn` reader finds them: when
    another NAME.* graph file exists, the sidecars there are taken as its. Replacing them with
    the same bytes changes nothing for it (the same model written as .webnn and .js), and
    writing the same output again (replacing one's own earlier output) is always fine.
    """
    path = Path(path)
    present = [p for p in sidecar_names(path) if os.path.lexists(p)]
    if not present:
        return
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    mine = os.path.normcase(path.name)
    others = [path.with_name(stem + suffix) for suffix in GRAPH_SUFFIXES
              if os.path.normcase(stem + suffix) != mine
              and os.path.lexists(path.with_name(stem + suffix))]
    if not others or all(p in staged and _same_bytes(p, staged[p]) for p in present):
        return
    names = " and ".join(p.name for p in present)
    raise ConverterError(
        f"{names} belong to {others[0].name}, which uses the same NAME; writing {path.name}'s "
        f"other weights would replace them, and {others[0].name} would then load other values",
        where=str(path), fix=f"name the output differently, or delete {others[0].name} first "
                             f"if it is no longer wanted")


def check_shared_sidecars(staged: dict[Path, Path]) -> None:
    """`refuse_shared_sidecars` for every graph or module among the files a save is about to
    commit (final path -> complete file) whose weights are committed with it."""
    for final in staged:
        if final.suffix.lower() in GRAPH_SUFFIXES and not final.name.endswith(_MANIFEST_SUFFIX) \
                and any(s in staged for s in sidecar_names(final)):
            refuse_shared_sidecars(final, staged)


def _same_bytes(a: Path, b: Path) -> bool:
    """Whether two regular files hold the same bytes (compared a block at a time)."""
    try:
        if os.path.getsize(a) != os.path.getsize(b):
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            while True:
                block = fa.read(1 << 20)
                if block != fb.read(1 << 20):
                    return False
                if not block:
                    return True
    except OSError:
        return False
