"""A graph file's content, between the file and the Graph.

Both forms (`.webnn` text and `webnn-graph-json`) read into a GraphDoc and write from one, so
the rules that do not depend on the syntax (trailing operand options, the named operand form,
concat's list, defaults for skipped operands, weight keys) live in one place:
`graph_from_doc.py` and `doc_from_graph.py`.

Every declaration keeps `where`, the place in the file it came from (`path:line:column` for
text, `path $.nodes[3]` for JSON), so errors point at it (`file_error`, `located`: here, below
every reader of a doc, so that none of them imports another for its errors).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ConverterError, FormatError
from ..ir.operand import ConstantData

__all__ = ["Ref", "InputDecl", "ConstDecl", "NodeDecl", "OutputDecl", "GraphDoc",
           "NON_FINITE", "non_finite_name", "unique_name", "file_error", "located"]

# JSON and the text form have no literal for these numbers; both spell them as strings.
NON_FINITE = {"Infinity": float("inf"), "-Infinity": float("-inf"), "NaN": float("nan")}


def non_finite_name(value: float) -> str:
    if value != value:
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def unique_name(base: str, taken: set[str]) -> str:
    """`base`, or `base_1`, `base_2`... whichever is not taken yet; it is then taken."""
    candidate, n = base, 0
    while candidate in taken:
        n += 1
        candidate = f"{base}_{n}"
    taken.add(candidate)
    return candidate


@dataclass(frozen=True)
class Ref:
    """A bare identifier in a value position of the text form.

    It names an operand where an operand is expected (`bias=b`, `concat([a, b])`); elsewhere it
    is a word (`inputLayout=nhwc`), as other readers of the format take it.
    """

    ident: str


@dataclass
class InputDecl:
    name: str
    data_type: str
    shape: tuple[int, ...]
    where: str = ""


@dataclass
class ConstDecl:
    """A constant. kind is "weights" (bytes in the weights file under `key`), "scalar" (every
    element is `value`) or "bytes" (its little-endian bytes inline, in `data`)."""

    name: str
    data_type: str
    shape: tuple[int, ...]
    kind: str
    key: str | None = None
    value: int | float | None = None
    data: bytes | None = None
    where: str = ""
    # Writing only: the value whose bytes go into the weights file.
    source: ConstantData | None = None


@dataclass
class NodeDecl:
    """One operation as written.

    inputs: the positional arguments; each an operand name (str), a Ref (text identifier), or
        for concat a list of those.
    options: every `name=value` argument, operand-valued options in the named form included.
    outputs: result names; one for `y = op(...)`, several for `[a, b] = op(...)`.
    id: the node's name (its single result's name, or the JSON `id`).
    """

    op: str
    inputs: list[Any]
    options: dict[str, Any]
    outputs: list[str]
    id: str
    where: str = ""
    input_where: list[str] = field(default_factory=list)
    output_where: list[str] = field(default_factory=list)
    option_where: dict[str, str] = field(default_factory=dict)

    def input_location(self, index: int) -> str:
        return self.input_where[index] if index < len(self.input_where) else self.where

    def output_location(self, index: int) -> str:
        return self.output_where[index] if index < len(self.output_where) else self.where

    def option_location(self, name: str) -> str:
        return self.option_where.get(name, self.where)


@dataclass
class OutputDecl:
    key: str  # the name users read the output by
    operand: str
    where: str = ""


@dataclass
class GraphDoc:
    name: str
    path: str
    version: int = 2
    quantized: bool = False
    inputs: list[InputDecl] = field(default_factory=list)
    consts: list[ConstDecl] = field(default_factory=list)
    nodes: list[NodeDecl] = field(default_factory=list)
    outputs: list[OutputDecl] = field(default_factory=list)
    # Text form: identifier -> the operand's real name (from `#@name` directives).
    aliases: dict[str, str] = field(default_factory=dict)
    # State pairs (state_doc.StateDecl): `#@state` directives, the JSON `state` member.
    state: list[Any] = field(default_factory=list)
    # Boundary permutations (permuted_doc.py): {"inputs"|"outputs": {name: perm}}.
    permuted: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    # Variants of the model at other dims (converter/dynamic/variants_file.py): the raw record, when the file has one.
    variants: Any = None

    def operand_name(self, value: Any) -> str | None:
        """The operand a value names: a Ref through the aliases, a string as is."""
        if isinstance(value, Ref):
            return self.aliases.get(value.ident, value.ident)
        if isinstance(value, str):
            return value
        return None

    def needs_weights(self) -> bool:
        return any(c.kind == "weights" for c in self.consts) or any(
            s.init is not None and s.init.kind == "weights" for s in self.state)

    def weight_decls(self) -> list[ConstDecl]:
        """Every declaration whose bytes go in the weights file: constants, then the
        initial values of state."""
        decls = [c for c in self.consts if c.kind == "weights"]
        return decls + [s.init for s in self.state if s.init is not None and
                        s.init.kind == "weights"]


def located(error: ConverterError, where: str) -> ConverterError:
    """The same error (same class), its location prefixed with `where`, unless it already
    points into the file: errors the reader raises itself carry the exact token's place."""
    if where and not getattr(error, "located", False):
        error.where = f"{where}: {error.where}" if error.where else where
        error.args = (error.line(),)
    error.located = True  # type: ignore[attr-defined]
    return error


def file_error(what: str, *, where: str, fix: str | None = None) -> FormatError:
    """A FormatError at an exact place in the file (not to be prefixed again)."""
    error = FormatError(what, where=where, fix=fix)
    error.located = True  # type: ignore[attr-defined]
    return error
