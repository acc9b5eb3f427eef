"""File plumbing shared by the formats: opening model files safely, reading text, strict
JSON, and atomic saves."""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import stat
import threading
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import ConverterError, FormatError, MissingFileError, ParseError
from ..files.guard import check_shared_sidecars, check_writes, note_read
from .hub_cache import hub_cache_blob

__all__ = ["open_model_file", "check_sidecar", "read_text", "parse_json", "check_nesting",
           "AtomicSave", "StagedSave", "signals_held", "MAX_NESTING", "LONE_SURROGATE"]

# Deepest nesting of arrays and objects a JSON or .webnn file may have. Real files need a few
# levels (an option holding a list of pairs); the limit keeps every recursive walk over a parsed
# file (schema validation, the readers) far from Python's recursion limit.
MAX_NESTING = 64
# A `\udXXX` escape without its pair decodes to a code point UTF-8 cannot encode.
LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def open_model_file(path: Path, what: str, *, folder: Path | None = None,
                    fix: str | None = None, error: type[FormatError] = FormatError,
                    sidecar: bool = False) -> BinaryIO:
    """Open a file a model consists of (graph, manifest, weights, .tflite) for reading.

    A model file is untrusted, and so is whatever sits next to it, so the file must be a
    regular file inside `folder` (default: its own folder) once every symlink is resolved: a
    link out of the folder (but for one into the Hugging Face cache the folder is a snapshot
    of, `hub_cache_blob`), a FIFO or device (which would block or never end) and a folder are
    refused with one line. The open itself does not block (O_NONBLOCK: a FIFO swapped in after
    the check cannot hang us) and does not follow a final symlink swapped in after the check.
    A `sidecar` (a file found by the model's name, not named by the user: a manifest, a
    weights file) must also have one link only (`check_sidecar`). The file is recorded as read
    (files/guard.py), so that no output of the command replaces it.
    """
    path = Path(path)
    where = str(path)
    home = os.path.realpath(folder if folder is not None else path.parent)
    real = os.path.realpath(path)
    if os.path.commonpath([home, real]) != home and not hub_cache_blob(home, real):
        named = folder is None and not sidecar  # the file the user named, not one it names
        raise error(f"the {what} is a link to {real}, outside the model's folder {home}",
                    where=where, fix="copy the file into the model's folder instead of linking"
                    + (", or name the file it links to (webnn-convert: --follow-symlinks)"
                       if named else ""))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(real, flags)
    except FileNotFoundError:
        # The user's own file (not a weights file the graph names): FileNotFoundError too.
        missing = MissingFileError if error is FormatError else error
        raise missing(f"the {what} does not exist", where=where, fix=fix) from None
    except PermissionError:
        raise error(f"the {what} cannot be read (permission denied)", where=where) from None
    except OSError as e:  # ELOOP: a link swapped in since realpath; ENXIO: a socket
        raise error(f"the {what} cannot be opened ({e.strerror})", where=where) from None
    try:
        st = os.fstat(fd)
        mode = st.st_mode
        if not stat.S_ISREG(mode):
            kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO (named pipe)"
                    if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode)
                    or stat.S_ISBLK(mode) else "not a regular file")  # open() refuses sockets
            raise error(f"the {what} is {kind}, not a file", where=where,
                        fix="give a regular file")
        if sidecar:
            check_sidecar(st, where, what, error)
        note_read(path, f"the {what}", st)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_sidecar(st: os.stat_result, where: str, what: str,
                  error: type[FormatError] = FormatError) -> None:
    """Refuse a file a model names (or finds by its name) that has more than one hard link.

    A hard link passes every folder test: `weights.bin` linked to `~/.ssh/id_rsa` lies inside
    the model's folder, yet reading it would copy the key into the weights a user publishes.
    Model files are written, not linked, so one link is all a real one has.
    """
    if st.st_nlink > 1:
        raise error(f"the {what} has {st.st_nlink} hard links; a file linked from elsewhere is "
                    f"not read as part of a model", where=where,
                    fix="make it a file of its own (cp it to a new name and back)")


def read_text(path: Path, what: str, fix: str | None = None,
              error: type[FormatError] = FormatError, folder: Path | None = None,
              max_bytes: int | None = None, sidecar: bool = False) -> str:
    """The UTF-8 text of a model file, opened by `open_model_file`'s rules; a file over
    `max_bytes` is refused before it is read."""
    with open_model_file(path, what, folder=folder, fix=fix, error=error,
                         sidecar=sidecar) as f:
        size = os.fstat(f.fileno()).st_size
        if max_bytes is not None and size > max_bytes:
            raise error(f"the {what} is {size} bytes, over the limit of {max_bytes} for one",
                        where=str(path), fix=f"no {what} needs that much; the file is corrupt "
                                             f"or hostile (weights belong in .weights files)")
        try:
            data = f.read()
        except OSError as e:
            raise error(f"the {what} cannot be read ({e.strerror})", where=str(path)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"the {what} is not UTF-8 text ({e.reason} at byte {e.start})",
                          where=str(path)) from None


def parse_json(text: str, where: str, what: str, *, nesting: bool = True) -> Any:
    """Strict JSON: a syntax error gives its line and column, a member given twice in one
    object is an error (json keeps the last one silently), NaN/Infinity literals are refused,
    and so are integers longer than Python's int() reads (4300 digits), strings holding a lone
    surrogate and (with `nesting`, else the caller checks it with `check_nesting`) arrays and
    objects nested deeper than MAX_NESTING."""

    def unique_members(pairs):
        obj = {}
        for key, value in pairs:
            if key in obj:
                raise FormatError(f"the member {key!r} appears twice in one object",
                                  where=where, fix="each member name may appear once")
            obj[key] = value
        return obj

    def no_constant(name):
        raise FormatError(f"{name} is not valid JSON", where=where,
                          fix='write "Infinity", "-Infinity" or "NaN" as a string')

    def integer(digits):
        # int() refuses more than sys.get_int_max_str_digits() (4300) digits with a ValueError
        # json lets through: a hostile file's 5000-digit number, one line, not an internal error.
        try:
            return int(digits)
        except ValueError:
            raise FormatError(f"an integer of {len(digits.lstrip('-'))} digits", where=where,
                              fix=f"the {what} holds no such number; give the file it "
                                  f"should be") from None

    try:
        obj = json.loads(text, object_pairs_hook=unique_members, parse_constant=no_constant,
                         parse_int=integer)
    except json.JSONDecodeError as e:
        raise ParseError(e.msg, path=where, line=e.lineno, column=e.colno,
                         fix=f"the {what} must be valid JSON") from None
    except RecursionError:
        raise _too_deep(where, what) from None
    if nesting:
        check_nesting(obj, where, what)
    if _SURROGATE_ESCAPE.search(text):  # rare: only then is every string looked at
        _check_strings(obj, where)
    return obj


def _too_deep(where: str, what: str) -> FormatError:
    return FormatError(f"arrays and objects are nested more than {MAX_NESTING} deep",
                       where=where, fix=f"no {what} needs that; the file is corrupt or hostile")


def check_nesting(obj: Any, where: str, what: str) -> None:
    """Refuse a parsed JSON value nested deeper than MAX_NESTING (walked without recursion)."""
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            raise _too_deep(where, what)
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))


def _check_strings(obj: Any, where: str) -> None:
    stack = [obj]
    while stack:
        node = stack.pop()
        items = list(node.items()) if isinstance(node, dict) else \
            [(None, v) for v in node] if isinstance(node, list) else [(None, node)]
        for key, value in items:
            for text in (key, value):
                if isinstance(text, str) and LONE_SURROGATE.search(text):
                    raise FormatError(f"the string {json.dumps(text)} holds a lone surrogate "
                                      f"escape, which is no character", where=where,
                                      fix="write a character outside the BMP as a surrogate "
                                          "pair or as itself")
            if isinstance(value, (dict, list)):
                stack.append(value)


class AtomicSave:
    """Write several files so that either all of them appear or none does.

    Each file is written to a temporary name in its target folder; `commit()` renames them all
    into place once every one is complete. Leaving the `with` block without committing (an
    exception while writing) deletes the temporary files, so a failed save leaves nothing
    behind, and an existing file of the same name (which may still be memory-mapped by a
    loaded graph) stays as it was. A run killed outright (SIGKILL) cannot delete them: their
    names hold their owner (owned_paths.py), and the next save into that folder removes them.
    """

    def __init__(self) -> None:
        self._pending: list[tuple[Path, Path]] = []
        self._open: list[BinaryIO] = []
        self._committed = False
        self._writing: Path | None = None  # the final name of the file opened last
        self._temporary_names: set[str] = set()
        self._cleaned: set[Path] = set()  # folders whose killed runs' files are removed

    def __enter__(self) -> "AtomicSave":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self._committed:
            self.abort()
            if isinstance(exc, OSError) and self._names_no_other_file(exc):
                # A write that failed (a full disk ...): named by the file it was for, never
                # by the hidden temporary name, which is gone now.
                raise ConverterError(f"could not write it ({exc.strerror or exc})",
                                     where=str(self._writing), fix="check the disk's free "
                                     "space and the folder, then save again") from None

    def _names_no_other_file(self, exc: OSError) -> bool:
        """Whether an OSError is about the file being written: it names none (write errors
        do not), or one of this save's temporary files."""
        if self._writing is None:
            return False
        return exc.filename is None or str(exc.filename) in self._temporary_names

    def open(self, final: Path) -> BinaryIO:
        """A binary file that becomes `final` on commit; refused (before anything is created)
        when `final` is a file this command reads (files/guard.py)."""
        check_writes([final])
        folder = final.parent
        if not folder.is_dir():
            raise FormatError("the folder does not exist", where=str(folder),
                              fix="create it first")
        from .owned_paths import owned_name, remove_stale

        if folder not in self._cleaned:
            remove_stale(folder, "save")
            self._cleaned.add(folder)
        # The final name first, for whoever sees the file, cut to leave room for the stamp
        # (O_EXCL below catches a collision of the random part).
        lead = os.fsencode(final.name)[:120].decode("utf-8", "ignore")
        tmp = folder / owned_name("save", hidden=True, prefix=lead, suffix=".tmp")
        with signals_held():  # an interrupt between create and append would orphan the file
            # O_EXCL: never reuse someone else's file; 0o666 lets the umask decide.
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                             | getattr(os, "O_BINARY", 0), 0o666)
            except OSError as e:
                raise ConverterError(f"could not create it ({e.strerror or e})",
                                     where=str(final), fix="check that the folder is writable "
                                     "and the disk has room, then save again") from None
            self._pending.append((tmp, final))
        self._writing = final
        self._temporary_names.add(str(tmp))
        stream = os.fdopen(fd, "wb")
        self._open.append(stream)
        return stream

    def write_text(self, final: Path, text: str) -> None:
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as e:  # a name holding a lone surrogate, which UTF-8 lacks
            raise FormatError(f"cannot write {text[e.start:e.end]!r}: a lone surrogate is no "
                              f"character, and UTF-8 has no form for it", where=str(final),
                              fix="rename what holds it") from None
        with self.open(final) as f:
            f.write(data)

    def commit(self) -> list[Path]:
        """Make every file durable, then rename each into place and make the renames durable
        (the folders' entries); return the final paths. Nothing is renamed when a graph's
        manifest and weights would replace, with other bytes, those of another graph file
        named alike (files.guard.check_shared_sidecars)."""
        for stream in self._open:
            if not stream.closed:
                stream.close()
        try:
            _fsync_all([tmp for tmp, _ in self._pending])
        except OSError as e:  # leaving the block removes the temporary files still there
            raise self._sync_error(e) from None
        # Another graph's weights named alike are not replaced by other bytes (files/guard.py).
        check_shared_sidecars({final: tmp for tmp, final in self._pending})
        for _, final in self._pending:
            # The one rename failure we can foresee; checked before any file moves.
            if final.is_dir():
                raise FormatError("a folder has the file's name", where=str(final),
                                  fix="choose another name")
        with signals_held():  # all renames or (on an error) none more: never half a save
            for tmp, final in self._pending:
                try:
                    os.replace(tmp, final)
                except OSError as e:
                    # Renames within one folder only fail for reasons outside our control
                    # (permissions, a target made a folder since the check); leaving the block
                    # removes the files not yet renamed (abort skips the ones that were).
                    raise FormatError(f"could not rename into place: {e.strerror}",
                                      where=str(final)) from None
        self._committed = True
        if os.name == "posix":  # a folder cannot be opened for fsync on Windows
            for folder in dict.fromkeys(final.parent for _, final in self._pending):
                _fsync_path(folder)
        return [final for _, final in self._pending]

    def _sync_error(self, e: OSError) -> ConverterError:
        """One line for a file that could not be made durable, named by its final path."""
        where = next(str(final) for tmp, final in self._pending if tmp == e.filename)
        if isinstance(e, FileNotFoundError):  # another process, or a hostile one, deleted it
            return ConverterError("its temporary file was deleted before the save finished",
                                  where=where, fix="something else deletes files in that "
                                  "folder: stop it or save to another folder, then save again")
        return ConverterError(f"it could not be made durable ({e.strerror})", where=where,
                              fix="check the disk and the folder, then save again")

    def abort(self) -> None:
        with signals_held():  # a second Ctrl-C or SIGTERM must not stop the cleanup halfway
            for stream in self._open:
                if not stream.closed:
                    stream.close()
            for tmp, _ in self._pending:
                try:
                    os.unlink(tmp)
                except FileNotFoundError:
                    pass
            self._pending.clear()


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_all(paths: list[Path]) -> None:
    """Make every file durable. The files are synced at once, one thread each past the first
    (fsync releases the GIL, and the file system can commit them in one journal flush): a
    graph's three files take little more than the weights' own sync. The first error raises,
    its `filename` the path it concerns (fsync's own errors name none)."""
    errors: list[OSError] = []

    def sync(path: Path) -> None:
        try:
            _fsync_path(path)
        except OSError as e:
            e.filename = path
            errors.append(e)

    threads = [threading.Thread(target=sync, args=(path,)) for path in paths[1:]]
    for thread in threads:
        thread.start()
    if paths:
        sync(paths[0])
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


class StagedSave:
    """Outputs that become visible only if a later check passes (`convert --verify`).

    The writers save into a hidden folder created beside the outputs (same file system, so
    moving is a rename); `commit(paths)` renames the staged files into the outputs' folder, and
    leaving the `with` block removes the staging folder and whatever is still in it, so an
    output that failed its check, or an interrupted run, leaves nothing behind. A run killed
    outright (SIGKILL, the OOM killer) cannot clean up: its folder, named by its owner
    (owned_paths.py), is removed by the next run that stages outputs in the same folder.

    The staging folder is ours, not the user's: an error names the output it was for
    (`output`, else the folder) instead. A folder the staging folder cannot be made in (read
    only, no room) is reported as the output that could not be written, and a ConverterError
    raised while writing a staged file names the file's final path.
    """

    def __init__(self, folder: Path, *, output: str | Path | None = None) -> None:
        self.folder = Path(folder)
        self.output = output
        self.stage: Path | None = None

    def __enter__(self) -> "StagedSave":
        from .owned_paths import make_owned_folder  # only `convert --verify` stages

        if not self.folder.is_dir():
            raise FormatError("the folder does not exist", where=str(self.folder),
                              fix="create it first")
        try:
            with signals_held():
                try:
                    self.stage = make_owned_folder(self.folder, "convert", hidden=True,
                                                   suffix=".staging")
                except OSError as e:
                    raise ConverterError(
                        f"could not write in its folder {self.folder} ({e.strerror or e})",
                        where=str(self.output or self.folder),
                        fix="check that the folder is writable and the disk has room, then "
                            "convert again") from None
        except BaseException:
            # A signal held while the folder was made is raised as the block ends, so this
            # method raises after all, and a `with` whose __enter__ raises never calls __exit__.
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        import shutil

        if isinstance(exc, ConverterError) and self.stage is not None and exc.where:
            exc.where = self._final_text(exc.where)
            exc.args = (exc.line(),)
        with signals_held():
            if self.stage is not None:
                shutil.rmtree(self.stage, ignore_errors=True)

    def _final_text(self, where: str) -> str:
        """`where` with the staging folder replaced by the outputs' folder."""
        stage = str(self.stage)
        if where == stage or where.startswith(stage + os.sep):
            return str(self.folder) + where[len(stage):]
        return where

    def path(self, final: str | Path) -> Path:
        """Where to write the output that will become `final`."""
        return self.stage / Path(final).name

    def commit(self, staged: list[Path]) -> list[Path]:
        """Move the staged files to the outputs' folder; refused, with nothing moved, when one
        would replace a file this command reads or another graph's weights (files/guard.py)."""
        finals = [self.folder / p.name for p in staged]
        check_writes(finals)
        check_shared_sidecars(dict(zip(finals, staged)))
        for final in finals:
            if final.is_dir():
                raise FormatError("a folder has the file's name", where=str(final),
                                  fix="choose another name")
        with signals_held():
            for source, final in zip(staged, finals):
                try:
                    os.replace(source, final)
                except OSError as e:
                    raise ConverterError(f"could not write it ({e.strerror or e})",
                                         where=str(final),
                                         fix="check that the folder is writable, then convert "
                                             "again") from None
        return finals


# Windows has no SIGHUP; SIGIO stops a command whose mapped file another program is changing
# (converter/files/mapped.py), held only while that handler is set (its default ends us).
_HELD = ("SIGINT", "SIGTERM", "SIGHUP", "SIGIO")


@contextlib.contextmanager
def signals_held():
    """Delay SIGINT, SIGTERM, SIGHUP and a handled SIGIO (delivered on leaving) for a few file
    operations that must not stop halfway. Off the main thread (where handlers cannot be set)
    a no-op. Yields the handlers it replaced, by signal (a forked child puts them back: see
    forked.py).

    The signals are caught by a recording handler and raised again on leaving, not masked: a
    mask holds them for the main thread only, and a process-directed signal then goes to any
    other thread (ONNX Runtime's pool, for one), whose handler trips the main thread's at once.
    """
    if threading.current_thread() is not threading.main_thread():
        yield {}
        return
    caught: list[int] = []
    replaced: dict[int, Any] = {}
    try:  # from the first replacement on: a signal between two of them restores the first
        for signum in (getattr(signal, n) for n in _HELD if hasattr(signal, n)):
            handler = signal.getsignal(signum)
            if handler is not None and handler is not signal.SIG_IGN \
                    and (signum != getattr(signal, "SIGIO", None) or callable(handler)):
                # (None: a handler set outside Python)
                replaced[signum] = signal.signal(signum, lambda s, frame: caught.append(s))
        yield replaced
    finally:
        for signum, handler in replaced.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(caught):  # like a mask: a signal sent twice arrives once
            signal.raise_signal(signum)
