"""The pad_modes pass: a pad whose mode the target refuses becomes gathers with constant indices.

Chromium 153's LiteRT backend lists pad, but build() refuses its edge mode ("The edge padding
mode is not supported in tflite schema", at every rank and data type; measured in
tests/browser/test_rewrites_in_chromium.py). The target file says so in `refusedOptions`
({"pad": {"mode": ["edge"]}}); this pass rewrites each such pad, one gather per padded axis:

    y = gather(x, [0, 0, 0, 1, ..., n-1, n-1], axis=d)      edge, beginning 2, ending 1
    y = gather(x, [2, 1, 0, 1, ..., n-1, n-2], axis=d)      reflection, beginning 2, ending 1

Each output position along an axis copies one input position, which is what the spec's pad
does per axis (the axes are independent: padding axis d then axis e gives the corners the
spec gives, the edge or mirror of the edge). So the result is exact for every data type, any
rank and any padding, including axes padded by zero (no gather) and paddings longer than 1.

The replacement is built through the Expander (decompose.py) and kept only when every gather
fits the target (its data type, rank, and an index type it takes); otherwise the pad stays and
a note says why. Without a target, or where the target refuses no pad mode, nothing changes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir import Graph, Operand, Operation
from . import PassContext, PassResult, graph_pass
from .decompose import CannotExpand, Expander
from .decompositions import Emitter
from .target_fit import misfit

if TYPE_CHECKING:
    from ..targets import Target

__all__ = ["REWRITTEN_MODES", "pad_indices", "pad_rule", "refused_pad", "fits"]

# The modes a gather reproduces; "constant" needs values that are not in the input.
REWRITTEN_MODES = ("edge", "reflection")
_INDEX_TYPES = ("int32", "int64", "uint32")


def pad_indices(size: int, begin: int, end: int, mode: str) -> list[int]:
    """The input position each output position along one axis copies."""
    if mode == "edge":
        if size == 0:
            raise CannotExpand("edge padding of an empty axis has no edge to copy")
        return [0] * begin + list(range(size)) + [size - 1] * end
    if mode == "reflection":
        if begin >= size or end >= size:  # the op's shape rule refuses this already
            raise CannotExpand(f"reflection padding of {max(begin, end)} needs an axis longer "
                               f"than that, not {size}")
        return (list(range(begin, 0, -1)) + list(range(size))
                + list(range(size - 2, size - 2 - end, -1)))
    raise CannotExpand(f"pad's {mode} mode needs values the input does not hold")


def _index_type(target: "Target") -> str | None:
    """The first index type the target's gather takes (int32 where it is listed)."""
    listed = (target.operand_limits("gather", "indices") or {}).get("dataTypes")
    if listed is None:
        return "int32"
    return next((t for t in _INDEX_TYPES if t in listed), None)


def pad_rule(target: "Target"):
    """The rewrite of one pad as gathers, for the Expander; indices in the target's type."""

    def rule(e: Emitter, op: Operation) -> Operand:
        x = op.input("input")
        mode = op.attr("mode")
        begin, end = op.attr("beginningPadding"), op.attr("endingPadding")
        index_type = _index_type(target)
        if index_type is None:
            raise CannotExpand(f"{target.name}'s gather takes no index type of "
                               f"{', '.join(_INDEX_TYPES)}")
        y = x
        for axis, (size, b, n) in enumerate(zip(x.shape, begin, end)):
            if b == 0 and n == 0:
                continue
            indices = pad_indices(size, int(b), int(n), mode)
            y = e.gather(y, e.tensor(indices, index_type), axis=axis)
        return y if y is not x else e.identity(x)

    return rule


def refused_pad(op: Operation, target: "Target | None") -> bool:
    """Whether `op` is a pad whose mode `target` refuses."""
    return target is not None and op.op_type == "pad" \
        and target.refuses("pad", "mode", op.attr("mode"))


def fits(target: "Target"):
    """The Expander's test for the ops the rule builds: the target takes them as they are."""
    return lambda o: misfit(o, target) is None


@graph_pass("pad_modes")
def run(graph: Graph, ctx: PassContext) -> PassResult:
    target = ctx.target
    if target is None or "pad" not in target.refused_options:
        return PassResult(False)
    expander = Expander(graph, acceptable=fits(target), available=target.supports)
    rewritten: dict[str, int] = {}
    notes = []
    for op in list(graph.operations):
        if not refused_pad(op, target):
            continue
        mode = op.attr("mode")
        try:
            expander.expand(op, pad_rule(target))
        except CannotExpand as why:
            notes.append(f"pad '{op.name}' stays in {mode} mode, which {target.name} refuses: "
                         f"{why}")
            continue
        rewritten[f"{mode} pads as gathers"] = rewritten.get(f"{mode} pads as gathers", 0) + 1
    if rewritten:
        rewritten["gathers added"] = expander.added.get("gather", 0)
    return PassResult(bool(rewritten), rewritten, notes)
