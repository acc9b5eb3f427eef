"""Running an exported model on LiteRT, and the parity check every op test makes.

The check: the graph exported to .tflite runs on LiteRT, the same graph runs on our ONNX
executor (ONNX Runtime), both on the same seeded inputs, and
`converter.verification.parity.compare` judges each output under the op's ULP budget from tolerances.md (or exactly, for integer outputs and
data movement). LiteRT and ONNX Runtime are independent implementations, so agreement within
the budget means the export computes what the WebNN graph means.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

import converter
from converter.exporters.tflite import to_tflite
from converter.ir import Graph
from converter.verification.parity import Bounds, compare

__all__ = ["run_litert", "check", "run_one", "rand", "operator_codes", "ops_of"]


def run_litert(data: bytes, feeds: Mapping[str, np.ndarray], *,
               xnnpack: bool = True) -> dict[str, np.ndarray]:
    """Run .tflite bytes on LiteRT through the model's signature (inputs and outputs by
    their WebNN names): with the XNNPACK delegate LiteRT applies by default, or on LiteRT's
    own builtin kernels."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    resolver = (OpResolverType.AUTO if xnnpack
                else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interpreter = Interpreter(model_content=data, num_threads=1,
                              experimental_op_resolver_type=resolver)
    runner = interpreter.get_signature_runner("serving_default")
    return {k: np.asarray(v) for k, v in runner(**feeds).items()}


def check(graph: Graph, feeds: Mapping[str, np.ndarray], *, ulp: int | None = None,
          atol: float | None = None, rtol: float = 0.0, xnnpack_ulp: int | None = None,
          xnnpack_atol: float | None = None) -> dict[str, np.ndarray]:
    """Export `graph`, run it on LiteRT and on the ONNX executor, and assert every output
    agrees: within `ulp` ULP (floats), within `atol` + `rtol`|want| when given, else exactly.

    LiteRT runs twice: on its builtin kernels, and with the XNNPACK delegate (what LiteRT uses
    by default, and Chromium too). XNNPACK computes exp, log and their relatives with
    polynomial approximations, so a test of such an op states XNNPACK's own bound
    (`xnnpack_ulp` / `xnnpack_atol`, with the reason); by default both runs get the op's
    budget. (Each run is judged by its atol when it has one, else by its ULP budget, else
    exactly.) Returns the builtin kernels' outputs."""
    data = to_tflite(graph)
    want = converter.run(graph, feeds)
    if xnnpack_atol is None and xnnpack_ulp is None:
        xnnpack_ulp, xnnpack_atol = ulp, atol
    runs = [("LiteRT", run_litert(data, feeds, xnnpack=False), ulp, atol),
            ("LiteRT+XNNPACK", run_litert(data, feeds), xnnpack_ulp, xnnpack_atol)]
    for runtime, got, run_ulp, run_atol in runs:
        for name, operand in graph.outputs.items():
            if run_atol is not None:
                bounds = Bounds(atol=run_atol, rtol=rtol)
            elif run_ulp is not None and operand.data_type in ("float32", "float16"):
                bounds = Bounds(ulp=run_ulp)
            else:
                bounds = Bounds(exact=True)
            assert got[name].dtype == want[name].dtype, (name, got[name].dtype,
                                                         want[name].dtype)
            result = compare(name, got[name], want[name], bounds, operand.data_type)
            assert result.passed, (
                f"{runtime} {name}: {result.reason}; max abs {result.max_abs:g}, max ulp "
                f"{result.max_ulp}, worst at {result.worst_index}: "
                f"{got[name].reshape(-1)[:6]} vs ORT {want[name].reshape(-1)[:6]}")
    return runs[0][1]


def rand(rng: np.random.Generator, shape, data_type: str = "float32", low=-1.0, high=1.0):
    """Seeded values of a WebNN data type: floats uniform in [low, high), integers in
    [low, high] (both clipped to the type's range)."""
    if data_type in ("float32", "float16"):
        return rng.uniform(low, high, shape).astype(data_type)
    info = np.iinfo(data_type)
    lo, hi = max(int(low), int(info.min)), min(int(high), int(info.max))
    return rng.integers(lo, hi, shape, endpoint=True).astype(data_type)


def operator_codes(data: bytes) -> list[str]:
    """The builtin operator names of a .tflite model's operators, in order."""
    from ai_edge_litert import schema_py_generated as fb

    model = fb.ModelT.InitFromPackedBuf(data, 0)
    names = {v: k for k, v in vars(fb.BuiltinOperator).items() if not k.startswith("_")}
    codes = [names[c.builtinCode] for c in model.operatorCodes]
    return [codes[op.opcodeIndex] for op in model.subgraphs[0].operators]


def run_one(b, out, feeds: Mapping[str, np.ndarray], **bounds) -> np.ndarray:
    """Build `b` with the single output `y`, check it (see `check`) and return LiteRT's y."""
    return check(b.build({"y": out}), feeds, **bounds)["y"]


def ops_of(graph: Graph) -> list[str]:
    """The TFLite operators `graph` exports to, in order."""
    return operator_codes(to_tflite(graph))


def assert_declared_shapes_hold(data: bytes) -> None:
    """Every tensor of the .tflite declares the shape LiteRT's kernels compute for it: LiteRT
    resizes a wrongly declared tensor silently, but other readers of the file trust it."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    def shapes(allocate: bool) -> dict[str, list[int]]:
        interpreter = Interpreter(model_content=data, num_threads=1,
                                  experimental_op_resolver_type=OpResolverType
                                  .BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        if allocate:
            interpreter.allocate_tensors()
        return {t["name"]: [int(d) for d in t["shape"]] for t in interpreter.get_tensor_details()}

    declared, computed = shapes(False), shapes(True)
    wrong = {n: (declared[n], computed[n]) for n in declared if declared[n] != computed[n]}
    assert not wrong, f"declared vs computed shapes: {wrong}"
