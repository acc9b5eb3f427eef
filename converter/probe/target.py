"""A probe's findings as a target file: the browser's own opSupportLimits() as the base,
narrowed by what its build() refused, in the target-file extension keys check and
convert --target read (converter/targets/__init__.py):

* `refusedDataTypes`: a listed data type of an op's main operand that no case of it built;
* `refusedOptions`: an option value (VARIANTS) whose case did not build for a data type that
  another value of the option builds.

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
        if r.listed:
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
    counts = (len(results), sum(r.built for r in results),
              sum(r.computed is True for r in results))
    extension = {
        "name": name or f"{probe.runtime}-probed",
        "description": f"{probe.browser}, probed by `webnn-convert probe`: its opSupportLimits() "
                       f"narrowed to what its build() takes",
        "sources": [f"opSupportLimits() of {probe.browser}, as it reports it",
                    f"webnn-convert probe of {_which(probe)}: {counts[0]} one-op cases, "
                    f"{counts[1]} built, {counts[2]} within their bounds of the float64 "
                    f"reference"],
        "refusedDataTypes": refused_types,
        "refusedOptions": refused_options,
        "notes": notes,
    }
    extension = {k: v for k, v in extension.items() if v or k == "name"}
    return {EXTENSION: extension, **copy.deepcopy(probe.limits)}


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
