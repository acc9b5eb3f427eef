"""Quantized weights: each dequantizeLinear of constant weights kept, re-encoded or dequantized,
whichever the target takes.

Weight-only quantization reaches the graph as dequantizeLinear(q, scale, zeroPoint) with q and
zeroPoint graph constants: ONNX MatMulNBits (uint4 or uint8, blockwise), DequantizeLinear on an
initializer, TFLite per-channel int8 weights. For each such op, in this order of preference:

  1. keep: the target's dequantizeLinear takes q's type for `input` and `zeroPoint`, and its
     `constant` limits take it too.
  2. re-encode, exactly: the op computes (q - zeroPoint) * scale, so adding one shift s to both
     q and zeroPoint changes nothing. Same width first (uint4 -> int4 with s = -8, int4 -> uint4
     with +8, uint8 <-> int8 with -128/+128: every value still fits, and it is a flip of each
     value's top bit), then wider (uint4 -> uint8 or int8 as they are, int4 -> int8 as it is or
     uint8 with +8). The weights stay quantized; a wider type costs twice the bytes.
  3. dequantize at conversion time: the op is computed once by the executor (as fold_constants
     does) and becomes a float constant of its result type (float32 or float16). This is the
     only choice when the target lacks the op, its scale or result type, or takes no quantized
     type that holds the values; and the choice for every op with `--dequantize`
     (PassContext.dequantize). The float weights are claimed from a memory budget with the
     conversion's limits (converter.budget: --max-tensor-bytes, --max-total-bytes, the total
     by default twice the graph's weights) before they are computed; past it the conversion
     stops with the flag that allows more. Re-encoded copies are claimed the same way.

A dequantizeLinear whose scale is computed at run time cannot be dequantized here: it is
re-encoded when that helps, else left for the check to report. `plan` gives the decision for
each op without changing anything; `check` prints it, and the pass's notes list what it did.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes
from ..budget import MemoryBudget
from ..ir import ConstantData, Graph, Operand, Operation
from ..ir.operand import pack4
from . import PassContext, PassResult, graph_pass
from .cleanup import replace_results
from .rank_limits import type_allowed

if TYPE_CHECKING:
    from ..targets import Target

__all__ = ["Decision", "plan", "quantized_weights", "ENCODINGS", "encoding_for"]

# Exact re-encodings of a quantized type: (new type, shift added to weights and zero point),
# best first (same width, then wider).
ENCODINGS: dict[str, tuple[tuple[str, int], ...]] = {
    "uint4": (("int4", -8), ("uint8", 0), ("int8", 0)),
    "int4": (("uint4", 8), ("int8", 0), ("uint8", 8)),
    "uint8": (("int8", -128),),
    "int8": (("uint8", 128),),
}
ACTIONS = ("keep", "re-encode", "dequantize", "stays")


@dataclass(frozen=True)
class Decision:
    """What happens to one dequantizeLinear of constant weights on one target.

    action: `keep`, `re-encode` (to `new_type`, weights and zero point shifted by `shift`),
    `dequantize` (to a constant of `new_type`, a float type), or `stays` (nothing helps: `why`).
    """

    op: Operation
    action: str
    data_type: str
    new_type: str
    shift: int = 0
    why: str = ""
    weights: str = ""  # the weights' name when decided (a re-encoded copy has another)

    @property
    def node(self) -> str:
        return self.op.name

    def line(self) -> str:
        head = f"dequantizeLinear '{self.node}' weights '{self.weights}' ({self.data_type})"
        if self.action == "keep":
            return f"{head}: kept {self.data_type}{self._because()}"
        if self.action == "re-encode":
            how = "re-based" if dtypes.info(self.new_type).bits == \
                dtypes.info(self.data_type).bits else "widened"
            moved = f", zero point {self.shift:+d}" if self.shift else ""
            return f"{head}: {how} to {self.new_type}{moved} (exact; {self.why})"
        if self.action == "dequantize":
            return f"{head}: dequantized to {self.new_type} at conversion time{self._because()}"
        return f"{head}: stays {self.data_type}{self._because()}"

    def _because(self) -> str:
        return f" ({self.why})" if self.why else ""

    def to_json(self) -> dict:
        return {"op": self.node, "weights": self.weights, "dataType": self.data_type,
                "action": self.action, "newType": self.new_type, "shift": self.shift,
                "why": self.why}


def _weight_ops(graph: Graph) -> list[Operation]:
    """dequantizeLinear ops whose weights and zero point are graph constants."""
    return [op for op in graph.operations if op.op_type == "dequantizeLinear"
            and op.inputs[0].is_constant and op.inputs[2].is_constant]


def _takes(target: "Target", data_type: str) -> bool:
    """The target's dequantizeLinear takes constant weights and zero points of `data_type`."""
    types = (target.io_limits("constant") or {}).get("dataTypes")
    return (not isinstance(types, list) or data_type in types) and all(
        type_allowed(target, "dequantizeLinear", key, data_type)
        for key in ("input", "zeroPoint"))


def encoding_for(target: "Target", q_type: str) -> tuple[str, int] | None:
    """The type the target's dequantizeLinear reads `q_type` values in, with the shift added
    to values and zero point: `q_type` itself (shift 0) when the target takes it, else the
    first exact re-encoding of ENCODINGS it takes; None when none holds the values."""
    if _takes(target, q_type):
        return q_type, 0
    return next(((t, s) for t, s in ENCODINGS.get(q_type, ()) if _takes(target, t)), None)


def _op_missing(target: "Target", op: Operation) -> str | None:
    """Why the target cannot run this dequantizeLinear whatever its weights' type (None: it
    can)."""
    if not target.supports("dequantizeLinear"):
        return f"{target.name} has no dequantizeLinear"
    for key, operand in (("scale", op.inputs[1]), ("output", op.output)):
        if not type_allowed(target, "dequantizeLinear", key, operand.data_type):
            return f"{target.name}'s dequantizeLinear takes no {operand.data_type} {key}"
    return None


def decide(op: Operation, target: "Target", dequantize: bool = False) -> Decision:
    """The decision for one dequantizeLinear of constant weights."""
    q_type, out_type = op.inputs[0].data_type, op.output.data_type
    named = {"weights": op.inputs[0].name}
    can_compute = op.inputs[1].is_constant
    missing = _op_missing(target, op)
    if dequantize and can_compute:
        return Decision(op, "dequantize", q_type, out_type, why="--dequantize", **named)
    runtime_scale = "" if can_compute else \
        "its scale is computed at run time, so it cannot be dequantized at conversion time"
    unforced = f"; --dequantize: {runtime_scale}" if dequantize else ""  # it was asked for
    encoding = encoding_for(target, q_type) if missing is None else None
    if encoding is not None and encoding[0] == q_type:
        return Decision(op, "keep", q_type, q_type, why=unforced.removeprefix("; "), **named)
    if encoding is not None:
        return Decision(op, "re-encode", q_type, *encoding,
                        f"{target.name} takes no {q_type} there{unforced}", **named)
    why = missing or f"{target.name} takes no {q_type} there, nor a type that holds its values"
    if can_compute:
        return Decision(op, "dequantize", q_type, out_type, why=why, **named)
    return Decision(op, "stays", q_type, q_type, why=f"{why}; {runtime_scale}", **named)


def plan(graph: Graph, target: "Target", dequantize: bool = False) -> list[Decision]:
    """The decision for every dequantizeLinear of constant weights, in graph order."""
    return [decide(op, target, dequantize) for op in _weight_ops(graph)]


def _shifted(data: ConstantData, new_type: str, shift: int) -> ConstantData:
    """`data`'s values plus `shift`, stored as `new_type` (every value fits: see ENCODINGS)."""
    if data.fill is not None:
        return ConstantData(new_type, data.shape, fill=int(data.fill) + shift)
    old_bits, new = dtypes.info(data.data_type).bits, dtypes.info(new_type)
    if old_bits == new.bits:
        # Same width, shifted by half the range: each value's top bit flips (two a byte for
        # 4-bit values), so the stored bytes change without unpacking.
        raw = np.frombuffer(data.raw_bytes(), np.uint8)
        flipped = raw ^ np.uint8(0x88 if new.bits == 4 else 0x80)
        count = int(np.prod(data.shape, dtype=np.int64))
        if new.bits == 4 and count % 2:
            flipped[-1] &= 0x0F  # the padding nibble stays zero
        if new.bits == 4:
            return ConstantData(new_type, data.shape, array=flipped)
        return ConstantData(new_type, data.shape, array=flipped.view(new.numpy).reshape(data.shape))
    values = data.numpy().astype(np.int16) + shift
    if new.bits == 4:
        return ConstantData(new_type, data.shape, array=pack4(values))
    return ConstantData(new_type, data.shape, array=values.astype(new.numpy))


class _Rewriter:
    def __init__(self, graph: Graph):
        self.graph = graph
        weights = sum(c.constant.nbytes for c in graph.constants.values()
                      if c.constant.fill is None)
        self.budget = MemoryBudget(weights_bytes=weights)
        self.encoded: dict[tuple[int, str], Operand] = {}

    def re_encode(self, d: Decision) -> None:
        op = d.op
        for index in (0, 2):
            op.replace_input(index, self._encoded(op.inputs[index], d))

    def _encoded(self, old: Operand, d: Decision) -> Operand:
        key = (id(old), d.new_type)
        if key not in self.encoded:
            self.budget.claim(dtypes.byte_length(d.new_type, old.shape),
                              f"re-encoding '{old.name}' as {d.new_type}",
                              where=f"dequantizeLinear '{d.op.name}'")
            data = _shifted(old.constant, d.new_type, d.shift)
            self.encoded[key] = self.graph.add_constant(
                self.graph.fresh_name(f"{old.name}_{d.new_type}"), data)
        return self.encoded[key]

    def dequantize(self, d: Decision) -> None:
        from .fold_constants import constant_data, evaluate

        graph, op = self.graph, d.op
        out = op.output
        self.budget.claim(dtypes.byte_length(out.data_type, out.shape),
                          f"dequantizing '{d.weights}' to {out.data_type}",
                          where=f"dequantizeLinear '{op.name}'")
        (value,) = evaluate(op)
        const = graph.add_constant(graph.fresh_name(f"{out.name}_value"),
                                   constant_data(out.data_type, out.shape, value))
        if out.is_graph_output():  # an output is an op's result: read through an identity
            out.replace_all_uses_with(const)
            const = graph.add_operation("identity", [const], before=op,
                                        name=graph.fresh_name(out.name)).output
        replace_results(graph, op, [const], take_names=True)

    def drop_unread(self, operands: list[Operand]) -> None:
        for x in {id(x): x for x in operands}.values():
            if x.graph is self.graph and x.is_constant and not x.uses():
                self.graph.remove_operand(x)


def _notes(done: list[tuple[Decision, str]]) -> list[str]:
    """One note per kind of change (the text after a decision line's head), naming up to five
    ops; `check --target` lists every op."""
    groups: dict[str, list[str]] = {}
    for d, line in done:
        if d.action != "keep":
            what = line.split("): ", 1)[1]
            groups.setdefault(f"{d.data_type}: {what}", []).append(d.node)
    notes = []
    for what, names in groups.items():
        shown = ", ".join(f"'{n}'" for n in names[:5]) + (" ..." if len(names) > 5 else "")
        notes.append(f"{len(names)} dequantizeLinear of {what}: {shown}")
    return notes


@graph_pass("quantized_weights")
def quantized_weights(graph: Graph, ctx: PassContext) -> PassResult:
    target = ctx.target
    if target is None:
        return PassResult(False, notes=["no target: quantized weights were not checked"])
    decisions = plan(graph, target, ctx.dequantize)
    lines = [(d, d.line()) for d in decisions]
    rewriter = _Rewriter(graph)
    counts = {"kept": 0, "re_based": 0, "widened": 0, "dequantized": 0, "left": 0}
    for d in decisions:
        sources = [x for x in d.op.inputs if x is not None]
        if d.action == "re-encode":
            rewriter.re_encode(d)
            same = dtypes.info(d.new_type).bits == dtypes.info(d.data_type).bits
            counts["re_based" if same else "widened"] += 1
        elif d.action == "dequantize":
            rewriter.dequantize(d)
            counts["dequantized"] += 1
        else:
            counts["kept" if d.action == "keep" else "left"] += 1
        rewriter.drop_unread(sources)
    changed = any(counts[k] for k in ("re_based", "widened", "dequantized"))
    return PassResult(changed, counts, _notes(lines))
