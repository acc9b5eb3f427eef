"""Input values the user gives (`--input NAME=FILE.npy`, `--inputs DIR`), read as arrays."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from converter.errors import ConverterError


def read_inputs(given: Mapping[str, str], folder: str | None = None) -> dict:
    """Arrays by input name: every `NAME.npy` regular file of `folder` (symlinks and other
    files are not read), then the `--input` files, which win over the folder's."""
    import numpy as np

    paths: dict[str, Path] = {}
    if folder is not None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as e:
            raise ConverterError(f"cannot list the inputs folder: {e.strerror or e}",
                                 where=folder, fix="give a folder of NAME.npy files") from None
        for entry in entries:
            if entry.name.endswith(".npy") and entry.is_file(follow_symlinks=False):
                paths[entry.name[:-len(".npy")]] = Path(entry.path)
        if not paths:
            raise ConverterError("no NAME.npy files in the inputs folder", where=folder,
                                 fix="save each input as INPUT_NAME.npy (numpy.save)")
    paths.update({name: Path(path) for name, path in given.items()})
    arrays = {}
    for name, path in paths.items():
        try:
            arrays[name] = load_value(path, f"the value of input '{name}'")
        except (OSError, ValueError) as e:
            raise ConverterError(f"cannot read input '{name}' as .npy: {e}", where=str(path),
                                 fix="write it with numpy.save (no pickled objects)") from None
    return arrays


def load_value(path: str | Path, what: str):
    """A .npy file's array (no pickles), recorded as read (converter.file_guard) so that no
    output of the command replaces it; OSError/ValueError for a file numpy cannot read."""
    import numpy as np

    from converter.file_guard import note_read

    note_read(path, what)
    return np.load(path, allow_pickle=False)
