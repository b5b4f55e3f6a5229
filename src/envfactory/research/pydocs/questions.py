"""Questions about the standard library, each with the gold plan that answers it.

Relations lead from one documented object to another (the module that provides a class, the
class that defines a method, the first function a module lists, the first base class of a
class, the first function or class a docstring mentions), and a question follows some of them
from a named start to an end whose fact it asks: the number of parameters, a parameter's
default, how many functions, classes or methods are listed, or the end's name. Kinds: ``lead``
(difficulty 0: the exact query is given and the search result's first line answers), ``fact``,
``name`` and ``compare`` (which of two described callables takes more parameters).
"""

from __future__ import annotations

import random

from envfactory.research.answers import AnswerType, normalise
from envfactory.research.plans import Draft, Plan, gives_away
from envfactory.research.pydocs.corpus import Obj, PyDocs
from envfactory.research.tools import MAX_FOUND

OUT = {
    "method": ["owner"],
    "class": ["module_of", "first_method", "base", "mentions"],
    "function": ["module_of", "mentions"],
    "module": ["first_function", "first_class"],
}
READ = {  # relation -> the fact of the source page that states it
    "owner": "owner",
    "module_of": "module",
    "first_method": "method:1",
    "base": "base",
    "mentions": "mentions",
    "first_function": "function:1",
    "first_class": "class:1",
}
PHRASE = {
    "owner": "the class that defines {d}",
    "module_of": "the module that provides {d}",
    "first_method": "the first method listed in the documentation of {d}",
    "base": "the first documented base class of {d}",
    "mentions": "the first function or class that the documentation of {d} mentions",
    "first_function": "the first function listed in the documentation of {d}",
    "first_class": "the first class listed in the documentation of {d}",
}
COUNTS = {  # kind -> (count, question)
    "module": [
        ("functions", "How many public functions does {d} define?"),
        ("classes", "How many public classes does {d} define?"),
    ],
    "class": [
        ("methods", "How many public methods does {d} define?"),
        ("params", "How many parameters does the constructor of {d} take?"),
    ],
    "function": [("params", "How many parameters does {d} take?")],
    "method": [("params", "How many parameters does {d} take (not counting self)?")],
}
LEVELS: dict[int, list[tuple[str, int]]] = {  # (kind, relations followed)
    1: [("fact", 0), ("name", 1)],
    2: [("fact", 1), ("name", 2)],
    3: [("fact", 2), ("name", 3)],
    4: [("fact", 3), ("name", 4), ("compare", 1)],
    5: [("fact", 4), ("fact", 5), ("name", 5), ("compare", 2)],
}
DULL = frozenset({"none", "true", "false", "", "0", "1", "-1"})  # defaults too easy to guess


class Builder:
    """Drafts questions over the standard library's documentation."""

    def __init__(self, lib: PyDocs) -> None:
        self.lib = lib
        self.o = lib.objects
        self.by_kind: dict[str, list[int]] = {}
        for o in self.o:
            self.by_kind.setdefault(o.kind, []).append(o.id)
        self.shape: list[str] = []

    # -- paths ----------------------------------------------------------------------------

    def named(self, o: Obj) -> str | None:
        """How a question names a starting object: by its bare name when only it has that
        name, else by its full name (None: a method whose name is shared)."""
        bare = o.name.rsplit(".", 1)[-1]
        unique = len(self.lib.by_bare.get(bare, [])) == 1
        if o.kind == "module":
            return f"the module `{o.name}`"
        if o.kind == "method":
            return f"the method `{bare}`" if unique else None
        return f"the {o.kind} `{bare if unique else o.name}`"

    def walk(self, start: int, n: int, rng: random.Random) -> list[str] | None:
        rels: list[str] = []
        seen, at = {start}, start
        for i in range(n):
            options = [r for r in OUT[self.o[at].kind] if r in self.o[at].rel]
            if i == 0 and f"`{self.o[start].name}`" in (self.named(self.o[start]) or ""):
                options = [r for r in options if r != "module_of"]  # the full name says it
            if not options:
                return None
            rel = rng.choice(options)
            at = self.o[at].rel[rel]
            if at in seen:
                return None
            seen.add(at)
            rels.append(rel)
        return rels

    def bare(self, i: int) -> str:
        return self.o[i].name.rsplit(".", 1)[-1]

    def follow(self, start: int, rels: list[str]) -> list[int]:
        """The objects along ``rels`` from ``start`` (shorter where one is missing)."""
        path = [start]
        for rel in rels:
            if rel not in self.o[path[-1]].rel:
                break
            path.append(self.o[path[-1]].rel[rel])
        return path

    def describe(self, start: int, rels: list[str]) -> str:
        d = self.named(self.o[start]) or ""
        for rel in rels:
            d = PHRASE[rel].format(d=d)
        return d

    # -- gold plans -----------------------------------------------------------------------

    def read(
        self, o: Obj, key: str, plan: Plan, after: int | None, at: int | None
    ) -> tuple[int, int] | None:
        """Read fact ``key`` of ``o``: search for it unless its page is the one ``at``, then
        open the page when the fact is on the first, else find its line. The read step and
        the page read; None when ``find`` would not show the line."""
        where = self.lib.fact(o, key)
        if where is None:
            return None
        pos, offset, pattern = where
        doc_id = self.lib.docs[pos].doc_id
        if pos != at:
            after = plan.search(o.surface, doc_id, after)
            if self.lib.page_of(pos, offset) == 1:
                return plan.open(doc_id, 1, after), pos
        if after is None or not self.findable(pos, offset, pattern):
            return None
        return plan.find(doc_id, pattern, after), pos

    def findable(self, pos: int, offset: int, pattern: str) -> bool:
        text = self.lib.text(pos)
        before = text[:offset].split("\n")[:-1]
        line = text[offset:].split("\n", 1)[0]
        needle = pattern.lower()
        earlier = sum(1 for ln in before if needle in ln.lower())
        return needle in line.lower() and earlier < MAX_FOUND

    def trail(
        self, start: int, rels: list[str], plan: Plan
    ) -> tuple[int | None, int | None] | None:
        """Read the relations from ``start``: the last read step and page (None, None when
        there are none), or None when a read fails."""
        last: int | None = None
        at: int | None = None
        for i, rel in zip(self.follow(start, rels), rels, strict=False):
            made = self.read(self.o[i], READ[rel], plan, last, at)
            if made is None:
                return None
            last, at = made
        return last, at

    # -- question kinds -------------------------------------------------------------------

    def draft(self, difficulty: int, start: int, rng: random.Random) -> Draft | None:
        self.shape = []
        if self.named(self.o[start]) is None:
            return None
        if difficulty == 0:
            made = self.lead(start, rng)
        else:
            kind, n = rng.choice(LEVELS[difficulty])
            made = getattr(self, kind)(start, n, rng)
        return None if made is None or gives_away(made) else made

    def ends(self, o: Obj) -> list[tuple[str, str, AnswerType, str]]:
        """The facts a question may ask of ``o``: (key, question, answer type, answer)."""
        out: list[tuple[str, str, AnswerType, str]] = [
            (key, ask, "number", str(o.count[key])) for key, ask in COUNTS[o.kind] if key in o.count
        ]
        for p, value in sorted(o.defaults.items()):
            shown = value.strip("'\"")
            if normalise(shown) in DULL or value == "...":
                continue
            kind: AnswerType = "number" if value.lstrip("-").isdigit() else "name"
            ask = f"What is the default value of the parameter `{p}` of {{d}}?"
            out.append((f"default:{p}", ask, kind, shown))
        return out

    def lead(self, start: int, rng: random.Random) -> Draft | None:
        o = self.o[start]
        if o.kind not in ("function", "class"):
            return None
        ends = [e for e in self.ends(o) if e[0].startswith("default:") or e[0] == "params"]
        ends = [e for e in ends if not (o.kind == "class" and e[0] == "params")]
        if not ends:
            return None
        key, ask, kind, value = rng.choice(ends)
        self.shape = [o.kind, key.split(":")[0]]
        plan = Plan()
        plan.answer(value, plan.search(o.surface, self.lib.docs[o.home].doc_id))
        question = ask.format(d=f"`{o.name}`")
        instruction = (
            f'Search the documentation for "{o.surface}"; the first line of its result '
            f"answers this: {question}"
        )
        return self._made("lead", instruction, plan, kind, value, [], [start])

    def fact(self, start: int, n: int, rng: random.Random) -> Draft | None:
        rels = self.walk(start, n, rng) if n else []
        if rels is None:
            return None
        path = self.follow(start, rels)
        end = self.o[path[-1]]
        ends = self.ends(end)
        if not ends:
            return None
        key, ask, kind, value = rng.choice(ends)
        plan = Plan()
        trail = self.trail(start, rels, plan)
        if trail is None:
            return None
        read = self.read(end, key, plan, *trail)
        if read is None:
            return None
        plan.answer(value, read[0])
        self.shape = [*rels, end.kind, key.split(":")[0]]
        question = ask.format(d=self.describe(start, rels))
        return self._made("fact", question, plan, kind, value, [], path)

    def name(self, start: int, n: int, rng: random.Random) -> Draft | None:
        rels = self.walk(start, n, rng)
        if rels is None:
            return None
        path = self.follow(start, rels)
        plan = Plan()
        trail = self.trail(start, rels, plan)
        if trail is None or trail[0] is None:
            return None
        end = self.o[path[-1]]
        plan.answer(end.name, trail[0])
        self.shape = [*rels, end.kind, "name"]
        question = f"What is {self.describe(start, rels)}? Give its name."
        return self._made("name", question, plan, "name", end.name, end.aliases, path)

    def compare(self, start: int, n: int, rng: random.Random) -> Draft | None:
        others = self.by_kind[self.o[start].kind]
        pair = [start, rng.choice(others)]
        rng.shuffle(pair)
        rels = self.walk(pair[0], n, rng)
        if rels is None or self.named(self.o[pair[1]]) is None:
            return None
        paths = [self.follow(s, rels) for s in pair]
        if len({i for p in paths for i in p}) != 2 * (n + 1):  # both whole, all distinct
            return None
        ends = [self.o[p[-1]] for p in paths]
        counts = [e.count.get("params") for e in ends]
        if None in counts or counts[0] == counts[1] or any(e.kind == "module" for e in ends):
            return None
        plan = Plan()
        reads = []
        for s, e in zip(pair, ends, strict=True):
            trail = self.trail(s, rels, plan)
            read = None if trail is None else self.read(e, "params", plan, *trail)
            if read is None:
                return None
            reads.append(read[0])
        win = ends[counts.index(max(c or 0 for c in counts))]
        plan.answer(win.name, *reads)
        self.shape = [*rels, ends[0].kind, "params"]
        a, b = (self.describe(s, rels) for s in pair)
        question = f"Which takes more parameters: {a}, or {b}? Give the name."
        return self._made("compare", question, plan, "name", win.name, win.aliases, *paths)

    # -- checks ---------------------------------------------------------------------------

    def _made(
        self,
        kind: str,
        question: str,
        plan: Plan,
        answer_type: AnswerType,
        value: str,
        aliases: list[str],
        *paths: list[int],
    ) -> Draft:
        ids = {i for p in paths for i in p}
        shared = sum(1 for i in ids if len(self.lib.by_bare.get(self.bare(i), [])) > 1)
        hops = sum(1 for s in plan.steps if s.tool == "search")
        modules = sorted({self.o[i].module for i in ids})
        instruction = f"{question} Use the tools to research it; commit one answer."
        knobs = {"hops": hops, "distractors": shared, "modules": len(modules)}
        return Draft(
            kind, instruction, plan, answer_type, value, list(aliases), None, knobs,
            list(self.shape), modules,
        )  # fmt: skip
