"""Facts about the running interpreter's standard library, read with :mod:`inspect`.

A fixed list of modules whose public API does not depend on the platform (no ``os``,
``socket``, ``subprocess``; nothing whose classes exist only with OpenSSL), imported in order;
a module that fails to import is left out. Of each, the public functions and classes it defines
(``__module__`` is the module or its C accelerator ``_name``), and each class's public methods,
with their signatures. Defaults are kept only when their ``repr`` is the same in every process
(numbers, short plain strings, ``None`` and booleans); others show as ``...``. Everything is
sorted, so two processes of one Python minor version see the same facts.

What a module shows depends on what else the process has imported (a submodule becomes an
attribute of its package; a library may patch a class), so :func:`stdlib_isolated` reads the
facts in a fresh interpreter (``python -I -S`` on this file) rather than in the caller's.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

MODULES = (
    "abc", "argparse", "base64", "bisect", "calendar", "cmd", "codeop", "colorsys",
    "configparser", "contextlib", "copy", "csv", "dataclasses", "datetime", "difflib", "enum",
    "filecmp", "fileinput", "fnmatch", "fractions", "functools", "getopt", "gettext", "glob",
    "graphlib", "gzip", "heapq", "hmac", "html", "html.parser", "inspect", "ipaddress", "json",
    "keyword", "linecache", "logging", "mailbox", "numbers", "operator", "optparse", "pathlib",
    "pickle", "pickletools", "pkgutil", "plistlib", "pprint", "queue", "quopri", "random", "re",
    "reprlib", "sched", "secrets", "shlex", "statistics", "string", "struct", "tabnanny",
    "tarfile", "textwrap", "threading", "timeit", "tokenize", "tomllib", "trace", "traceback",
    "types", "typing", "unittest", "urllib.parse", "uuid", "warnings", "wave", "weakref",
    "xml.dom.minidom", "xml.etree.ElementTree", "zipapp", "zipfile", "zoneinfo",
    "collections", "collections.abc", "email.message", "email.utils", "email.parser",
    "concurrent.futures", "http.cookies", "codecs", "itertools",
)  # fmt: skip
MAX_DOC = 4000  # characters of a docstring kept
SAFE_STRING = re.compile(r"^[\w .,:;/%+-]{0,40}$")
SELF = ("self", "cls")


@dataclass
class Param:
    name: str
    kind: str  # inspect's kind, as words: "positional or keyword", "keyword-only", ...
    default: str | None  # the repr, "..." when not the same everywhere; None: no default

    def show(self) -> str:
        star = {"variadic positional": "*", "variadic keyword": "**"}.get(self.kind, "")
        return f"{star}{self.name}" + ("" if self.default is None else f"={self.default}")


@dataclass
class Api:
    """A function, class or method the documentation describes."""

    module: str
    qualname: str  # "dumps", "JSONDecoder", "JSONDecoder.raw_decode"
    kind: str  # function, class, method
    params: list[Param] | None  # None: no signature to read
    doc: str
    methods: list[Api] = field(default_factory=list)
    bases: list[str] = field(default_factory=list)  # qualified names of documented bases

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    @property
    def full(self) -> str:
        return f"{self.module}.{self.qualname}"

    def signature(self) -> str:
        if self.params is None:
            return f"{self.qualname}(...)"
        shown, seen_star = [], False
        for p in self.params:
            if p.kind == "keyword-only" and not seen_star:
                shown.append("*")
            seen_star = seen_star or p.kind in ("keyword-only", "variadic positional")
            shown.append(p.show())
            if p.kind == "positional-only" and p is _last_positional(self.params):
                shown.append("/")
        return f"{self.qualname}({', '.join(shown)})"


@dataclass
class Module:
    name: str
    doc: str
    functions: list[Api]
    classes: list[Api]


def _last_positional(params: list[Param]) -> Param | None:
    found = [p for p in params if p.kind == "positional-only"]
    return found[-1] if found else None


def safe_default(value: Any) -> str:
    """The default's repr when every process writes it the same, else ``...``."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int) and abs(value) < 10**12:
        return repr(value)
    if isinstance(value, float) and value == value and abs(value) < 1e12:
        return repr(value)
    if isinstance(value, str) and SAFE_STRING.match(value):
        return repr(value)
    return "..."


def params_of(obj: Any, method: bool) -> list[Param] | None:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    out = []
    for i, p in enumerate(sig.parameters.values()):
        if method and i == 0 and p.name in SELF:
            continue
        default = None if p.default is inspect.Parameter.empty else safe_default(p.default)
        out.append(Param(p.name, p.kind.description, default))
    return out


def _doc(obj: Any) -> str:
    text = inspect.getdoc(obj) or ""
    text = re.sub(r"0x[0-9a-fA-F]{6,}", "0x...", text)  # no addresses
    return text[:MAX_DOC]


def _defines(module: str, obj: Any) -> bool:
    """Whether ``module`` is where ``obj`` is public: it is defined there, in the module's
    C accelerator ``_module``, or in a private part of a package (``json.decoder``)."""
    home = str(getattr(obj, "__module__", None))
    return home in (module, f"_{module}") or home.startswith(f"{module}.")


def _method(cls: type, name: str, value: Any) -> Api | None:
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if not (inspect.isfunction(value) or inspect.ismethoddescriptor(value)):
        return None
    params = params_of(value, method=True)
    return Api(cls.__module__, f"{cls.__name__}.{name}", "method", params, _doc(value))


def _class(module: str, cls: type, documented: dict[int, str]) -> Api:
    methods = []
    for name in sorted(vars(cls)):
        if name.startswith("_"):
            continue
        made = _method(cls, name, vars(cls)[name])
        if made is not None:
            made.module = module
            methods.append(made)
    params = params_of(cls, method=False)
    bases = [documented[id(b)] for b in cls.__bases__ if id(b) in documented]
    return Api(module, cls.__name__, "class", params, _doc(cls), methods, bases)


def _public(mod: Any) -> list[tuple[str, Any]]:
    names = getattr(mod, "__all__", None) or dir(mod)
    return [(n, getattr(mod, n)) for n in sorted(set(names)) if not n.startswith("_")]


def stdlib() -> list[Module]:
    """The documented modules, in order of name."""
    loaded = []
    for name in sorted(MODULES):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        members = [(n, v) for n, v in _public(mod) if hasattr(mod, n)]
        loaded.append((name, mod, members))
    documented: dict[int, str] = {}  # a class -> where it is public
    for name, _, members in loaded:
        for n, v in members:
            if inspect.isclass(v) and _defines(name, v) and v.__name__ == n:
                documented.setdefault(id(v), f"{name}.{n}")
    out = []
    seen: set[int] = set()  # an object public in two modules is documented in the first
    for name, mod, members in loaded:
        mine = [(n, v) for n, v in members if _defines(name, v) and id(v) not in seen]
        seen |= {id(v) for _, v in mine}
        functions = [
            Api(name, n, "function", params_of(v, method=False), _doc(v))
            for n, v in mine
            if inspect.isfunction(v) or inspect.isbuiltin(v)
        ]
        classes = [
            _class(name, v, documented) for n, v in mine if inspect.isclass(v) and v.__name__ == n
        ]
        if functions or classes:
            out.append(Module(name, _doc(mod), functions, classes))
    return out


def version() -> str:
    """The Python minor version the facts are read from."""
    return "{}.{}".format(*sys.version_info[:2])


def _api(d: dict[str, Any]) -> Api:
    params = None if d["params"] is None else [Param(**p) for p in d["params"]]
    methods = [_api(m) for m in d["methods"]]
    return Api(d["module"], d["qualname"], d["kind"], params, d["doc"], methods, d["bases"])


def isolated_json() -> str:
    """:func:`stdlib`'s facts as JSON, read by a fresh interpreter of this Python: the same in
    every process, whatever the caller has imported or patched."""
    return subprocess.run(
        [sys.executable, "-I", "-S", __file__],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "0", "PYTHONIOENCODING": "utf-8"},
    ).stdout


def modules_of(text: str) -> list[Module]:
    """The modules of :func:`isolated_json`'s JSON."""
    return [
        Module(
            m["name"], m["doc"], [_api(f) for f in m["functions"]], [_api(c) for c in m["classes"]]
        )
        for m in json.loads(text)
    ]


def stdlib_isolated() -> list[Module]:
    """:func:`stdlib` as a fresh interpreter of this Python reads it (see :func:`isolated_json`)."""
    return modules_of(isolated_json())


if __name__ == "__main__":
    json.dump([asdict(m) for m in stdlib()], sys.stdout)
