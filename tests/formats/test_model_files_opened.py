"""formats._files: which paths a model file may be opened from (a regular file inside its
folder) with the one line each refusal gives, and the atomic and staged saves' edges."""
from __future__ import annotations

import os
import socket

import pytest

from converter.errors import ConverterError, FormatError, WeightsError
from converter.formats._files import AtomicSave, StagedSave, open_model_file


def test_a_regular_file_in_its_folder_or_a_given_folder_is_opened(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "m.bin").write_bytes(b"abc")
    with open_model_file(tmp_path / "sub" / "m.bin", "model") as f:
        assert f.read() == b"abc"
    with open_model_file(tmp_path / "sub" / "m.bin", "model", folder=tmp_path) as f:
        assert f.read() == b"abc"
    with pytest.raises(FormatError, match="outside the model's folder"):
        open_model_file(tmp_path / "sub" / "m.bin", "model", folder=tmp_path / "other")


def test_refusals_say_what_the_path_is(tmp_path):
    with pytest.raises(WeightsError) as e:
        open_model_file(tmp_path / "absent", "weights file", fix="put it there",
                        error=WeightsError)
    assert e.value.line() == f"{tmp_path / 'absent'}: the weights file does not exist; put it there"
    (tmp_path / "dir").mkdir()
    with pytest.raises(FormatError) as e:
        open_model_file(tmp_path / "dir", "graph file")
    assert e.value.line() == (f"{tmp_path / 'dir'}: the graph file is a folder, not a file; "
                              f"give a regular file")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(FormatError, match=r"the graph file is a FIFO \(named pipe\), not a file"):
        open_model_file(tmp_path / "fifo", "graph file")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "sock"))
        with pytest.raises(FormatError, match=r"the graph file cannot be opened \(No such "
                                              r"device or address\)$"):
            open_model_file(tmp_path / "sock", "graph file")
    finally:
        sock.close()
    os.symlink("/dev/null", tmp_path / "null")
    with pytest.raises(FormatError, match="is a link to /dev/null, outside the model's folder"):
        open_model_file(tmp_path / "null", "graph file")


def test_a_lone_surrogate_cannot_be_written_and_nothing_is_left(tmp_path):
    with pytest.raises(FormatError) as e:
        with AtomicSave() as files:
            files.write_text(tmp_path / "a.txt", "ok")
            files.write_text(tmp_path / "b.txt", "x\ud800y")
    assert e.value.line() == (f"{tmp_path / 'b.txt'}: cannot write '\\ud800': a lone surrogate "
                              f"is no character, and UTF-8 has no form for it; rename what "
                              f"holds it")
    assert list(tmp_path.iterdir()) == []


def test_an_atomic_save_commits_every_file_and_returns_their_paths(tmp_path):
    with AtomicSave() as files:
        with files.open(tmp_path / "w.bin") as f:
            f.write(b"\x00\x01")
        files.write_text(tmp_path / "m.txt", "é")
        done = files.commit()
    assert done == [tmp_path / "w.bin", tmp_path / "m.txt"]
    assert (tmp_path / "w.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "m.txt").read_bytes() == "é".encode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.txt", "w.bin"]


@pytest.mark.parametrize("lost", [0, 1, 2])
def test_a_file_lost_before_its_sync_fails_the_commit_and_nothing_appears(tmp_path, lost):
    # The files are synced at once (the first here, the others on threads): an error in any
    # of them fails the save, before any rename, and the others' temporary files go too; the
    # error is one line naming the file whose temporary file went, not a FileNotFoundError.
    names = ("w.bin", "m.json", "g.webnn")
    with pytest.raises(ConverterError) as e:
        with AtomicSave() as files:
            for name in names:
                files.write_text(tmp_path / name, name)
            os.unlink(files._pending[lost][0])  # someone removed a temporary file meanwhile
            files.commit()
    assert e.value.line().startswith(f"{tmp_path / names[lost]}: its temporary file was "
                                     "deleted before the save finished; ")
    assert list(tmp_path.iterdir()) == []


def test_a_staged_save_shows_only_what_is_committed(tmp_path):
    with StagedSave(tmp_path) as stage:
        kept, dropped = stage.path("a.js"), stage.path(tmp_path / "deep" / "b.js")
        assert kept.parent == dropped.parent == stage.stage and stage.stage.parent == tmp_path
        kept.write_text("a")
        dropped.write_text("b")
        assert stage.commit([kept]) == [tmp_path / "a.js"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.js"]
    with pytest.raises(FormatError, match="the folder does not exist"):
        with StagedSave(tmp_path / "missing"):
            pass
    (tmp_path / "c.js").mkdir()
    with StagedSave(tmp_path) as stage:
        stage.path("c.js").write_text("c")
        with pytest.raises(FormatError, match="a folder has the file's name"):
            stage.commit([stage.path("c.js")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.js", "c.js"]
