"""WEBNN_CONVERTER_THREADS: how many threads ONNX Runtime and LiteRT may use in the process (a
zoo job sets it to its share of the cores)."""
from __future__ import annotations

import os

import numpy as np
import pytest

from converter.errors import ConverterError
from converter.threads import THREADS_ENV, runtime_threads


@pytest.mark.parametrize("value,expected", [("", None), ("1", 1), (" 4 ", 4), ("1024", 1024)])
def test_a_count_or_nothing(monkeypatch, value, expected):
    monkeypatch.setenv(THREADS_ENV, value)
    assert runtime_threads() == expected


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5", "1025"])
def test_anything_else_is_one_clear_error(monkeypatch, value):
    monkeypatch.setenv(THREADS_ENV, value)
    with pytest.raises(ConverterError) as caught:
        runtime_threads()
    assert THREADS_ENV in caught.value.line() and "1 to 1024" in caught.value.line()


def _threads_now() -> int:
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
@pytest.mark.parametrize("count", [1, 3])
def test_onnx_runtime_runs_as_many_threads_as_it_is_told(monkeypatch, count):
    # ONNX Runtime's intra-op pool is `count` threads, the caller's own among them: a session
    # made under the setting adds count - 1 threads to the process while it lives.
    from converter.ops.builder import GraphBuilder
    from converter.lowering.onnx.executor import prepare

    monkeypatch.setenv(THREADS_ENV, str(count))
    b = GraphBuilder("t")
    x = b.input("x", "float32", [64, 64])
    graph = b.build({"y": b.matmul(x, x)})
    prepare(graph)  # the first one loads ONNX Runtime (which starts threads of its own)
    before = _threads_now()
    run = prepare(graph)  # the session lives as long as `run`
    assert _threads_now() - before == count - 1
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) % 7
    np.testing.assert_allclose(run({"x": x})["y"], x @ x, rtol=1e-6)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_litert_runs_as_many_threads_as_it_is_told(monkeypatch):
    from pathlib import Path

    from converter.runtimes.litert import _interpreter

    model = Path(__file__).resolve().parents[2] / "models" / "dynamic" / "cnn_batch.tflite"

    def added(count: int) -> int:
        monkeypatch.setenv(THREADS_ENV, str(count))
        before = _threads_now()
        interpreter = _interpreter(model, "test", None)
        interpreter.allocate_tensors()
        interpreter.invoke()
        return _threads_now() - before

    added(1)  # LiteRT loaded first (and whatever threads it keeps for itself)
    assert (added(1), added(3)) == (0, 2)
