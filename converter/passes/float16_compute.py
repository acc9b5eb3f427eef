"""The float16_compute pass: a float32 graph computed in float16 where the target takes it.

`convert --compute float16` (converter.convert(..., compute="float16")) runs it after the
target's passes and after integer_weights, before float16_weights. Each operation reading or
giving float32 values is rebuilt reading their float16 twins, and kept when the target takes
the rebuilt op as it is (passes/target_fit.misfit: float16 on every operand and result it
touched, operands it wants constant still constant):

    x (float32 input) -> cast(float16) -> conv2d -> relu -> ... -> cast(float32) -> y (output)

  * The graph's interface stays float32: each float32 input is cast to float16 once, where
    an op first reads it, and each output computed in float16 is cast back once, the cast's
    result keeping the output's name. Callers feed and read what they did before, as
    optimum's and onnxconverter-common's fp16 exports keep float32 at the boundary
    (keep_io_types), and `verify` judges such outputs by the float16 bounds (output_bounds).
  * A float32 constant an op reads in float16 is stored as float16 (no cast: a slot the
    target wants constant stays constant). A dequantizeLinear of int8/int4 weights gives its
    scale's type (WebNN: output type = scale type), so its scale becomes float16 and its
    result float16. Constants only float32 ops read stay float32 unless `--weights float16`.
  * A constant read by float16 ops and by ops kept float32 (a layerNormalization's scale
    that an add also reads) is stored once, as float32, its float16 readers reading it through
    one cast: the float32 op keeps its exact values, and the cast rounds to nearest even as
    storing it as float16 did, so every value the graph computes is what two copies gave
    (bit for bit in Chromium; ONNX Runtime, which runs a float16 add or mul widened to float32,
    drops a float32 -> float16 -> float32 cast pair there and reads the unrounded values, as
    it does for the casts of the graph's inputs). A float16 copy with a cast up for the
    float32 op would round what that op reads, and its float32 output's verdict with it.
    Both copies stay (the notes say why) for a fill (no bytes to save), a constant under
    float16_weights.MIN_BYTES (a cast per run to save a few bytes), and one a float16 reader
    takes in a slot the target wants constant (a cast's result is computed).
  * Between an op kept in float32 and one computing in float16 the values cross through one
    cast each way, shared by every reader.

An op stays float32 (the pass's notes list it by reason, `-v`) when
  * it is a normalization, softmax or an accumulating reduction (KEPT_FLOAT32): their
    statistics over many elements are where float16 loses most (a variance's squares overflow
    past 255, a sum of 4096 values keeps 11 bits), and ONNX Runtime computes float16 layer,
    instance and group normalizations' statistics in float32 too (docs/reference/parity.md);
  * the target does not take its float16 form (misfit says why);
  * it reads a constant beyond float16's range (|x| > 65504 would become infinity);
  * its float16 form is no valid WebNN (its result type does not follow its operands');
  * it gives no float32 result and reads float32 values no float16 op made (a comparison of
    a graph input, an argMax of a float32 op's result): a cast there would lose bits for
    nothing.
Integer operations and float16 values already in the graph are left as they are.
"""
from __future__ import annotations

import numpy as np

from ..budget import format_size
from ..errors import ConverterError
from ..ir import Graph, Operand, Operation
from . import PassContext, PassResult, graph_pass
from .float16_weights import MIN_BYTES, constant_slots
from .target_fit import misfit

__all__ = ["COMPUTE_TYPES", "KEPT_FLOAT32", "check_compute", "takes_float16", "float16_compute"]

# What `--compute` takes: the float type the graph computes in (float32: nothing changes).
COMPUTE_TYPES = ("float32", "float16")

# Ops kept float32 by default, by why.
_NORMALIZING = "normalization statistics stay float32, as ONNX Runtime computes them"
_ACCUMULATING = "sums over many elements lose most in float16"
KEPT_FLOAT32 = {
    "batchNormalization": _NORMALIZING, "instanceNormalization": _NORMALIZING,
    "layerNormalization": _NORMALIZING, "softmax": _NORMALIZING,
    "reduceSum": _ACCUMULATING, "reduceMean": _ACCUMULATING, "reduceL1": _ACCUMULATING,
    "reduceL2": _ACCUMULATING, "reduceSumSquare": _ACCUMULATING,
    "reduceLogSum": _ACCUMULATING, "reduceLogSumExp": _ACCUMULATING,
    "reduceProduct": _ACCUMULATING, "cumulativeSum": _ACCUMULATING,
}
_FLOAT16_MAX = float(np.finfo(np.float16).max)


def check_compute(compute: str) -> str:
    """`compute` if `--compute` takes it; else ConverterError naming what it takes."""
    if compute not in COMPUTE_TYPES:
        raise ConverterError(f"unknown compute type '{compute}'", where="--compute",
                             fix=f"use one of {', '.join(COMPUTE_TYPES)}")
    return compute


def takes_float16(target) -> bool:
    """Whether any op of `target` takes a float16 operand."""
    return any("float16" in (limits or {}).get("dataTypes", ())
               for op in target.ops() if isinstance(target.limits.get(op), dict)
               for limits in target.limits[op].values() if isinstance(limits, dict))


class _Rewrite:
    """The float16/float32 twins of values, made once and shared by every reader."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.half: dict[int, Operand] = {}  # id(float32 value) -> its float16 twin
        self.made_ops: list[Operation] = []
        self.made_constants: list[Operand] = []
        self.originals: list[Operand] = []  # float32 constants given a float16 twin

    def float16_of(self, value: Operand, before: Operation) -> Operand:
        twin = self.half.get(id(value))
        if twin is not None:
            return twin
        graph = self.graph
        if value.is_constant:
            data = value.constant
            values = np.asarray(data.numpy() if data.fill is None else data.fill, np.float16)
            twin = (graph.add_constant(graph.fresh_name(f"{value.name}_float16"),
                                       values.reshape(data.shape)) if data.fill is None else
                    graph.add_constant(graph.fresh_name(f"{value.name}_float16"),
                                       _fill(values, data.shape)))
            self.made_constants.append(twin)
            self.originals.append(value)
        else:
            cast = graph.add_operation("cast", [value], {"dataType": "float16"},
                                       name=graph.fresh_name(f"{value.name}/float16"),
                                       before=before)
            self.made_ops.append(cast)
            twin = cast.output
        self.half[id(value)] = twin
        return twin

    def cleanup(self) -> list[Operand]:
        """Drop the twins no op came to read (an op rebuilt then kept float32); return the
        float32 constants that still have a float16 twin, because ops of both types read
        them."""
        graph = self.graph
        for op in reversed(self.made_ops):
            if op.graph is graph and all(not o.uses() and not o.is_graph_output()
                                         for o in op.outputs):
                graph.remove_operation(op)
        for const in self.made_constants:
            if not const.uses() and not const.is_graph_output():
                graph.remove_operand(const)
        for const in self.originals:  # a constant only float16 ops read: its twin takes its name
            if const.graph is graph and not const.uses() and not const.is_graph_output():
                name, twin = const.name, self.half[id(const)]
                graph.remove_operand(const)
                if twin.graph is graph:
                    graph.rename(twin, name)
        return [c for c in self.originals
                if c.graph is graph and self.half[id(c)].graph is graph]

    def store_once(self, const: Operand, ctx: PassContext) -> str | None:
        """`const`'s float16 readers made to read it through one cast, its float16 twin
        dropped; or, when both copies must stay, why (see the module doc)."""
        twin = self.half[id(const)]
        data = const.constant
        if data.fill is not None:
            return "a fill, one value stored"
        if data.nbytes < MIN_BYTES:
            return f"under {format_size(MIN_BYTES)}"
        slots = constant_slots(twin, ctx)
        if slots:
            return f"read where {ctx.target.name} wants a constant: {', '.join(slots)}"
        graph = self.graph
        order = {id(op): i for i, op in enumerate(graph.operations)}
        first = min((u.op for u in twin.uses()), key=lambda op: order[id(op)])
        cast = graph.add_operation("cast", [const], {"dataType": "float16"},
                                   name=graph.fresh_name(f"{const.name}/float16"), before=first)
        self.made_ops.append(cast)
        twin.replace_all_uses_with(cast.output)
        graph.remove_operand(twin)
        self.half[id(const)] = cast.output
        return None


def _fill(value: np.ndarray, shape):
    from ..ir.operand import ConstantData

    return ConstantData("float16", shape, fill=float(value))


def _out_of_range(op: Operation, checked: dict[int, bool]) -> bool:
    for x in op.inputs:
        if x is None or not x.is_constant or x.data_type != "float32":
            continue
        if id(x) not in checked:
            data = x.constant
            values = np.asarray(data.fill if data.fill is not None else data.numpy())
            # NaN makes min and max NaN, so the comparison is False and the value kept float32
            checked[id(x)] = not (-_FLOAT16_MAX <= values.min() and values.max() <= _FLOAT16_MAX)
        if checked[id(x)]:
            return True
    return False


def _float32(values) -> list[Operand]:
    return [x for x in values if x is not None and x.data_type == "float32"]


def _why_float32(op: Operation, rewrite: _Rewrite, checked: dict[int, bool]) -> str | None:
    if op.op_type in KEPT_FLOAT32:
        return KEPT_FLOAT32[op.op_type]
    if _out_of_range(op, checked):
        return "reads constants beyond float16's range"
    if not _float32(op.outputs) and any(
            not x.is_constant and id(x) not in rewrite.half for x in _float32(op.inputs)):
        return "gives no float32 result from values computed in float32"
    return None


def _rebuild(op: Operation, rewrite: _Rewrite, target) -> tuple[Operation | None, str]:
    """`op` built again on float16 twins, before it; (None, why) when that cannot stay."""
    graph = rewrite.graph
    inputs = [rewrite.float16_of(x, op) if x is not None and x.data_type == "float32" else x
              for x in op.inputs]
    attrs = dict(op.attrs)
    if op.op_type == "cast" and attrs.get("dataType") == "float32":
        attrs["dataType"] = "float16"
    try:
        new = graph.add_operation(
            op.op_type, inputs, attrs, name=graph.fresh_name(f"{op.name}_float16"),
            output_names=[graph.fresh_name(f"{o.name}_float16") for o in op.outputs],
            before=op)
    except ConverterError:
        return None, "its float16 form is no valid WebNN"
    if _float32(new.outputs):
        why = "its result stays float32 whatever its operands"
    else:
        why = misfit(new, target)
    if why is not None:
        graph.remove_operation(new)
        return None, why
    return new, ""


def _replace(op: Operation, new: Operation, rewrite: _Rewrite) -> None:
    """`new` (float16) takes `op`'s place: float32 readers of a result read it cast back."""
    graph = rewrite.graph
    renames = []
    for old, result in zip(op.outputs, new.outputs):
        if old.data_type == result.data_type:
            old.replace_all_uses_with(result, replace_graph_outputs=True)
            renames.append((result, old.name))
            continue
        back = graph.add_operation("cast", [result], {"dataType": "float32"},
                                   name=graph.fresh_name(f"{old.name}/float32"), before=op)
        rewrite.made_ops.append(back)
        old.replace_all_uses_with(back.output, replace_graph_outputs=True)
        rewrite.half[id(back.output)] = result
        renames.append((back.output, old.name))
    name = op.name
    graph.remove_operation(op)
    for operand, old_name in renames:
        graph.rename(operand, old_name)
    graph.rename_operation(new, name)


@graph_pass("float16_compute")
def float16_compute(graph: Graph, ctx: PassContext) -> PassResult:
    if check_compute(ctx.compute) != "float16":
        return PassResult(False)
    target = ctx.target
    if target is None:
        raise ConverterError("float16 compute needs a target to know which ops take float16",
                             fix="give a target (the portable one is the spec's op table)")
    if not takes_float16(target):
        raise ConverterError(f"target '{target.name}' takes no float16 operand",
                             where="--compute float16",
                             fix="leave --compute out (--weights float16 still halves the "
                                 "weights), or give a target that takes float16")
    rewrite = _Rewrite(graph)
    kept: dict[str, list[str]] = {}
    checked: dict[int, bool] = {}
    computed = 0
    for op in list(graph.operations):
        if op.graph is not graph or not (_float32(op.inputs) or _float32(op.outputs)):
            continue
        why = _why_float32(op, rewrite, checked)
        new = None
        if why is None:
            new, why = _rebuild(op, rewrite, target)
        if new is None:
            kept.setdefault(why, []).append(f"{op.op_type} '{op.name}'")
            continue
        _replace(op, new, rewrite)
        computed += 1
    once, twice = [], []
    for const in rewrite.cleanup():  # read by ops of both types
        why = rewrite.store_once(const, ctx)
        if why is None:
            once.append(const.name)
        else:
            twice.append(f"{const.name} ({why})")
    casts = sum(1 for op in rewrite.made_ops if op.graph is graph)
    notes = [f"{computed} operation{'s' * (computed != 1)} compute in float16, "
             f"{casts} cast{'s' * (casts != 1)} between float16 and float32"]
    notes += [f"kept float32 ({why}): {', '.join(names)}" for why, names in kept.items()]
    if once:
        notes.append(f"stored once as float32, cast to float16 for its float16 readers (read "
                     f"by ops of both types): {', '.join(once)}")
    if twice:
        notes.append(f"stored both as float32 and float16 (read by ops of both types): "
                     f"{', '.join(twice)}")
    counts = {"computed in float16": computed, "casts": casts,
              "kept float32": sum(map(len, kept.values()))}
    return PassResult(bool(computed), counts, notes)
