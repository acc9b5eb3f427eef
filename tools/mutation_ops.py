"""The mutations `tools/mutation.py` plants: small, realistic bugs made on the syntax tree.

Each candidate is found by one deterministic walk of a module's tree, so the same source always
gives the same numbered list; a runner re-parses the file and applies candidate number k to its
own fresh tree (the only thing that crosses a process boundary is the number).

Kinds: arithmetic operator swaps, comparison flips, integer constant +1, True/False, and/or,
dropped `not` and unary minus, negated `if`/`while` conditions, min/max swaps, the first two
positional arguments of a call swapped (unless the call is known to commute: `_commutative`),
and removed statements (calls, augmented and attribute/subscript assignments, raise, continue,
break).  Code that cannot change behaviour is
never mutated: docstrings, annotations, f-strings, the arguments of a raised exception (only
its message would change), and the order of two names in a module-level registration call
(`@layout_rule("softmax", "cumulativeSum")` registers both either way).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable

_BINOP_SWAP = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult, ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult,
    ast.LShift: ast.RShift, ast.RShift: ast.LShift, ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd, ast.BitXor: ast.BitOr,
}
_CMP_FLIP = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_SYMBOL = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|",
    ast.BitXor: "^", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
    ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}


@dataclass
class Candidate:
    index: int
    line: int
    description: str
    owner: str | None           # qualname of the outermost function holding it; None: module level
    apply: Callable[[], None]   # mutates the tree this candidate was found in


def _short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node).replace("\n", " ")
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _Finder:
    def __init__(self) -> None:
        self.found: list[Candidate] = []
        self.owner_stack: list[str] = []
        self.class_stack: list[str] = []

    def _add(self, node: ast.AST, description: str, apply: Callable[[], None]) -> None:
        owner = self.owner_stack[0] if self.owner_stack else None
        self.found.append(Candidate(len(self.found), node.lineno, description, owner, apply))

    # --- statements -------------------------------------------------------------------------
    def body(self, stmts: list[ast.stmt], docstring_allowed: bool = False) -> None:
        for i, stmt in enumerate(stmts):
            if docstring_allowed and i == 0 and isinstance(stmt, ast.Expr) and \
                    isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                continue
            self.stmt(stmt, stmts, i)

    def _removable(self, stmt: ast.stmt) -> bool:
        if isinstance(stmt, (ast.AugAssign, ast.Raise, ast.Continue, ast.Break)):
            return True
        if isinstance(stmt, ast.Expr):
            return isinstance(stmt.value, ast.Call)
        if isinstance(stmt, ast.Assign):
            return all(isinstance(t, (ast.Attribute, ast.Subscript)) for t in stmt.targets)
        return False

    def stmt(self, stmt: ast.stmt, parent: list[ast.stmt], i: int) -> None:
        if self._removable(stmt) and len(parent) > 0:
            def remove(parent=parent, i=i, stmt=stmt):
                parent[i] = ast.copy_location(ast.Pass(), stmt)
            self._add(stmt, f"remove `{_short(stmt)}`", remove)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in stmt.decorator_list:
                self.expr(deco)
            self._defaults(stmt.args)
            qual = ".".join(self.class_stack + [stmt.name])
            self.owner_stack.append(qual if not self.owner_stack else self.owner_stack[0])
            saved, self.class_stack = self.class_stack, self.class_stack + [stmt.name, "<locals>"]
            self.body(stmt.body, docstring_allowed=True)
            self.class_stack = saved
            self.owner_stack.pop()
            return
        if isinstance(stmt, ast.ClassDef):
            for deco in stmt.decorator_list:
                self.expr(deco)
            self.class_stack.append(stmt.name)
            self.body(stmt.body, docstring_allowed=True)
            self.class_stack.pop()
            return
        if isinstance(stmt, ast.Raise):
            return  # only the message would change
        if isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.expr(stmt.value)
            return
        if isinstance(stmt, (ast.If, ast.While)):
            test = stmt.test
            if not isinstance(test, ast.Compare):
                def negate(stmt=stmt):
                    stmt.test = ast.copy_location(ast.UnaryOp(ast.Not(), stmt.test), stmt.test)
                self._add(test, f"`if {_short(test)}` -> `if not ...`", negate)
            self.expr(test)
            self.body(stmt.body)
            self.body(stmt.orelse)
            return
        if isinstance(stmt, ast.Assert):
            return
        self.fields(stmt)

    def other(self, node: ast.AST) -> None:
        # except handlers, match cases, comprehensions, keywords, withitems
        if isinstance(node, ast.ExceptHandler):
            self.body(node.body)
            return
        self.fields(node)

    def fields(self, node: ast.AST) -> None:
        """Every statement list, expression and other node below `node`, in field order."""
        for _, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                self.body(value)
            elif isinstance(value, list):
                for v in value:
                    if isinstance(v, ast.expr):
                        self.expr(v)
                    elif isinstance(v, ast.AST):
                        self.other(v)
            elif isinstance(value, ast.expr):
                self.expr(value)
            elif isinstance(value, ast.AST):
                self.other(value)

    def _defaults(self, args: ast.arguments) -> None:
        for d in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
            self.expr(d)

    # --- expressions ------------------------------------------------------------------------
    def expr(self, node: ast.expr) -> None:
        if isinstance(node, ast.JoinedStr):
            return
        if isinstance(node, ast.Lambda):
            self._defaults(node.args)
            self.owner_stack.append("<lambda>" if not self.owner_stack else self.owner_stack[0])
            self.expr(node.body)
            self.owner_stack.pop()
            return
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOP_SWAP:
            new = _BINOP_SWAP[type(node.op)]

            def swap(node=node, new=new):
                node.op = new()
            self._add(node, f"`{_short(node)}`: {_SYMBOL[type(node.op)]} -> {_SYMBOL[new]}", swap)
        if isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                new = _CMP_FLIP[type(op)]

                def flip(node=node, k=k, new=new):
                    node.ops[k] = new()
                self._add(node, f"`{_short(node)}`: {_SYMBOL[type(op)]} -> {_SYMBOL[new]}", flip)
        if isinstance(node, ast.BoolOp):
            new = ast.Or if isinstance(node.op, ast.And) else ast.And

            def boolswap(node=node, new=new):
                node.op = new()
            self._add(node, f"`{_short(node)}`: {'and' if new is ast.Or else 'or'} -> "
                            f"{'or' if new is ast.Or else 'and'}", boolswap)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub, ast.Invert)):
            def drop(node=node):
                node.op = ast.UAdd() if not isinstance(node.op, ast.Not) else node.op
                if isinstance(node.op, ast.Not):
                    # `not x` -> `x`: double negation keeps the node in place
                    node.operand = ast.copy_location(ast.UnaryOp(ast.Not(), node.operand),
                                                     node.operand)
            self._add(node, f"`{_short(node)}`: drop the leading operator", drop)
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                def toggle(node=node):
                    node.value = not node.value
                self._add(node, f"`{v}` -> `{not v}`", toggle)
            elif isinstance(v, int):
                def inc(node=node):
                    node.value = node.value + 1
                self._add(node, f"`{v}` -> `{v + 1}`", inc)
        if isinstance(node, ast.IfExp):
            def negate_ifexp(node=node):
                node.test = ast.copy_location(ast.UnaryOp(ast.Not(), node.test), node.test)
            self._add(node.test, f"`{_short(node.test)}` in a conditional expression -> negated",
                      negate_ifexp)
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
                new = "max" if node.func.id == "min" else "min"

                def minmax(node=node, new=new):
                    node.func = ast.copy_location(ast.Name(new, ast.Load()), node.func)
                self._add(node, f"`{_short(node)}`: {node.func.id} -> {new}", minmax)
            pos = node.args
            names = all(isinstance(a, ast.Constant) and isinstance(a.value, str)
                        for a in pos[:2])
            if len(pos) >= 2 and not any(isinstance(a, ast.Starred) for a in pos[:2]) and \
                    ast.dump(pos[0]) != ast.dump(pos[1]) and \
                    not (names and not self.owner_stack) and not _commutative(node):
                def argswap(node=node):
                    node.args[0], node.args[1] = node.args[1], node.args[0]
                self._add(node, f"`{_short(node)}`: first two arguments swapped", argswap)
        for name, value in ast.iter_fields(node):
            if isinstance(value, list):
                for v in value:
                    if isinstance(v, ast.expr):
                        self.expr(v)
                    elif isinstance(v, ast.AST):
                        self.other(v)
            elif isinstance(value, ast.expr):
                self.expr(value)
            elif isinstance(value, ast.AST):
                self.other(value)


# Calls whose two operands commute, so swapping them is an equivalent mutant by construction:
# element-wise ops made by the decomposition emitter (`e`) and the TFLite export context (`ctx`),
# whose broadcasting and values are symmetric, and numpy's symmetric element-wise functions
# (NaN-propagating, unlike Python's `max`/`min`, whose swaps are still generated).
_COMMUTATIVE_METHODS = {"e": {"add", "mul", "max", "min", "equal", "logicalAnd", "logicalOr",
                              "logicalXor"},
                        "ctx": {"add", "mul", "maximum", "minimum"},
                        "np": {"maximum", "minimum", "array_equal", "add", "multiply",
                               "equal"}}


def _commutative(call: ast.Call) -> bool:
    func = call.func
    return (len(call.args) == 2 and not call.keywords and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.attr in _COMMUTATIVE_METHODS.get(func.value.id, ()))


def candidates(tree: ast.Module) -> list[Candidate]:
    """Every mutation of `tree`, numbered in a fixed order."""
    finder = _Finder()
    finder.body(tree.body, docstring_allowed=True)
    return finder.found


def find_code(code, qualname: str):
    """The code object of `qualname` inside a compiled module's code (None if absent)."""
    for const in code.co_consts:
        if hasattr(const, "co_qualname"):
            if const.co_qualname == qualname:
                return const
            inner = find_code(const, qualname)
            if inner is not None:
                return inner
    return None
