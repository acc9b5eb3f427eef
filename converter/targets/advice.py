"""What `check` says would fix a violation: a table of advice, each naming the pass that fixes
it and the condition under which that pass does.

    @advice("rank", "op-rank", fixed_by=("rank",), when="the op's rank rule plans it into range")
    def _op_rank(s: Situation) -> str | None:
        ...   # the sentence when the condition holds, else None

For a violation, the entries of its kind are tried in table order and the first one whose
condition holds gives the sentence; each kind ends with an entry no pass backs, whose sentence
begins "no pass". So `check` never names a pass for a case that pass leaves alone: the rank
advice asks the rank pass's own planner (`passes.rank.plan_rank`); the decompose and
constant_operands advice expands a copy of the op the way those passes would (`trial_expand`);
the int64 advice checks that constants fit int32; the quantized weights advice asks that pass's
own `decide`; the pad_modes and int_clamp advice build the rewrite on a copy (`trial_expand`),
and the split_constants advice asks that pass's `split_problem`. tests/targets/test_advice.py
builds a graph for every entry and runs the target pipeline to prove the named pass fixes it
(and that what no pass fixes stays).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from .. import dtypes
from .. import ops as _ops  # noqa: F401  (the op catalogue the IR adds operations through)
from ..ir import Operand, Operation

if TYPE_CHECKING:
    from . import Target

__all__ = ["Situation", "Advice", "ADVICE", "advice", "advise", "trial_expand"]


@dataclass(frozen=True)
class Situation:
    """One violation as the advice sees it. `op` is None for a graph input, constant or
    output (then `graph_kind` says which); `operand` is the tensor at fault, if any."""

    target: "Target"
    kind: str
    op: Operation | None = None
    operand: Operand | None = None
    graph_kind: str | None = None
    data_type: str | None = None
    allowed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Advice:
    kind: str
    key: str
    fixed_by: tuple[str, ...]  # the passes that fix it (one is enough); (): no pass does
    when: str  # the condition, in words
    sentence: Callable[[Situation], "str | None"]


ADVICE: list[Advice] = []


def advice(kind: str, key: str, *, fixed_by: tuple[str, ...], when: str):
    """Register the decorated function as one piece of advice (tried in registration order)."""

    def register(fn):
        if any(a.key == key for a in ADVICE):
            raise ValueError(f"advice {key} registered twice")
        ADVICE.append(Advice(kind, key, fixed_by, when, fn))
        return fn

    return register


def advise(s: Situation) -> tuple[Advice, str]:
    """The first advice of the violation's kind whose condition holds, and its sentence."""
    for entry in ADVICE:
        if entry.kind == s.kind:
            sentence = entry.sentence(s)
            if sentence is not None:
                return entry, sentence
    raise AssertionError(f"no advice for a {s.kind} violation: the table must end each kind "
                         f"with an entry that always applies")


def trial_expand(op: Operation, *, acceptable, available, tolerable=lambda o: False,
                 rule=None) -> str | None:
    """Expand a copy of `op` (fresh inputs of its descriptors, its constants shared, no bytes
    copied) the way a pass would, by `rule` (default: its decomposition); None when that
    works, else why not."""
    from ..ir import Graph
    from ..passes.decompose import CannotExpand, Expander

    trial = Graph("advice_trial")
    inputs = []
    for i, x in enumerate(op.inputs):
        if x is None:
            inputs.append(None)
        elif x.is_constant:
            inputs.append(trial.add_constant(f"constant{i}", x.constant))
        else:
            inputs.append(trial.add_input(f"input{i}", x.data_type, list(x.shape)))
    copy = trial.add_operation(op.op_type, inputs, dict(op.attrs), name="op")
    for i, out in enumerate(copy.outputs):
        trial.set_output(f"output{i}", out)
    try:
        Expander(trial, acceptable=acceptable, available=available,
                 tolerable=tolerable).expand(copy, rule)
    except CannotExpand as why:
        return str(why)
    return None


def _decomposition_problem(s: Situation) -> str | None:
    """Why the decompose pass cannot replace the op on this target (None: it can)."""
    target = s.target

    def wanted(op_type: str) -> bool:
        return not target.supports(op_type) or op_type in target.emulated

    return trial_expand(s.op, acceptable=lambda o: not wanted(o.op_type),
                        available=lambda t: not wanted(t),
                        tolerable=lambda o: target.supports(o.op_type))


# -- unsupported ops ---------------------------------------------------------------------------
@advice("unsupported-op", "dequantize-weights", fixed_by=("quantized_weights",),
        when="a dequantizeLinear of constant weights, scale and zero point: the pass computes "
             "it at conversion time")
def _dequantize_weights(s: Situation) -> str | None:
    op = s.op
    if op.op_type != "dequantizeLinear" or not all(x.is_constant for x in op.inputs):
        return None
    return (f"the 'quantized_weights' pass dequantizes the weights to {op.output.data_type} "
            f"at conversion time")


@advice("unsupported-op", "decompose", fixed_by=("decompose",),
        when="the op's decomposition builds, on this target, from ops the target has")
def _decompose(s: Situation) -> str | None:
    if _decomposition_problem(s) is not None:
        return None
    return (f"`convert --target {s.target.name}` decomposes {s.op.op_type} into ops it has "
            f"(the 'decompose' pass)")


@advice("unsupported-op", "no-decomposition", fixed_by=(), when="otherwise")
def _no_decomposition(s: Situation) -> str:
    return (f"no pass rewrites {s.op.op_type}: {_decomposition_problem(s)}; the model cannot "
            f"run on {s.target.name}")


# -- data types --------------------------------------------------------------------------------
@advice("data-type", "int64-to-int32", fixed_by=("data_types",),
        when="the tensor is int64 and the target takes int32 there")
def _int64(s: Situation) -> str | None:
    if s.data_type != "int64" or "int32" not in s.allowed:
        return None
    if s.operand is not None and s.operand.is_constant and not _fits_int32(s.operand):
        return None
    return "the 'data_types' pass narrows int64 to int32 (constants checked for overflow)"


def _fits_int32(constant: Operand) -> bool:
    data = constant.constant
    if data.fill is not None:
        values = [int(data.fill)]
    else:
        array = data.numpy()
        values = [int(array.min()), int(array.max())] if array.size else []
    return all(-2**31 <= v < 2**31 for v in values)


def _weight_decisions(s: Situation) -> list | None:
    """The quantized_weights pass's decisions for the dequantizeLinear ops at fault: the op
    itself, or every reader of a graph constant (None: not weights that pass handles)."""
    from ..passes.quantized_weights import decide

    if s.op is not None:
        ops = [s.op]
    elif s.graph_kind == "constant" and s.operand is not None and s.operand.uses():
        ops = list({id(u.op): u.op for u in s.operand.uses()}.values())
        if not all(u.index in (0, 2) for u in s.operand.uses()):
            return None
    else:
        return None
    if not all(op.op_type == "dequantizeLinear" and op.inputs[0].is_constant
               and op.inputs[2].is_constant for op in ops):
        return None
    decisions = [decide(op, s.target) for op in ops]
    return None if any(d.action in ("keep", "stays") for d in decisions) else decisions


@advice("data-type", "quantized-weights", fixed_by=("quantized_weights",),
        when="constant weights or zero points of dequantizeLinear (or that op's scale or "
             "result) the pass re-encodes exactly or dequantizes at conversion time")
def _quantized_weights(s: Situation) -> str | None:
    decisions = _weight_decisions(s)
    if not decisions:
        return None
    d = decisions[0]
    if d.action == "dequantize":
        how = f"dequantizes the weights to {d.new_type} at conversion time ({d.why})"
    elif dtypes.info(d.new_type).bits == dtypes.info(d.data_type).bits:
        how = f"re-bases the weights to {d.new_type} (zero point {d.shift:+d}; exact)"
    else:
        how = f"widens the weights to {d.new_type}" + \
            (f" (zero point {d.shift:+d}; exact)" if d.shift else " (exact)")
    return f"the 'quantized_weights' pass {how}; --dequantize makes every such weight float"


@advice("data-type", "int8-in-float", fixed_by=("int8_in_float",),
        when="an int8 op that computes exactly in float32 (data movement, maxPool2d), which the "
             "target takes in float32 but not in int8")
def _int8_in_float(s: Situation) -> str | None:
    from ..passes.int8_in_float import lacks_int8

    if s.op is None or s.data_type != "int8" or not lacks_int8(s.op, s.target):
        return None
    return (f"the 'int8_in_float' pass computes this {s.op.op_type} in float32 between casts "
            f"(exact: its int8 values are float32 values)")


@advice("data-type", "int-clamp", fixed_by=("int_clamp",),
        when="an integer clamp the target refuses, whose max and min with constant bounds fit "
             "the target")
def _int_clamp(s: Situation) -> str | None:
    from ..passes.int_clamp import refused_int_clamp

    if s.op is None or not refused_int_clamp(s.op, s.target) \
            or _int_clamp_problem(s) is not None:
        return None
    return (f"the 'int_clamp' pass clamps {s.data_type} with max and min by constant bounds "
            f"(exact)")


def _int_clamp_problem(s: Situation) -> str | None:
    """Why the int_clamp pass cannot rewrite the clamp (None: it can), tried on a copy."""
    from ..passes.decompositions import get_decomposition
    from ..passes.int_clamp import fits

    return trial_expand(s.op, rule=get_decomposition("clamp"), acceptable=fits(s.target),
                        available=s.target.supports)


@advice("data-type", "no-type-change", fixed_by=(), when="otherwise")
def _no_type_change(s: Situation) -> str:
    why = " (its values do not fit int32)" if s.data_type == "int64" and "int32" in s.allowed \
        else ""
    return (f"no pass converts {s.data_type} here{why}: the source model must compute in one "
            f"of {', '.join(s.allowed) or 'the target types'}")


# -- ranks -------------------------------------------------------------------------------------
@advice("rank", "interface-rank", fixed_by=(), when="a graph input or output")
def _interface(s: Situation) -> str | None:
    if s.op is not None or s.graph_kind == "constant":
        return None
    return ("no pass changes a graph input's or output's shape: they are the graph's "
            "interface; reshape them in the source model")


def _readers_plans(s: Situation) -> list | None:
    """The rank pass's plans for every op that reads a graph constant, as (op, plan); None when
    one of them keeps its rank (the constant then keeps its own)."""
    from ..passes.rank import plan_rank

    found = []
    for op in {id(u.op): u.op for u in s.operand.uses()}.values():
        plan = plan_rank(s.target, op)
        if plan is None or isinstance(plan, str):
            return None
        found.append((op, plan))
    return found or None


@advice("rank", "constant-rank", fixed_by=("rank",),
        when="a graph constant whose every reader the rank pass rewrites, giving the constant "
             "an accepted rank")
def _constant(s: Situation) -> str | None:
    if s.graph_kind != "constant":
        return None
    found = _readers_plans(s)
    if found is None:
        return None
    limits = (s.target.io_limits("constant") or {}).get("rankRange") or {}
    ranks = set()
    for op, plan in found:
        for slot, x in enumerate(op.inputs):
            if x is s.operand:
                if slot not in plan.shapes:
                    return None
                ranks.add(len(plan.shapes[slot]))
    if not all(limits.get("min", 0) <= r <= limits.get("max", r) for r in ranks):
        return None
    # One reader: the constant is stored at the new shape; several: reshaped, then folded.
    return (f"the 'rank' pass gives the constant rank {', '.join(map(str, sorted(ranks)))} "
            f"when it rewrites the ops that read it")


@advice("rank", "constant-rank-stays", fixed_by=(), when="any other graph constant")
def _constant_stays(s: Situation) -> str | None:
    if s.graph_kind != "constant":
        return None
    return ("no pass rewrites this: the ops that read the constant keep their rank, so the "
            "constant keeps its own; reshape it in the source model")


@advice("rank", "op-rank", fixed_by=("rank",), when="the op's rank rule plans it into range")
def _op_rank(s: Situation) -> str | None:
    from ..passes.rank import plan_rank

    plan = plan_rank(s.target, s.op)
    if plan is None or isinstance(plan, str):
        return None
    ranks = sorted({len(shape) for shape in plan.shapes.values()})
    return (f"the 'rank' pass runs {s.op.op_type} at rank "
            f"{', '.join(map(str, ranks))} between reshapes")


@advice("rank", "reshape-merges", fixed_by=("rank",),
        when="a reshape whose out-of-range side only meets ops the rank pass rewrites: the "
             "reshapes it adds around them merge with this one")
def _reshape_merges(s: Situation) -> str | None:
    from ..passes.rank import plan_rank

    op = s.op
    if op.op_type != "reshape":
        return None
    def rewritten(other: Operation | None) -> bool:
        return other is not None and not isinstance(plan_rank(s.target, other),
                                                    (str, type(None)))

    def side_ok(key: str, value: Operand, others: list) -> bool:
        """In range, or every op across that side is rewritten (its reshapes merge in)."""
        window = (s.target.operand_limits("reshape", key) or {}).get("rankRange") or {}
        if window.get("min", 0) <= value.rank <= window.get("max", value.rank):
            return True
        return bool(others) and not value.is_graph_output() and not value.is_input \
            and all(rewritten(o) for o in others)

    out, x = op.output, op.inputs[0]
    readers = list({id(u.op): u.op for u in out.uses()}.values())
    only_reader = all(u.op is op for u in x.uses())
    if not (side_ok("output", out, readers)
            and side_ok("input", x, [x.producer] if only_reader else [])):
        return None
    return ("the 'rank' pass rewrites the ops on its out-of-range side between reshapes, and "
            "this reshape merges with theirs")


@advice("rank", "op-rank-stays", fixed_by=(), when="otherwise")
def _op_rank_stays(s: Situation) -> str:
    from ..passes.rank import plan_rank

    why = plan_rank(s.target, s.op)
    why = why if isinstance(why, str) else f"{s.op.op_type}'s operands are outside the range"
    return f"no pass rewrites {s.op.op_type} at another rank: {why}"


# -- constant operands -------------------------------------------------------------------------
@advice("not-constant", "fold", fixed_by=("fold_constants", "constant_operands"),
        when="the operand depends on constants only")
def _fold(s: Situation) -> str | None:
    from ..passes.constant_operands import constant_rooted

    if s.operand.is_input or not constant_rooted(s.operand):
        return None
    return ("it depends on constants only: the 'fold_constants' pass computes it at conversion "
            "time (the 'constant_operands' pass does where folding would grow the weights)")


def _rewrite_problem(s: Situation) -> tuple[str | None, str]:
    """(why the constant_operands pass cannot rewrite the op, or None; how it would)."""
    from ..passes.constant_operands import computed_operands
    from ..passes.decompositions import get_detaching

    target = s.target
    pending = computed_operands(s.op, target)
    detach = get_detaching(s.op.op_type)
    rule = detach.rule if detach and set(pending) <= set(detach.operands) else None
    why = trial_expand(s.op, rule=rule,
                       acceptable=lambda o: target.supports(o.op_type)
                       and not computed_operands(o, target),
                       available=lambda t: target.supports(t) and not target.must_be_constant(t))
    return why, ("detaches the operand" if rule else
                 "decomposes it into ops that need no constant operands")


@advice("not-constant", "rewrite", fixed_by=("constant_operands",),
        when="the op's detaching rule or decomposition builds, on this target, from ops that "
             "need no computed operand constant")
def _rewrite(s: Situation) -> str | None:
    why, how = _rewrite_problem(s)
    if why is not None:
        return None
    return f"the 'constant_operands' pass rewrites {s.op.op_type}: it {how}"


@advice("not-constant", "stays-computed", fixed_by=(), when="otherwise")
def _stays_computed(s: Situation) -> str:
    why, _ = _rewrite_problem(s)
    return (f"no pass rewrites {s.op.op_type} so that it takes a computed operand ({why}); "
            f"give it a constant in the source model")


# -- option values -----------------------------------------------------------------------------
def _pad_problem(s: Situation) -> str | None:
    """Why the pad_modes pass cannot rewrite the pad (None: it can), tried on a copy."""
    from ..passes.pad_modes import fits, pad_rule

    return trial_expand(s.op, rule=pad_rule(s.target), acceptable=fits(s.target),
                        available=s.target.supports)


@advice("option", "pad-as-gathers", fixed_by=("pad_modes",),
        when="a pad in a mode the target refuses (edge, reflection) whose gathers with constant "
             "indices fit the target")
def _pad_as_gathers(s: Situation) -> str | None:
    from ..passes.pad_modes import REWRITTEN_MODES, refused_pad

    op = s.op
    if not refused_pad(op, s.target) or op.attr("mode") not in REWRITTEN_MODES \
            or _pad_problem(s) is not None:
        return None
    return (f"the 'pad_modes' pass copies the {op.attr('mode')} rows with gathers by constant "
            f"indices (exact)")


@advice("option", "option-stays", fixed_by=(), when="otherwise")
def _option_stays(s: Situation) -> str:
    op = s.op
    why = f" ({_pad_problem(s)})" if op.op_type == "pad" else ""
    return (f"no pass rewrites this {op.op_type}{why}: the source model must use an option "
            f"value {s.target.name} takes")


# -- tensor size -------------------------------------------------------------------------------
def _constant_over_limit(s: Situation) -> bool:
    from ..passes.split_constants import over_limit

    return s.operand is not None and over_limit(s.operand, s.target)


@advice("tensor-size", "split-constant", fixed_by=("split_constants",),
        when="a graph constant over the target's maxConstantByteLength (but not its "
             "maxTensorByteLength) whose pieces the target's concat joins")
def _split_constant(s: Situation) -> str | None:
    from ..passes.split_constants import split_problem

    if not _constant_over_limit(s) or split_problem(s.operand, s.target) is not None:
        return None
    return (f"the 'split_constants' pass cuts it into constants of at most "
            f"{s.target.max_constant_bytes} bytes joined by concat (exact)")


@advice("tensor-size", "too-big", fixed_by=(), when="always")
def _too_big(s: Situation) -> str:
    if _constant_over_limit(s):
        from ..passes.split_constants import split_problem

        return (f"no pass splits this constant ({split_problem(s.operand, s.target)}): give "
                f"smaller dimensions (--dim, --input-shape) or split the model")
    return ("no pass splits a tensor: give smaller dimensions (--dim, --input-shape) or split "
            "the model")
