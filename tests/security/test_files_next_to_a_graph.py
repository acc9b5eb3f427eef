"""A graph's own file, NAME.manifest.json and NAME.weights are read only when they are regular
files inside the graph's folder: no link out of it, no FIFO (every command blocked forever on
one), and a folder in their place gets one clear line."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from converter.errors import FormatError
from converter.formats import load_graph

MODELS = Path(__file__).resolve().parents[2] / "models"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def layout(tmp_path):
    """tmp/model/tiny_cnn.{webnn,manifest.json,weights} and a copy of each in tmp/elsewhere."""
    model, elsewhere = tmp_path / "model", tmp_path / "elsewhere"
    model.mkdir()
    elsewhere.mkdir()
    for suffix in (".webnn", ".manifest.json", ".weights"):
        shutil.copy(MODELS / f"tiny_cnn{suffix}", model / f"tiny_cnn{suffix}")
        shutil.copy(MODELS / f"tiny_cnn{suffix}", elsewhere / f"tiny_cnn{suffix}")
    return model, elsewhere


def _replace(model: Path, elsewhere: Path, suffix: str, kind: str) -> Path:
    path = model / f"tiny_cnn{suffix}"
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "link-out":
        path.symlink_to(elsewhere / f"tiny_cnn{suffix}")
    elif kind == "link-up":
        path.symlink_to(Path("..") / "elsewhere" / f"tiny_cnn{suffix}")
    elif kind == "link-in":  # a link that stays inside the folder is fine
        (model / f"real{suffix}").write_bytes((elsewhere / f"tiny_cnn{suffix}").read_bytes())
        path.symlink_to(f"real{suffix}")
    return path


WANT = {"fifo": "is a FIFO (named pipe), not a file", "folder": "is a folder, not a file",
        "link-out": "outside the model's folder", "link-up": "outside the model's folder"}


@pytest.mark.parametrize("suffix", [".webnn", ".manifest.json", ".weights"])
@pytest.mark.parametrize("kind", ["fifo", "folder", "link-out", "link-up", "link-in"])
def test_each_file_must_be_a_regular_file_inside_the_folder(layout, suffix, kind):
    model, elsewhere = layout
    path = _replace(model, elsewhere, suffix, kind)
    if kind == "link-in":
        assert len(load_graph(model / "tiny_cnn.webnn").operations) == 10
        return
    with pytest.raises(FormatError) as info:
        load_graph(model / "tiny_cnn.webnn")
    line = info.value.line()
    assert line.startswith(f"{path}: the ") and WANT[kind] in line, line
    assert "Is a directory" not in line


def test_the_cli_does_not_block_on_a_fifo(layout):
    """Every command on a graph whose weights are a FIFO ends at once saying so (`validate`
    lists it as the graph's problem, exit 1; the others fail with one line, exit 2)."""
    model, elsewhere = layout
    _replace(model, elsewhere, ".weights", "fifo")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for args in (["validate"], ["inspect"], ["convert", "-o", str(model / "out.json")]):
        proc = subprocess.run([sys.executable, "-m", "cli.main", *args,
                               str(model / "tiny_cnn.webnn")], capture_output=True, text=True,
                              timeout=60, env=env, cwd=ROOT)
        line = (f"{model / 'tiny_cnn.weights'}: the weights file is a FIFO (named pipe), "
                f"not a file; give a regular file")
        lines = proc.stderr.strip().splitlines()
        if args == ["validate"]:
            assert proc.returncode == 1 and lines[0].endswith(line), proc.stderr
        else:
            assert proc.returncode == 2 and lines == [f"error: {line}"], (args, proc.stderr)
    assert sorted(p.name for p in model.iterdir()) == [
        "tiny_cnn.manifest.json", "tiny_cnn.webnn", "tiny_cnn.weights"]
