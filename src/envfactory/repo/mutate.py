"""Bug injection: candidate mutations of a project's source, found on its syntax tree.

Each candidate replaces one byte range of a file with new text (a comparison or an operator
swapped, a constant off by one, a condition or a negation dropped, a default changed, two
arguments swapped, a call removed). Candidates are enumerated deterministically and cheaply
(text positions only); :func:`check_valid` later proves, by parsing, that the new file is
the intended tree. Only code inside functions is mutated, so the tests that run the mutated
line are the tests a mutation can change (:data:`Mutation.probe` selects them).
"""

from __future__ import annotations

import ast
import copy
import hashlib
from dataclasses import dataclass, field
from typing import Any

_CMP: dict[type[ast.cmpop], tuple[str, type[ast.cmpop]]] = {
    ast.Lt: ("<", ast.LtE),
    ast.LtE: ("<=", ast.Lt),
    ast.Gt: (">", ast.GtE),
    ast.GtE: (">=", ast.Gt),
    ast.Eq: ("==", ast.NotEq),
    ast.NotEq: ("!=", ast.Eq),
    ast.Is: ("is", ast.IsNot),
    ast.IsNot: ("isnot", ast.Is),
    ast.In: ("in", ast.NotIn),
    ast.NotIn: ("notin", ast.In),
}
_CMP_TEXT = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
             ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
             ast.NotIn: "not in"}  # fmt: skip
_BIN: dict[type[ast.operator], tuple[str, type[ast.operator], str]] = {
    ast.Add: ("+", ast.Sub, "-"),
    ast.Sub: ("-", ast.Add, "+"),
    ast.Mult: ("*", ast.FloorDiv, "//"),
    ast.FloorDiv: ("//", ast.Mult, "*"),
    ast.Div: ("/", ast.Mult, "*"),
    ast.Mod: ("%", ast.FloorDiv, "//"),
    ast.BitAnd: ("&", ast.BitOr, "|"),
    ast.BitOr: ("|", ast.BitAnd, "&"),
    ast.LShift: ("<<", ast.RShift, ">>"),
    ast.RShift: (">>", ast.LShift, "<<"),
}
OPS = ("compare", "operator", "off_by_one", "drop_condition", "default", "swap_args", "remove_call")
"""The kinds of mutation, as the difficulty knobs and the audit's plan shapes name them."""


@dataclass(frozen=True)
class Mutation:
    """One candidate bug: bytes ``start:end`` of ``file`` become ``new`` (they were ``old``)."""

    file: str
    op: str
    start: int
    end: int
    old: str
    new: str
    line: int
    probe: int  # the line of the enclosing statement: tests that run it can see the bug
    qualname: str  # the outermost function holding it (the code object patched)
    function: str  # the innermost function holding it (its name, for "near" tests)
    walk_index: int  # the node's place in ast.walk order (to prove the new tree)
    default: dict[str, Any] = field(default_factory=dict)  # a changed default's new value

    @property
    def id(self) -> str:
        digest = hashlib.blake2b(self.new.encode(), digest_size=4).hexdigest()
        return f"{self.file}:{self.start}:{self.end}:{self.op}:{digest}"

    def apply(self, data: bytes) -> bytes:
        return data[: self.start] + self.new.encode() + data[self.end :]


class _Finder(ast.NodeVisitor):
    def __init__(self, rel: str, data: bytes) -> None:
        self.rel = rel
        self.data = data
        self.starts = [0]
        for i, b in enumerate(data):
            if b == 10:
                self.starts.append(i + 1)
        self.scope: list[tuple[str, bool]] = []  # (name, is_function)
        self.stmt: ast.stmt | None = None
        self.out: list[Mutation] = []
        self.index: dict[int, int] = {}

    # -- positions ---------------------------------------------------------------------------

    def off(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        n: Any = node
        return self.off(n.lineno, n.col_offset), self.off(n.end_lineno, n.end_col_offset)

    def text(self, a: int, b: int) -> str:
        return self.data[a:b].decode("utf-8", "replace")

    # -- scope -------------------------------------------------------------------------------

    def _outer(self) -> str | None:
        """The qualname of the outermost function of the scope (None outside functions)."""
        names = []
        for name, is_func in self.scope:
            names.append(name)
            if is_func:
                return ".".join(names)
        return None

    def _inner(self) -> str:
        funcs = [n for n, f in self.scope if f]
        return funcs[-1] if funcs else ""

    def add(self, node: ast.AST, op: str, a: int, b: int, new: str, **default: Any) -> None:
        outer = self._outer()
        if outer is None or self.stmt is None or ("\n" in self.text(a, b) and op != "remove_call"):
            return
        self.out.append(
            Mutation(
                file=self.rel,
                op=op,
                start=a,
                end=b,
                old=self.text(a, b),
                new=new,
                line=getattr(node, "lineno", self.stmt.lineno),
                probe=self.stmt.lineno,
                qualname=outer,
                function=self._inner(),
                walk_index=self.index[id(node)],
                default=default,
            )
        )

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append((node.name, False))
        for stmt in node.body:
            self.visit(stmt)
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer_is_func = any(f for _, f in self.scope)
        self.scope.append((node.name, True))
        if not outer_is_func:
            self._defaults(node)
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        for stmt in body:
            self.visit(stmt)
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def _defaults(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        body = [s for s in node.body if not (isinstance(s, ast.Expr) and _is_str(s.value))]
        if not body:
            return
        saved, self.stmt = self.stmt, body[0]
        args = node.args
        positional = args.posonlyargs + args.args
        pos = [(positional[len(positional) - len(args.defaults) + i].arg, d, i, "index")
               for i, d in enumerate(args.defaults)]  # fmt: skip
        kw = [
            (a.arg, d, a.arg, "kw") for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
        ]
        for _name, d, where, kind in pos + kw:
            if not isinstance(d, ast.Constant) or d.value is None:
                continue
            value = d.value
            if isinstance(value, bool):
                new_value: Any = not value
            elif isinstance(value, int) and abs(value) < 1000:
                new_value = value + 1
            else:
                continue
            a, b = self.span(d)
            self.add(d, "default", a, b, repr(new_value), **{kind: where, "value": new_value})
        self.stmt = saved

    def generic_visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.stmt):
            saved, self.stmt = self.stmt, node
            self._mutate(node)
            super().generic_visit(node)
            self.stmt = saved
            return
        self._mutate(node)
        super().generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        return  # f-strings: positions inside them are not reliable

    # -- the mutations -----------------------------------------------------------------------

    def _mutate(self, node: ast.AST) -> None:
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            self._swap_op(node, node.left, node.comparators[0], _CMP_TEXT[type(node.ops[0])],
                          _CMP_TEXT[_CMP[type(node.ops[0])][1]], "compare")  # fmt: skip
        elif isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            sym, _, new = _BIN[type(node.op)]
            self._swap_op(node, node.left, node.right, sym, new, "operator")
        elif isinstance(node, ast.AugAssign) and type(node.op) in _BIN:
            sym, _, new = _BIN[type(node.op)]
            self._swap_op(node, node.target, node.value, sym + "=", new + "=", "operator")
        elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
            word = "and" if isinstance(node.op, ast.And) else "or"
            self._swap_op(node, node.values[0], node.values[1], word,
                          "or" if word == "and" else "and", "operator")  # fmt: skip
            a, b = self.span(node)
            for i, keep in enumerate(node.values):
                ka, kb = self.span(keep)
                self.add(node, "drop_condition", a, b, f"({self.text(ka, kb)})", keep=i)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            a, b = self.span(node)
            oa, ob = self.span(node.operand)
            self.add(node, "drop_condition", a, b, f"({self.text(oa, ob)})")
        elif (
            isinstance(node, ast.Constant)
            and type(node.value) is int
            and abs(node.value) <= 10
            and self.stmt is not None
        ):
            a, b = self.span(node)
            if self.text(a, b) == str(node.value):
                self.add(node, "off_by_one", a, b, str(node.value + 1))
                if node.value > 0:
                    self.add(node, "off_by_one", a, b, str(node.value - 1))
        elif isinstance(node, ast.Call) and len(node.args) >= 2:
            x, y = node.args[0], node.args[1]
            if not any(isinstance(v, ast.Starred) for v in (x, y)):
                xa, xb = self.span(x)
                ya, yb = self.span(y)
                tx, ty = self.text(xa, xb), self.text(ya, yb)
                if tx != ty and _simple(x) and _simple(y):
                    self.add(node, "swap_args", xa, yb, ty + self.text(xb, ya) + tx)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            a, b = self.span(node)
            if "\n" not in self.text(a, b):
                self.add(node, "remove_call", a, b, "pass")

    def _swap_op(self, node: ast.AST, left: ast.AST, right: ast.AST, sym: str, new: str,
                 op: str) -> None:  # fmt: skip
        _, la = self.span(left)
        rb, _ = self.span(right)
        gap = self.text(la, rb)
        core = gap.replace("(", " ").replace(")", " ")
        if " ".join(core.split()) != sym:
            return
        at = gap.index(sym.split()[0])
        end = gap.index(sym.split()[-1], at) + len(sym.split()[-1])
        self.add(node, op, la + at, la + end, new)


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _simple(node: ast.AST) -> bool:
    return isinstance(node, (ast.Name, ast.Attribute, ast.Constant, ast.Subscript))


def candidates(rel: str, data: bytes) -> list[Mutation]:
    """Every candidate mutation of one source file, in file order."""
    try:
        tree = ast.parse(data)
    except SyntaxError:
        return []
    finder = _Finder(rel, data)
    finder.index = {id(n): i for i, n in enumerate(ast.walk(tree))}
    finder.visit(tree)
    return finder.out


def check_valid(m: Mutation, data: bytes) -> bool:
    """Whether applying ``m`` to ``data`` gives exactly the intended tree (and compiles)."""
    try:
        tree = ast.parse(data)
        got = ast.parse(m.apply(data))
    except SyntaxError:
        return False
    want = copy.deepcopy(tree)
    node = list(ast.walk(want))[m.walk_index]
    if not _edit(node, m, want):
        return False
    return ast.dump(got) == ast.dump(want)


def _edit(node: Any, m: Mutation, tree: ast.AST) -> bool:
    if m.op == "compare":
        node.ops = [_CMP[type(node.ops[0])][1]()]
    elif m.op == "operator" and isinstance(node, ast.BoolOp):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif m.op == "operator":
        node.op = _BIN[type(node.op)][1]()
    elif m.op == "drop_condition":
        kept = node.operand if isinstance(node, ast.UnaryOp) else node.values[m.default["keep"]]
        _replace(tree, node, kept)
    elif m.op in ("off_by_one", "default"):
        node.value = m.default["value"] if m.op == "default" else int(m.new)
    elif m.op == "swap_args":
        node.args[0], node.args[1] = node.args[1], node.args[0]
    elif m.op == "remove_call":
        _replace(tree, node, ast.Pass())
    else:
        return False
    return True


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, name, new)
                return
            if isinstance(value, list):
                for i, v in enumerate(value):
                    if v is old:
                        value[i] = new
                        return
