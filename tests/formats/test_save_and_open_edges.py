"""formats._files, observed through the operating system: descriptors closed on every path
(counted in /proc/self/fd), fsync called on each written file and on its folder after the
renames, the mode the umask gives, a failed rename leaving nothing behind, and signals held
inside `signals_held` delivered on leaving it (sent with os.kill to this process)."""
from __future__ import annotations

import errno
import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path

import pytest

from converter.errors import ConverterError, FormatError
from converter.formats import _files
from converter.formats._files import AtomicSave, StagedSave, open_model_file, signals_held

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(),
                                reason="descriptors are counted in /proc/self/fd (Linux)")


def _fds(*under: Path) -> list[str]:
    """What this process's open descriptors refer to, inside the given paths."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except FileNotFoundError:  # the descriptor listdir itself used
            continue
        if any(target == str(u) or target.startswith(f"{u}/") for u in under):
            found.append(target)
    return sorted(found)


def _save_three(folder: Path) -> None:
    """One AtomicSave of a.txt, b.txt and c.txt (each holding its own name) into `folder`."""
    with AtomicSave() as files:
        for name in ("a.txt", "b.txt", "c.txt"):
            files.write_text(folder / name, name)
        files.commit()


def test_a_model_file_is_handed_out_blocking_and_a_device_is_refused(tmp_path):
    (tmp_path / "m.bin").write_bytes(b"abc")
    with open_model_file(tmp_path / "m.bin", "model") as f:
        # Opened O_NONBLOCK (a FIFO swapped in must not hang the open); reads then block.
        assert os.get_blocking(f.fileno()) is True
        assert f.read() == b"abc"
    with pytest.raises(FormatError) as e:
        open_model_file(Path("/dev/null"), "graph file")
    assert e.value.line() == "/dev/null: the graph file is a device, not a file; give a regular file"


def test_a_refused_model_file_leaves_no_descriptor_open(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    before = _fds(tmp_path, Path("/dev/null"))
    for path in (tmp_path / "fifo", tmp_path / "dir", Path("/dev/null")):
        with pytest.raises(FormatError):
            open_model_file(path, "graph file")
    assert _fds(tmp_path, Path("/dev/null")) == before


def test_a_commit_fsyncs_every_file_then_the_folder_and_closes_what_it_opened(tmp_path,
                                                                             monkeypatch):
    (tmp_path / "sub").mkdir()
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd):
        if threading.current_thread() is not threading.main_thread():
            time.sleep(0.05)  # a helper thread's sync is slow: the commit must wait for it
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    with AtomicSave() as files:
        files.write_text(tmp_path / "a.txt", "a")
        files.write_text(tmp_path / "sub" / "b.txt", "b")
        files.write_text(tmp_path / "c.txt", "c")
        temps = [str(t) for t, _ in files._pending]
        assert files.commit() == [tmp_path / "a.txt", tmp_path / "sub" / "b.txt",
                                  tmp_path / "c.txt"]
    # The temporary files (synced at once, so in any order) before any rename, then each
    # folder once, after the renames.
    assert sorted(synced[:3]) == sorted(temps)
    assert synced[3:] == [str(tmp_path), str(tmp_path / "sub")]
    assert _fds(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "c.txt", "sub"]
    assert (tmp_path / "sub" / "b.txt").read_text() == "b"


def test_a_stream_left_open_is_flushed_by_the_commit(tmp_path):
    with AtomicSave() as files:
        stream = files.open(tmp_path / "w.bin")
        stream.write(b"\x01\x02\x03")  # buffered by Python, not yet in the file
        files.commit()
        assert stream.closed
        assert (tmp_path / "w.bin").read_bytes() == b"\x01\x02\x03"
    assert _fds(tmp_path) == []


def test_files_get_the_mode_the_umask_leaves(tmp_path):
    for umask, mode in ((0, 0o666), (0o022, 0o644)):  # rw for everyone, less the umask
        old = os.umask(umask)
        try:
            with AtomicSave() as files:
                files.write_text(tmp_path / f"{umask}.txt", "x")
                files.commit()
        finally:
            os.umask(old)
        assert stat.S_IMODE((tmp_path / f"{umask}.txt").stat().st_mode) == mode


def test_an_exception_while_writing_closes_the_streams_and_removes_the_files(tmp_path):
    (tmp_path / "m.txt").write_text("old")
    with pytest.raises(RuntimeError, match="disk full"):
        with AtomicSave() as files:
            stream = files.open(tmp_path / "m.txt")
            stream.write(b"new")
            files.write_text(tmp_path / "n.txt", "n")
            raise RuntimeError("disk full")
    assert stream.closed and _fds(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.txt"]
    assert (tmp_path / "m.txt").read_text() == "old"


def test_a_failed_rename_names_its_file_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    # A rename that fails for a reason no check can foresee (here EACCES on the second file,
    # which the tests cannot cause for real when run as root): the first file is in place,
    # the second is reported, and no temporary file stays behind.
    real_replace = os.replace
    calls = []

    def failing_second(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_second)
    with pytest.raises(FormatError) as e:
        _save_three(tmp_path)
    assert e.value.line() == f"{tmp_path / 'b.txt'}: could not rename into place: Permission denied"
    assert calls == [tmp_path / "a.txt", tmp_path / "b.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_after_a_commit_or_an_abort_leaving_the_block_deletes_nothing(tmp_path):
    # The temporary names are spent: a file someone creates there later is not ours.
    with AtomicSave() as files:
        files.write_text(tmp_path / "a.txt", "a")
        spent = [t for t, _ in files._pending]
        files.commit()
        spent[0].write_text("someone else's")
    assert spent[0].read_text() == "someone else's"
    with AtomicSave() as files:
        files.write_text(tmp_path / "b.txt", "b")
        spent = [t for t, _ in files._pending]
        files.abort()
        assert not spent[0].exists()
        spent[0].write_text("someone else's")
    assert spent[0].read_text() == "someone else's"
    assert not (tmp_path / "b.txt").exists()


def test_a_staged_save_removes_its_folder_on_leaving(tmp_path):
    with pytest.raises(RuntimeError):
        with StagedSave(tmp_path) as stage:
            stage.path("a.js").write_text("a")
            raise RuntimeError("check failed")
    assert list(tmp_path.iterdir()) == []
    # A staging folder someone else already removed is no error: the outputs are in place.
    with StagedSave(tmp_path) as stage:
        stage.path("b.js").write_text("b")
        stage.commit([stage.path("b.js")])
        stage.stage.rmdir()
    assert [p.name for p in tmp_path.iterdir()] == ["b.js"]


@pytest.fixture
def handlers():
    """Restores SIGINT, SIGTERM and SIGHUP's handlers after the test."""
    signums = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.getsignal(s) for s in signums}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _held_then_delivered(signum: int, got: list[int]) -> None:
    with signals_held():
        os.kill(os.getpid(), signum)
        os.kill(os.getpid(), signum)
        for _ in range(1000):  # the interpreter would have run a pending handler by now
            pass
        assert got == []
    assert got == [signum]  # on leaving, once (a pending signal is not counted)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_inside_signals_held_is_delivered_on_leaving(handlers, signum):
    got: list[int] = []
    signal.signal(signum, lambda s, frame: got.append(s))
    _held_then_delivered(signum, got)
    # The handler is the caller's again: a later signal reaches it at once.
    os.kill(os.getpid(), signum)
    for _ in range(1000):
        pass
    assert got == [signum, signum]


def test_a_signal_is_held_while_other_threads_run(handlers):
    # A process-directed signal may go to any thread that does not block it; with another
    # thread alive (as ONNX Runtime's pool is during `convert --verify`) it must still wait.
    got: list[int] = []
    signal.signal(signal.SIGTERM, lambda s, frame: got.append(s))
    done = threading.Event()
    others = [threading.Thread(target=done.wait) for _ in range(4)]
    for t in others:
        t.start()
    try:
        for _ in range(5):
            got.clear()
            _held_then_delivered(signal.SIGTERM, got)
    finally:
        done.set()
        for t in others:
            t.join()


class _Stop(Exception):
    pass


def _stop(signum, frame):
    raise _Stop(signum)


def test_a_signal_while_the_staging_folder_is_made_leaves_no_folder(handlers, tmp_path,
                                                                    monkeypatch):
    # The signal arrives while the folder is made (held, then raised as the holding block
    # ends, so inside __enter__, where the `with` cannot call __exit__): the folder must go.
    from converter.formats import owned_paths

    real_make = owned_paths.make_owned_folder

    def make_then_signalled(*args, **kw):
        made = real_make(*args, **kw)
        os.kill(os.getpid(), signal.SIGTERM)
        return made

    signal.signal(signal.SIGTERM, _stop)
    monkeypatch.setattr(owned_paths, "make_owned_folder", make_then_signalled)
    with pytest.raises(_Stop):
        with StagedSave(tmp_path):
            pytest.fail("the body ran: the signal was not held until the folder was made")
    assert list(tmp_path.iterdir()) == []


def test_a_signal_while_the_handlers_are_replaced_restores_those_replaced(handlers,
                                                                         monkeypatch):
    # SIGTERM arrives after SIGINT's handler was replaced, before SIGTERM's is: it stops the
    # block from starting, and SIGINT must not keep the recording handler (which would
    # swallow every later Ctrl-C).
    real_getsignal = signal.getsignal

    def getsignal_then_signalled(signum):
        if signum == signal.SIGTERM:
            os.kill(os.getpid(), signal.SIGTERM)
        return real_getsignal(signum)

    signal.signal(signal.SIGTERM, _stop)
    before = real_getsignal(signal.SIGINT)
    monkeypatch.setattr(_files.signal, "getsignal", getsignal_then_signalled)
    with pytest.raises(_Stop):
        with signals_held():
            pytest.fail("the block ran")
    monkeypatch.undo()
    assert signal.getsignal(signal.SIGINT) is before


def test_an_ignored_signal_stays_ignored(handlers):
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    with signals_held():
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGHUP)
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN


def test_signals_held_off_the_main_thread_changes_no_handler(handlers):
    seen: list = []

    def worker():
        try:
            with signals_held():
                seen.append(signal.getsignal(signal.SIGTERM))
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            seen.append(e)

    def mine(signum, frame):
        pass

    signal.signal(signal.SIGTERM, mine)
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [mine]


def test_a_file_that_cannot_be_read_is_refused_with_the_reason(tmp_path):
    from converter.formats._files import read_text

    # /proc/PID/mem is a regular file whose read at offset 0 fails (nothing is mapped there).
    mem = Path(f"/proc/{os.getpid()}/mem")
    with pytest.raises(FormatError) as e:
        read_text(mem, "graph file")
    assert e.value.line() == f"{mem}: the graph file cannot be read (Input/output error)"
    locked = tmp_path / "m.webnn"
    locked.write_text("x")
    locked.chmod(0)
    root = os.geteuid() == 0
    if root:  # root reads any file: take an ordinary user's rights for the open
        os.seteuid(65534)
    try:
        with pytest.raises(FormatError) as e:
            open_model_file(locked, "graph file")
    finally:
        if root:
            os.seteuid(0)
    assert e.value.line() == f"{locked}: the graph file cannot be read (permission denied)"


def _deleting(victim: str, monkeypatch) -> None:
    """Before each file's fsync, delete the temporary file of `victim` (a racing process)."""
    real = _files._fsync_path

    def delete_then_sync(path: Path) -> None:
        if path.name.startswith(f".{victim}."):
            path.unlink()
        real(path)

    monkeypatch.setattr(_files, "_fsync_path", delete_then_sync)


def test_a_temporary_file_deleted_before_its_fsync_is_one_line_and_nothing_stays(
        tmp_path, monkeypatch):
    (tmp_path / "b.txt").write_text("old")
    _deleting("b.txt", monkeypatch)
    with pytest.raises(ConverterError) as e:
        _save_three(tmp_path)
    assert e.value.line() == (
        f"{tmp_path / 'b.txt'}: its temporary file was deleted before the save finished; "
        "something else deletes files in that folder: stop it or save to another folder, "
        "then save again")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.txt"]  # no file renamed, none left
    assert (tmp_path / "b.txt").read_text() == "old" and _fds(tmp_path) == []


def test_an_fsync_that_fails_names_the_final_file_and_leaves_nothing(tmp_path, monkeypatch):
    # fsync's own error (EIO here, a failing disk) carries no file name: the save adds it.
    real = os.fsync
    failing = []

    def failing_fsync(fd):
        if Path(os.readlink(f"/proc/self/fd/{fd}")).name.startswith(".c.txt."):
            failing.append(fd)
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real(fd)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(ConverterError) as e:
        _save_three(tmp_path)
    assert e.value.line() == (f"{tmp_path / 'c.txt'}: it could not be made durable "
                              "(Input/output error); check the disk and the folder, then save "
                              "again")
    assert len(failing) == 1 and list(tmp_path.iterdir()) == [] and _fds(tmp_path) == []


_CONVERT_WHILE_DELETING = """
import sys
from pathlib import Path
import converter.formats._files as files
real = files._fsync_path
def delete_then_sync(path):
    if path.name.startswith(".model.webnn."):
        path.unlink()
    real(path)
files._fsync_path = delete_then_sync
from cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_the_cli_reports_a_deleted_temporary_file_in_one_line(tmp_path):
    import subprocess
    import sys

    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "m",
                                                [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "m.onnx")
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run([sys.executable, "-c", _CONVERT_WHILE_DELETING, "convert",
                           str(tmp_path / "m.onnx"), "-o", str(out / "model.webnn")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"error: {out / 'model.webnn'}: its temporary file was deleted before the save "
        "finished; something else deletes files in that folder: stop it or save to another "
        "folder, then save again"]
    assert list(out.iterdir()) == []


def test_a_write_that_fails_names_the_final_file_and_leaves_nothing(tmp_path):
    # A full disk fails a write with no file name (ENOSPC): the save names the file it was
    # writing, never its hidden temporary name, and removes every temporary file.
    (tmp_path / "b.txt").write_text("old")
    with pytest.raises(ConverterError) as e:
        with AtomicSave() as files:
            files.write_text(tmp_path / "a.txt", "a")
            with files.open(tmp_path / "b.txt") as stream:
                stream.write(b"partial")
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert e.value.line() == (f"{tmp_path / 'b.txt'}: could not write it (No space left on "
                              "device); check the disk's free space and the folder, then save "
                              "again")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.txt"]
    assert (tmp_path / "b.txt").read_text() == "old" and _fds(tmp_path) == []


def test_an_oserror_about_another_file_passes_through(tmp_path):
    # reading a source that fails while saving is that file's error, not the save's
    with pytest.raises(FileNotFoundError) as e:
        with AtomicSave() as files:
            files.write_text(tmp_path / "a.txt", "a")
            open(tmp_path / "missing.bin", "rb")
    assert e.value.filename == str(tmp_path / "missing.bin")
    assert list(tmp_path.iterdir()) == []


def test_a_name_of_255_bytes_saves(tmp_path):
    # Its temporary name holds only the start of it. Was: the whole name, a dot before and a
    # random suffix after, past the file system's 255 bytes: "File name too long".
    final = tmp_path / ("n" * 255)
    with AtomicSave() as files:
        files.write_text(final, "x")
        files.commit()
    assert [p.name for p in tmp_path.iterdir()] == [final.name]
    assert final.read_text() == "x"


@pytest.mark.skipif(sys.platform == "win32", reason="lowers RLIMIT_NOFILE")
def test_a_file_that_cannot_be_created_is_named_by_its_final_name(tmp_path):
    # No descriptor left (the limit of open files lowered to the lowest free one): the file
    # cannot be created, and the error names the file, not its temporary name.
    import resource

    final = tmp_path / "t.weights"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with pytest.raises(ConverterError) as e:
        with AtomicSave() as files:
            lowest_free = os.dup(0)
            os.close(lowest_free)
            resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, hard))
            try:
                files.write_text(final, "x")
            finally:
                resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert e.value.line() == (f"{final}: could not create it (Too many open files); check that "
                              "the folder is writable and the disk has room, then save again")
    assert list(tmp_path.iterdir()) == []


def test_an_oserror_naming_a_temporary_file_is_named_by_its_final_file(tmp_path):
    with pytest.raises(ConverterError) as e:
        with AtomicSave() as files:
            files.write_text(tmp_path / "a.txt", "a")
            (tmp_name,) = tmp_path.iterdir()  # the hidden temporary file of a.txt
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(tmp_name))
    assert e.value.line() == (f"{tmp_path / 'a.txt'}: could not write it (Input/output "
                              "error); check the disk's free space and the folder, then save "
                              "again")
    assert list(tmp_path.iterdir()) == []


def test_an_oserror_before_any_file_is_opened_passes_through(tmp_path):
    with pytest.raises(OSError) as e:
        with AtomicSave():
            raise OSError(errno.EIO, os.strerror(errno.EIO))
    assert type(e.value) is OSError and e.value.errno == errno.EIO
