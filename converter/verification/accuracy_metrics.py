"""What a compressed graph's outputs cost against the float source's, over many samples.

Per output, over every sample (each sample one run of both sides on the same inputs):
  * max_abs: the largest |graph - source| of any element;
  * max_rel: the largest |graph - source| / |source| of any element (|source| at least the
    smallest normal float64, as parity.compare has it: a source zero makes it large);
  * cosine: the cosine similarity of the two outputs, flattened, in the WORST sample (so a
    bound on it holds for every sample, not on average); 1 when both are all zeros;
  * top1, top5: for a classifier-shaped output (`class_axis`), the share of rows (one row per
    sample and batch item) where the graph's top class is the source's, and where the source's
    top class is among the graph's five highest (top5 only with more than five classes).

A NaN or infinity on one side only, or in different places, makes max_abs and max_rel
infinite and the cosine 0: a compressed weight overflowing is the worst error there is.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["OutputAccuracy", "class_axis", "cosine", "measure_output", "CLASSIFIER_RULE"]

CLASSIFIER_RULE = ("a classifier-shaped output: float, rank >= 2, its classes along the last "
                   "axis when named like logits, else along the one axis after the first (the "
                   "batch) longer than 1; each row along that axis is one prediction")


@dataclass
class OutputAccuracy:
    name: str
    shape: list[int]
    max_abs: float
    max_rel: float
    cosine: float | None  # the worst sample's; None for an output that is not float
    top1: float | None = None  # None: not classifier-shaped
    top5: float | None = None  # None: not classifier-shaped, or 5 classes or fewer
    rows: int = 0  # classifier rows compared (samples x rows per sample)
    class_axis: int | None = None
    # How many distinct classes the source ranked first over those rows: 1 of many rows says
    # the inputs never moved its choice (seeded weights, a dominant class), so top-1 agreement
    # proves little (the report notes it).
    source_classes: int = 0

    def to_json(self) -> dict:
        return {"name": self.name, "shape": self.shape, "maxAbs": _finite(self.max_abs),
                "maxRel": _finite(self.max_rel), "cosine": _finite(self.cosine),
                "top1": self.top1, "top5": self.top5, "rows": self.rows,
                "classAxis": self.class_axis, "sourceClasses": self.source_classes}


def _finite(value):
    """JSON has no infinity or NaN: those are written as the strings 'inf', 'nan'."""
    if value is None:
        return None
    value = float(value)
    return value if np.isfinite(value) else str(value)


def class_axis(name: str, shape: Sequence[int], kind: str) -> int | None:
    """The axis holding the classes of a classifier-shaped output (CLASSIFIER_RULE), else None."""
    if kind != "f" or len(shape) < 2:
        return None
    if "logits" in name.lower():
        return len(shape) - 1 if shape[-1] > 1 else None
    longer = [axis for axis in range(1, len(shape)) if shape[axis] > 1]
    return longer[0] if len(longer) == 1 else None


def cosine(got: np.ndarray, want: np.ndarray) -> float:
    """Cosine similarity of two arrays, flattened, in float64 (1 for two zero arrays, 0 when one
    side is zero or a value is not finite)."""
    a, b = np.asarray(got, np.float64).ravel(), np.asarray(want, np.float64).ravel()
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return 0.0 if not np.array_equal(a, b, equal_nan=True) else 1.0
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 1.0 if na == nb else 0.0
    return float(np.clip(a @ b / (na * nb), -1.0, 1.0))


def _errors(got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    same = (g == w) | (np.isnan(g) & np.isnan(w))  # equal infinities and NaN against NaN
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(same, 0.0, np.abs(g - w))
        diff = np.where(np.isnan(diff), np.inf, diff)
        rel = diff / np.fmax(np.abs(w), np.finfo(np.float64).tiny)
        rel = np.where(np.isnan(rel), np.inf, rel)
    return (float(diff.max()) if diff.size else 0.0, float(rel.max()) if rel.size else 0.0)


def _rows(value: np.ndarray, axis: int) -> np.ndarray:
    """The output as [rows, classes]: the class axis last, every other axis a row."""
    moved = np.moveaxis(np.asarray(value, np.float64), axis, -1)
    return moved.reshape(-1, moved.shape[-1])


def measure_output(name: str, got: Sequence[np.ndarray], want: Sequence[np.ndarray]
                   ) -> OutputAccuracy:
    """One output's metrics over the samples (got[i] the graph's, want[i] the source's)."""
    first = np.asarray(want[0])
    kind = first.dtype.kind
    worst_abs = worst_rel = 0.0
    worst_cos: float | None = None
    axis = class_axis(name, first.shape, kind)
    top1 = top5 = 0
    rows = 0
    chosen: set[int] = set()
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return OutputAccuracy(name, list(w.shape), float("inf"), float("inf"),
                                  0.0 if kind == "f" else None)
        a, r = _errors(g, w)
        worst_abs, worst_rel = max(worst_abs, a), max(worst_rel, r)
        if kind == "f":
            c = cosine(g, w)
            worst_cos = c if worst_cos is None else min(worst_cos, c)
        if axis is not None:
            gr, wr = _rows(g, axis), _rows(w, axis)
            source_top = np.argmax(wr, axis=1)
            chosen.update(int(c) for c in np.unique(source_top))
            top1 += int(np.count_nonzero(np.argmax(gr, axis=1) == source_top))
            if gr.shape[1] > 5:
                best5 = np.argsort(-gr, axis=1, kind="stable")[:, :5]
                top5 += int(np.count_nonzero((best5 == source_top[:, None]).any(axis=1)))
            rows += gr.shape[0]
    result = OutputAccuracy(name, list(first.shape), worst_abs, worst_rel, worst_cos)
    if axis is not None and rows:
        result.class_axis, result.rows, result.source_classes = axis, rows, len(chosen)
        result.top1 = top1 / rows
        result.top5 = top5 / rows if first.shape[axis] > 5 else None
    return result
