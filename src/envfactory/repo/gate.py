"""The tampering gate of repository worlds: what the agent's source may newly contain.

The project's source runs inside the tests' process, so a library could reach the runner
(end the process early, patch pytest's outcome or ``AssertionError``, forge the driver's
result) instead of being fixed. A name check is dodged by ``getattr`` chains and string
arithmetic, so the gate compares each edited file with the pristine one by syntax tree and
refuses source that:

- has an import statement the pristine file does not have (as often);
- introduces a dunder (a name, attribute or string such as ``__class__``), a builtin outside
  :data:`SAFE_BUILTINS`, an attribute outside :data:`SAFE_ATTRS` or a string outside
  :data:`SAFE_STRINGS` that the pristine file does not contain (docstrings and other
  strings standing alone as statements are inert and exempt);
- changes a scope (the module's own statements, a class body, a function) that uses a name
  able to reach the interpreter or the runner (:data:`RISKY`: ``getattr``, ``sys``,
  ``exec``, ``type``, ``open``, frame attributes..., what is imported from those modules,
  and the file's own functions that use one, transitively): such a scope must be exactly
  the pristine one, whatever else it contains.

Reverting the injected bugs (the gold plan) only re-creates pristine code, so it always
passes; an alternative fix passes unless it is written with what the gate refuses.
"""

from __future__ import annotations

import ast
import builtins
import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


SAFE_BUILTINS = _words(
    """abs all any bool bytes dict divmod enumerate filter float frozenset int isinstance
    issubclass iter len list map max min next range repr reversed round set slice sorted str
    sum tuple zip callable hash NotImplemented Ellipsis None True False
    ValueError TypeError KeyError IndexError LookupError ArithmeticError ZeroDivisionError
    OverflowError RuntimeError NotImplementedError StopIteration UnicodeError"""
)
"""Builtins a fix may name although the pristine file does not: pure functions and the
ordinary exceptions (not ``getattr``, ``type``, ``open``, ``exec``, ``SystemExit``...)."""

SAFE_ATTRS = _words(
    """append extend insert pop remove clear copy get items keys values setdefault update add
    discard union intersection difference issubset issuperset join split rsplit splitlines
    strip lstrip rstrip startswith endswith lower upper casefold replace find rfind index
    rindex count isdigit isalpha isalnum isspace isupper islower encode decode
    real imag numerator denominator"""
)
"""Attributes a fix may use although the pristine file does not: methods of containers,
strings and numbers (no frame, code, module or runner attributes)."""

SAFE_STRINGS = frozenset(["", " ", "\n", "\t", ",", ", ", ".", ":", "-", "_", "/"])

RISKY = _words(
    """sys os builtins __builtins__ __import__ importlib getattr setattr delattr hasattr
    globals locals vars dir type eval exec compile open input print breakpoint exit _exit
    quit memoryview SystemExit KeyboardInterrupt BaseException GeneratorExit AssertionError
    atexit signal gc inspect subprocess ctypes pytest _pytest unittest pluggy operator types
    attrgetter methodcaller argv modules stdout stderr stdin environ system popen kill
    _getframe settrace setprofile f_back f_globals f_locals f_builtins f_code tb_frame
    tb_next gi_frame cr_frame ag_frame co_consts"""
)
"""Names that can reach the interpreter, the runner or arbitrary attributes: a scope that
uses one (or a name imported from one of these modules) must stay exactly as it was."""

_BUILTIN_NAMES = frozenset(dir(builtins))
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


@dataclass
class _File:
    """What one version of a source file contains."""

    imports: Counter[str] = field(default_factory=Counter)
    names: set[str] = field(default_factory=set)  # identifiers, bound or used
    attrs: set[str] = field(default_factory=set)
    strings: set[str] = field(default_factory=set)
    bound_by_import: set[str] = field(default_factory=set)
    scopes: dict[str, tuple[str, set[str]]] = field(default_factory=dict)  # own code, tokens


def _scan(tree: ast.Module) -> _File:
    out = _File()
    inert = {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.imports[ast.dump(node)] += 1
            source = node.module if isinstance(node, ast.ImportFrom) else None
            for alias in node.names:
                roots = {alias.name.split(".")[0], (source or "").split(".")[0]}
                if roots & RISKY:
                    out.bound_by_import.add((alias.asname or alias.name).split(".")[0])
        name = _identifier(node)
        if name:
            out.names.add(name)
        elif isinstance(node, ast.Attribute):
            out.attrs.add(node.attr)
        elif isinstance(node, ast.alias):
            out.names.update(p for p in (node.asname, *node.name.split(".")) if p)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            out.names.update(node.names)
        elif isinstance(node, ast.Constant) and id(node) not in inert:
            value = node.value
            if isinstance(value, (str, bytes)):
                out.strings.add(value if isinstance(value, str) else value.decode("latin-1"))
    _scopes(tree, "", out.scopes)
    return out


def _identifier(node: ast.AST) -> str | None:
    """The identifier a node names or binds (a name, parameter, keyword, handler, def)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, (ast.arg, ast.keyword)):
        return node.arg
    if isinstance(node, (ast.ExceptHandler, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    return None


def _scopes(node: ast.AST, path: str, out: dict[str, tuple[str, set[str]]]) -> None:
    """Each scope's own code (nested definitions reduced to their names) and its tokens."""
    nested: list[tuple[str, ast.AST]] = []

    def strip(n: ast.AST) -> ast.AST:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not node:
            nested.append((f"{path}.{n.name}" if path else n.name, n))
            return ast.Name(id=f"<def {n.name}>", ctx=ast.Load())
        fields: dict[str, Any] = {}
        for name, value in ast.iter_fields(n):
            if isinstance(value, list):
                fields[name] = [strip(v) if isinstance(v, ast.AST) else v for v in value]
            elif isinstance(value, ast.AST):
                fields[name] = strip(value)
            else:
                fields[name] = value
        return type(n)(**fields)

    own = strip(node)
    tokens: set[str] = set()
    for sub in ast.walk(own):
        if isinstance(sub, ast.Name):
            tokens.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            tokens.add(sub.attr)
        elif isinstance(sub, ast.alias):
            tokens.update(p for p in (sub.asname, *sub.name.split(".")) if p)
    key = path
    while key in out:  # a redefinition (e.g. a property's setter): number it
        key += "'"
    out[key] = (ast.dump(own), tokens)
    for sub_path, sub in nested:
        _scopes(sub, sub_path, out)


def _reaching(f: _File, risky: set[str] | frozenset[str]) -> set[str]:
    """``risky`` and the names of the file's own functions that use one, to a fixpoint: a
    scope that calls a function able to reach the interpreter (``self._compile(src)`` where
    ``_compile`` runs ``exec``) is as risky as that function. Names of container and string
    methods (:data:`SAFE_ATTRS`) are left out: they would freeze every ``.get`` and ``.update``."""
    names = set(risky)
    while True:
        more = (
            {
                path.rsplit(".", 1)[-1].rstrip("'")
                for path, (_, tokens) in f.scopes.items()
                if path and tokens & names
            }
            - SAFE_ATTRS
            - names
        )
        if not more:
            return names
        names |= more


@functools.lru_cache(maxsize=64)
def analyse(source: bytes) -> tuple[ast.Module, _File] | None:
    """A file's tree and what it contains (None when it does not parse), kept for the next
    call: a verdict analyses the pristine and the current file for each of its gates, and the
    pristine files are the same in every episode (the largest project has fewer than 64
    source files: a verdict on one that lost them all analyses each once). Callers must not
    change what they get."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    return tree, _scan(tree)


def tamper_names(original: bytes, current: bytes) -> list[str]:
    """Why the current source could reach the test runner, compared with the original:
    empty when it introduces nothing the gate refuses."""
    then, found = analyse(original), analyse(current)
    if then is None:
        return []  # no pristine tree to compare with (a file that never imported)
    if found is None:
        return ["source that does not parse"]
    before, now = then[1], found[1]
    out: list[str] = []
    extra = now.imports - before.imports
    if extra:
        out.append("a new import")
    for name in sorted(now.names - before.names):
        if _dunder(name):
            out.append(f"new name {name}")
        elif name in _BUILTIN_NAMES and name not in SAFE_BUILTINS:
            out.append(f"new builtin {name}")
    for attr in sorted(now.attrs - before.attrs - before.names):
        if _dunder(attr) or attr not in SAFE_ATTRS:
            out.append(f"new attribute {attr}")
    for text in sorted(now.strings - before.strings):
        if text not in SAFE_STRINGS:
            out.append(f"new string {text[:20]!r}")
    risky = _reaching(before, RISKY | before.bound_by_import | now.bound_by_import)
    for path, (code, tokens) in sorted(now.scopes.items()):
        reach = sorted(tokens & risky)
        if reach and before.scopes.get(path, ("", set()))[0] != code:
            out.append(f"{path or 'the module'} changed where it uses {', '.join(reach[:3])}")
    return out
