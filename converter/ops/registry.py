"""The op catalogue: each MLGraphBuilder op's signature, limits and shape rule, keyed by op name.

An op family module declares its ops with the `@op(...)` decorator on the op's shape rule:

    @op("softmax", arguments=(Param("axis", "uint"),))
    def softmax(c: ShapeContext) -> TensorDesc:
        x = c["input"]
        c.axis_in_range("axis", c.attr("axis"), x.rank)
        return x

`infer()` then runs, for every operation: the argument and option checks from the signature,
the data type and rank checks from the spec's limits tables (spec_limits.json, generated from the
spec by tools/gen_spec_limits.py), the shape rule (which performs the op's own validation steps),
and the checks on its results. Errors name the op, the argument and the rule broken.
"""
from __future__ import annotations

import inspect
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence

import numpy as np

from .. import dtypes
from ..errors import ConverterError, OpValidationError
from ..ir.graph import shape_problem
from ..ir.operand import TensorDesc

__all__ = [
    "Param", "OpDef", "ShapeContext", "op", "get_op", "all_ops", "infer", "REQUIRED",
    "spec_limits", "broadcast_shapes", "unidirectionally_broadcastable",
]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()

# Parameter kinds, by the WebIDL type they stand for.
_KINDS = {
    "uint",           # [EnforceRange] unsigned long
    "uints",          # sequence<[EnforceRange] unsigned long>
    "uint_or_uints",  # (unsigned long or sequence<unsigned long>): split's splits
    "bool",           # boolean
    "float",          # float / double (finite unless the spec says unrestricted)
    "floats",         # sequence<float>
    "number",         # MLNumber: bigint or unrestricted double
    "enum",           # one of `choices`
    "enums",          # sequence of `choices`
    "dtype",          # MLOperandDataType
    "string",         # USVString (label)
}
_UINT_MAX = 2**32 - 1


@dataclass(frozen=True)
class Param:
    """A non-operand argument or option.

    default: REQUIRED for positional arguments the caller must give; None for options the spec
    leaves absent by default (their meaning is defined by the shape rule and lowering).
    """

    name: str
    kind: str
    default: Any = None
    choices: tuple[str, ...] = ()
    length: int | None = None

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ValueError(f"unknown parameter kind {self.kind!r}")


LABEL = Param("label", "string", "")


@dataclass
class OpDef:
    """One MLGraphBuilder op: how it is called, what it accepts, how its results are shaped."""

    name: str
    family: str
    operands: tuple[str, ...]
    operand_options: tuple[str, ...]
    arguments: tuple[Param, ...]
    options: tuple[Param, ...]
    shape_rule: Callable[["ShapeContext"], Any]
    variadic: bool = False
    limits: dict = field(default_factory=dict)
    doc: str = ""

    @property
    def slots(self) -> tuple[str, ...]:
        return self.operands + self.operand_options

    def slot(self, name: str, n_inputs: int | None = None) -> int:
        if self.variadic:
            raise ValueError(f"{self.name} takes a list of operands; index `inputs` directly")
        try:
            return self.slots.index(name)
        except ValueError:
            raise ConverterError(f"{self.name} has no operand '{name}'") from None

    def pad_inputs(self, inputs: list) -> list:
        if self.variadic:
            return inputs
        return inputs + [None] * (len(self.slots) - len(inputs))

    def params(self) -> dict[str, Param]:
        """Arguments and options by name (built once per op: infer() asks for every operation;
        callers only read it)."""
        found = self.__dict__.get("_params")
        if found is None:
            found = self.__dict__["_params"] = {
                p.name: p for p in (*self.arguments, *self.options, LABEL)}
        return found

    def default(self, name: str) -> Any:
        p = self.params().get(name)
        if p is None:
            raise ConverterError(f"{self.name} has no argument or option '{name}'")
        return None if p.default is REQUIRED else _copy(p.default)

    def output_limit(self, index: int) -> dict | None:
        if "output" in self.limits:
            return self.limits["output"]
        if "outputs" in self.limits:
            return self.limits["outputs"]
        return self.limits.get(f"output{index}")


def _copy(value):
    return list(value) if isinstance(value, (list, tuple)) else value


_OPS: dict[str, OpDef] = {}
_LIMITS_PATH = Path(__file__).with_name("spec_limits.json")
_SPEC_LIMITS: dict[str, dict] = json.loads(_LIMITS_PATH.read_text())

# Data types Chromium accepts beyond the spec's tables (packed 4-bit weights for blockwise
# dequantization, as MatMulNBits models use); the `portable` target still excludes them.
_EXTENSIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "dequantizeLinear": {"input": ("int4", "uint4"), "zeroPoint": ("int4", "uint4")},
    "quantizeLinear": {"zeroPoint": ("int4", "uint4"), "output": ("int4", "uint4")},
}


def spec_limits() -> dict[str, dict]:
    """The spec's per-op tensor limits, as parsed from its tables (read-only)."""
    return _SPEC_LIMITS


def op(name: str, *, operands: Sequence[str] = ("input",), operand_options: Sequence[str] = (),
       arguments: Sequence[Param] = (), options: Sequence[Param] = (), variadic: bool = False):
    """Register an op; the decorated function is its shape rule."""

    def register(rule: Callable) -> Callable:
        if name in _OPS:
            raise ValueError(f"op {name} registered twice")
        if name not in _SPEC_LIMITS:
            raise ValueError(f"op {name} is not in the spec's limits tables")
        family = rule.__module__.rsplit(".", 1)[-1]
        _OPS[name] = OpDef(name, family, tuple(operands), tuple(operand_options),
                           tuple(arguments), tuple(options), rule, variadic,
                           _SPEC_LIMITS[name], inspect.cleandoc(rule.__doc__ or ""))
        return rule

    return register


def get_op(name: str) -> OpDef:
    _load_families()
    try:
        return _OPS[name]
    except KeyError:
        raise ConverterError(f"unknown op '{name}'",
                             fix="use an MLGraphBuilder method name (see `webnn-convert ops`)") from None


def all_ops() -> dict[str, OpDef]:
    _load_families()
    return dict(sorted(_OPS.items()))


_FAMILIES_LOADED = False


def _load_families() -> None:
    global _FAMILIES_LOADED
    if not _FAMILIES_LOADED:  # every op lookup passes here: the import statement once
        from . import _families  # noqa: F401  (importing registers every family)

        _FAMILIES_LOADED = True


# -- the shape-rule context ------------------------------------------------------------------
class ShapeContext:
    """What a shape rule sees: operand descriptors by spec name, attrs with defaults, and `fail`."""

    def __init__(self, opdef: OpDef, inputs: list[TensorDesc | None], attrs: dict, node: str | None):
        self.opdef = opdef
        self.op = opdef.name
        self.node = node
        self.inputs = inputs
        self.attrs = attrs

    def __getitem__(self, name: str) -> TensorDesc | None:
        return self.inputs[self.opdef.slot(name)]

    def has(self, name: str) -> bool:
        return self[name] is not None

    def attr(self, name: str) -> Any:
        if name in self.attrs:
            return self.attrs[name]
        return self.opdef.default(name)

    def given(self, name: str) -> bool:
        return self.attrs.get(name) is not None

    def fail(self, argument: str, rule: str) -> NoReturn:
        raise OpValidationError(self.op, argument, rule, node=self.node)

    def check(self, condition: bool, argument: str, rule: str) -> None:
        if not condition:
            self.fail(argument, rule)

    def axis_in_range(self, argument: str, axis: int, rank: int) -> int:
        if rank == 0:
            self.fail(argument, f"axis {axis} is out of range for rank 0 (a scalar has no axes)")
        self.check(0 <= axis < rank, argument,
                   f"axis {axis} is out of range for rank {rank} (must be in [0, {rank - 1}])")
        return axis

    def axes_valid(self, argument: str, axes: Sequence[int], rank: int) -> list[int]:
        for a in axes:
            self.axis_in_range(argument, a, rank)
        self.check(len(set(axes)) == len(axes), argument, f"axes {list(axes)} repeat an axis")
        return list(axes)

    def same_type(self, argument: str, desc: TensorDesc, other: str) -> None:
        ref = self[other]
        self.check(desc.data_type == ref.data_type, argument,
                   f"data type {desc.data_type} must match {other}'s {ref.data_type}")

    def shape_is(self, argument: str, desc: TensorDesc, shape: Sequence[int]) -> None:
        self.check(tuple(desc.shape) == tuple(shape), argument,
                   f"shape {list(desc.shape)} must be {list(shape)}")

    def broadcast(self, argument: str, a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
        out = broadcast_shapes(a, b)
        if out is None:
            self.fail(argument, f"shapes {list(a)} and {list(b)} are not broadcastable")
        return out


def broadcast_shapes(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """Bidirectional (numpy-style) broadcasting, as the spec defines it; None if impossible."""
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(out)


def unidirectionally_broadcastable(src: Sequence[int], dst: Sequence[int]) -> bool:
    """Whether `src` broadcasts to exactly `dst` (the spec's unidirectional broadcasting)."""
    if len(src) > len(dst):
        return False
    padded = (1,) * (len(dst) - len(src)) + tuple(src)
    return all(s == d or s == 1 for s, d in zip(padded, dst))


# -- argument checks ---------------------------------------------------------------------------
def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _normalize(ctx: ShapeContext, p: Param, v):
    """Check one argument against its kind; return it in canonical form (plain Python types)."""
    fail = lambda rule: ctx.fail(p.name, rule)  # noqa: E731
    k = p.kind
    if k == "uint":
        if not _is_int(v) or not 0 <= v <= _UINT_MAX:
            fail(f"{v!r} is not an unsigned long")
        return int(v)
    if k in ("uints", "floats", "enums"):
        if not isinstance(v, (list, tuple)):
            fail(f"{v!r} is not a list")
        if p.length is not None and len(v) != p.length:
            fail(f"must have {p.length} values, got {len(v)}")
        item = _item_param(p)
        return [_normalize(ctx, item, x) for x in v]
    if k == "uint_or_uints":
        if isinstance(v, (list, tuple)):
            return _normalize(ctx, Param(p.name, "uints"), v)
        return _normalize(ctx, Param(p.name, "uint"), v)
    if k == "bool":
        if not isinstance(v, (bool, np.bool_)):
            fail(f"{v!r} is not a boolean")
        return bool(v)
    if k == "float":
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            fail(f"{v!r} is not a number")
        if not math.isfinite(float(v)):
            fail(f"{v!r} is not finite")
        return float(v)
    if k == "number":
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            fail(f"{v!r} is not a number")
        return int(v) if _is_int(v) else float(v)
    if k == "enum":
        if v not in p.choices:
            fail(f"{v!r} is not one of {', '.join(map(repr, p.choices))}")
        return v
    if k == "dtype":
        if v not in dtypes.DATA_TYPES:
            fail(f"{v!r} is not a data type")
        return v
    if k == "string":
        if not isinstance(v, str):
            fail(f"{v!r} is not a string")
        return v
    raise AssertionError(k)


_ITEMS: dict[tuple, Param] = {}


def _item_param(p: Param) -> Param:
    """The kind of one item of a list parameter (a uint of uints ...), made once per name,
    kind and choices (what it depends on; a Param holding a list default is unhashable)."""
    key = (p.name, p.kind, p.choices)
    item = _ITEMS.get(key)
    if item is None:
        item = _ITEMS[key] = Param(p.name, {"uints": "uint", "floats": "float",
                                            "enums": "enum"}[p.kind], choices=p.choices)
    return item


def _check_limit(ctx: ShapeContext, name: str, desc: TensorDesc, limit: dict,
                 descs: dict[str, TensorDesc]) -> None:
    allowed = limit["dataTypes"]
    extra = _EXTENSIONS.get(ctx.op, {}).get(name, ())
    if isinstance(allowed, dict):
        ref = descs.get(allowed["sameAs"])
        if ref is not None and desc.data_type != ref.data_type:
            ctx.fail(name, f"data type {desc.data_type} must match {allowed['sameAs']}'s "
                           f"{ref.data_type}")
    elif desc.data_type not in allowed and desc.data_type not in extra:
        ctx.fail(name, f"data type {desc.data_type} is not allowed "
                       f"(allowed: {', '.join(list(allowed) + list(extra))})")
    ranks = limit["rankRange"]
    if "sameAs" in ranks:
        ref = descs.get(ranks["sameAs"])
        if ref is not None and desc.rank != ref.rank:
            ctx.fail(name, f"rank {desc.rank} must match {ranks['sameAs']}'s rank {ref.rank}")
    else:
        lo, hi = ranks["min"], ranks["max"]
        if desc.rank < lo or (hi is not None and desc.rank > hi):
            span = f"{lo}" if lo == hi else f"{lo} to {hi if hi is not None else 'N'}"
            ctx.fail(name, f"rank {desc.rank} is not allowed (allowed: {span})")


def infer(op_type: str, inputs: list[TensorDesc | None], attrs: dict, *,
          node: str | None = None) -> list[TensorDesc]:
    """Validate one operation and compute its results' descriptors.

    `attrs` is normalized in place (plain ints, floats, lists), so what is stored is canonical.
    Raises OpValidationError naming the op, the argument and the rule it breaks.
    """
    opdef = get_op(op_type)
    ctx = ShapeContext(opdef, inputs, attrs, node)
    # 1. operands: count and presence.
    if opdef.variadic:
        if not inputs:
            ctx.fail(opdef.operands[0], "needs at least one operand")
        if any(x is None for x in inputs):
            ctx.fail(opdef.operands[0], "an operand is missing")
    else:
        if len(inputs) != len(opdef.slots):
            ctx.fail("operands", f"takes {len(opdef.slots)} operand slots "
                                 f"({', '.join(opdef.slots)}), got {len(inputs)}")
        for name, desc in zip(opdef.operands, inputs):
            if desc is None:
                ctx.fail(name, "is required")
    # 2. arguments and options.
    params = opdef.params()
    for key in list(attrs):
        if key not in params:
            ctx.fail(key, f"is not an argument or option of {op_type} "
                          f"(known: {', '.join(params) or 'none'})")
        if attrs[key] is None:
            del attrs[key]
            continue
        attrs[key] = _normalize(ctx, params[key], attrs[key])
    for p in opdef.arguments:
        if p.default is REQUIRED and p.name not in attrs:
            ctx.fail(p.name, "is required")
    # 3. the spec's data type and rank limits on operands.
    if opdef.variadic:
        descs = {opdef.operands[0]: inputs[0]}
        for d in inputs:
            _check_limit(ctx, opdef.operands[0], d, opdef.limits[opdef.operands[0]], descs)
    else:
        descs = {n: d for n, d in zip(opdef.slots, inputs) if d is not None}
        for n, d in descs.items():
            _check_limit(ctx, n, d, opdef.limits[n], descs)
    # 4. the op's own validation steps and output shapes.
    result = opdef.shape_rule(ctx)
    results = [result] if isinstance(result, TensorDesc) else list(result)
    # 5. results obey the limits and are valid shapes.
    for i, r in enumerate(results):
        r = TensorDesc(r.data_type, tuple(int(d) for d in r.shape))
        results[i] = r
        limit = opdef.output_limit(i)
        if limit is not None:
            _check_limit(ctx, "output", r, limit, descs)
        problem = shape_problem(r.shape)
        if problem:
            ctx.fail("output", problem)
    return results
