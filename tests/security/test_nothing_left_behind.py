"""Nothing left behind: SIGTERM and SIGHUP during a write remove the temporary files as Ctrl-C
does (an 80 MB `.NAME.weights.*.tmp` stayed before), and `convert --verify` writes its outputs
only when verification passes, unless `--keep-on-mismatch` asks otherwise. What a SIGKILL (which
nothing catches) leaves, the next run writing into that folder removes.

The signal tests never race the child: it is frozen once its phase begins, and signalled only if
its files, while it is stopped, prove it is still inside that phase (see _signalled_in_phase)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "models" / "tiny_cnn.onnx"


def _cli(*args: str, env: dict | None = None, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, **kw)


# Runs tried before giving up on catching one inside its phase. A loaded machine can keep this
# test from looking for longer than a phase lasts (the weights write takes a quarter second
# here), so a run may be missed; five misses in a row mean something else is wrong.
ATTEMPTS = 5
WAIT = 300  # seconds: a bound on waiting for the child, never a measured time


def _frozen(child: subprocess.Popen) -> bool:
    """Stop the child (SIGSTOP) and wait until it is stopped: True, or False when it ended
    first (left unreaped, for Popen to collect)."""
    os.kill(child.pid, signal.SIGSTOP)
    info = os.waitid(os.P_PID, child.pid, os.WSTOPPED | os.WEXITED | os.WNOWAIT)
    return info.si_code == os.CLD_STOPPED


def _signalled_in_phase(args: list[str], entered, inside, signum: int, reset,
                        env: dict | None = None) -> tuple[int, str]:
    """Run `webnn-convert ARGS` until one run is caught inside the phase under test, send it
    `signum` there, and return that run's exit code and stderr.

    Once `entered()` says the phase has begun, the child is frozen and `inside()` is asked
    with the child stopped: its files cannot change then, so True proves the signal lands
    inside the phase (it is sent while the child is stopped and acted on when SIGCONT resumes
    it). A run that had left the phase by then is let finish (it must succeed), `reset()`
    clears what it wrote, and a fresh run is tried. `env`: variables to set for the run.
    """
    for _ in range(ATTEMPTS):
        child = _cli(*args, env=env)
        try:
            deadline = time.monotonic() + WAIT
            while not entered() and child.poll() is None:
                assert time.monotonic() < deadline, f"the phase did not begin in {WAIT} s"
                time.sleep(0.005)
            caught = child.poll() is None and _frozen(child) and inside()
            if child.poll() is None:  # stopped or not, resumed; signalled only when caught
                if caught:
                    os.kill(child.pid, signum)
                os.kill(child.pid, signal.SIGCONT)
            _, stderr = child.communicate(timeout=WAIT)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        if caught:
            return child.returncode, stderr
        assert child.returncode == 0, stderr  # missed: it finished, as an unsignalled run does
        reset()
    pytest.fail(f"none of {ATTEMPTS} runs was caught inside the phase")


def _empty(folder: Path) -> None:
    """Remove what a missed run wrote (its outputs, committed as it finished)."""
    for p in folder.iterdir():
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()


N = 50_000_000  # float32 weights: 200 MB


@pytest.fixture(scope="module")
def big_model(tmp_path_factory) -> Path:
    """y = x + w with a 200 MB float32 initializer: big enough to be caught mid-write."""
    folder = tmp_path_factory.mktemp("big")
    # not one repeated value, which the import would store as a fill (one number)
    w = numpy_helper.from_array(0.5 + (np.arange(N) % 2).astype(np.float32) / 8, "w")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "big",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N])], [w])
    path = folder / "big.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_the_weights_write_leaves_nothing(big_model, tmp_path, signum):
    out = tmp_path / "out"
    out.mkdir()

    def mid_write() -> bool:
        """Only temporary files, the weights' one shorter than the weights alone: the
        weights file is still being written (the commit closes it first)."""
        files = list(out.iterdir())
        weights = [p for p in files if p.name.startswith(".big.weights.")]
        return all(p.name.endswith(".tmp") for p in files) and len(weights) == 1 \
            and weights[0].stat().st_size < N * 4

    code, stderr = _signalled_in_phase(
        ["convert", str(big_model), "-o", str(out / "big.webnn")],
        entered=lambda: any(p.name.endswith(".tmp") for p in out.iterdir()),
        inside=mid_write, signum=signum, reset=lambda: _empty(out))
    assert code == 128 + signum, stderr
    assert stderr.strip().splitlines()[-1] == \
        f"stopped by {signal.Signals(signum).name}; nothing was left half written"
    assert list(out.iterdir()) == []


def test_a_kill_during_the_weights_write_leaves_a_file_the_next_save_removes(big_model,
                                                                           tmp_path):
    # SIGKILL cannot be caught: the temporary weights stay. Was: for good (hidden, 200 MB).
    out = tmp_path / "out"
    out.mkdir()

    def mid_write() -> bool:
        weights = [p for p in out.iterdir() if p.name.startswith(".big.weights.")]
        return len(weights) == 1 and weights[0].stat().st_size < N * 4

    code, stderr = _signalled_in_phase(
        ["convert", str(big_model), "-o", str(out / "big.webnn")],
        entered=lambda: any(p.name.endswith(".tmp") for p in out.iterdir()),
        inside=mid_write, signum=signal.SIGKILL, reset=lambda: _empty(out))
    assert code == -signal.SIGKILL, stderr
    assert any(p.name.startswith(".big.weights.") for p in out.iterdir())
    again = _run("convert", str(TINY), "-o", str(out / "t.webnn"))
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in out.iterdir()) == ["t.manifest.json", "t.webnn", "t.weights"]


@pytest.fixture(scope="module")
def slow_to_verify(tmp_path_factory) -> Path:
    """y = x @ W, forty times over, [1024, 1024] each: 4 MB to write, then a verification
    of about 86 GFLOP on each runtime, a second or more, during which the signal is sent."""
    folder = tmp_path_factory.mktemp("slow")
    w = numpy_helper.from_array(np.eye(1024, dtype=np.float32), "w")
    names = ["x"] + [f"h{i}" for i in range(1, 40)] + ["y"]
    nodes = [helper.make_node("MatMul", [a, "w"], [b]) for a, b in zip(names, names[1:])]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1024, 1024]) for n in ("x", "y")]
    graph = helper.make_graph(nodes, "slow", io[:1], io[1:], [w])
    path = folder / "big.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_a_signal_during_verify_removes_the_staged_outputs(slow_to_verify, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    staged = ["big.manifest.json", "big.webnn", "big.weights"]

    def verifying() -> bool:
        """The outputs complete in the staging folder, and nothing else anywhere: written,
        not yet committed, so verification runs (the commit's renames, a few microseconds
        inside a block that holds signals, are all that could still come between)."""
        files = list(out.iterdir())
        return len(files) == 1 and files[0].name.endswith(".staging") \
            and sorted(p.name for p in files[0].iterdir()) == staged

    code, stderr = _signalled_in_phase(
        ["convert", str(slow_to_verify), "-o", str(out / "big.webnn"), "--verify"],
        entered=verifying, inside=verifying, signum=signal.SIGTERM,
        reset=lambda: _empty(out))
    assert code == 128 + signal.SIGTERM, stderr
    assert stderr.strip().splitlines()[-1] == \
        "stopped by SIGTERM; nothing was left half written"
    assert list(out.iterdir()) == []


def test_a_kill_during_verify_leaves_a_folder_the_next_run_removes(slow_to_verify, tmp_path):
    # SIGKILL (the OOM killer) cannot be caught: the staging folder stays, complete outputs
    # inside. Was: no later run removed it.
    out = tmp_path / "out"
    out.mkdir()
    staged = ["big.manifest.json", "big.webnn", "big.weights"]

    def verifying() -> bool:
        files = list(out.iterdir())
        return len(files) == 1 and files[0].name.endswith(".staging") \
            and sorted(p.name for p in files[0].iterdir()) == staged

    code, stderr = _signalled_in_phase(
        ["convert", str(slow_to_verify), "-o", str(out / "big.webnn"), "--verify"],
        entered=verifying, inside=verifying, signum=signal.SIGKILL,
        reset=lambda: _empty(out))
    assert code == -signal.SIGKILL, stderr
    [left] = list(out.iterdir())
    assert left.name.startswith(".webnn-convert.") and left.name.endswith(".staging")
    assert sorted(p.name for p in left.iterdir()) == staged  # complete: it got that far
    again = _run("convert", str(TINY), "-o", str(out / "t.webnn"), "--verify")
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in out.iterdir()) == ["t.manifest.json", "t.webnn", "t.weights"]


def test_a_live_runs_staging_folder_is_left_to_it(slow_to_verify, tmp_path):
    # A run stopped (SIGSTOP) inside its verification is alive: a second run staging into the
    # same folder meanwhile must not take its folder, and the first then ends as usual.
    out = tmp_path / "out"
    out.mkdir()

    def staged() -> list[Path]:
        return [p for p in out.iterdir() if p.name.endswith(".staging")
                and len(list(p.iterdir())) == 3]

    for _ in range(ATTEMPTS):
        first = _cli("convert", str(slow_to_verify), "-o", str(out / "big.webnn"), "--verify")
        try:
            deadline = time.monotonic() + WAIT
            while not staged() and first.poll() is None:
                assert time.monotonic() < deadline, f"the outputs were not staged in {WAIT} s"
                time.sleep(0.005)
            caught = first.poll() is None and _frozen(first) and staged()
            if caught:
                [folder] = staged()
                second = _run("convert", str(TINY), "-o", str(out / "t.webnn"), "--verify")
                assert second.returncode == 0, second.stderr
                assert folder.is_dir() and len(list(folder.iterdir())) == 3
            if first.poll() is None:
                os.kill(first.pid, signal.SIGCONT)
            _, stderr = first.communicate(timeout=WAIT)
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
        assert first.returncode == 0, stderr
        if caught:
            break
        _empty(out)  # missed: it finished before it was stopped inside its phase
    else:
        pytest.fail(f"none of {ATTEMPTS} runs was caught inside the phase")
    assert sorted(p.name for p in out.iterdir()) == [
        "big.manifest.json", "big.webnn", "big.weights",
        "t.manifest.json", "t.webnn", "t.weights"]


def _run(*args: str) -> subprocess.CompletedProcess:
    child = _cli(*args)
    stdout, stderr = child.communicate(timeout=300)
    return subprocess.CompletedProcess(args, child.returncode, stdout, stderr)


@pytest.fixture
def wrong_graph(monkeypatch):
    """`convert --verify` on a graph a converter bug has broken: its output is shifted by one,
    so the real verification (ONNX Runtime on the source, the float64 oracle) fails."""
    import converter
    from click.testing import CliRunner

    real = converter.verify

    def verify_broken(source, graph=None, **options):
        name, out = next(iter(graph.outputs.items()))
        one = graph.add_constant(graph.fresh_name("bug"), np.ones((), np.float32))
        graph.set_output(name, graph.add_operation("add", [out, one]).output)
        return real(source, graph, **options)

    monkeypatch.setattr(converter, "verify", verify_broken)

    def run(*args: str):
        from cli.main import main

        result = CliRunner().invoke(main, list(args))
        return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)
    return run


def test_verify_writes_only_when_verification_passes(tmp_path, wrong_graph):
    failed = wrong_graph("convert", str(TINY), "-o", str(tmp_path / "t.js"), "--verify")
    assert failed.returncode == 1 and "mismatch" in failed.stdout
    assert f"verification failed; nothing written (--keep-on-mismatch writes " \
           f"{tmp_path / 't.js'} anyway)" in failed.stderr
    assert list(tmp_path.iterdir()) == []


def test_verified_outputs_are_written(tmp_path):
    passed = _run("convert", str(TINY), "-o", str(tmp_path / "t.js"), "--verify")
    assert passed.returncode == 0, passed.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "t.html", "t.js", "t.manifest.json", "t.weights"]


def test_keep_on_mismatch_keeps_the_outputs_and_says_so(tmp_path, wrong_graph):
    kept = wrong_graph("convert", str(TINY), "-o", str(tmp_path / "t.webnn"), "--verify",
                       "--keep-on-mismatch")
    assert kept.returncode == 1 and "mismatch" in kept.stdout
    names = ["t.webnn", "t.manifest.json", "t.weights"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
    assert "verification failed; kept " in kept.stderr and "as --keep-on-mismatch asks" in \
        kept.stderr
    for name in names:
        assert str(tmp_path / name) in kept.stderr


def test_keep_on_mismatch_needs_verify(tmp_path):
    usage = _run("convert", str(TINY), "-o", str(tmp_path / "u.webnn"), "--keep-on-mismatch")
    assert usage.returncode == 2 and "--keep-on-mismatch applies with --verify" in usage.stderr
