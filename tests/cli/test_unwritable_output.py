"""`convert --verify` into a folder it cannot write in names the output the user gave and its
folder, never the hidden staging folder (converter/formats/_files.py, StagedSave)."""
from __future__ import annotations

import os
import subprocess

import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper

from cli.main import main
from converter.errors import ConverterError
from converter.formats._files import StagedSave


@pytest.fixture
def unwritable(tmp_path):
    """A folder nobody can create a file in, root included: read-only permissions do not
    stop root, so as root the folder is made immutable (chattr +i)."""
    folder = tmp_path / "out"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)

        def undo():
            folder.chmod(0o755)
    else:
        made = subprocess.run(["chattr", "+i", str(folder)], capture_output=True)
        if made.returncode != 0:
            pytest.skip(f"chattr +i is not available here: {made.stderr.decode().strip()}")

        def undo():
            subprocess.run(["chattr", "-i", str(folder)], check=True)
    try:
        (folder / "probe").touch()
    except OSError:
        pass
    else:
        undo()
        pytest.skip("the folder is still writable here")
    yield folder
    undo()


def _model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.mark.parametrize("suffix", [".webnn", ".js", ".onnx"])
def test_verify_into_an_unwritable_folder_names_the_output(tmp_path, unwritable, suffix):
    output = unwritable / f"model{suffix}"
    r = CliRunner().invoke(main, ["convert", str(_model(tmp_path / "m.onnx")), "-o",
                                  str(output), "--verify"])
    assert r.exit_code == 2
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"error: {output}: could not write in its folder {unwritable} (")
    assert lines[0].endswith("); check that the folder is writable and the disk has room, then "
                             "convert again")
    assert "staging" not in r.stderr
    assert os.listdir(unwritable) == []


def test_an_error_on_a_staged_file_names_its_final_path(tmp_path):
    with pytest.raises(ConverterError) as caught:
        with StagedSave(tmp_path, output=tmp_path / "model.webnn") as stage:
            staged = stage.path(tmp_path / "model.weights")
            raise ConverterError("could not write it (No space left on device)",
                                 where=str(staged))
    assert caught.value.where == str(tmp_path / "model.weights")
    assert str(caught.value) == f"{tmp_path / 'model.weights'}: could not write it (No space " \
                                f"left on device)"
    assert os.listdir(tmp_path) == []


def test_an_error_elsewhere_keeps_its_place(tmp_path):
    elsewhere = str(tmp_path.parent / "source.onnx")
    with pytest.raises(ConverterError) as caught:
        with StagedSave(tmp_path):
            raise ConverterError("bad", where=elsewhere)
    assert caught.value.where == elsewhere
    assert os.listdir(tmp_path) == []
