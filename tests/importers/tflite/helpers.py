"""Shared helpers of the TFLite import tests: a generated model is run on LiteRT and, imported,
through the WebNN executor, and every output is compared under the parity policy."""
from __future__ import annotations

import numpy as np
import pytest

from converter.errors import UnsupportedError
from converter.runtimes.execute import run
from converter.importers.tflite import import_tflite
from converter.ir import Graph
from converter.verification.parity import Bounds, compare
from converter.runtimes.litert import run_litert

__all__ = ["RNG", "rand", "check", "refused", "ops_of", "op_named", "EXACT", "ulp", "atol",
           "QSTEP"]

RNG = np.random.default_rng(11)  # reseeded for every test by conftest.py

# Single-op budgets of the parity policy (shared/reference/tolerances.md).
EXACT = Bounds(ulp=0)  # data movement, relu, clamp, comparisons: bit-identical
QSTEP = Bounds(atol=1, rtol=0)  # quantized outputs: within one quantization step


def ulp(n: int) -> Bounds:
    return Bounds(ulp=n)


def atol(a: float) -> Bounds:
    """For results near zero after cancellation (sums of products), where ULPs mislead."""
    return Bounds(atol=a, rtol=0)


def rand(*shape, low: float = -1.0, high: float = 1.0, dtype=np.float32) -> np.ndarray:
    return RNG.uniform(low, high, shape).astype(dtype)


def check(model: bytes, feeds: dict[str, np.ndarray], bounds: Bounds | None = None,
          ) -> tuple[Graph, dict[str, np.ndarray]]:
    """Run `model` on LiteRT and imported through our executor; assert each output agrees
    within `bounds` (default: the policy's bounds for its data type). Returns (graph, ours)."""
    want = run_litert(model, feeds)
    graph = import_tflite(model)
    ours = run(graph, {k: (v.astype(np.uint8) if v.dtype == np.bool_ else v)
                       for k, v in feeds.items()})
    assert set(ours) == set(want)
    for name, expected in want.items():
        if expected.dtype == np.bool_:
            expected = expected.astype(np.uint8)
        result = compare(name, ours[name], expected, bounds, graph.outputs[name].data_type)
        assert result.passed, (f"{name}: {result.reason}; max abs {result.max_abs}, max ulp "
                               f"{result.max_ulp} at {result.worst_index}")
        assert ours[name].dtype == expected.dtype
    return graph, ours


def refused(model: bytes) -> UnsupportedError:
    with pytest.raises(UnsupportedError) as info:
        import_tflite(model)
    return info.value


def ops_of(graph: Graph) -> list[str]:
    return [op.op_type for op in graph.operations]


def op_named(graph: Graph, op_type: str):
    found = [op for op in graph.operations if op.op_type == op_type]
    assert len(found) == 1, f"{len(found)} {op_type} ops"
    return found[0]
