"""A model file another program truncates while the converter reads it through a memory map
(issue 26.7): before, the process died of SIGBUS ("Bus error", exit 135, nothing said, its
temporary files left behind). Now the truncation waits on the command's lease, the command
stops with one line naming the file (exit 2) and leaves nothing; then the truncation goes on.

The child is frozen inside the weights write (as test_nothing_left_behind does), the file is
truncated by another process while it is stopped, and the child is resumed only once the
truncation is either done (the old code: nothing held it back) or seen waiting on the lease
in /proc/locks (so the outcome never depends on timing)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from .onnx_cases import external
from .test_nothing_left_behind import ATTEMPTS, WAIT, _cli, _empty, _frozen

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="leases (F_SETLEASE) are Linux's")

N = 50_000_000  # float32 weights: 200 MB, a weights write long enough to be caught in


def _big_model(folder: Path, external_data: bool) -> tuple[Path, Path]:
    """(the model, the file its weights are mapped from)."""
    values = np.full(N, 0.5, np.float32)
    w = numpy_helper.from_array(values, "w")
    if external_data:
        values.tofile(folder / "big.bin")
        external(w, "big.bin")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "big",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N])], [w])
    path = folder / "big.onnx"
    path.write_bytes(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return path, folder / ("big.bin" if external_data else "big.onnx")


def _lease_breaking(target: Path) -> bool:
    """Whether /proc/locks shows a lease on `target` being broken (a writer waiting on it)."""
    st = target.stat()
    inode = f":{st.st_ino} "
    with open("/proc/locks") as f:
        return any("LEASE" in ln and "BREAKING" in ln and inode in ln for ln in f)


@pytest.mark.parametrize("external_data", [False, True], ids=["model-file", "external-data"])
def test_a_file_truncated_while_mapped_stops_the_command_with_one_line(tmp_path, external_data):
    folder, out = tmp_path / "m", tmp_path / "out"
    folder.mkdir()
    out.mkdir()
    model, target = _big_model(folder, external_data)
    size = target.stat().st_size

    def mid_write() -> bool:
        files = list(out.iterdir())
        weights = [p for p in files if p.name.startswith(".big.weights.")]
        return all(p.name.endswith(".tmp") for p in files) and len(weights) == 1 \
            and weights[0].stat().st_size < N * 4

    for _ in range(ATTEMPTS):
        child = _cli("convert", str(model), "-o", str(out / "big.webnn"))
        truncator = None
        try:
            deadline = time.monotonic() + WAIT
            while not any(p.name.endswith(".tmp") for p in out.iterdir()) \
                    and child.poll() is None:
                assert time.monotonic() < deadline, f"the write did not begin in {WAIT} s"
                time.sleep(0.005)
            caught = child.poll() is None and _frozen(child) and mid_write()
            if caught:  # another process truncates the file while the child is stopped
                truncator = subprocess.Popen(
                    [sys.executable, "-c", f"import os; os.truncate({str(target)!r}, 0)"])
                while truncator.poll() is None and not _lease_breaking(target):
                    assert time.monotonic() < deadline, "the truncation neither ran nor waited"
                    time.sleep(0.005)
            if child.poll() is None:
                os.kill(child.pid, signal.SIGCONT)
            _, stderr = child.communicate(timeout=WAIT)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        if caught:
            break
        assert child.returncode == 0, stderr  # missed: it finished, as an undisturbed run does
        _empty(out)
    else:
        pytest.fail(f"none of {ATTEMPTS} runs was caught inside the weights write")
    assert truncator.wait(timeout=WAIT) == 0  # it went on once the command had stopped
    assert child.returncode == 2, (child.returncode, stderr)
    assert stderr.strip().splitlines() == [
        f"error: {target}: another program opened the "
        f"{'external data file' if external_data else 'ONNX model'} for writing or truncated "
        f"it while it was being read; nothing was written; run again once that program is "
        f"done with it"], stderr
    assert list(out.iterdir()) == []
    assert target.stat().st_size == 0 < size


def test_a_file_that_cannot_be_leased_is_read_into_memory(tmp_path):
    """A file another program has open for writing cannot be leased: it is copied, so a
    truncation afterwards cannot reach what was read."""
    from converter.files.mapped import guarding, map_file

    path = tmp_path / "w.bin"
    values = np.arange(4096, dtype=np.float32)
    values.tofile(path)
    writer = subprocess.Popen([sys.executable, "-c", "import sys; f = open(sys.argv[1], 'r+b');"
                               " print('open', flush=True); sys.stdin.read()", str(path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline() == "open\n"
        fd = os.open(path, os.O_RDONLY)
        try:
            with guarding():
                data = map_file(fd, str(path), "weights file")
        finally:
            os.close(fd)
        assert isinstance(data, memoryview) and data.readonly
        os.truncate(path, 0)
        np.testing.assert_array_equal(np.frombuffer(data, np.float32), values)
    finally:
        writer.communicate("")
    # Without another writer the file is mapped, and leased while the guard is on.
    values.tofile(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        with guarding():
            data = map_file(fd, str(path), "weights file")
            assert not isinstance(data, memoryview)
            with open("/proc/locks") as f:
                assert any(f":{path.stat().st_ino} " in ln and "LEASE" in ln for ln in f)
        with open("/proc/locks") as f:  # let go on leaving
            assert not any(f":{path.stat().st_ino} " in ln and "LEASE" in ln for ln in f)
    finally:
        os.close(fd)


def test_a_stop_that_was_swallowed_is_raised_again(tmp_path):
    """An exception a signal handler raises is lost where it lands in code that drops it (a
    finalizer, a library's `except BaseException`): FileChanging comes again until the
    command is over, so the writer never waits on a command that went on."""
    from converter.files.mapped import FileChanging, guarding, map_file

    path = tmp_path / "w.bin"
    np.arange(4096, dtype=np.float32).tofile(path)
    fd = os.open(path, os.O_RDONLY)
    stops = 0
    truncator = None
    try:
        with guarding():
            data = map_file(fd, str(path), "weights file")
            truncator = subprocess.Popen(
                [sys.executable, "-c", f"import os; os.truncate({str(path)!r}, 0)"])
            deadline = time.monotonic() + WAIT
            with pytest.raises(FileChanging) as info:
                try:
                    while True:
                        assert time.monotonic() < deadline, "FileChanging never came"
                        time.sleep(0.01)
                except FileChanging:  # swallowed, as in a finalizer
                    stops += 1
                while True:  # the command goes on ... and is stopped again
                    assert time.monotonic() < deadline, "FileChanging never came back"
                    time.sleep(0.01)
            assert info.value.path == str(path) and stops == 1
            assert truncator.poll() is None  # still waiting on the lease
            del data
        assert truncator.wait(timeout=WAIT) == 0  # let go on leaving
    finally:
        os.close(fd)
        if truncator is not None and truncator.poll() is None:
            truncator.kill()
    assert path.stat().st_size == 0
