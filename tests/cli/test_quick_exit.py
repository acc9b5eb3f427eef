"""The `webnn-convert` script (cli.script.run) leaves without the interpreter's teardown: exit
handlers run and stdout/stderr are flushed as on a normal exit, the exit status is the
command's, and a live non-daemon thread still gets the normal, waiting exit. Each case runs the
real entry point in a fresh interpreter."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY_CNN = ROOT / "models" / "tiny_cnn.onnx"

# Before the command: an exit handler that writes a file, and an object whose finalizer (run
# only by the interpreter's teardown) prints a line.
_PRELUDE = """
import atexit, sys
class Finalized:
    def __del__(self):
        print("torn down", flush=True)
kept = Finalized()
marker = sys.argv.pop(1)
atexit.register(lambda: open(marker, "w").write("exit handlers ran"))
"""


def _script(*args: str, before: str = "", marker: Path) -> subprocess.CompletedProcess:
    code = _PRELUDE + before + "\nfrom cli.script import run\nrun()\n"
    return subprocess.run([sys.executable, "-c", code, str(marker), *args], capture_output=True,
                          text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""},
                          timeout=120)


def test_a_conversion_exits_0_with_its_output_flushed_and_no_teardown(tmp_path):
    marker = tmp_path / "marker"
    out = tmp_path / "tiny.webnn"
    proc = _script("convert", str(TINY_CNN), "-o", str(out), marker=marker)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"wrote {out}, ")  # printed, and flushed before leaving
    assert out.is_file() and (tmp_path / "tiny.weights").stat().st_size > 0
    assert marker.read_text() == "exit handlers ran"
    assert "torn down" not in proc.stdout  # the interpreter was not torn down


def test_the_exit_status_is_the_commands(tmp_path):
    missing = _script("convert", str(tmp_path / "none.onnx"), "-o", str(tmp_path / "x.webnn"),
                      marker=tmp_path / "m1")
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines()[-1].startswith("error: ")
    assert (tmp_path / "m1").read_text() == "exit handlers ran"
    usage = _script("convert", marker=tmp_path / "m2")  # click's usage error
    assert usage.returncode == 2 and "Missing argument" in usage.stderr
    version = _script("--version", marker=tmp_path / "m3")
    assert version.returncode == 0 and version.stdout.startswith("webnn-convert, version ")


def test_a_live_non_daemon_thread_gets_the_normal_exit_which_waits_for_it(tmp_path):
    done = tmp_path / "thread-done"
    # The thread is alive when the command ends however slow the machine: it waits for the
    # main thread to be done, which a normal exit signals before waiting for the thread in
    # turn; the quick exit would end the process with the thread still waiting.
    before = f"""
import threading
def work():
    threading.main_thread().join()
    open({str(done)!r}, "w").write("finished")
threading.Thread(target=work).start()
"""
    proc = _script("--version", before=before, marker=tmp_path / "m")
    assert proc.returncode == 0
    assert done.read_text() == "finished"  # waited for, as a normal exit does
    assert "torn down" in proc.stdout  # the normal exit, teardown included


# The collector's state at exit, printed by an exit handler registered before the command.
_COLLECTOR = """
import atexit, gc
atexit.register(lambda: print(f"collector enabled={gc.isenabled()} "
                              f"frozen={gc.get_freeze_count()}", flush=True))
"""


def _collector_at_exit(proc: subprocess.CompletedProcess) -> tuple[bool, int]:
    line = next(x for x in proc.stdout.splitlines() if x.startswith("collector "))
    enabled, frozen = (part.split("=")[1] for part in line.split()[1:])
    return enabled == "True", int(frozen)


def test_the_collector_is_paused_while_a_command_starts_then_collects_again(tmp_path):
    """Start-up's objects (click, numpy, onnx, the converter) end up frozen out of collection,
    and collection is on again for the command's own work: for convert once its source's
    reader is imported, for other commands once the group has found them."""
    out = tmp_path / "tiny.webnn"
    proc = _script("convert", str(TINY_CNN), "-o", str(out), before=_COLLECTOR,
                   marker=tmp_path / "m1")
    assert proc.returncode == 0, proc.stderr
    enabled, frozen = _collector_at_exit(proc)
    assert enabled and frozen > 20_000  # numpy and onnx alone make more than that
    proc = _script("targets", before=_COLLECTOR, marker=tmp_path / "m2")
    assert proc.returncode == 0, proc.stderr
    enabled, frozen = _collector_at_exit(proc)
    assert enabled and frozen > 5_000


def test_calling_main_leaves_the_collector_alone(tmp_path):
    """Only the script pauses the collector: code calling cli.main.main (tests, embedders)
    keeps it as it was, nothing frozen."""
    code = _COLLECTOR + f"""
from cli.main import main
main(["convert", {str(TINY_CNN)!r}, "-o", {str(tmp_path / "t.webnn")!r}])
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": ""}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _collector_at_exit(proc) == (True, 0)


def test_the_script_finds_the_command_it_imports_first():
    from cli.commands import command_in

    assert command_in(["convert", "m.onnx", "-o", "m.webnn"]) == "convert"
    assert command_in(["--debug", "verify", "m.onnx"]) == "verify"
    assert command_in(["--version"]) is None and command_in([]) is None
    assert command_in(["--help"]) is None
    assert command_in(["nosuch", "convert"]) is None  # the first word is the command, or none


def test_an_unknown_command_is_still_clicks_usage_error(tmp_path):
    proc = _script("nosuch", marker=tmp_path / "m")
    assert proc.returncode == 2 and "No such command 'nosuch'" in proc.stderr
    proc = _script("--debug", "targets", marker=tmp_path / "m2")
    assert proc.returncode == 0 and "chromium-litert" in proc.stdout
