"""webnn-converter: convert models between ONNX, TFLite and W3C WebNN graphs, and prove it.

The Python API:
    graph = converter.load("model.onnx", dims={"batch": 1})   # or a .webnn / .json graph
    converter.save(graph, "out.webnn")                         # or .json, .onnx
    outputs = converter.run(graph, {"x": array})               # on ONNX Runtime
    session = converter.Session(graph); session.step(feeds)    # state carried between steps
    report = converter.verify("model.onnx", seed=0)            # source runtime vs WebNN graph
    report = converter.verify_steps("wake.tflite", steps=20)   # stateful: step by step
    b = converter.GraphBuilder("tiny")            # build graphs the way MLGraphBuilder does
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

from .errors import (ConverterError, FormatError, GraphInvalidError, OpValidationError,
                     ParseError, UnsupportedError, WeightsError)

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .builder import GraphBuilder
    from .session import Session
    from .ir import ConstantData, Graph, Operand, Operation, TensorDesc

# Imported on first use (PEP 562), so `import converter` and `webnn-convert --version` do not
# pay for numpy and the op catalogue.
_LAZY = {"GraphBuilder": ".builder", "ConstantData": ".ir", "Graph": ".ir", "Operand": ".ir",
         "Operation": ".ir", "TensorDesc": ".ir", "Session": ".session"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'converter' has no attribute '{name}'")

__all__ = [
    "__version__", "load", "save", "run", "verify", "verify_steps", "Session", "GraphBuilder",
    "Graph", "Operand", "Operation",
    "ConstantData", "TensorDesc", "ConverterError", "FormatError", "GraphInvalidError",
    "OpValidationError", "ParseError", "UnsupportedError", "WeightsError",
]


def load(path: str | Path, dims: Mapping[str, int] | None = None,
         input_shapes: Mapping[str, Sequence[int]] | None = None, *,
         known_inputs: Mapping | None = None, verify: bool = True,
         max_tensor_bytes: int | str | None = None,
         max_total_bytes: int | str | None = None) -> Graph:
    """A WebNN graph from an `.onnx` model (imported; `dims` sets symbolic dimensions,
    `input_shapes` whole input shapes, `known_inputs` fixes inputs' values) or a
    `.webnn`/`.json` graph file with its weights.

    `max_tensor_bytes` and `max_total_bytes` (bytes, or sizes such as "2GiB") bound what the
    import computes and holds: one value (default 1 GiB) and all of them (default twice the
    model's weights, at least 256 MiB); see converter.budget.
    """
    from .budget import limits
    from .convert import load_any

    with limits(max_tensor_bytes, max_total_bytes):
        return load_any(path, dims=dims, input_shapes=input_shapes, known_inputs=known_inputs,
                        verify=verify)


def save(graph: Graph, path: str | Path) -> list[Path]:
    """Save a graph by the path's suffix: `.webnn` or `.json` (plus manifest and weights), or
    `.onnx` (the ONNX lowering). Returns the paths written; on failure nothing is left behind.
    """
    from .convert import write_any

    return write_any(graph, path)


def run(graph: Graph, feeds: Mapping, runtime: str = "ort") -> dict:
    """Execute a graph on `feeds` (input name -> ndarray); outputs by graph output name."""
    from .execute import run as _run

    return _run(graph, feeds, runtime=runtime)


def verify(source: str | Path, graph: Graph | None = None, seed: int = 0, **options):
    """Parity of a source model (on its own runtime) and its WebNN graph; see converter.verify."""
    from .verification import verify as _verify

    return _verify(source, graph, seed=seed, **options)


def verify_steps(source: str | Path, graph: Graph | None = None, steps: int = 20, seed: int = 0,
                 **options):
    """Step-wise parity of a stateful model and its graph; see converter.verification_steps."""
    from .verification_steps import verify_steps as _verify_steps

    return _verify_steps(source, graph, steps=steps, seed=seed, **options)
