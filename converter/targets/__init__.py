"""Backend targets: what a WebNN backend accepts, as data.

A target file is an `MLContext.opSupportLimits()` JSON (what a browser reports: preferred
layout, byte limit, input/constant/output limits, and per op and operand the data types and
rank range), optionally with a member `"webnn-converter"` for what opSupportLimits cannot say:

    "webnn-converter": {
      "name": "coreml", "description": "...",
      "constantOperands": {"batchNormalization": ["mean", "variance", "scale", "bias"]},
      "emulated": {"gemm": "as matmul, mul and add"},
      "maxConstantByteLength": 134217728,   (where build() refuses smaller constants than
                                             maxTensorByteLength says: chromium-litert)
      "refusedOptions": {"pad": {"mode": ["edge"]}},   (option values build() refuses:
                                             opSupportLimits() lists types and ranks only)
      "refusedDataTypes": {"clamp": {"input": ["int32"]}},   (types opSupportLimits() lists
                                             for an operand but build() refuses: taken out of
                                             the limits when the file is loaded)
      "sources": ["where the facts come from"], "notes": ["..."]
    }

A user's own dump, copied out of their browser, is a target file as it is. An op the file does
not list is one the target lacks. Built-in targets live in `converter/targets/data/` (generated
by tools/gen_targets.py); the schema is schemas/target.schema.json.

    target = load_target("coreml")
    violations = check(graph, target)            # converter.targets.check
    report = convert_for_target(graph, target)   # converter.targets.pipeline
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConverterError

__all__ = ["Target", "load_target", "builtin_targets", "EXTENSION"]

EXTENSION = "webnn-converter"
_DATA = Path(__file__).with_name("data")
_GLOBAL_KEYS = ("preferredInputLayout", "maxTensorByteLength", "input", "constant", "output")


@dataclass
class Target:
    name: str
    limits: dict[str, Any]
    description: str = ""
    constant_operands: dict[str, list[str]] = field(default_factory=dict)
    emulated: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # ops whose int8 form the backend lists but refuses to build (passes/int8_in_float.py)
    int8_in_float: list[str] = field(default_factory=list)
    # the most bytes one constant may hold, where the backend's build() allows less than
    # maxTensorByteLength (None: that limit alone)
    max_constant_bytes: int | None = None
    # option values the backend's build() refuses, by op and option: {"pad": {"mode": ["edge"]}}
    refused_options: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    source: str = ""
    sources: list[str] = field(default_factory=list)  # where the file's facts come from

    @property
    def preferred_layout(self) -> str:
        return self.limits.get("preferredInputLayout", "nchw")

    @property
    def max_tensor_bytes(self) -> int | None:
        return self.limits.get("maxTensorByteLength")

    def ops(self) -> list[str]:
        return sorted(k for k in self.limits if k not in _GLOBAL_KEYS and k != EXTENSION)

    def supports(self, op: str) -> bool:
        return op in self.limits and op not in _GLOBAL_KEYS

    def operand_limits(self, op: str, operand: str) -> dict | None:
        """{dataTypes, rankRange} for an op's operand (or `output`, `output0`...), if listed."""
        return (self.limits.get(op) or {}).get(operand)

    def io_limits(self, kind: str) -> dict | None:
        """Limits on graph `input`s, `constant`s or `output`s."""
        return self.limits.get(kind)

    def must_be_constant(self, op: str) -> list[str]:
        return list(self.constant_operands.get(op, []))

    def refuses(self, op: str, option: str, value: Any) -> bool:
        """Whether build() refuses `op` with `option` set to `value` (refusedOptions)."""
        return value in self.refused_options.get(op, {}).get(option, ())

    def emulates(self, op: str) -> str | None:
        """How the backend composes `op` from other ops, or None when it runs it natively."""
        return self.emulated.get(op)


def builtin_targets() -> list[str]:
    return sorted(p.stem for p in _DATA.glob("*.json"))


def load_target(name_or_path: "str | Path | Target") -> Target:
    """A built-in target by name (`spec`, `chromium-litert`, ...) or a target file's path.

    A Target is returned as it is, so functions can take a name, a path or a loaded target.
    """
    if isinstance(name_or_path, Target):
        return name_or_path
    path = Path(name_or_path)
    if not path.suffix and (_DATA / f"{name_or_path}.json").is_file():
        path = _DATA / f"{name_or_path}.json"
    if not path.is_file():
        raise ConverterError(f"no target named '{name_or_path}'",
                             fix=f"use one of {', '.join(builtin_targets())}, or the path of an "
                                 f"opSupportLimits JSON file")
    from ..formats._files import parse_json, read_text
    from ..schemas import validate

    data = parse_json(read_text(path, "target file"), str(path), "target file")
    validate(data, "target", str(path))
    ext = data.get(EXTENSION, {})
    _check_constant_operands(ext.get("constantOperands", {}), str(path))
    _check_refused_options(ext.get("refusedOptions", {}), str(path))
    limits = {k: v for k, v in data.items() if k != EXTENSION}
    limits = _without_refused_types(limits, ext.get("refusedDataTypes", {}), str(path))
    # A browser dump is often saved as NAME.opSupportLimits.json: its name is NAME.
    default_name = path.name.removesuffix(".json").removesuffix(".opSupportLimits")
    return Target(name=ext.get("name", default_name), limits=limits,
                  description=ext.get("description", ""),
                  constant_operands=ext.get("constantOperands", {}),
                  emulated=ext.get("emulated", {}), notes=ext.get("notes", []),
                  int8_in_float=ext.get("int8InFloat", []),
                  max_constant_bytes=ext.get("maxConstantByteLength"),
                  refused_options=ext.get("refusedOptions", {}),
                  source=str(path), sources=ext.get("sources", []))


def _check_constant_operands(table: dict[str, list[str]], where: str) -> None:
    """Every op and operand named in constantOperands exists: a typo would silently check
    nothing."""
    from ..errors import FormatError
    from ..ops.registry import all_ops

    ops = all_ops()
    for op_name, operands in table.items():
        if op_name not in ops:
            raise FormatError(f"constantOperands names an unknown op '{op_name}'", where=where,
                              fix="use MLGraphBuilder method names")
        unknown = [o for o in operands if o not in ops[op_name].slots]
        if unknown:
            raise FormatError(f"constantOperands: {op_name} has no operand "
                              f"{', '.join(map(repr, unknown))}", where=where,
                              fix=f"{op_name}'s operands are {', '.join(ops[op_name].slots)}")


def _check_refused_options(table: dict[str, dict[str, list[str]]], where: str) -> None:
    """Every op, option and value named in refusedOptions exists (enum options only: a typo
    would silently refuse nothing)."""
    from ..errors import FormatError
    from ..ops.registry import all_ops

    ops = all_ops()
    for op_name, options in table.items():
        if op_name not in ops:
            raise FormatError(f"refusedOptions names an unknown op '{op_name}'", where=where,
                              fix="use MLGraphBuilder method names")
        params = ops[op_name].params()
        for option, values in options.items():
            param = params.get(option)
            if param is None or param.kind != "enum":
                enums = [p.name for p in params.values() if p.kind == "enum"]
                raise FormatError(f"refusedOptions: {op_name} has no enum option '{option}'",
                                  where=where, fix=f"{op_name}'s enum options are "
                                                   f"{', '.join(enums) or 'none'}")
            unknown = [v for v in values if v not in param.choices]
            if unknown:
                raise FormatError(f"refusedOptions: {op_name} {option} has no value "
                                  f"{', '.join(map(repr, unknown))}", where=where,
                                  fix=f"its values are {', '.join(param.choices)}")


def _without_refused_types(limits: dict, table: dict[str, dict[str, list[str]]],
                           where: str) -> dict:
    """`limits` with the data types refusedDataTypes names taken out of their operands' lists,
    so check, its advice and the passes all see what build() takes. Each op and operand named
    must be listed with those types: a typo would silently refuse nothing."""
    from ..errors import FormatError

    if not table:
        return limits
    limits = dict(limits)
    for op_name, operands in table.items():
        listed = limits.get(op_name)
        if not isinstance(listed, dict) or op_name in _GLOBAL_KEYS:
            raise FormatError(f"refusedDataTypes names '{op_name}', which the file does not "
                              f"list as an op", where=where,
                              fix="name ops the file lists (MLGraphBuilder method names)")
        listed = dict(listed)
        for operand, types in operands.items():
            entry = listed.get(operand)
            if not isinstance(entry, dict) or "dataTypes" not in entry:
                raise FormatError(f"refusedDataTypes: {op_name} lists no data types for "
                                  f"'{operand}'", where=where,
                                  fix=f"{op_name}'s operands here are {', '.join(listed)}")
            unlisted = [t for t in types if t not in entry["dataTypes"]]
            if unlisted:
                raise FormatError(f"refusedDataTypes: {op_name} {operand} does not list "
                                  f"{', '.join(unlisted)}", where=where,
                                  fix="name only types the file lists there")
            listed[operand] = {**entry, "dataTypes": [t for t in entry["dataTypes"]
                                                      if t not in types]}
        limits[op_name] = listed
    return limits
