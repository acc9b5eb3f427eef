"""The verdict on the positions of a decoder that quantizes its activations at run time
(DynamicQuantizeLinear: `quantize_dynamic`'s models, transformers.js's q8 files), stepped on
another runtime's float32 kernels.

Such a graph rounds x / scale to an integer at run time; a value at a rounding tie in ONNX
Runtime's float32 is a few ULP off it in another correct float32 implementation and rounds to
the other neighbour, one quantization step apart, which the KV cache carries into every later
position (runtimes/dynamic_quantize.py). The logits are then discontinuous in float32 noise,
and float32's bounds against ORT's exact numbers are the wrong yardstick for the positions
after such a step. Those positions are judged against the source's own spread instead: ORT
run twice more on the same tokens with every quotient x / scale times 1 + 2**-23, then
1 - 2**-23 (1-2 of its ULP), before it is rounded (so each tie goes to its other neighbour in
one of the runs); its distance from ORT's plain run, position by position, is how far float32
rounding alone moves the source's logits. A position outside the bounds passes when its distance from ORT
is within NOISE_FACTOR times that spread at the same position, as single-shot verify judges a
quantized output against the source's spread (parity.judge); the tokens must still be ORT's.

    judged = judge_by_spread(report, theirs, {label: logits, ...})  # the positions it judged

A graph that is wrong from the first position fails there, where the spread is the source's
own float32 noise (0 on positions with no tie within 1-2 ULP). What it cannot tell: after a
position where the spread is large (a tie's step, 0.03-0.1 in the logits of the tiny Llama),
an error no larger than that spread, appearing only there.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from .parity import NOISE_FACTOR, compare

__all__ = ["judge_by_spread", "needs_spread", "SPREAD_RUNS"]

# the two runs' labels: the direction each moves every quotient
SPREAD_RUNS = {1: "ORT with every x / scale times 1 + 2**-23 (1-2 ULP)",
               -1: "ORT with every x / scale times 1 - 2**-23 (1-2 ULP)"}


def needs_spread(report) -> bool:
    """Whether a position is outside its bounds: the spread runs are made only then."""
    return any(not p.passed for p in report.positions)


def judge_by_spread(report, theirs: Sequence[np.ndarray],
                    moved: Mapping[str, Sequence[np.ndarray]]) -> list[int]:
    """Judge each of report.positions (an OutputParity per logits row, against `theirs`,
    ORT's rows) by the budget or by the source's spread: `moved` holds, per label, ORT's rows
    on the same tokens with its quantized activations moved (SPREAD_RUNS). Every position
    gets `sourceNoise`, `sourceNoiseFrom` and `decidedBy` in its extra; one outside the
    bounds passes when its max |got - want| is within NOISE_FACTOR times the spread at the
    same position. Returns the indices of the positions outside the bounds, which the
    spread judged."""
    judged = []
    for k, p in enumerate(report.positions):
        spread, spread_from = 0.0, None
        for label, rows in moved.items():
            if k >= len(rows):
                continue
            d = compare(p.name, rows[k], theirs[k], p.bounds, p.data_type).max_abs
            if spread_from is None or d > spread:
                spread, spread_from = d, label
        if spread_from is not None:
            p.extra.update(sourceNoise=spread, sourceNoiseFrom=spread_from)
        if p.passed:
            p.extra["decidedBy"] = "webnn vs source within the budget"
            continue
        judged.append(k)
        # A NaN or an infinity is never noise: max_abs is then inf, beyond any finite spread.
        if spread_from is not None and np.isfinite(spread) and p.max_abs <= NOISE_FACTOR * spread:
            p.passed, p.reason = True, ""
            p.extra["decidedBy"] = (f"webnn vs source {p.max_abs:.3g} within "
                                    f"{NOISE_FACTOR:g}x the source's own spread at this "
                                    f"position ({spread_from} {spread:.3g})")
        else:
            why = (f"beyond {NOISE_FACTOR:g}x the source's own spread at this position "
                   f"({spread_from} {spread:.3g})" if spread_from is not None
                   else "no spread measured")
            p.reason = f"{p.reason}; {why}" if p.reason else why
            p.extra["decidedBy"] = f"webnn vs source {p.max_abs:.3g}: {p.reason}"
    return judged
