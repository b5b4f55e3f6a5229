"""Questions from graph paths, each with the gold plan of tool calls that answers it.

Kinds: ``lead`` (difficulty 0: a fact the search result's first sentence gives), ``chain``
(1-6 hops along relations), ``compare`` (which of two described entities is older, larger or
earlier), ``count`` (how many listed members were born before a year) and ``as_of`` (who led an
organisation in a year; found with ``find`` in a long article). Every question's answer is
known from the graph, and what trusting the fan-wiki pages on the way would answer is kept, so
that answer can be proven wrong.
"""

from __future__ import annotations

import random

from envfactory.research.answers import AnswerType, normalise
from envfactory.research.corpus import Corpus
from envfactory.research.graph import RELATIONS, Graph
from envfactory.research.plans import Draft, Plan, gives_away

OUT: dict[str, list[str]] = {}
for _rel, (_src, _) in RELATIONS.items():
    OUT.setdefault(_src, []).append(_rel)
PHRASE = {
    "birthplace": "the birthplace of {d}",
    "member_of": "the organisation that {d} was a member of",
    "founder": "the founder of {d}",
    "hq": "the city where {d} is headquartered",
    "region": "the region that {d} lies in",
    "capital": "the capital of {d}",
    "author": "the author of {d}",
    "publisher": "the publisher of {d}",
    "venue": "the city that hosted {d}",
    "organiser": "the organiser of {d}",
}
ASK_NAME = {
    "birthplace": "In which city was {d} born?",
    "member_of": "Which organisation was {d} a member of?",
    "founder": "Who founded {d}?",
    "hq": "In which city is {d} headquartered?",
    "region": "In which region does {d} lie?",
    "capital": "What is the capital of {d}?",
    "author": "Who wrote {d}?",
    "publisher": "Which organisation published {d}?",
    "venue": "In which city was {d} held?",
    "organiser": "Which organisation organised {d}?",
}
# kind -> (attribute, question, answer type)
ASK_ATTR: dict[str, tuple[str, str, AnswerType]] = {
    "person": ("birth_year", "In what year was {d} born?", "number"),
    "org": ("founded", "In what year was {d} founded?", "number"),
    "city": ("population", "What is the population of {d}?", "number"),
    "region": ("area", "What is the area of {d}, in square kilometres?", "number"),
    "work": ("year", "In what year was {d} first published?", "number"),
    "event": ("date", "On what date was {d} held?", "date"),
}
# kind -> (attribute, "which ..." phrase, smaller wins)
COMPARE = {
    "person": ("birth_year", "Who was born earlier", True),
    "org": ("founded", "Which organisation was founded earlier", True),
    "city": ("population", "Which city has the larger population", False),
    "work": ("year", "Which work was published earlier", True),
    "event": ("date", "Which event was held earlier", True),
}
LEVELS: dict[int, list[tuple[str, int]]] = {  # (kind, hops or relations)
    1: [("chain", 1)],
    2: [("chain", 2), ("as_of", 0)],
    3: [("chain", 3), ("as_of", 1), ("count", 1)],
    4: [("chain", 4), ("compare", 1), ("as_of", 2), ("count", 2)],
    5: [("chain", 5), ("chain", 6), ("compare", 2), ("as_of", 3), ("count", 3)],
}
MIN_ROSTER = 8
DIRECTOR = "served as director"


class Builder:
    """Drafts questions over one corpus."""

    def __init__(self, corpus: Corpus) -> None:
        self.c = corpus
        self.g: Graph = corpus.graph
        self.confusable = {e.twin_of for e in self.g.entities if e.twin_of is not None}
        self.confusable |= {e.id for e in self.g.entities if e.twin_of is not None}
        self.shape: list[str] = []

    # -- paths ----------------------------------------------------------------------------

    def walk(self, start: int, n: int, rng: random.Random, end: str | None = None) -> list[str]:
        """``n`` relations from ``start`` through distinct entities (ending at kind ``end``),
        or [] when the draw fails."""
        rels: list[str] = []
        seen, at = {start}, start
        for i in range(n):
            options = OUT[self.g.entities[at].kind]
            if end is not None and i == n - 1:
                options = [r for r in options if RELATIONS[r][1] == end]
            if not options:
                return []
            rel = rng.choice(options)
            at = self.g.facts(at).rel[rel]
            if at in seen:
                return []
            seen.add(at)
            rels.append(rel)
        return rels

    def follow(self, start: int, rels: list[str], fan: bool = False) -> list[int]:
        """The entities along ``rels`` (as the fan pages tell it, where they exist)."""
        path = [start]
        for rel in rels:
            path.append(self.g.facts(path[-1], fan).rel[rel])
        return path

    def describe(self, start: int, rels: list[str]) -> str:
        e = self.g.entities[start]
        d = f'"{e.name}"' if e.kind == "work" else f"the {e.name}" if e.kind == "event" else e.name
        for rel in rels:
            d = PHRASE[rel].format(d=d)
        return d

    def attr(self, eid: int, key: str, fan: bool = False) -> str:
        return str(self.g.facts(eid, fan).attr[key])

    # -- gold plans -----------------------------------------------------------------------

    def trail(self, start: int, rels: list[str], plan: Plan) -> tuple[str, int | None]:
        """Append the searches and reads that follow ``rels`` from ``start``; return the
        surface form the last document names the path's end by, and the step that read it
        (None when ``rels`` is empty: the question names it)."""
        surface, last = self.g.entities[start].name, None
        for eid, rel in zip(self.follow(start, rels), rels, strict=False):
            surface, last = self.read(eid, surface, rel, plan, last)
        return surface, last

    def read(
        self, eid: int, surface: str, key: str, plan: Plan, after: int | None
    ) -> tuple[str, int]:
        """Search ``surface`` (which step ``after`` gave), open the page of the entity's
        article stating ``key``; the surface it states the fact with, and the open step."""
        pos = self.c.reliable[eid]
        doc = self.c.docs[pos]
        offset, said = doc.facts[key]
        found = plan.search(surface, doc.doc_id, after)
        return said, plan.open(doc.doc_id, self.c.page_of(pos, offset), found)

    def distractors(self, *paths: list[int]) -> int:
        ids = {e for p in paths for e in p}
        return sum(1 for e in ids if e in self.confusable or self.g.entities[e].fan)

    # -- question kinds -------------------------------------------------------------------

    def draft(self, difficulty: int, start: int, rng: random.Random) -> Draft | None:
        self.shape = []
        if difficulty == 0:
            return self.lead(start)
        kind, n = rng.choice(LEVELS[difficulty])
        made: Draft | None = getattr(self, kind)(start, n, rng)
        if made is None or gives_away(made):
            return None
        return made

    def lead(self, start: int) -> Draft | None:
        e = self.g.entities[start]
        if e.fan is not None:
            return None
        key, ask, kind = ASK_ATTR[e.kind]
        value = self.attr(start, key)
        plan = Plan()
        plan.answer(value, plan.search(e.name, self.c.docs[self.c.reliable[start]].doc_id))
        instruction = ask.format(d=self.describe(start, []))
        knobs = {"hops": 1, "distractors": 0, "unreliable": 0}
        return Draft("lead", instruction, plan, kind, value, [], None, knobs, [key])

    def chain(self, start: int, hops: int, rng: random.Random) -> Draft | None:
        by_name = hops == 1 or rng.random() < 0.5  # one hop by attribute is a lead question
        rels = self.walk(start, hops if by_name else hops - 1, rng)
        if len(rels) != (hops if by_name else hops - 1):
            return None
        plan = Plan()
        kind: AnswerType = "name"
        surface, last = self.trail(start, rels[:-1] if by_name else rels, plan)
        path, fan_path = self.follow(start, rels), self.follow(start, rels, fan=True)
        end, fan_end = path[-1], fan_path[-1]
        if by_name:
            _, last = self.read(path[-2], surface, rels[-1], plan, last)
            ask = ASK_NAME[rels[-1]].format(d=self.describe(start, rels[:-1]))
            self.shape = [*rels, "name"]
            e = self.g.entities[end]
            value, aliases = e.name, e.aliases
            fan_value = self.g.entities[fan_end].name
        else:
            key, template, kind = ASK_ATTR[self.g.entities[end].kind]
            _, last = self.read(end, surface, key, plan, last)
            ask = template.format(d=self.describe(start, rels))
            self.shape = [*rels, key]
            value, aliases, fan_value = self.attr(end, key), [], self.attr(fan_end, key, True)
        plan.answer(value, last)
        return self._made("chain", ask, plan, kind, value, aliases, fan_value, path, fan_path)

    def compare(self, start: int, n: int, rng: random.Random) -> Draft | None:
        kind = self.g.entities[start].kind
        rels = self.walk(start, n, rng)
        other = rng.choice(self.g.by_kind[kind])
        if len(rels) != n:
            return None
        mine, theirs = self.follow(start, rels), self.follow(other, rels)
        if len(set(mine + theirs)) != 2 * (n + 1):
            return None
        end_kind = self.g.entities[self.follow(start, rels)[-1]].kind
        if end_kind not in COMPARE:
            return None
        key, ask, smaller = COMPARE[end_kind]
        self.shape = [*rels, key]
        pair = [start, other] if rng.random() < 0.5 else [other, start]
        ends = [self.follow(s, rels)[-1] for s in pair]
        fan_ends = [self.follow(s, rels, fan=True)[-1] for s in pair]
        if len(set(ends)) < 2 or len(set(fan_ends)) < 2:
            return None
        values = [_key(self.attr(e, key)) for e in ends]
        fan_values = [_key(self.attr(e, key, True)) for e in fan_ends]
        if values[0] == values[1] or fan_values[0] == fan_values[1]:
            return None
        win = ends[values.index(min(values) if smaller else max(values))]
        fan_win = fan_ends[fan_values.index(min(fan_values) if smaller else max(fan_values))]
        plan = Plan()
        reads = []
        for s in pair:
            surface, last = self.trail(s, rels, plan)
            reads.append(self.read(self.follow(s, rels)[-1], surface, key, plan, last)[1])
        plan.answer(self.g.entities[win].name, *reads)
        a, b = (self.describe(s, rels) for s in pair)
        instruction = f"{ask}: {a}, or {b}? Give the name."
        e = self.g.entities[win]
        paths = [self.follow(s, rels) for s in pair]
        fans = [self.follow(s, rels, fan=True) for s in pair]
        fan_name = self.g.entities[fan_win].name
        return self._made(
            "compare", instruction, plan, "name", e.name, e.aliases, fan_name, *paths, *fans
        )

    def count(self, start: int, n: int, rng: random.Random) -> Draft | None:
        rels = self.walk(start, n, rng, end="org")
        path, fan_path = self.follow(start, rels), self.follow(start, rels, fan=True)
        if len(rels) != n or len(self.g.facts(path[-1]).roster) < MIN_ROSTER:
            return None
        years = sorted(y for _, y in self.g.facts(path[-1]).roster)
        k = rng.randrange(1, len(years))
        if years[k - 1] == years[k]:
            return None
        year = years[k]
        self.shape = [*rels, "roster"]
        fan_years = [y for _, y in self.g.facts(fan_path[-1], True).roster]
        fan_value = str(sum(1 for y in fan_years if y < year))
        plan = Plan()
        surface, last = self.trail(start, rels, plan)
        pos = self.c.reliable[path[-1]]
        doc = self.c.docs[pos]
        first, last_page = (self.c.page_of(pos, doc.facts[f][0]) for f in ("roster", "roster_end"))
        found = plan.search(surface, doc.doc_id, last)
        reads = [plan.open(doc.doc_id, p, found) for p in range(first, last_page + 1)]
        plan.answer(str(k), *reads)
        instruction = (
            f"How many of the members listed in the encyclopedia article on "
            f"{self.describe(start, rels)} were born before {year}?"
        )
        return self._made("count", instruction, plan, "number", str(k), [], fan_value, path)

    def as_of(self, start: int, n: int, rng: random.Random) -> Draft | None:
        rels = self.walk(start, n, rng, end="org") if n else []
        path, fan_path = self.follow(start, rels), self.follow(start, rels, fan=True)
        if len(rels) != n or self.g.entities[path[-1]].kind != "org":
            return None
        terms = self.g.facts(path[-1]).directors
        pick = rng.randrange(len(terms))
        who, a, b = terms[pick]
        if b - a < 2:
            return None
        year = rng.randint(a + 1, b - 1)
        self.shape = [*rels, "directors"]
        fan_terms = self.g.facts(fan_path[-1], True).directors
        fan_who = next((p for p, x, y in fan_terms if x < year < y), None)
        plan = Plan()
        surface, last = self.trail(start, rels, plan)
        doc = self.c.docs[self.c.reliable[path[-1]]]
        found = plan.search(surface, doc.doc_id, last)
        e = self.g.entities[who]
        plan.answer(e.name, plan.find(doc.doc_id, DIRECTOR, found))
        instruction = f"In {year}, who was the director of {self.describe(start, rels)}?"
        fan_name = self.g.entities[fan_who].name if fan_who is not None else "unknown"
        return self._made("as_of", instruction, plan, "name", e.name, e.aliases, fan_name, path)

    # -- checks ---------------------------------------------------------------------------

    def _made(
        self,
        kind: str,
        instruction: str,
        plan: Plan,
        answer_type: AnswerType,
        value: str,
        aliases: list[str],
        fan_value: str,
        *paths: list[int],
    ) -> Draft | None:
        """The draft, unless a fan page on the way agrees with the truth (then trusting fan
        pages would pay)."""
        touched = any(self.g.entities[e].fan for p in paths for e in p)
        if touched and _key(fan_value) == _key(value):
            return None
        hops = sum(1 for s in plan.steps if s.tool == "search")
        knobs = {"hops": hops, "distractors": self.distractors(*paths), "unreliable": touched}
        instruction = f"{instruction} Use the tools to research it; commit one answer."
        return Draft(
            kind,
            instruction,
            plan,
            answer_type,
            value,
            list(aliases),
            fan_value if touched else None,
            {k: int(v) for k, v in knobs.items()},
            list(self.shape),
        )


def _key(value: str) -> str | int:
    """A value as compared: numbers as numbers, dates and names as text."""
    return int(value) if value.lstrip("-").isdigit() else normalise(value)
