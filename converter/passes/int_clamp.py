"""The int_clamp pass: an integer clamp the target refuses becomes max and min with constants.

Chromium 153's LiteRT backend lists clamp for float32 and float16 only, and build() refuses it
on int8, uint8, int32 and int64 ("Unsupported data type int32 for argument input"), while its
max and min take all four (measured in tests/browser/test_rewrites_in_chromium.py). A model
that clips integer indices or counts (ONNX Clip on int32/int64) needs the rewrite

    clamp(x, minValue, maxValue) = min(max(x, minValue), maxValue)

which is clamp's definition in the spec, with each bound a rank-0 constant of x's type, cast
from the MLNumber as the spec casts it (decompositions_activation.clamp). It is exact on
integers. Float clamps are left alone (how max and min treat NaN is the backend's).

The replacement is kept only when max, min and their constants fit the target (Expander,
decompose.py); otherwise the clamp stays and a note says why. The pipeline runs the pass
before the data types pass (an int64 clamp stays exact where max and min take int64) and again
after it (where they take only int32, that pass narrows the clamp first); an int64 clamp left
for the narrowing gets no note: the second run rewrites it, or check says what remains.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import dtypes
from ..ir import Graph, Operation
from . import PassContext, PassResult, graph_pass
from .decompose import CannotExpand, Expander
from .decompositions import get_decomposition
from .target_fit import misfit

if TYPE_CHECKING:
    from ..targets import Target

__all__ = ["refused_int_clamp", "fits"]


def refused_int_clamp(op: Operation, target: "Target | None") -> bool:
    """Whether `op` is a clamp on integers whose input or output type `target` does not list
    for clamp."""
    if target is None or op.op_type != "clamp" or not target.supports("clamp"):
        return False
    x = op.input("input")
    if dtypes.info(x.data_type).is_float:
        return False
    for name, operand in (("input", x), ("output", op.output)):
        listed = (target.operand_limits("clamp", name) or {}).get("dataTypes")
        if listed is not None and operand.data_type not in listed:
            return True
    return False


def fits(target: "Target"):
    """The Expander's test for the ops the rule builds: the target takes them as they are."""
    return lambda o: misfit(o, target) is None


def _takes_int32(target: "Target") -> bool:
    """Whether the target's max and min take int32 (where the data types pass may narrow an
    int64 clamp for the pass's second run)."""
    return all("int32" in ((target.operand_limits(op, name) or {}).get("dataTypes")
                           or ("int32",))
               for op in ("max", "min") for name in ("a", "b", "output"))


@graph_pass("int_clamp")
def run(graph: Graph, ctx: PassContext) -> PassResult:
    target = ctx.target
    if target is None:
        return PassResult(False)
    expander = Expander(graph, acceptable=fits(target), available=target.supports)
    counts: dict[str, int] = {}
    notes = []
    for op in list(graph.operations):
        if not refused_int_clamp(op, target):
            continue
        dt = op.input("input").data_type
        try:
            expander.expand(op, get_decomposition("clamp"))
        except CannotExpand as why:
            if dt == "int64" and _takes_int32(target):
                continue  # the data types pass narrows it; the pass runs again after that
            notes.append(f"clamp '{op.name}' stays in {dt}, which {target.name}'s clamp "
                         f"refuses: {why}")
            continue
        counts[f"{dt} clamps as max/min"] = counts.get(f"{dt} clamps as max/min", 0) + 1
    return PassResult(bool(counts), counts, notes)
