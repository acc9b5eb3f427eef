"""A probe's findings as a target file: the browser's own opSupportLimits() as the base,
narrowed by what its build() refused, in the target-file extension keys check and
convert --target read (converter/targets/__init__.py):

* `refusedDataTypes`: a listed data type of an op's main operand that no case of it built;
* `refusedOptions`: an option value (VARIANTS) whose case did not build for a data type that
  another value of the option builds;
* the rank range of an op in RANKED, where build() refused an end of the listed range: the
  range it took, probed from each end inward (in the op's own limits: no key is needed);
* `maxConstantByteLength`: the largest constant build() took, where it refused a larger one
  (sizes.py; none refused up to its ceiling: no key, and a note says how far it looked).

A case that built but computed outside its bounds is not refused (build() takes it, and the
target says what build() takes): a note names it, with how it missed. So do a data type the
browser does not list that builds (the target does not widen the browser's own list), and an
option value refused for some data types only (refused for all: the keys cannot say which).
"""
from __future__ import annotations

import copy
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..targets import EXTENSION
from .run import Probe

__all__ = ["probed_target", "write_target"]


def probed_target(probe: Probe, name: str | None = None) -> dict[str, Any]:
    """The target file's JSON for `probe` (named `name`, default "<runtime>-probed")."""
    results = probe.results
    # (op, data type) -> {frozen options: built}
    built: dict[tuple[str, str], dict[tuple, bool]] = defaultdict(dict)
    operand_of = {}
    for r in results:
        if r.listed and r.rank is None and r.constant_bytes is None:
            built[(r.op, r.data_type)][tuple(sorted(r.options.items()))] = r.built
            operand_of[r.op] = r.operand
    refused_types: dict[str, dict[str, list[str]]] = {}
    for (op, data_type), by_options in built.items():
        if not any(by_options.values()):
            refused_types.setdefault(op, {}).setdefault(operand_of[op], []).append(data_type)
    refused_options, partly = _refused_options(built)
    notes = []
    for op, option, value, some in partly:
        notes.append(f"{op} {option}={value} builds for some data types only (refused for "
                     f"{', '.join(some)}): refused for all here")
    for r in results:
        if r.built and r.computed is False:
            notes.append(f"{r.name} builds but computes outside its bounds of the float64 "
                         f"reference: {r.mismatch}")
        if r.built and not r.listed:
            notes.append(f"{r.name} builds though opSupportLimits() does not list {r.data_type} "
                         f"for {r.operand}: left out, as the browser says")
    limits = copy.deepcopy(probe.limits)
    notes += _narrow_ranks(limits, results)
    largest, size_notes = _largest_constant(results)
    notes += size_notes
    counts = (len(results), sum(r.built for r in results),
              sum(r.computed is True for r in results))
    extension = {
        "name": name or f"{probe.label or probe.runtime}-probed",
        "description": f"{probe.browser}, probed by `webnn-convert probe`: its opSupportLimits() "
                       f"narrowed to what its build() takes",
        "sources": [f"opSupportLimits() of {probe.browser}, as it reports it",
                    f"webnn-convert probe of {_which(probe)}: {counts[0]} one-op cases, "
                    f"{counts[1]} built, {counts[2]} within their bounds of the float64 "
                    f"reference"],
        "refusedDataTypes": refused_types,
        "refusedOptions": refused_options,
        "maxConstantByteLength": largest,
        "notes": notes,
    }
    extension = {k: v for k, v in extension.items() if v or k == "name"}
    return {EXTENSION: extension, **limits}


def _narrow_ranks(limits: dict[str, Any], results) -> list[str]:
    """Narrow, in `limits`, each probed op's rank range to the ranks its build() took, on every
    operand and result listed with the main operand's range; the notes that say so."""
    by_op: dict[str, dict[int, bool]] = defaultdict(dict)
    operand_of = {}
    for r in results:
        if r.rank is not None:
            by_op[r.op][r.rank] = r.built
            operand_of[r.op] = r.operand
    notes = []
    for op, ranks in sorted(by_op.items()):
        listed = dict(limits[op][operand_of[op]]["rankRange"])
        # The ends were stepped inward until one built: the ranks built are the edges.
        took = [rank for rank, ok in ranks.items() if ok]
        if not took:
            notes.append(f"{op}: no rank of its range built (ranks {sorted(ranks)} probed): "
                         f"the range is left as listed")
            continue
        low, high = min(took), max(took)
        if (low, high) == (listed["min"], listed["max"]):
            continue
        for entry in limits[op].values():
            if entry.get("rankRange") == listed:
                entry["rankRange"] = {"min": low, "max": high}
        notes.append(f"{op}: build() takes ranks {low} to {high} where opSupportLimits() lists "
                     f"{listed['min']} to {listed['max']} (probed from each end inward)")
    return notes


def _largest_constant(results) -> tuple[int | None, list[str]]:
    """The largest constant that built where a larger one was refused (else None), and the
    note that says what the sizes probed found."""
    sizes = {r.constant_bytes: r.built for r in results if r.constant_bytes is not None}
    if not sizes:
        return None, []
    took = [size for size, ok in sizes.items() if ok]
    refused = [size for size, ok in sizes.items() if not ok]
    if not refused:
        return None, [f"every constant size probed built (up to {max(took)} bytes): no "
                      f"limit on one constant is recorded"]
    if not took:
        return None, [f"no constant size probed built (down to {min(refused)} bytes): no "
                      f"limit on one constant is recorded"]
    largest, smallest_refused = max(took), min(refused)
    return largest, [f"build() takes a constant of {largest} bytes and refuses one of "
                     f"{smallest_refused} bytes: maxConstantByteLength {largest}"]


def _which(probe: Probe) -> str:
    if probe.ops is None:
        return "every op it lists"
    return "only " + ", ".join(probe.ops) + " (the other ops as it lists them)"


def _refused_options(built) -> tuple[dict[str, Any], list[tuple]]:
    """{op: {option: [values]}}: the values that did not build for a data type another value
    builds; and (op, option, value, data types) for those refused for some such types only."""
    failing: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    tried: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for (op, data_type), by_options in built.items():
        if not any(by_options.values()):
            continue  # the type is refused: it says nothing of the options
        for options, ok in by_options.items():
            for option, value in options:
                tried[(op, option, value)].append(data_type)
                if not ok:
                    failing[(op, option, value)].append(data_type)
    refused: dict[str, Any] = {}
    partly = []
    for (op, option, value), types in sorted(failing.items()):
        refused.setdefault(op, {}).setdefault(option, []).append(value)
        if len(types) < len(tried[(op, option, value)]):
            partly.append((op, option, value, types))
    return refused, partly


def write_target(doc: dict[str, Any], path: str | Path) -> Path:
    """Write the target file at `path`, whole or not at all."""
    import json

    from ..formats._files import AtomicSave

    path = Path(path)
    with AtomicSave() as save:
        save.write_text(path, json.dumps(doc, indent=1) + "\n")
        save.commit()
    return path
