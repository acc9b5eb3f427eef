"""Nothing left behind: SIGTERM and SIGHUP during a write remove the temporary files as Ctrl-C
does (an 80 MB `.NAME.weights.*.tmp` stayed before), and `convert --verify` writes its outputs
only when verification passes, unless `--keep-on-mismatch` asks otherwise."""
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

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "models" / "tiny_cnn.onnx"


def _cli(*args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, **kw)


@pytest.fixture(scope="module")
def big_model(tmp_path_factory) -> Path:
    """y = x + w with a 200 MB float32 initializer: big enough to be caught mid-write."""
    folder = tmp_path_factory.mktemp("big")
    n = 50_000_000
    w = numpy_helper.from_array(np.full(n, 0.5, np.float32), "w")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "big",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])], [w])
    path = folder / "big.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_the_weights_write_leaves_nothing(big_model, tmp_path, signum):
    out = tmp_path / "out"
    out.mkdir()
    child = _cli("convert", str(big_model), "-o", str(out / "big.webnn"))
    deadline = time.monotonic() + 120
    try:
        while not any(p.name.endswith(".tmp") for p in out.iterdir()):
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "no temporary file appeared"
            time.sleep(0.005)
        child.send_signal(signum)
        _, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 128 + signum, stderr
    assert stderr.strip().splitlines()[-1] == \
        f"stopped by {signal.Signals(signum).name}; nothing was left half written"
    assert list(out.iterdir()) == []


@pytest.fixture(scope="module")
def slow_to_verify(tmp_path_factory) -> Path:
    """y = x @ W, forty times over, [2048, 2048] each: 16 MB to write, then a verification
    that takes seconds on either runtime (about 0.7 TFLOP), so the signal always lands while
    it runs, however fast the machine."""
    folder = tmp_path_factory.mktemp("slow")
    w = numpy_helper.from_array(np.eye(2048, dtype=np.float32), "w")
    names = ["x"] + [f"h{i}" for i in range(1, 40)] + ["y"]
    nodes = [helper.make_node("MatMul", [a, "w"], [b]) for a, b in zip(names, names[1:])]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2048, 2048]) for n in ("x", "y")]
    graph = helper.make_graph(nodes, "slow", io[:1], io[1:], [w])
    path = folder / "big.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_a_signal_during_verify_removes_the_staged_outputs(slow_to_verify, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    child = _cli("convert", str(slow_to_verify), "-o", str(out / "big.webnn"), "--verify")
    deadline = time.monotonic() + 120
    try:
        # Wait until the outputs are complete in the staging folder (verification running).
        while not any(p.name.endswith(".staging") and (p / "big.webnn").exists()
                      for p in out.iterdir()):
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "no staged output appeared"
            time.sleep(0.005)
        child.send_signal(signal.SIGTERM)
        _, stderr = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 128 + signal.SIGTERM, stderr
    assert list(out.iterdir()) == []


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
