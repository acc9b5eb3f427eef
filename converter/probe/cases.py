"""One generated graph per (op, data type): the cases the browser suite runs in Chromium and on
our ONNX executor, and `webnn-convert probe` runs on a backend, with the parity bounds each
output is held to.

`make_case(op, data_type)` builds the graph for that op with its main operand (`input`, `a`,
`inputs`, or `trueValue` for where; `main_operand()` names it) of that data type.
`make_case(op, data_type, **options)` sets an option that `VARIANTS` lists for the op to one of
its values (pad's mode), where a backend may take one value and refuse another;
`make_case(op, data_type, rank=N)` gives the data operands of the ops in RANKED rank N.

Data operands are graph inputs; weights, indices and quantization parameters are constants, as
in converted models. Values are seeded and chosen inside each op's domain (positive for log and
sqrt, no ties for argMax ...).

Bounds follow shared/reference/tolerances.md: ULP budgets for the ops it lists; for the others
the budget is written next to the op with its reason. Integer results are exact.
"""
from __future__ import annotations

from . import cases_elementwise, cases_layers, cases_shape  # noqa: F401  (they register ops)
from .case_kit import CANCELLING_SUMS, CASES, Case, exact_bounds
from .cases_elementwise import RANKED

__all__ = ["Case", "CANCELLING_SUMS", "RANKED", "VARIANTS", "case_ops", "exact_bounds",
           "main_operand", "make_case"]

# The enum options whose values a backend may refuse one by one (refusedOptions), and their
# values: each op's case function takes them as keyword arguments.
VARIANTS: dict[str, dict[str, tuple[str, ...]]] = {
    "pad": {"mode": ("constant", "edge", "reflection")},
}


def make_case(op: str, data_type: str, rank: int | None = None, **options: str) -> Case:
    """The case of `op` on `data_type`; with `rank` (ops in RANKED), its data operands of that
    rank; with `options`, those VARIANTS values."""
    for option, value in options.items():
        if value not in VARIANTS.get(op, {}).get(option, ()):
            raise ValueError(f"the {op} case has no variant {option}={value!r}")
    if rank is not None:
        if op not in RANKED:
            raise ValueError(f"the {op} case takes no rank")
        options = {**options, "rank": rank}
    case = CASES[op](op, data_type, **options)
    case.options = {k: v for k, v in options.items() if k != "rank"}
    case.rank = rank
    return case


def main_operand(op: str, limits: dict) -> str:
    """The operand whose data type a case of `op` is named by, as `limits` (an op's entry of
    opSupportLimits) names it: for quantizeLinear its output (its input is always float)."""
    name = {"where": "trueValue", "quantizeLinear": "output"}.get(op)
    if name is None:
        name = next(n for n in ("input", "a", "inputs") if n in limits)
    return name


def case_ops() -> list[str]:
    return sorted(CASES)
