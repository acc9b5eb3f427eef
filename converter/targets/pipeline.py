"""Rewrite a graph for a target, then prove it fits: `webnn-convert convert SRC --target T`.

    report = convert_for_target(graph, "coreml")          # edits `graph` in place
    print("\\n".join(report.lines()))

The passes are `passes.pipeline_for(target)`, each verified by `run_passes`; then `check` runs on
the result. A graph that still breaks the target raises UnsupportedError listing every
remaining violation (its `violations` and `report` attributes carry them as data), so a
conversion either fits the target or says everything that does not.

`check_after_passes(graph, target)` runs the same pipeline without raising: what `check
--target` reports, so its verdict is whether `convert --target` succeeds, with the violations
the passes fixed listed apart (`report.fixed`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConverterError, UnsupportedError
from ..ir import Graph
from ..passes import PassContext, PassResult, pipeline_for, run_passes
from ..passes.float16_compute import check_compute
from ..passes.weight_types import check_block_size, check_weights, weights_pass
from . import PORTABLE, Target, load_target
from .check import Violation, check

__all__ = ["TargetReport", "convert_for_target", "check_after_passes", "store_weights",
           "IO_LAYOUTS"]

IO_LAYOUTS = ("nchw", "nhwc")


@dataclass
class TargetReport:
    """What the pipeline did for one target."""

    target: str
    passes: list[tuple[str, PassResult]]
    transposes_before: int
    transposes_after: int
    operations_before: int
    operations_after: int
    io_layout: str | None = None
    emulated: dict[str, str] = field(default_factory=dict)  # ops left that the target emulates
    violations: list[Violation] = field(default_factory=list)
    # what the source broke that the passes fixed, as (the pass that fixed it, or None when
    # no advice names one, violation): filled by check_after_passes
    fixed: list[tuple[str | None, Violation]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.violations

    def lines(self) -> list[str]:
        """The report as text, one line each: the passes that changed something (or counted
        something) and their notes, then the transposes and operation counts."""
        out = []
        for name, result in self.passes:
            counts = ", ".join(f"{k} {v}" for k, v in result.counts.items())
            if result.changed or any(result.counts.values()):
                out.append(f"{name}: {'changed' if result.changed else 'unchanged'}"
                           f"{'; ' + counts if counts else ''}")
            out += [f"{name}: {note}" for note in result.notes]
        out.append(f"transposes: {self.transposes_before} before, {self.transposes_after} after")
        out.append(f"operations: {self.operations_before} before, {self.operations_after} after")
        out += [f"{self.target} emulates {op} ({how})" for op, how in self.emulated.items()]
        return out

    def to_json(self) -> dict:
        return {"target": self.target, "passed": self.passed, "ioLayout": self.io_layout,
                "passes": [{"name": n, **r.to_json()} for n, r in self.passes],
                "transposes": {"before": self.transposes_before,
                               "after": self.transposes_after},
                "operations": {"before": self.operations_before,
                               "after": self.operations_after},
                "emulated": dict(self.emulated),
                "violations": [v.to_json() for v in self.violations],
                "fixed": [{**v.to_json(), "fixedBy": by} for by, v in self.fixed]}

    def fixed_counts(self) -> dict[str | None, int]:
        """How many of the source's violations each pass fixed (None: a pass no advice names),
        in the order first met."""
        counts: dict[str | None, int] = {}
        for by, _ in self.fixed:
            counts[by] = counts.get(by, 0) + 1
        return counts


def convert_for_target(graph: Graph, target: Target | str | Path, *,
                       io_layout: str | None = None, dequantize: bool = False,
                       weights: str = "float32", block_size: int | None = None,
                       compute: str = "float32") -> TargetReport:
    """Rewrite `graph` in place for `target` and check the result.

    Args:
        graph: the graph to rewrite (edited in place).
        target: a Target, a built-in target's name or a target file's path.
        io_layout: the layout graph inputs and outputs take (`nchw`/`nhwc`); None keeps the
            source's.
        dequantize: make every dequantizeLinear of constant weights a float constant (its
            result type) at conversion time, even where the target takes the quantized type;
            by default weights stay quantized where the target takes them or an exact
            re-encoding (uint4 -> int4 ...), and only the rest is dequantized.
        weights: "float16" stores float32 weights as float16, each read through a cast to
            float32 (the float16_weights pass); "int8"/"int4" stores conv/matmul/gemm weights
            as integers read through dequantizeLinear (the integer_weights pass). Either runs
            last, so the check sees what it added.
        block_size: values per int4 block (weights "int4" only; None: the default, 32).
        compute: "float16" computes each op in float16 where the target takes its float16
            form, the graph's inputs and outputs staying float32 (the float16_compute pass,
            after integer_weights and before float16_weights).

    Returns the report. Raises UnsupportedError with every violation left after the passes.
    """
    target = load_target(target)
    if io_layout is not None and io_layout not in IO_LAYOUTS:
        raise ConverterError(f"unknown io layout '{io_layout}'",
                             fix=f"use one of {', '.join(IO_LAYOUTS)}, or leave it out to keep "
                                 f"the source's layout")
    check_weights(weights)
    block_size = check_block_size(weights, block_size)
    check_compute(compute)
    transposes_before, operations_before = _transposes(graph), len(graph.operations)
    names = pipeline_for(target) + weights_pass(weights, compute)
    results = run_passes(graph, names,
                         PassContext(target=target, io_layout=io_layout, dequantize=dequantize,
                                     weights=weights, block_size=block_size, compute=compute))
    violations = check(graph, target)
    used = {op.op_type for op in graph.operations}
    report = TargetReport(target.name, results, transposes_before, _transposes(graph),
                          operations_before, len(graph.operations), io_layout,
                          {op: how for op, how in sorted(target.emulated.items()) if op in used},
                          violations)
    if violations:
        error = UnsupportedError(
            [v.line().removeprefix(f"{target.name}: ") for v in violations],
            where=f"target '{target.name}'",
            fix=f"each item names the pass or option that would fix it; "
                f"`webnn-convert check GRAPH --target {target.name}` lists them again")
        error.violations = violations
        error.report = report
        raise error
    return report


def store_weights(graph: Graph, weights: str, block_size: int | None = None,
                  compute: str = "float32") -> list[tuple[str, PassResult]]:
    """Without a target: store float32 weights as `weights` ("float16": the float16_weights
    pass, "int8"/"int4": integer_weights, keeping int4 as int4; "float32" changes nothing)
    and, with compute "float16", compute in float16 where the portable target (the spec's
    op table) takes it. Edits `graph` in place; returns each pass's name and result."""
    block_size = check_block_size(check_weights(weights), block_size)
    names = weights_pass(weights, check_compute(compute)) or ["float16_weights"]  # a no-op
    # float16 compute asks which ops take float16: without a target, what the spec requires
    target = load_target(PORTABLE) if compute != "float32" else None
    return run_passes(graph, names, PassContext(target=target, weights=weights,
                                                block_size=block_size, compute=compute))


def check_after_passes(graph: Graph, target: Target | str | Path, *,
                       io_layout: str | None = None, dequantize: bool = False) -> TargetReport:
    """Will `convert --target` succeed? Run its pipeline on `graph` (edited in place) and report,
    without raising for violations: `violations` are what remains after the passes (the
    verdict), `fixed` what the source broke that the passes fixed, each with the pass that
    fixed it. Errors other than remaining violations raise as they do in convert_for_target.
    """
    target = load_target(target)
    before = check(graph, target)
    try:
        report = convert_for_target(graph, target, io_layout=io_layout, dequantize=dequantize)
    except UnsupportedError as e:
        if getattr(e, "report", None) is None:
            raise
        report = e.report
    remaining = {_place(v) for v in report.violations}
    changed = [name for name, result in report.passes if result.changed]
    report.fixed = [(_fixer(v, changed), v) for v in before if _place(v) not in remaining]
    return report


def _place(v: Violation) -> tuple:
    """What makes a violation the same one before and after the passes."""
    return (v.kind, v.op, v.node, v.operand, v.tensor, v.found)


def _fixer(v: Violation, changed: list[str]) -> str | None:
    """The pass the advice names for `v` (the first of them that changed the graph); None for
    a violation no advice pins to a pass (it went with the passes' other edits: folding...)."""
    from .advice import ADVICE

    named = next((a.fixed_by for a in ADVICE if a.key == v.advice), ())
    ran = [name for name in named if name in changed]
    return (ran or list(named) or [None])[0]


def _transposes(graph: Graph) -> int:
    return sum(op.op_type == "transpose" for op in graph.operations)
