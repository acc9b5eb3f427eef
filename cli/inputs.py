"""Input values the user gives (`--input NAME=FILE.npy`, `--inputs DIR`, `--const NAME=FILE.npy`),
read as arrays; a folder of samples (`--inputs DIR` whose subfolders each hold one sample's
NAME.npy files, for the accuracy of `--weights` over many real inputs); and the path a model
named on the command line is read from (`model_path`, `--follow-symlinks`).

A .npy file's header says its shape and dtype; numpy allocates what they ask for before it finds
the file too short (a 128-byte file claiming 10**12 elements was 4 TB asked of the allocator).
So the header is read first and checked against the file's size and the per-tensor memory limit
(`--max-tensor-bytes`) before the data is allocated.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Mapping

from converter.errors import ConverterError

__all__ = ["read_inputs", "read_samples", "holds_samples", "load_npy", "model_path",
           "MAX_SAMPLES"]

_FIX = "write it with numpy.save (no pickled objects)"
# The most sample subfolders `--inputs DIR` may hold: each is a run of the source and of the
# graph, and every sample's outputs are kept until the report is made.
MAX_SAMPLES = 10_000
_SAMPLES_FIX = ("give a folder of NAME.npy files (one sample), or of subfolders each holding "
                "one sample's NAME.npy files")


def read_inputs(given: Mapping[str, str], folder: str | None = None) -> dict:
    """Arrays by input name: every `NAME.npy` regular file of `folder` (symlinks and other
    files are not read), then the `--input` files, which win over the folder's."""
    paths: dict[str, Path] = {}
    if folder is not None:
        if holds_samples(folder):
            raise ConverterError("the inputs folder holds sample subfolders: one run takes one "
                                 "sample", where=folder,
                                 fix="give one sample's folder (--inputs DIR/SAMPLE), or "
                                     "measure them all with --weights")
        paths = _npy_files(folder)
    paths.update({name: Path(path) for name, path in given.items()})
    return {name: load_npy(path, f"input '{name}'") for name, path in paths.items()}


def _listed(folder: str) -> list:
    try:
        return sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as e:
        raise ConverterError(f"cannot list the inputs folder: {e.strerror or e}",
                             where=folder, fix="give a folder of NAME.npy files") from None


def holds_samples(folder: str | None) -> bool:
    """Whether the `--inputs` folder holds sample subfolders (not NAME.npy files itself); one
    holding both is refused (which would it mean?)."""
    if folder is None:
        return False
    entries = _listed(folder)
    subfolders = any(e.is_dir(follow_symlinks=False) for e in entries)
    if subfolders and any(e.name.endswith(".npy") for e in entries):
        raise ConverterError("the inputs folder holds both NAME.npy files and sample "
                             "subfolders", where=folder, fix=_SAMPLES_FIX)
    return subfolders


def read_samples(given: Mapping[str, str], folder: str) -> list[tuple[str, dict]]:
    """(subfolder path, arrays by input name) per sample subfolder of `folder`, in name order;
    the `--input` files join every sample (and win over its own). Hostile folders: a folder
    mixing NAME.npy files and subfolders, more than MAX_SAMPLES subfolders, subfolders giving
    different input names, or files whose sizes add up past the total memory limit are one-line
    ConverterErrors naming the folder (a file's own faults name the file)."""
    from converter.budget import MemoryBudget

    holds_samples(folder)  # refuses a folder of both
    subfolders = [e for e in _listed(folder) if e.is_dir(follow_symlinks=False)]
    if not subfolders:
        raise ConverterError("no sample subfolders in the inputs folder", where=folder,
                             fix=_SAMPLES_FIX)
    if len(subfolders) > MAX_SAMPLES:
        raise ConverterError(f"{len(subfolders)} sample subfolders, more than {MAX_SAMPLES}",
                             where=folder, fix=f"measure at most {MAX_SAMPLES} samples a run")
    budget = MemoryBudget()  # all samples are held at once: they share the total limit
    samples, names = [], None
    for entry in subfolders:
        paths = _npy_files(entry.path)
        if names is None:
            names = set(paths)
        elif set(paths) != names:
            raise ConverterError(f"sample '{_shown(entry.name)}' gives the inputs "
                                 f"{', '.join(sorted(paths))[:200]}; the first gave "
                                 f"{', '.join(sorted(names))[:200]}", where=entry.path,
                                 fix="give every sample the same NAME.npy files")
        paths.update({name: Path(path) for name, path in given.items()})
        samples.append((entry.path, {name: load_npy(path, f"input '{name}'", budget)
                                     for name, path in paths.items()}))
    return samples


def _npy_files(folder: str) -> dict[str, Path]:
    """NAME -> path for each NAME.npy regular file of `folder` (symlinks are not read)."""
    paths = {e.name[:-len(".npy")]: Path(e.path) for e in _listed(folder)
             if e.name.endswith(".npy") and e.is_file(follow_symlinks=False)}
    if not paths:
        raise ConverterError("no NAME.npy files in the inputs folder", where=folder,
                             fix="save each input as INPUT_NAME.npy (numpy.save)")
    return paths


def _shown(name: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in name[:80])


def load_npy(path: str | Path, what: str, budget=None):
    """The array of a .npy file, its header checked before its data is allocated; one-line
    ConverterError (naming the file) for a file that is not a regular file, not .npy, holds
    pickled objects, or whose header asks for more bytes than the file holds or than one
    tensor may take (or than is left of `budget`, a MemoryBudget several files share)."""
    import numpy as np

    from converter.files.guard import note_read

    where = str(path)

    def refuse(why: str, fix: str = _FIX):
        raise ConverterError(f"cannot read {what} as .npy: {why}", where=where, fix=fix)

    try:  # without blocking: a FIFO given as an input must not hang the command
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        refuse(e.strerror or str(e), "give the path of a .npy file")
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            refuse("it is not a regular file", "give the path of a .npy file")
        note_read(path, f"the value of {what}", st)  # no output of the command may replace it
        os.set_blocking(f.fileno(), True)
        size = st.st_size
        try:
            shape, dtype = _header(f)
        except (ValueError, OSError) as e:  # numpy says what is wrong with the header
            refuse(f"its header cannot be read ({e})")
        if dtype.hasobject:
            refuse(f"it holds Python objects ({dtype}), which would need unpickling")
        _check_size(shape, dtype, size - f.tell(), what, where, budget)
        f.seek(0)
        try:
            return np.load(f, allow_pickle=False)
        except (OSError, ValueError) as e:
            refuse(str(e))


def _header(f):
    """(shape, dtype) from a .npy header, with the file left at the start of the data."""
    from numpy.lib import format as npy

    version = npy.read_magic(f)
    if version == (1, 0):
        shape, _, dtype = npy.read_array_header_1_0(f)
    elif version == (2, 0):
        shape, _, dtype = npy.read_array_header_2_0(f)
    else:  # 3.0 only differs for structured dtypes with non-Latin-1 names: no input has them
        raise ValueError(f"format version {version[0]}.{version[1]} is not one numpy.save "
                         f"writes for plain arrays")
    return shape, dtype


def _check_size(shape, dtype, data_bytes: int, what: str, where: str,
                budget=None) -> None:
    from converter.budget import MemoryBudget, format_size, shape_bytes

    nbytes = shape_bytes(shape, dtype.itemsize)
    described = f"{dtype}{list(shape)}"
    if nbytes > data_bytes:
        raise ConverterError(
            f"cannot read {what} as .npy: its header says {described}, {nbytes} bytes, but "
            f"the file holds {data_bytes} after its header", where=where,
            fix="the file is truncated or damaged; write it again with numpy.save")
    # Reading allocates what the header says (the file's size bounds it): one tensor's limit.
    (budget or MemoryBudget()).claim(nbytes, f"{what} ({described}, {format_size(nbytes)})",
                                     where=where)


def model_path(path: str | None, follow_symlinks: bool) -> str | None:
    """The path a command reads a model named on its command line from: as given, or with
    --follow-symlinks, where its symbolic links lead, so that the file is read as if named
    there (the folder rules of converter/formats/_files.py then apply to that folder)."""
    if path is None or not follow_symlinks:
        return path
    return os.path.realpath(path)
