"""Run the generated one-op cases on a backend and record, per case, whether it built and
whether it computed within the case's bounds of the float64 reference.

    probe = run_probe("chromium", ops=["pad", "clamp"])   # or "device:phone" (on_device.py)
    for result in probe.results:
        print(result.op, result.data_type, result.options, result.built, result.computed)

The cases are each op of the backend's opSupportLimits() that has a generated case
(cases.py), over every data type the spec allows its main operand (the browser's list
included: a type it leaves out is probed too, so the report says whether build() takes it),
and, for the ops VARIANTS lists, over each value of those options; then the rank limits of the
element-wise ops, and the largest constant build() takes (sizes.py). Where they run is the
backend's business (backends.py: local Chromium in batches of page visits, a device one job
per case with a few in flight).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from .. import dtypes
from ..errors import ConverterError, OpValidationError
from .cases import RANKED, VARIANTS, Case, case_ops, exact_bounds, main_operand, make_case
from .sizes import SIZE_OP, constant_case, constant_sizes

__all__ = ["Probe", "ProbeResult", "case_of", "plan_cases", "run_probe"]
# The runner's stages up to and including build(): a failure there means not built.
_BUILD_STAGES = ("import", "createContext", "weights", "build", "timeout", "page")


@dataclass
class ProbeResult:
    """One case's verdict. `listed`: the browser's opSupportLimits() lists `data_type` for the
    op's main operand. `built`: its build() took the graph. `computed`: every output within the
    case's bounds of the float64 reference (None when not built, or not run). `error`: the
    backend's one-line message when it failed; `mismatch`: how an output missed its bounds."""

    op: str
    data_type: str
    operand: str
    options: dict[str, str]
    listed: bool
    built: bool
    computed: bool | None
    error: str = ""
    mismatch: str = ""
    rank: int | None = None  # a case probing the op's rank limits: its data operands' rank
    constant_bytes: int | None = None  # a case probing the constant size limit: its bytes

    @property
    def name(self) -> str:
        extra = "".join(f" {k}={v}" for k, v in self.options.items())
        if self.rank is not None:
            extra += f" rank={self.rank}"
        if self.constant_bytes is not None:
            extra += f" of {self.constant_bytes} bytes"
        return f"{self.op} {self.data_type}{extra}"

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "dataType": self.data_type, "operand": self.operand,
                "options": self.options, "rank": self.rank,
                "constantBytes": self.constant_bytes, "listed": self.listed,
                "built": self.built,
                "computed": self.computed, "error": self.error, "mismatch": self.mismatch}


@dataclass
class Probe:
    """What one probe found: the backend, its own limits, and a result per case. `runtime`:
    as given (chromium, device:NAME ...); `label`: the probed target's name stem."""

    runtime: str
    browser: str
    limits: dict[str, Any]
    results: list[ProbeResult] = field(default_factory=list)
    ops: list[str] | None = None  # the ops asked for (None: every op it lists)
    # what was not probed, and why: "op data type: reason" (no graph for the type, an op the
    # browser does not list)
    skipped: list[str] = field(default_factory=list)
    label: str = ""


def _allowed_types(op: str, operand: str) -> list[str]:
    """The data types the spec allows `op`'s `operand` (following its "same as")."""
    from ..ops.registry import spec_limits

    entry = spec_limits()[op]
    types = entry[operand]["dataTypes"]
    while isinstance(types, dict):
        types = entry[types["sameAs"]]["dataTypes"]
    return list(types)


def plan_cases(limits: dict[str, Any], ops: Iterable[str] | None = None
               ) -> tuple[list[tuple[Case, str, bool]], list[str]]:
    """The cases to probe against `limits` (an opSupportLimits()), as (case, main operand,
    listed): every op both list and case generator have (or `ops`), each data type the spec
    allows its main operand and each VARIANTS value; and what is left out, each with why: a
    data type the case generator has no values for (packed 4-bit graph inputs), an op the
    browser does not list (there is nothing to narrow)."""
    wanted = sorted(set(case_ops()) & set(limits)) if ops is None else _known(ops)
    planned, skipped = [], []
    for op in wanted:
        if op not in limits:
            skipped.append(f"{op}: the browser does not list it")
            continue
        operand = main_operand(op, limits[op])
        listed = limits[op][operand]["dataTypes"]
        types = [t for t in dtypes.DATA_TYPES if t in _allowed_types(op, operand) or t in listed]
        variants = VARIANTS.get(op, {})
        choices = [dict(zip(variants, values))
                   for values in itertools.product(*variants.values())] or [{}]
        for data_type in types:
            for options in choices:
                try:
                    case = make_case(op, data_type, **options)
                except OpValidationError as e:  # the case's other operands' types refuse it
                    skipped.append(f"{op} {data_type}: not a graph the spec allows ({e.what})")
                    continue
                except (KeyError, ValueError) as e:  # values it cannot make for the type
                    skipped.append(f"{op} {data_type}: no case values for the type ({e})")
                    continue
                planned.append((case, operand, data_type in listed))
    return planned, skipped


def _known(ops: Iterable[str]) -> list[str]:
    """`ops`, each checked to have a probe case (every op of the catalogue has one, and
    "constant" names the constant size cases)."""
    ops = list(dict.fromkeys(ops))
    unknown = [op for op in ops if op not in case_ops() and op != SIZE_OP]
    if unknown:
        raise ConverterError(f"no probe case for op '{unknown[0]}'",
                             fix="name ops of `webnn-convert ops` (MLGraphBuilder method names)")
    return ops


def case_of(result: ProbeResult) -> Case:
    """The case `result` is the verdict on, made again (cases are seeded: the same graph)."""
    if result.constant_bytes is not None:
        return constant_case(result.constant_bytes)
    return make_case(result.op, result.data_type, rank=result.rank, **result.options)


def run_probe(runtime: str = "chromium", ops: Iterable[str] | None = None,
              say: Callable[[str], None] = lambda line: None) -> Probe:
    """Probe `runtime` (chromium, device, device:NAME, device:NAME:TYPE) on the planned cases
    (plan_cases), then the rank limits of the RANKED ops among them, then (every op, or
    "constant" among `ops`) the largest constant its build() takes. `say` hears what a
    device probe waits for."""
    from .backends import backend

    if ops is not None:
        ops = _known(ops)  # before the browser starts
    where = backend(runtime, say)
    limits = where.limits
    probe = Probe(runtime, where.browser, limits, ops=ops, label=where.label)
    planned, probe.skipped = plan_cases(limits, [op for op in ops if op != SIZE_OP]
                                        if ops is not None else None)

    def run(cases) -> list[ProbeResult]:
        got = where.run([(case.graph, case.feeds) for case, _, _ in cases])
        return [_judged(case, operand, listed, outputs)
                for (case, operand, listed), outputs in zip(cases, got)]

    probe.results += run(planned)
    probe.results += _rank_ends(limits, ops, run)
    if ops is None or SIZE_OP in ops:
        def built(size: int) -> bool:
            result = run([(constant_case(size), "constant", True)])[0]
            probe.results.append(result)
            return result.built

        constant_sizes(built, limits.get("maxTensorByteLength"))
    return probe


def _rank_ends(limits: dict[str, Any], ops, run) -> list[ProbeResult]:
    """The rank limits of the RANKED ops, probed at each end of the range the browser lists
    (on its first listed data type); an end build() refuses is stepped inward, a rank at a
    time, until one builds (the edge of what it takes) or none is left."""
    ends = {}  # (op, "min"|"max") -> (data type, operand, rank, the other end)
    for op in (sorted(set(RANKED) & set(limits)) if ops is None else
               [o for o in ops if o in RANKED and o in limits]):
        operand = main_operand(op, limits[op])
        entry = limits[op][operand]
        if "rankRange" not in entry or not entry["dataTypes"]:
            continue  # no rank limit stated: nothing to probe
        data_type = "float32" if "float32" in entry["dataTypes"] else entry["dataTypes"][0]
        low, high = entry["rankRange"]["min"], entry["rankRange"]["max"]
        ends[(op, "min")] = (data_type, operand, low, high)
        if high != low:
            ends[(op, "max")] = (data_type, operand, high, low)
    results = []
    while ends:
        keys = list(ends)
        cases = [(make_case(op, ends[(op, end)][0], rank=ends[(op, end)][2]),
                  ends[(op, end)][1], True) for op, end in keys]
        judged = run(cases)
        results += judged
        for (op, end), result in zip(keys, judged):
            data_type, operand, rank, other = ends.pop((op, end))
            step = 1 if end == "min" else -1
            if not result.built and rank != other:
                ends[(op, end)] = (data_type, operand, rank + step, other)
    return results


def _judged(case: Case, operand: str, listed: bool, outputs) -> ProbeResult:
    result = ProbeResult(case.op, case.data_type, operand, dict(case.options), listed,
                         built=True, computed=None, rank=case.rank,
                         constant_bytes=case.constant_bytes)
    if isinstance(outputs, ConverterError):
        result.error = outputs.what  # the case is one op: its place says nothing more
        result.built = getattr(outputs, "stage", "build") not in _BUILD_STAGES
        return result
    result.mismatch = _mismatch(case, outputs)
    result.computed = not result.mismatch
    return result


def _mismatch(case: Case, outputs: dict[str, np.ndarray]) -> str:
    """How the outputs miss the case's bounds of the float64 reference, or ""."""
    from ..verification.parity import compare
    from ..verification.reference import evaluate

    want = evaluate(case.graph, case.feeds)
    for name, operand in case.graph.outputs.items():
        exact = want[name]
        if exact.dtype.kind == "f":  # the exact result, rounded to the output's type
            exact = exact.astype(dtypes.numpy_dtype(operand.data_type))
        parity = compare(name, outputs[name], exact, exact_bounds(case))
        if not parity.passed:
            return (f"{name}: {parity.reason}, max {parity.max_ulp} ULP / "
                    f"{parity.max_abs:.3g} abs at {parity.worst_index}")
    return ""
