"""The `.webnn` text form: a recursive-descent parser and a writer.

    webnn_graph "tiny" v1 {
      inputs { x: f32[1, 3, 32, 32]; }
      consts { w: f32[8, 3, 3, 3] @weights("w"); eps: f32[] @scalar(0.001); }
      nodes {
        c = conv2d(x, w, b, padding=[1, 1, 1, 1]);
        [p, q] = split(c, splits=2, axis=1);
      }
      outputs { p; q; }
    }

Grammar (the full rules are in /work/shared/reference/formats.md):

    file     := header block* "}"
    header   := "webnn_graph" STRING VERSION ["@quantized"] "{"      VERSION: v1 or v2
    block    := ("inputs" | "consts" | "nodes" | "outputs") "{" item* "}"
    input    := IDENT ":" type ";"
    const    := IDENT ":" type [@weights(STRING) | @scalar(NUMBER) | @bytes([INT, ...])] ";"
    node     := (IDENT | "[" IDENT ("," IDENT)* "]") "=" IDENT "(" [arg ("," arg)*] ")" ";"
    arg      := IDENT "=" value | value          (positional args are operands)
    value    := NUMBER | STRING | true | false | null | IDENT | "[" [value ("," value)*] "]"
    outputs  := IDENT (("," | ";") IDENT)* [";"]
    type     := DTYPE "[" [INT ("," INT)*] "]"

Names that are not identifiers are written as identifiers plus a `#@name` comment that gives
the real name back (see _text_lexer.py), so inputs and outputs keep the names users feed and
read, while other tools still read the file.
"""
from __future__ import annotations

import re
from typing import Any, NoReturn

from .. import dtypes
from ..errors import ConverterError, ParseError
from ..ir import Graph
from ._files import MAX_NESTING
from ._text_lexer import (Directive, Token, init_text, is_identifier, number_text, quote,
                          tokenize)
from .document import (ConstDecl, GraphDoc, InputDecl, NodeDecl, OutputDecl, Ref,
                       non_finite_name, unique_name)
from . import permuted_doc
from .state_doc import parse_directive, render_directive

__all__ = ["parse", "loads", "dumps", "render", "TEXT_VERSION"]

TEXT_VERSION = 1  # what the writer puts in the header; the reader takes v1 and v2
_VERSIONS = (1, 2)
_BLOCKS = ("inputs", "consts", "nodes", "outputs")
_KEYWORDS = ("true", "false", "null")  # identifiers that read as values
_TOKENS = ", ".join(t.token for t in dtypes.DATA_TYPES.values())


def parse(text: str, path: str = "<string>") -> GraphDoc:
    """The GraphDoc of a `.webnn` text; ParseError (path:line:column) on a syntax error."""
    tokens, directives = tokenize(text, path)
    doc = _Parser(tokens, path).file()
    _apply_names(doc, [d for d in directives if d.kind == "name"], path)
    doc.state = [parse_directive(d.value, path, d.line, d.column)
                 for d in directives if d.kind == "state"]
    for d in directives:
        if d.kind == "permuted":
            permuted_doc.parse_directive(d.value, path, d.line, d.column, doc.permuted)
    return doc


def loads(text: str, path: str = "<string>", *, weights=None, verify: bool = True) -> Graph:
    """A Graph from `.webnn` text; `weights` (a WeightsFile) resolves @weights constants."""
    from .graph_from_doc import graph_from_doc

    return graph_from_doc(parse(text, path), weights, verify=verify)


def dumps(graph: Graph) -> str:
    """The `.webnn` text of a graph (weights referenced by key, not included)."""
    from .doc_from_graph import doc_from_graph

    return render(doc_from_graph(graph))


class _Parser:
    def __init__(self, tokens: list[Token], path: str):
        self.tokens, self.path, self.i = tokens, path, 0
        self.doc = GraphDoc(name="graph", path=path)

    # -- token access --------------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def next(self, *, output_item: bool = False) -> Token:
        tok = self.peek()
        if tok.directives and not output_item:
            d = tok.directives[0]
            raise ParseError("#@output must come right before an output", path=self.path,
                             line=d.line, column=d.column,
                             fix="put it on the line before an item of the outputs block")
        self.i += 1
        return tok

    def at(self, tok: Token) -> str:
        return f"{self.path}:{tok.line}:{tok.column}"

    def fail(self, tok: Token, what: str, fix: str | None = None) -> NoReturn:
        raise ParseError(what, path=self.path, line=tok.line, column=tok.column, fix=fix)

    def is_punct(self, ch: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok.kind == "punct" and tok.value == ch

    def expect(self, ch: str, after: str, fix: str | None = None) -> Token:
        tok = self.peek()
        if not self.is_punct(ch):
            self.fail(tok, f"expected '{ch}' {after}, found {tok.describe()}", fix)
        return self.next()

    def ident(self, what: str, fix: str | None = None) -> Token:
        tok = self.peek()
        if tok.kind != "ident":
            self.fail(tok, f"expected {what}, found {tok.describe()}", fix)
        return self.next()

    def int_value(self, what: str, low: int = 0, high: int | None = None) -> int:
        tok = self.peek()
        if tok.kind != "number" or not isinstance(tok.value, int):
            self.fail(tok, f"expected {what} (an integer), found {tok.describe()}")
        if tok.value < low or (high is not None and tok.value > high):
            bounds = f"{low} to {high}" if high is not None else f"at least {low}"
            self.fail(tok, f"{what} {tok.value} is out of range ({bounds})")
        return self.next().value

    # -- file structure -----------------------------------------------------------------------
    def file(self) -> GraphDoc:
        head = self.peek()
        if head.kind != "ident" or head.value != "webnn_graph":
            self.fail(head, f"expected 'webnn_graph', found {head.describe()}",
                      'a .webnn file starts with: webnn_graph "name" v1 {')
        self.next()
        name = self.peek()
        if name.kind != "string":
            self.fail(name, f"expected the graph's name as a \"string\", found {name.describe()}")
        self.doc.name = self.next().value
        self.doc.version = self.version()
        if self.peek().kind == "at":
            tok = self.next()
            if tok.value != "quantized":
                self.fail(tok, f"unknown header annotation {tok.text}", "only @quantized goes here")
            self.doc.quantized = True
        self.expect("{", "after the header")
        while not self.is_punct("}"):
            tok = self.peek()
            if tok.kind != "ident" or tok.value not in _BLOCKS:
                self.fail(tok, f"expected a block (inputs, consts, nodes or outputs) or '}}', "
                               f"found {tok.describe()}")
            self.next()
            self.expect("{", f"after '{tok.value}'")
            getattr(self, f"block_{tok.value}")()
            self.expect("}", f"to close the {tok.value} block")
        self.next()
        tail = self.peek()
        if tail.kind != "eof":
            self.fail(tail, f"unexpected {tail.describe()} after the graph's closing '}}'")
        return self.doc

    def version(self) -> int:
        tok = self.ident("the format version (v1)")
        m = re.fullmatch(r"v([0-9]+)", tok.value)
        if m:
            number = int(m.group(1))
        elif tok.value == "v" and self.peek().kind == "number":
            number = self.int_value("the format version")
        else:
            self.fail(tok, f"expected the format version (v1), found {tok.describe()}")
        if number not in _VERSIONS:
            self.fail(tok, f"format version v{number} is not supported",
                      f"this reader knows {', '.join(f'v{v}' for v in _VERSIONS)}")
        return number

    def type_(self) -> tuple[str, tuple[int, ...]]:
        tok = self.ident("a data type", f"use one of {_TOKENS}")
        try:
            data_type = dtypes.from_token(tok.value)
        except ConverterError:
            self.fail(tok, f"unknown data type '{tok.value}'", f"use one of {_TOKENS}")
        self.expect("[", "to open the shape", "a scalar's shape is []")
        dims: list[int] = []
        while not self.is_punct("]"):
            if dims:
                self.expect(",", "between dimensions")
            dims.append(self.int_value("a dimension"))
        self.next()
        return data_type, tuple(dims)

    # -- blocks -------------------------------------------------------------------------------
    def block_inputs(self) -> None:
        while not self.is_punct("}"):
            name = self.ident("an input name")
            self.expect(":", f"after input '{name.value}'", "write: x: f32[1, 3];")
            data_type, shape = self.type_()
            self.expect(";", "after the input's type")
            self.doc.inputs.append(InputDecl(name.value, data_type, shape, self.at(name)))

    def block_consts(self) -> None:
        while not self.is_punct("}"):
            name = self.ident("a constant name")
            self.expect(":", f"after constant '{name.value}'", 'write: w: f32[8] @weights("w");')
            data_type, shape = self.type_()
            # No annotation means the weights under the constant's own name, as other readers
            # of the format take it.
            decl = ConstDecl(name.value, data_type, shape, "weights", key=name.value,
                             where=self.at(name))
            if self.peek().kind == "at":
                self.annotation(decl)
            if self.peek().kind == "at":
                self.fail(self.peek(), "a constant takes one of @weights, @scalar or @bytes")
            self.expect(";", "after the constant")
            self.doc.consts.append(decl)

    def annotation(self, decl: ConstDecl) -> None:
        tok = self.next()
        self.expect("(", f"after {tok.text}")
        arg = self.peek()
        if tok.value == "weights":
            if arg.kind != "string":
                self.fail(arg, f"expected the weights key as a \"string\", found {arg.describe()}")
            decl.key = self.next().value
        elif tok.value == "scalar":
            if arg.kind != "number":
                self.fail(arg, f"expected a number, found {arg.describe()}")
            decl.kind, decl.key, decl.value = "scalar", None, self.next().value
        elif tok.value == "bytes":
            self.expect("[", "to open the byte list", "write: @bytes([0, 0, 128, 63])")
            data: list[int] = []
            while not self.is_punct("]"):
                if data:
                    self.expect(",", "between bytes")
                data.append(self.int_value("a byte", 0, 255))
            self.next()
            decl.kind, decl.key, decl.data = "bytes", None, bytes(data)
        else:
            self.fail(tok, f"unknown constant annotation {tok.text}",
                      "use @weights(\"key\"), @scalar(number) or @bytes([...])")
        self.expect(")", f"to close {tok.text}(")

    def block_nodes(self) -> None:
        while not self.is_punct("}"):
            start = self.peek()
            if self.is_punct("["):
                self.next()
                outs = [self.ident("a result name")]
                while self.is_punct(","):
                    self.next()
                    outs.append(self.ident("a result name"))
                self.expect("]", "to close the result names")
            else:
                outs = [self.ident("a result name or '['")]
            self.expect("=", f"after {'the result names' if len(outs) > 1 else outs[0].describe()}")
            op = self.ident("an op name", "a node is: y = op(x, option=value);")
            self.expect("(", f"after the op name '{op.value}'",
                        "a node is: y = op(x, option=value);")
            node = NodeDecl(op.value, [], {}, [t.value for t in outs], outs[0].value,
                            self.at(start), output_where=[self.at(t) for t in outs])
            if not self.is_punct(")"):
                self.argument(node)
                while self.is_punct(","):
                    self.next()
                    self.argument(node)
            self.expect(")", f"to close the arguments of {op.value}")
            self.expect(";", "after the node")
            self.doc.nodes.append(node)

    def argument(self, node: NodeDecl) -> None:
        tok = self.peek()
        if tok.kind == "ident" and self.is_punct("=", 1):
            self.next()
            self.next()
            if tok.value in node.options:
                self.fail(tok, f"'{tok.value}' is given twice")
            node.options[tok.value] = self.value()
            node.option_where[tok.value] = self.at(tok)
            return
        if node.options:
            self.fail(tok, "an operand follows a name=value argument",
                      "operands come first, then name=value arguments")
        value = self.value()
        if not _is_operand_ref(value):
            self.fail(tok, f"positional argument {tok.describe()} of {node.op} is not an operand",
                      "write non-operand arguments as name=value (axis=1, newShape=[1, 4])")
        node.inputs.append(value)
        node.input_where.append(self.at(tok))

    def value(self, depth: int = 1) -> Any:
        tok = self.next()
        if tok.kind in ("number", "string"):
            return tok.value
        if tok.kind == "ident":
            if tok.value in _KEYWORDS:
                return {"true": True, "false": False, "null": None}[tok.value]
            return Ref(tok.value)
        if tok.kind == "punct" and tok.value == "[":
            if depth > MAX_NESTING:  # bounds the recursion, and every walk over the value
                self.fail(tok, f"lists are nested more than {MAX_NESTING} deep",
                          "no option needs that; the file is corrupt or hostile")
            items: list[Any] = []
            while not self.is_punct("]"):
                if items:
                    self.expect(",", "between list items")
                items.append(self.value(depth + 1))
            self.next()
            return items
        self.fail(tok, f"expected a value, found {tok.describe()}",
                  "values are numbers, \"strings\", true, false, null, names or [lists]")

    def block_outputs(self) -> None:
        while not self.is_punct("}"):
            tok = self.peek()
            if tok.kind != "ident":
                self.fail(tok, f"expected an output name, found {tok.describe()}")
            self.next(output_item=True)
            if len(tok.directives) > 1:
                d = tok.directives[1]
                raise ParseError("two #@output directives for one output", path=self.path,
                                 line=d.line, column=d.column)
            if tok.directives and not tok.directives[0].value:
                d = tok.directives[0]
                raise ParseError("#@output gives an empty name", path=self.path, line=d.line,
                                 column=d.column)
            # Without #@output the key is the operand's real name, known once #@name is applied.
            key = tok.directives[0].value if tok.directives else ""
            self.doc.outputs.append(OutputDecl(key, tok.value, self.at(tok)))
            if self.is_punct(",") or self.is_punct(";"):
                self.next()
            elif not self.is_punct("}"):
                self.fail(self.peek(), f"expected ';' after output '{tok.value}', found "
                                       f"{self.peek().describe()}")


def _is_operand_ref(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, (Ref, str)) for v in value)
    return isinstance(value, (Ref, str))


def _apply_names(doc: GraphDoc, names: list[Directive], path: str) -> None:
    """Give identifiers their real names from the `#@name` directives."""
    declared = {d.name for d in doc.inputs} | {d.name for d in doc.consts}
    declared.update(o for n in doc.nodes for o in n.outputs)
    for d in names:
        def fail(what: str) -> None:
            raise ParseError(what, path=path, line=d.line, column=d.column)

        if d.ident in doc.aliases and doc.aliases[d.ident] != d.value:
            fail(f"#@name gives '{d.ident}' a second name")
        if d.ident not in declared:
            fail(f"#@name names '{d.ident}', which the file does not declare")
        if not d.value:
            fail("#@name gives an empty name")
        doc.aliases[d.ident] = d.value
    real = lambda ident: doc.aliases.get(ident, ident)  # noqa: E731
    for decl in (*doc.inputs, *doc.consts):
        decl.name = real(decl.name)
    for node in doc.nodes:
        node.outputs = [real(o) for o in node.outputs]
        node.id = node.outputs[0]
    for out in doc.outputs:
        out.operand = real(out.operand)
        if not out.key:
            out.key = out.operand


# -- writing ------------------------------------------------------------------------------------
def render(doc: GraphDoc) -> str:
    """The text of a GraphDoc (names that are not identifiers get `#@name` directives)."""
    idents = _identifiers(doc)
    out: list[str] = []
    flag = " @quantized" if doc.quantized else ""
    out.append(f"webnn_graph {quote(doc.name)} v{TEXT_VERSION}{flag} {{")
    out += [f"  {render_directive(d)}" for d in doc.state]
    out += [f"  {line}" for line in permuted_doc.render_directives(doc.permuted)]

    def declare(name: str, text: str) -> None:
        if idents[name] != name:
            out.append(f"    #@name {idents[name]} {quote(name)}")
        out.append(f"    {text}")

    if doc.inputs:
        out.append("  inputs {")
        for i in doc.inputs:
            declare(i.name, f"{idents[i.name]}: {_type(i.data_type, i.shape)};")
        out.append("  }")
    if doc.consts:
        out.append("  consts {")
        for c in doc.consts:
            declare(c.name, f"{idents[c.name]}: {_type(c.data_type, c.shape)} {init_text(c)};")
        out.append("  }")
    if doc.nodes:
        out.append("  nodes {")
        for n in doc.nodes:
            for o in n.outputs:
                if idents[o] != o:
                    out.append(f"    #@name {idents[o]} {quote(o)}")
            target = idents[n.outputs[0]] if len(n.outputs) == 1 else \
                "[" + ", ".join(idents[o] for o in n.outputs) + "]"
            args = [_operand_arg(v, idents) for v in n.inputs]
            args += [f"{k}={_value(v)}" for k, v in n.options.items()]
            out.append(f"    {target} = {n.op}({', '.join(args)});")
        out.append("  }")
    renamed = [o for o in doc.outputs if o.key != o.operand]
    if not renamed:
        out.append("  outputs { " + " ".join(f"{idents[o.operand]};" for o in doc.outputs) + " }")
    else:
        out.append("  outputs {")
        for o in doc.outputs:
            if o.key != o.operand:
                out.append(f"    #@output {quote(o.key)}")
            out.append(f"    {idents[o.operand]};")
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


def _identifiers(doc: GraphDoc) -> dict[str, str]:
    """Each operand name -> the identifier that stands for it in the text.

    Deterministic: valid names keep themselves (claimed first, so a mapped name never takes
    one); the others, in declaration order, become the name with every character outside the
    identifier alphabet replaced by '_' ('_' prefixed where needed), then `_1`, `_2`... until
    unused.
    """
    names = [d.name for d in (*doc.inputs, *doc.consts)] + [o for n in doc.nodes for o in n.outputs]
    names += [o.operand for o in doc.outputs if o.operand not in names]
    valid = lambda s: is_identifier(s) and s not in _KEYWORDS  # noqa: E731
    idents = {name: name for name in names if valid(name)}
    taken = set(idents)
    for name in names:
        if name in idents:
            continue
        base = re.sub(r"[^A-Za-z0-9_./]", "_", name)
        if not base or not valid(base):
            base = "_" + base
        idents[name] = unique_name(base, taken)
    return idents


def _type(data_type: str, shape) -> str:
    return f"{dtypes.info(data_type).token}[{', '.join(str(int(d)) for d in shape)}]"


def _operand_arg(value: Any, idents: dict[str, str]) -> str:
    if isinstance(value, list):  # concat's operand list
        return "[" + ", ".join(idents[v] for v in value) + "]"
    return idents[value]


def _value(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        if isinstance(v, float) and not (v == v and abs(v) != float("inf")):
            return quote(non_finite_name(v))
        return number_text(v)
    if isinstance(v, str):
        return quote(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} in the .webnn text")
