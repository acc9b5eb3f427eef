"""The bounds an accuracy report is judged by: `--accuracy` parsed, and the default per scheme.

    parse_accuracy("cosine>=0.999,top1>=0.99")   # {"cosine": (">=", 0.999), "top1": (">=", 0.99)}
    bounds_for("int8", None)                     # DEFAULT_ACCURACY["int8"], parsed

A compressed graph (`--weights float16|int8|int4`) is not judged by the float tolerance policy
(parity.py), which it is not meant to meet: its own verdict compares it with the float source by
these metrics, named in the report with the bound each met or missed.
"""
from __future__ import annotations

import math
import re
from typing import Mapping

from ..emit.escape import js_string
from ..errors import ConverterError

__all__ = ["METRICS", "DEFAULT_ACCURACY", "parse_accuracy", "bounds_for", "bound_text"]

# Each metric and the direction its bound takes: the agreements and the cosine are bounded below,
# the errors above. (accuracy.py says what each measures.)
METRICS: dict[str, str] = {
    "cosine": ">=",    # the worst sample's cosine similarity, per output
    "top1": ">=",      # share of rows whose top class is the source's (classifier outputs)
    "top5": ">=",      # share of rows with the source's top class in the graph's top 5
    "tokens": ">=",    # share of a decoder's greedy tokens decoded before the first difference
    "max_abs": "<=",   # the largest |graph - source| over every sample, per output
    "max_rel": "<=",   # the largest |graph - source| / |source| over every sample, per output
}

# The bounds a scheme is judged by when no `--accuracy` is given. Why these:
#  * float16: each weight moves by at most 2**-11 of itself (float16's rounding), and such
#    independent roundings mostly cancel in a dot product; the float32 policy's own cosine bound
#    (0.9999, parity.default_bounds) holds, and that is what issue 29 asks float16 to keep.
#  * int8: per-channel symmetric int8 moves a weight by up to half a step, 1/254 of its
#    channel's largest: outputs move visibly (cosine ~0.995-0.9999 on CNN logits, as
#    onnxruntime's quantize_dynamic reports show), while the predicted class must stay the
#    float model's on 99 rows in 100 (the acceptance for image classifiers).
#  * int4: 16 levels per block of 32 weights, a step 18 times int8's: cosine 0.98 still keeps a
#    decoder's logits ranked alike in practice; greedy tokens are reported, not bounded, since
#    one early difference changes the whole rest of a text.
DEFAULT_ACCURACY: dict[str, str] = {
    "float16": "cosine>=0.9999",
    "int8": "cosine>=0.99,top1>=0.99",
    "int4": "cosine>=0.98",
}

# Spaces and tabs only around the parts (not \s, which takes any Unicode space) and ASCII
# digits only in the number, as every number the command line reads (cli/numbers.py).
_BOUND = re.compile(r"[ \t]*([A-Za-z0-9_]+)[ \t]*(>=|<=|>|<|==|=)?[ \t]*(.*?)[ \t]*")
_NUMBER = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_FIX = ("give METRIC>=NUMBER or METRIC<=NUMBER, comma-separated, e.g. "
        "'cosine>=0.999,top1>=0.99'; metrics: " +
        ", ".join(f"{m}{op}" for m, op in METRICS.items()))


def parse_accuracy(text: str, where: str = "--accuracy") -> dict[str, tuple[str, float]]:
    """{metric: (direction, bound)} from text such as 'cosine>=0.999,top1>=0.99'. Strict: an
    unknown metric, a bound the wrong way round (cosine<=...), a missing or non-finite number,
    an empty item or a metric named twice is a ConverterError naming the item."""
    if not isinstance(text, str) or not text.strip():
        raise ConverterError("no accuracy bound given", where=where, fix=_FIX)
    bounds: dict[str, tuple[str, float]] = {}
    for item in text.split(","):
        match = _BOUND.fullmatch(item)
        metric, op, number = match.groups() if match else (None, None, None)
        shown = js_string(item.strip(" \t")[:60])  # escaped: '１' shows as \uff11
        if not metric:
            raise ConverterError(f"malformed accuracy bound {shown}" if item.strip(" \t") else
                                 "empty accuracy bound (two commas, or one at an end)",
                                 where=where, fix=_FIX)
        if metric not in METRICS:
            raise ConverterError(f"unknown accuracy metric '{metric[:40]}'", where=where,
                                 fix=_FIX)
        if op != METRICS[metric]:
            raise ConverterError(f"{shown}: {metric} takes a bound {METRICS[metric]} NUMBER",
                                 where=where, fix=_FIX)
        written = _NUMBER.fullmatch(number or "")
        value = float(number) if written else math.nan
        if not math.isfinite(value):
            raise ConverterError(f"{shown}: the bound must be a finite number", where=where,
                                 fix=_FIX)
        if metric in bounds:
            raise ConverterError(f"accuracy metric '{metric}' bounded twice", where=where,
                                 fix=_FIX)
        bounds[metric] = (op, value)
    return bounds


def bounds_for(weights: str, accuracy: str | Mapping | None
               ) -> tuple[dict[str, tuple[str, float]], str]:
    """(the bounds, where they come from): `accuracy` parsed when given (text, or a mapping
    already parsed), else the scheme's default (DEFAULT_ACCURACY)."""
    if accuracy is not None:
        parsed = dict(accuracy) if isinstance(accuracy, Mapping) else parse_accuracy(accuracy)
        return parsed, "--accuracy"
    if weights not in DEFAULT_ACCURACY:
        raise ConverterError(f"no default accuracy bound for weights '{weights}'",
                             fix="give --accuracy, e.g. 'cosine>=0.999'")
    return parse_accuracy(DEFAULT_ACCURACY[weights], where="DEFAULT_ACCURACY"), \
        f"the default for {weights} weights"


def bound_text(metric: str, bound: tuple[str, float]) -> str:
    """'cosine>=0.9999': a bound as --accuracy spells it."""
    return f"{metric}{bound[0]}{bound[1]:.12g}"
