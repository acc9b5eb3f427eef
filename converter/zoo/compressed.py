"""A zoo job's compressed graph (`zoo --weights S`): the model converted again with its weights
stored as S (computing in --compute, as `verify --weights S --compute C` converts it), and its
accuracy against the float source measured on every runtime of the run
(converter.verification.accuracy), beside the float graph's own parity.

A variant's result then holds
    "weights":  {"scheme", "before", "after", "ratio"}   the stored weights' bytes, float vs S
    "accuracy": {runtime: the AccuracyReport's JSON, or {"error": one line}}
and a compressed graph that misses its bounds makes the variant a `mismatch` (error kind
`accuracy`), one that cannot be measured an `error`: the run asked for the figure.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

__all__ = ["measure_variant"]


def measure_variant(spec: dict, source: Path, target: str | None, graph, load: Callable,
                    known_inputs: dict | None) -> tuple[dict[str, Any], list[str], str | None]:
    """(what to add to the variant's result, one status per runtime, the first failure in a
    line or None) for `graph`, the float graph of this variant, on the spec's runtimes."""
    from ..errors import ConverterError
    from ..verification.accuracy import DEFAULT_SAMPLES, measure_accuracy, weights_bytes

    scheme, compute = spec["weights"], spec.get("compute", "float32")
    before = weights_bytes(graph)
    added: dict[str, Any] = {"accuracy": {}}
    statuses, first = [], None
    try:
        compressed = load(spec, source)
        if target is not None:
            from ..targets.pipeline import convert_for_target

            convert_for_target(compressed, target, weights=scheme, compute=compute)
        else:
            from ..targets.pipeline import store_weights

            store_weights(compressed, scheme, compute=compute)
    except ConverterError as e:
        added["weights"] = {"scheme": scheme, "before": before, "after": None, "ratio": None}
        return added, ["error"], f"{scheme} weights: {e.line()}"
    after = weights_bytes(compressed)
    added["weights"] = {"scheme": scheme, "before": before, "after": after,
                        "ratio": after / before if before else None}
    for runtime in spec.get("runtimes") or ["ort"]:
        try:
            report = measure_accuracy(source, compressed, weights=scheme, bytes_before=before,
                                      samples=spec.get("samples") or DEFAULT_SAMPLES,
                                      seed=spec.get("seed", 0), known_inputs=known_inputs,
                                      runtime=runtime, accuracy=spec.get("accuracy"))
        except ConverterError as e:
            added["accuracy"][runtime] = {"error": e.line()}
            statuses.append("error")
            first = first or f"{runtime} accuracy: {e.line()}"
            continue
        added["accuracy"][runtime] = report.to_json()
        statuses.append("verified" if report.passed else "mismatch")
        if not report.passed:
            missed = "; ".join(c.text() for c in report.failures()) or "no bound applied"
            first = first or f"{runtime} accuracy of {scheme} weights: {missed}"
    return added, statuses, first
