"""The standard library's documentation as a library of pages: one per module, class and
function, rendered from :mod:`inspect`'s facts. Each page records where it states each fact
(the line's offset) and a plain pattern that ``find`` locates that line with, so a gold plan
knows what to open or find.

Objects are numbered: modules, then classes, functions and methods, each in name order. A
method has no page of its own: its line is on its class's page.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

from envfactory.research.articles import Article
from envfactory.research.corpus import Doc, Library
from envfactory.research.pydocs.cache import stdlib_cached
from envfactory.research.pydocs.extract import Api, Module, version

MENTION = re.compile(r"\b[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+\b|\b[A-Za-z_]\w*(?=\(\))")


@dataclass
class Obj:
    """A module, class, function or method, and the facts questions read of it."""

    id: int
    kind: str  # module, class, function, method
    name: str  # as answers give it: "json", "json.JSONDecoder", "JSONDecoder.raw_decode"
    module: str
    aliases: list[str] = field(default_factory=list)
    surface: str = ""  # what a search for it asks
    home: int = -1  # the position of the page that describes it
    rel: dict[str, int] = field(default_factory=dict)  # relation -> object
    count: dict[str, int] = field(default_factory=dict)  # params, methods, functions, classes
    defaults: dict[str, str] = field(default_factory=dict)  # parameter -> repr


def first_line(doc: str) -> str:
    line = doc.strip().split("\n", 1)[0].strip()
    return line if line else "No description."


class PyDocs(Library):
    """The documentation of this interpreter's standard library (see :mod:`.extract`)."""

    def __init__(self) -> None:
        self.version = version()
        modules = stdlib_cached()
        self.objects: list[Obj] = []
        self.methods: dict[tuple[int, str], int] = {}  # (class, qualname) -> method
        apis: list[Api | Module] = []
        for m in modules:
            apis.append(m)
            self._add(Obj(0, "module", m.name, m.name, surface=f"module {m.name}"), None)
        for m in modules:
            for c in m.classes:
                apis.append(c)
                cls = self._add(Obj(0, "class", c.full, m.name, [c.name], c.full), c)
                for t in c.methods:
                    apis.append(t)
                    aliases = [f"{m.name}.{t.qualname}", t.name]
                    method = self._add(Obj(0, "method", t.qualname, m.name, aliases, t.name), t)
                    method.rel["owner"] = cls.id
                    self.methods[(cls.id, t.qualname)] = method.id
            for f in m.functions:
                apis.append(f)
                self._add(Obj(0, "function", f.full, m.name, [f.name], f.full), f)
        self.by_name = {o.name: o.id for o in self.objects if o.kind != "method"}
        self.by_bare: dict[str, list[int]] = {}
        for o in self.objects:
            self.by_bare.setdefault(o.name.rsplit(".", 1)[-1], []).append(o.id)
        docs: list[Doc] = []
        texts: list[str] = []
        for o, api in zip(self.objects, apis, strict=True):
            if o.kind == "method":
                continue
            art = self._module(o, api) if isinstance(api, Module) else self._api(o, api)
            o.home = len(docs)
            docs.append(Doc(f"py-{o.home:05d}", art.title, o.id, True, art.lead, art.facts))
            texts.append(art.text)
        for o in self.objects:
            if o.kind == "method":
                o.home = self.objects[o.rel["owner"]].home
        super().__init__(docs, texts)

    def fact(self, o: Obj, key: str) -> tuple[int, int, str] | None:
        """Where the documentation states ``key`` of ``o``: the page's position, the line's
        offset and a pattern ``find`` locates it with; None when it does not."""
        doc = self.docs[o.home]
        found = doc.facts.get(f"method:{o.id}" if o.kind == "method" else key)
        if found is None:
            return None
        return o.home, found[0], found[1]

    # -- objects --------------------------------------------------------------------------

    def _add(self, o: Obj, api: Api | None) -> Obj:
        o.id = len(self.objects)
        if api is not None and api.params is not None:
            o.count["params"] = len(api.params)
            o.defaults = {p.name: p.default for p in api.params if p.default is not None}
        self.objects.append(o)
        return o

    def _ref(self, text: str, o: Obj) -> int | None:
        """The function or class (not ``o``) a name in ``o``'s text means: a qualified name,
        a name of ``o``'s module, or a bare name only one object has."""
        found = self.by_name.get(text, self.by_name.get(f"{o.module}.{text}"))
        if found is None:
            bare = self.by_bare.get(text, [])
            found = bare[0] if len(bare) == 1 else None
        if found is None or found == o.id:
            return None
        return found if self.objects[found].kind in ("function", "class") else None

    # -- pages ----------------------------------------------------------------------------

    def _module(self, o: Obj, m: Module) -> Article:
        art = Article(f"module {m.name}", f"{m.name}: {first_line(m.doc)}")
        art.line(f"module {m.name}")
        art.line(f"Python {self.version} standard library.")
        n_f, n_c = len(m.functions), len(m.classes)
        o.count |= {"functions": n_f, "classes": n_c}
        art.line(f"{m.name} defines {n_f} public functions.", functions="public functions.")
        art.line(f"{m.name} defines {n_c} public classes.", classes="public classes.")
        art.para(m.doc or "No description.")
        for word, plural, items in (
            ("Class", "Classes", m.classes),
            ("Function", "Functions", m.functions),
        ):
            if not items:
                continue
            art.para(f"{plural}:")
            for i, a in enumerate(items, start=1):
                key = {f"{word.lower()}:1": f"{word} 1 of"} if i == 1 else {}
                art.line(f"{word} {i} of {len(items)}: {m.name}.{a.signature()}", **key)
                if i == 1:
                    o.rel[f"first_{word.lower()}"] = self.by_name[a.full]
        return art.done()

    def _api(self, o: Obj, a: Api) -> Article:
        kind = "class" if a.kind == "class" else "function"
        sig = f"{a.module}.{a.signature()}"
        art = Article(f"{kind} {a.full}", f"{kind} {sig}: {first_line(a.doc)}")
        art.line(f"{kind} {sig}")
        o.rel["module_of"] = self.by_name[a.module]
        art.line(f"Defined in module {a.module}.", module="Defined in module")
        if a.bases:
            art.line(f"Bases: {', '.join(a.bases)}", base="Bases:")
            o.rel["base"] = self.by_name[a.bases[0]]
        if a.params is not None:
            art.line(f"{a.name} takes {len(a.params)} parameters.", params=f"{a.name} takes")
            for p in a.params:
                said = "" if p.default is None else f", default {p.default}"
                key = {} if p.default is None else {f"default:{p.name}": f"Parameter {p.name}:"}
                art.line(f"Parameter {p.name}: {p.kind}{said}.", **key)
        art.line("")
        for line in (a.doc or "No description.").split("\n"):
            refs = [] if "mentions" in o.rel else [x.group(0) for x in MENTION.finditer(line)]
            ref = next((r for r in refs if self._ref(r, o) is not None), None)
            if ref is not None:
                o.rel["mentions"] = self._ref(ref, o) or 0
                art.line(line, mentions=ref)
            else:
                art.line(line)
        if a.methods:
            n = len(a.methods)
            o.count["methods"] = n
            art.para(f"{a.name} defines {n} public methods.", methods="public methods.")
            for i, t in enumerate(a.methods, start=1):
                mid = self.methods[(o.id, t.qualname)]
                keys = {f"method:{mid}": f"{t.qualname}("}
                if i == 1:
                    o.rel["first_method"] = mid
                    keys["method:1"] = "Method 1 of"
                takes = "" if t.params is None else f" takes {len(t.params)} parameters"
                art.line(f"Method {i} of {n}: {t.signature()}{takes}: {first_line(t.doc)}", **keys)
        return art.done()


_LIB: list[PyDocs] = []
_LOCK = threading.Lock()


def pydocs() -> PyDocs:
    """The standard library's documentation, built once per process."""
    with _LOCK:
        if not _LIB:
            _LIB.append(PyDocs())
        return _LIB[0]
