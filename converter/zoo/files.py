"""The files a zoo run reads and writes, treated as hostile: bounded reads, strict parsing,
local models kept inside the manifest's folder, and no output that is also an input.

    raw = read_bounded(path, "zoo manifest", MAX_MANIFEST_BYTES)
    doc = parse_document(raw, path, "zoo manifest")          # .json (strict) or .toml
    model = local_model_path(folder, "sub/m.onnx", where)    # refuses '/x', '../x', '.x'
    with open_local_model(model, folder) as f: ...           # regular, unhidden, one link
    check_outputs({"manifest": m, ...}, {"--report": r, ...})  # before anything is written

A file is compared with another by identity (device and inode) when it exists, else by its
resolved path, so a link or a second spelling of one file is caught too.
"""
from __future__ import annotations

import os
import re
import stat
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Iterable

from ..errors import ConverterError, FormatError
from ..formats._files import MAX_NESTING, check_nesting, open_model_file, parse_json

__all__ = ["read_bounded", "parse_document", "local_model_path", "open_local_model",
           "check_outputs", "MAX_MANIFEST_BYTES", "MAX_BASELINE_BYTES"]

# A manifest of thousands of models is a few MB; a results file holds a few KB per model.
MAX_MANIFEST_BYTES = 16 << 20
MAX_BASELINE_BYTES = 256 << 20


def read_bounded(path: str | Path, what: str, limit: int, fix: str | None = None) -> bytes:
    """The bytes of a file the user named, refused in one line when it is no regular file
    (a FIFO would block, a device never end) or holds more than `limit` bytes."""
    path = Path(path)
    # The user's own file may be a link anywhere: the folder its target is in is its folder.
    home = Path(os.path.realpath(path)).parent
    with open_model_file(path, what, folder=home, fix=fix) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise FormatError(f"the {what} holds {size:,} bytes, more than the {limit:,} one "
                              f"may", where=str(path), fix=fix)
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise FormatError(f"the {what} cannot be read ({e.strerror})",
                              where=str(path)) from None
    if len(data) > limit:  # it grew since fstat
        raise FormatError(f"the {what} holds more than {limit:,} bytes", where=str(path),
                          fix=fix)
    return data


def parse_document(raw: bytes, path: Path, what: str) -> Any:
    """A .json (strict: see parse_json) or .toml document, nested at most MAX_NESTING deep."""
    where = str(path)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".toml"):
        raise ConverterError(f"cannot read a {suffix or 'suffix-less'} {what}", where=where,
                             fix="give a .json or .toml file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormatError(f"the {what} is not UTF-8 text ({e.reason} at byte {e.start})",
                          where=where) from None
    if suffix == ".json":
        return parse_json(text, where, what)
    _check_toml_keys(text, where, what)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise FormatError(f"not valid TOML: {e}", where=where) from None
    except RecursionError:  # tomllib reads nested arrays and inline tables recursively
        raise FormatError(f"arrays and tables are nested more than {MAX_NESTING} deep",
                          where=where, fix=f"no {what} needs that") from None
    check_nesting(doc, where, what)  # dotted keys nest without recursion
    return doc


# A TOML string literal (the four kinds, escapes skipped) or comment. Every alternative,
# once its opening quote matched, succeeds (an unclosed literal ends at the end of its line or
# of the file; the body never backtracks), so whatever the input this is one left-to-right
# pass, never a second look at the same text.
_TOML_SKIP = re.compile(r'"""(?:[^\\]|\\[\s\S]?)*?(?:"""|\Z)|\'\'\'[\s\S]*?(?:\'\'\'|\Z)'
                        r'|"(?:[^"\\\n]|\\[\s\S]?)*+(?:"|$)|\'[^\'\n]*+(?:\'|$)|#[^\n]*+',
                        re.M)
# A run of key characters, dots and blanks (a string or comment stands as NUL): a dotted key
# (`a.b."c"`) is one; no value is (a number holds one dot at most; arrays and inline tables
# are split by commas and brackets, a comment's line by its newline).
_KEY_RUN = re.compile(r"[A-Za-z0-9_\-\x00. \t]+")


def _toml_without_strings(text: str) -> str:
    """`text` with each string literal and comment replaced by one NUL."""
    return _TOML_SKIP.sub("\x00", text)


def _check_toml_keys(text: str, where: str, what: str) -> None:
    """Refuse a dotted key of more than MAX_NESTING parts before tomllib reads it: tomllib
    keeps every prefix of a key, so a key of 100,000 parts takes memory quadratic in that."""
    runs = _KEY_RUN.findall(_toml_without_strings(text))
    if max((run.count(".") for run in runs), default=0) >= MAX_NESTING:
        raise FormatError(f"a dotted key has more than {MAX_NESTING} parts", where=where,
                          fix=f"no {what} needs that; the file is corrupt or hostile")


def local_model_path(folder: Path, relative: str, where: str) -> Path:
    """The absolute path of a manifest's local model: `relative` must be a relative path
    without '..' or hidden parts, and stay inside `folder` once links are resolved."""
    fix = "give a path relative to the manifest's folder, inside it"
    pure = PurePosixPath(relative)
    if pure.is_absolute() or Path(relative).is_absolute() or "\\" in relative or \
            any(ord(c) < 32 or ord(c) == 127 for c in relative):
        raise FormatError(f"path {relative!r} is not a plain relative path", where=where,
                          fix=fix)
    if any(part.startswith(".") for part in pure.parts):
        raise FormatError(f"path {relative!r} climbs out of the folder or names a hidden "
                          f"file", where=where, fix=fix)
    home = Path(os.path.realpath(folder))
    real = Path(os.path.realpath(home / relative))
    if os.path.commonpath([home, real]) != str(home):
        raise FormatError(f"path {relative!r} leads to {real}, outside the manifest's folder "
                          f"{home}", where=where, fix="copy the model into the folder "
                                                      "instead of linking to it")
    return home / relative


def open_local_model(path: Path, folder: Path) -> BinaryIO:
    """Open a local model by the project's model-file rules: a regular file inside `folder`
    (links resolved), not hidden, and with one link only (a hard link is a second name of a
    file that may live anywhere)."""
    if path.name.startswith("."):
        raise FormatError("the model file is hidden", where=str(path),
                          fix="give a file whose name does not start with '.'")
    f = open_model_file(path, "model file", folder=folder,
                        fix="fix `path` in the manifest (it is relative to it)")
    try:
        links = os.fstat(f.fileno()).st_nlink
        if links != 1:
            raise FormatError(f"the model file has {links} hard links", where=str(path),
                              fix="copy the file instead of linking it")
    except BaseException:
        f.close()
        raise
    return f


def _identity(path: Path) -> tuple:
    """What makes two names one file: (device, inode) when it exists, else the path resolved
    (links and '..' followed)."""
    try:
        st = os.stat(path)
    except OSError:
        return ("path", os.path.realpath(path))
    if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        return ("path", os.path.realpath(path))  # a device or FIFO: its name is what counts
    return ("inode", st.st_dev, st.st_ino)


def check_outputs(reads: Iterable[tuple[str, Path]], writes: Iterable[tuple[str, Path]]) -> None:
    """Refuse, before anything is written, an output that is one of the inputs or another
    output: (label, path) pairs such as ("the manifest", m) and ("--report", r)."""
    inputs = [(label, Path(p), _identity(Path(p))) for label, p in reads]
    seen: list[tuple[str, Path, tuple]] = []
    for label, path in writes:
        path = Path(path)
        ident = _identity(path)
        for other_label, other, other_ident in inputs:
            if ident == other_ident:
                raise ConverterError(f"{label} {path} is {other_label} {other}: writing it "
                                     f"would destroy what the run reads",
                                     fix=f"give {label} another file")
        for other_label, other, other_ident in seen:
            if ident == other_ident:
                raise ConverterError(f"{label} {path} and {other_label} {other} are the same "
                                     f"file", fix="give each output its own file")
        seen.append((label, path, ident))
