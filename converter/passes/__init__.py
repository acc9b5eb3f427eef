"""Rewrite passes: functions from graph to graph, each reporting what it changed.

    @graph_pass("cleanup")
    def cleanup(graph: Graph, ctx: PassContext) -> PassResult:
        ...

`ctx` carries the target (None: no target, only target-independent rewrites) and the options
a user gives (`io_layout`: the layout graph inputs and outputs keep, default the source's;
`dequantize`: quantized weights become float constants even where the target takes them;
`weights`: "float16" stores float32 weights as float16, each cast back to float32 in the graph,
"int8"/"int4" stores conv/matmul/gemm weights quantized, read through dequantizeLinear, int4 in
blocks of `block_size` values).

A pass edits the graph in place through the IR's own methods and returns a PassResult: whether
it changed anything, counts worth reporting (transposes before and after ...), and notes on
what it could not do. `run_passes` runs a list of passes, verifies the graph after each (a pass
that breaks an invariant is a bug, named as such), and returns every pass's result.
`pipeline_for(target)` is the sequence `webnn-convert convert --target` runs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from ..errors import ConverterError, GraphInvalidError
from .. import ops as _ops  # noqa: F401  (the op catalogue the IR adds operations through)
from ..ir import Graph

if TYPE_CHECKING:
    from ..targets import Target

__all__ = ["PassContext", "PassResult", "graph_pass", "get_pass", "all_passes", "run_passes",
           "pipeline_for"]


@dataclass
class PassContext:
    target: "Target | None" = None
    io_layout: str | None = None  # "nchw" | "nhwc" | None (keep the source's)
    dequantize: bool = False  # quantized weights become float at conversion time, everywhere
    weights: str = "float32"  # passes.weight_types.WEIGHT_TYPES: how float32 weights are stored
    # values per int4 block (integer_weights, weights "int4"); None: the default, 32, which
    # leaves a weight it does not divide float32, where a given size must divide every one
    block_size: int | None = None
    compute: str = "float32"  # passes.float16_compute.COMPUTE_TYPES: the float type ops compute in


@dataclass
class PassResult:
    changed: bool
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"changed": self.changed, "counts": dict(self.counts), "notes": list(self.notes)}


PassFn = Callable[[Graph, PassContext], PassResult]
_PASSES: dict[str, PassFn] = {}


def graph_pass(name: str):
    """Register a pass under `name`."""

    def register(fn: PassFn) -> PassFn:
        if name in _PASSES:
            raise ValueError(f"pass {name} registered twice")
        _PASSES[name] = fn
        return fn

    return register


def _load() -> None:
    from . import _all  # noqa: F401  (importing registers every pass module)


def get_pass(name: str) -> PassFn:
    _load()
    try:
        return _PASSES[name]
    except KeyError:
        raise ConverterError(f"unknown pass '{name}'",
                             fix=f"passes are: {', '.join(sorted(_PASSES))}") from None


def all_passes() -> dict[str, PassFn]:
    _load()
    return dict(sorted(_PASSES.items()))


def run_passes(graph: Graph, names: list[str], ctx: PassContext | None = None
               ) -> list[tuple[str, PassResult]]:
    """Run passes in order, verifying the graph after each; return (name, result) pairs."""
    ctx = ctx or PassContext()
    results = []
    for name in names:
        result = get_pass(name)(graph, ctx)
        problems = graph.problems()
        if problems:
            raise GraphInvalidError(
                [f"the '{name}' pass left the graph invalid (a bug in the pass): {p}"
                 for p in problems], where=f"graph '{graph.name}'")
        results.append((name, result))
    return results


def pipeline_for(target: "Target") -> list[str]:
    """The passes that rewrite a graph for `target`, in order.

    Folding and cleanup first (fewer ops to rewrite), then quantized weights (kept, re-encoded or
    dequantized before decompose would expand a dequantizeLinear the target lacks), then what
    changes ops (decomposition of ops the target lacks, pads in a mode it refuses as gathers,
    integer clamps it refuses as max/min, constant-only operands (whose rewrites add scalars
    and reshapes the rank pass must see), ranks, data types, integer clamps again (an int64
    clamp the data types pass narrowed to int32, where max and min take no int64), int8 ops
    the backend refuses computed in float32), then layout (it sees the final set of ops), then
    folding and cleanup again (transposes of constants fold, identities and dead ops go), and
    last the split of constants over the target's limit (folding would join the pieces again).
    Rewriting integer clamps before the data types pass keeps an int64 clamp exact where max
    and min take int64 (chromium-litert): that pass would narrow it to int32.
    """
    return ["fold_constants", "cleanup", "quantized_weights", "decompose", "pad_modes",
            "int_clamp", "constant_operands", "rank", "data_types", "int_clamp",
            "int8_in_float", "layout", "fold_constants", "cleanup", "split_constants"]
