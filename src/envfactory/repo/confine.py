"""Edits confined to the bugs' functions: what a repository verdict judges as collateral.

The project's source runs inside the tests' process, and it may hold helpers that do any
reflection for a caller (boltons' ``FunctionBuilder`` compiles and runs any body), so a gate
on the names an edit writes cannot say what the edit reaches. Instead the diff is confined,
the way database worlds refuse collateral writes. Every injected bug lies inside a function
(its ``qualname``), and an edit is collateral when:

- it changes any other scope (the module's own statements, a class body, another function,
  another file): nothing the agent writes runs at import or collection, or anywhere the
  pristine project would not run it;
- inside a bug's function (its decorators, defaults, body and nested definitions) it reaches
  a name from outside the function that the pristine function does not (a global, another
  function of the project, a builtin outside :data:`~envfactory.repo.gate.SAFE_BUILTINS`), or
  an attribute the pristine function does not use that is not a method of containers,
  strings or numbers (:data:`~envfactory.repo.gate.SAFE_ATTRS`).

So a fix may rewrite the bug's function with its own locals and what the pristine function
already reached. Reverting the bugs (the gold plan) re-creates the pristine functions, so it
always passes.
"""

from __future__ import annotations

import ast

from envfactory.repo.gate import SAFE_ATTRS, SAFE_BUILTINS, analyse

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def collateral(original: bytes, current: bytes, functions: set[str]) -> list[str]:
    """Why the current file is edited beyond ``functions`` (the qualnames of the bugs'
    functions in it): empty when every change lies inside them and reaches nothing new."""
    then, found = analyse(original), analyse(current)
    if then is None:
        return []  # no pristine tree to compare with (a file that never imported)
    if found is None:
        return ["source that does not parse"]
    (before, old_file), (now, new_file) = then, found
    old, new = old_file.scopes, new_file.scopes
    out = []
    for path in sorted(set(old) | set(new)):
        if old.get(path, ("",))[0] != new.get(path, ("",))[0] and not _inside(path, functions):
            out.append(f"{path or 'the module'} changed outside the bug's function")
    for fn in sorted(f for f in functions if f):
        free_then, attrs_then = _reach(_defs(before, fn))
        free_now, attrs_now = _reach(_defs(now, fn))
        out += [f"{fn} newly reaches {n}" for n in sorted(free_now - free_then - SAFE_BUILTINS)]
        out += [f"{fn} newly uses .{a}" for a in sorted(attrs_now - attrs_then - SAFE_ATTRS)]
    return out


def _inside(path: str, functions: set[str]) -> bool:
    """Whether a scope (``C.f``, a redefinition ``C.f'``, a nested ``C.f.g``) lies in one of
    ``functions``."""
    plain = path.replace("'", "")
    return any(f and (plain == f or plain.startswith(f + ".")) for f in functions)


def _defs(tree: ast.Module, qualname: str) -> list[ast.AST]:
    """Every definition at ``qualname`` (a property's getter and setter share one)."""
    found: list[ast.AST] = [tree]
    for part in qualname.split("."):
        found = [d for node in found for d in _children(node) if d.name == part]
    return found


def _children(node: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    """The definitions directly in a scope (also under its ``if``, ``try``, ``with``...)."""
    out = []
    todo = list(ast.iter_child_nodes(node))
    while todo:
        sub = todo.pop(0)
        if isinstance(sub, _DEFS):
            out.append(sub)
        elif isinstance(sub, ast.stmt):
            todo.extend(ast.iter_child_nodes(sub))
    return out


def _reach(nodes: list[ast.AST]) -> tuple[set[str], set[str]]:
    """The names the definitions take from outside themselves, and the attributes they use."""
    loaded, bound, declared, attrs = set[str](), set[str](), set[str](), set[str]()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                (loaded if isinstance(sub.ctx, ast.Load) else bound).add(sub.id)
            elif isinstance(sub, (ast.Global, ast.Nonlocal)):
                declared.update(sub.names)
            elif isinstance(sub, ast.Attribute):
                attrs.add(sub.attr)
            elif sub is not node:
                bound.add(_binds(sub) or "")
    return (loaded - bound) | declared, attrs


def _binds(node: ast.AST) -> str | None:
    """The local name a parameter, definition, handler, import or pattern binds."""
    if isinstance(node, ast.arg):
        return node.arg
    if isinstance(node, ast.alias):
        return (node.asname or node.name).split(".")[0]
    if isinstance(node, (*_DEFS, ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return node.name
    return None
