"""What a parity report says beside its verdicts: the bounds in words, outputs whose values make
a pass prove little, and a pass the float64 oracle gave against the user's explicit bound.

A pass on outputs that are all ~0 (a segmentation mask whose sigmoid is ~1e-13 everywhere on
seeded inputs) or constant proves nothing about the conversion: any graph whose values are as
small (within the absolute tolerance) or as flat passes. The report says so, rather than
"verified".
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from .parity import Bounds, OutputParity

__all__ = ["bounds_in_words", "degenerate", "overruled", "spread_overruled", "quantized_lstm_note",
           "dynamic_quantize_note"]


def bounds_in_words(bounds: Bounds) -> str:
    """`bounds` as a reader says them: "exact", "within 0 ULP", "|got - want| <= 0.0001 +
    0.001 * |want|, cosine >= 0.9999"."""
    if bounds.exact:
        return "exact"
    if bounds.ulp is not None:
        return f"within {bounds.ulp} ULP"
    parts = [f"|got - want| <= {bounds.atol or 0:g} + {bounds.rtol or 0:g} * |want|"]
    if bounds.cosine is not None:
        parts.append(f"cosine >= {bounds.cosine:g}")
    return ", ".join(parts)


def degenerate(name: str, want: np.ndarray, bounds: Bounds) -> str | None:
    """A warning when the source's output `want` cannot tell a right graph from a wrong one:
    every value within the absolute tolerance of zero, or one value everywhere."""
    want = np.asarray(want)
    if want.size < 2 or want.dtype.kind not in "fiub":
        return None
    if want.dtype.kind == "f":
        finite = want[np.isfinite(want)]
        if finite.size < want.size:
            return None  # non-finite values are judged on their own
        largest = float(np.max(np.abs(finite.astype(np.float64))))
        if bounds.atol and bounds.ulp is None and largest <= bounds.atol:
            return (f"output '{name}': every value is within the absolute tolerance of zero "
                    f"(largest |value| {largest:.3g} <= atol {bounds.atol:g}) on these inputs, "
                    f"so any graph this small passes; give real inputs (--input)")
    first = want.reshape(-1)[0]
    if np.all(want == first):
        return (f"output '{name}': every value is {first.item()!r} on these inputs, so the "
                f"comparison tells little; give real inputs (--input)")
    return None


def _bounds_given(explicit: Mapping[str, object] | None) -> str:
    """The --atol/--rtol/--ulp the user gave (`explicit`, None where not given) as they were
    written, '' when none was."""
    return ", ".join(f"--{k} {v}" for k, v in (explicit or {}).items() if v is not None)


def overruled(result: OutputParity, explicit: Mapping[str, object]) -> str | None:
    """A note when `result` passed by the float64 oracle's rules although it is outside the
    bounds the user gave explicitly (`explicit`: the --atol/--rtol/--ulp given)."""
    said = _bounds_given(explicit)
    decided = result.extra.get("decidedBy")
    # "webnn vs source ..." is the plain comparison deciding (within the bounds, or no oracle)
    if not said or not result.passed or decided is None \
            or decided.startswith("webnn vs source"):
        return None
    return (f"output '{result.name}' is outside the bounds you gave ({said}: "
            f"{bounds_in_words(result.bounds)}) and passes by the float64 oracle ({decided}); "
            f"--oracle never holds the bounds as given")


def quantized_lstm_note(count: int) -> str:
    """What the report says of a source whose DynamicQuantizeLSTM nodes ORT rounds at run time
    (runtimes/quantized_lstm.py): how its outputs are judged."""
    return (f"ONNX Runtime quantizes the input and, each step, the hidden state of {count} "
            f"DynamicQuantizeLSTM node{'s' * (count != 1)} at run time, as the graph does (a "
            "batch ORT splits over its threads: each row on its own, ORT's result with a "
            "thread a row); a value float32 puts within its error of a rounding tie rounds "
            "either way, and later steps carry that: an output outside the budget is judged "
            "against the float64 oracle, ORT with those LSTMs in float measuring what the "
            "rounding moves")


def spread_overruled(passed: int, explicit: Mapping[str, object] | None) -> str | None:
    """A note when `passed` positions of a q8 decode outside the bounds the user gave
    (`explicit`) passed by the source's own spread (verification/quantized_spread.py)."""
    said = _bounds_given(explicit)
    if not said or not passed:
        return None
    return (f"{passed} position{'s' * (passed != 1)} outside the bounds you gave ({said}) "
            f"passed by the source's own spread: a q8 source's spread overrules bounds given, "
            f"as the float64 oracle does in single-shot verify")


def dynamic_quantize_note(count: int, judged: list[int], passed: int) -> str:
    """What a decoding report says of a source whose DynamicQuantizeLinear nodes round its
    activations at run time (verification/quantized_spread.py): which positions (`judged`,
    outside float32's bounds; `passed` of them within the spread) were judged against the
    source's own spread, and why."""
    from .parity import NOISE_FACTOR

    which = (f"position{'s' * (len(judged) != 1)} {_ranges(judged)} ({passed} of "
             f"{len(judged)} passed by it)")
    return (f"{count} DynamicQuantizeLinear node{'s' * (count != 1)} round x / scale to "
            f"uint8 at run time; a value at a rounding tie in ORT's float32 rounds to the "
            f"other neighbour on other float32 kernels, and the KV cache carries that step "
            f"into every later position, so float32's bounds against ORT are not the "
            f"yardstick there: {which} outside the bounds were judged against the source's "
            f"own spread (ORT on the same tokens with every x / scale moved 1-2 ULP, times "
            f"1 + 2**-23, then 1 - 2**-23, before rounding), passing within "
            f"{NOISE_FACTOR:g}x its distance from ORT at the same position; the tokens must "
            f"be ORT's")


def _ranges(indices: list[int]) -> str:
    """[3, 4, 5, 8] as "3-5, 8"."""
    out, start = [], None
    for i, k in enumerate(indices):
        if start is None:
            start = k
        if i + 1 == len(indices) or indices[i + 1] != k + 1:
            out.append(str(start) if start == k else f"{start}-{k}")
            start = None
    return ", ".join(out)
