"""Working folders named by their owner (converter/formats/owned_paths.py): a run removes the
ones of its kind whose owner is gone (a run killed outright cannot clean up), and never one a
live run is using, nor anything it cannot judge. The kill of a real `convert --verify` is in
test_nothing_left_behind.py; these check each rule on folders named for chosen processes."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from converter.formats._files import StagedSave
from converter.formats.owned_paths import (_start_time, make_owned_folder, own_stamp,
                                             remove_stale)

pytestmark = pytest.mark.skipif(own_stamp() is None, reason="the stamps need Linux's /proc")


def _name(kind="convert", suffix=".staging", **fields) -> str:
    stamp = {**own_stamp(), **{k: str(v) for k, v in fields.items()}}
    return (f".webnn-{kind}." + ".".join(stamp[k] for k in ("host", "boot", "ns", "pid", "start"))
            + f".0badc0de{suffix}")


@pytest.fixture
def live():
    """A process that stays running for the test: (pid, its start time)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        yield child.pid, _start_time(child.pid)
    finally:
        child.kill()
        child.wait()


@pytest.fixture
def gone() -> int:
    """The id of a process that has ended (and is reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _folder(parent: Path, name: str) -> Path:
    path = parent / name
    path.mkdir()
    (path / "t.weights").write_bytes(b"staged outputs")
    return path


def test_a_folder_whose_owner_has_ended_is_removed(tmp_path, gone):
    stale = _folder(tmp_path, _name(pid=gone, start=12345))
    remove_stale(tmp_path, "convert")
    assert not stale.exists()


def test_a_folder_whose_owner_id_was_reused_is_removed(tmp_path, live):
    pid, start = live
    stale = _folder(tmp_path, _name(pid=pid, start=start - 1))  # that id, another process
    remove_stale(tmp_path, "convert")
    assert not stale.exists()


def test_a_folder_of_a_boot_that_ended_is_removed(tmp_path, live):
    pid, start = live
    stale = _folder(tmp_path, _name(pid=pid, start=start,
                                    boot="0" * 8 if own_stamp()["boot"] != "0" * 8 else "1" * 8))
    remove_stale(tmp_path, "convert")
    assert not stale.exists()


def test_a_live_runs_folder_is_never_removed(tmp_path, live):
    pid, start = live
    kept = [_folder(tmp_path, _name(pid=pid, start=start)),
            _folder(tmp_path, _name())]  # this process's own
    with StagedSave(tmp_path) as stage:
        assert stage.stage.exists()
        remove_stale(tmp_path, "convert")  # a second run's cleanup meanwhile
        assert stage.stage.exists()
    assert all(p.exists() for p in kept)


@pytest.mark.parametrize("what", ["another machine's", "another PID namespace's",
                                  "another kind's", "a name not of this form", "a link",
                                  "another user's"])
def test_what_it_cannot_judge_is_left(tmp_path, gone, what):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "precious").write_bytes(b"x")
    dead = {"pid": gone, "start": 12345}
    name = {"another machine's": _name(host="0" * 8, **dead),
            "another PID namespace's": _name(ns=1, **dead),
            "another kind's": _name(kind="exec", **dead),
            "a name not of this form": f".webnn-convert.{gone}.staging",
            "a link": _name(**dead), "another user's": _name(**dead)}[what]
    path = tmp_path / name
    if what == "a link":
        path.symlink_to(target, target_is_directory=True)
    else:
        _folder(tmp_path, name)
    if what == "another user's":
        if os.getuid() != 0:
            pytest.skip("giving a folder to another user needs root")
        os.chown(path, 65534, 65534)
    remove_stale(tmp_path, "convert")
    assert path.exists() or path.is_symlink()
    assert (target / "precious").exists()


def test_staging_outputs_removes_a_killed_runs_folder(tmp_path, gone):
    stale = _folder(tmp_path, _name(pid=gone, start=12345))
    with StagedSave(tmp_path) as stage:
        assert not stale.exists()
        assert stage.stage.name.startswith(".webnn-convert.")
    assert list(tmp_path.iterdir()) == []


def test_a_new_folder_is_private_and_named_by_this_process(tmp_path):
    path = make_owned_folder(tmp_path, "exec")
    assert path.stat().st_mode & 0o777 == 0o700
    stamp = own_stamp()
    assert path.name.startswith(f"webnn-exec.{stamp['host']}.{stamp['boot']}.{stamp['ns']}."
                                f"{stamp['pid']}.{stamp['start']}.")
