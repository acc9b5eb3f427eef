"""Shared helpers of the ONNX nn-op import tests (test_conv, test_pool, test_normalization,
test_activation, test_matmul, test_resize): one-node models built with onnx.helper, imported
and run through our executor, and compared with ONNX Runtime running the same model."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from converter.errors import UnsupportedError
from converter.runtimes.execute import run
from converter.importers.onnx import import_model

__all__ = ["RNG", "single_node", "ort_outputs", "imported", "check", "refused", "ops_of",
           "op_named", "rand"]

RNG = np.random.default_rng(7)


def single_node(op_type: str, node_inputs: Sequence[str], feeds: dict[str, np.ndarray],
                weights: dict[str, np.ndarray] | None = None, outputs: Sequence[str] = ("y",),
                out_types: Sequence[int] | None = None, opset: int = 17, domain: str = "",
                **attrs) -> onnx.ModelProto:
    """A model of one node: `feeds` become graph inputs, `weights` initializers; '' in
    node_inputs / outputs leaves an optional slot empty."""
    weights = weights or {}
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
              for n, a in feeds.items()]
    if out_types is None:
        first = next(iter(feeds.values()))
        out_types = [helper.np_dtype_to_tensor_dtype(first.dtype)] * len(outputs)
    outs = [helper.make_tensor_value_info(n, t, None)
            for n, t in zip(outputs, out_types) if n]
    node = helper.make_node(op_type, list(node_inputs), list(outputs), domain=domain, **attrs)
    graph = helper.make_graph([node], op_type.lower(), inputs, outs,
                              [numpy_helper.from_array(a, n) for n, a in weights.items()])
    opsets = [helper.make_opsetid("", opset)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    return helper.make_model(graph, opset_imports=opsets, ir_version=9)


def ort_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _import(model: onnx.ModelProto, feeds: dict[str, np.ndarray]):
    # import_model releases the initializers' bytes as it reads them: give it a copy, so the
    # same model can still be run on ONNX Runtime.
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    return import_model(copy, input_shapes={k: v.shape for k, v in feeds.items()})


def imported(model: onnx.ModelProto, feeds: dict[str, np.ndarray]):
    """(WebNN graph, its outputs in the model's output order) for the model on `feeds`."""
    graph = _import(model, feeds)
    got = run(graph, feeds)
    return graph, [got[o.name] for o in model.graph.output]


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], *, atol: float = 1e-4,
          rtol: float = 1e-3, ort: bool = True):
    """Import and run the model; when `ort`, assert it matches ONNX Runtime's own run.
    Returns (graph, outputs)."""
    graph, got = imported(model, feeds)
    if ort:
        for have, want in zip(got, ort_outputs(model, feeds)):
            assert have.shape == want.shape
            assert have.dtype == want.dtype
            np.testing.assert_allclose(have, want, atol=atol, rtol=rtol)
    return graph, got


def refused(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> str:
    """The import must be refused; returns the reasons."""
    with pytest.raises(UnsupportedError) as info:
        _import(model, feeds)
    return "; ".join(info.value.items)


def ops_of(graph) -> list[str]:
    return [op.op_type for op in graph.operations]


def op_named(graph, op_type: str):
    return next(op for op in graph.operations if op.op_type == op_type)


def rand(*shape, dtype=np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)
