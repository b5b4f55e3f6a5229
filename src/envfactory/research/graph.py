"""The knowledge graph behind a corpus: fictional entities, typed relations and dated facts.

Every fact an article states comes from here, so the generator knows every answer. Some
entities also have a *fan view*: the facts an unreliable source gives for them, each one
different from the truth.
"""

from __future__ import annotations

import bisect
import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate

from envfactory.research import names

KINDS = ("region", "city", "person", "org", "work", "event")
SHARES = {"region": 0.01, "city": 0.11, "person": 0.42, "org": 0.10, "work": 0.24, "event": 0.12}
FAN_SHARE = 0.04  # of documents: unverified fan-wiki pages
TWIN_SHARE = 0.08  # of people, organisations, works and cities: near-duplicate names
# relation -> (from kind, to kind); each is a function (one value per entity)
RELATIONS: dict[str, tuple[str, str]] = {
    "birthplace": ("person", "city"),
    "member_of": ("person", "org"),
    "founder": ("org", "person"),
    "hq": ("org", "city"),
    "region": ("city", "region"),
    "capital": ("region", "city"),
    "author": ("work", "person"),
    "publisher": ("work", "org"),
    "venue": ("event", "city"),
    "organiser": ("event", "org"),
}
NOW = 2024


@dataclass(slots=True)
class Facts:
    """What one source says of an entity."""

    rel: dict[str, int] = field(default_factory=dict)
    attr: dict[str, int | str] = field(default_factory=dict)
    directors: list[tuple[int, int, int]] = field(default_factory=list)  # person, from, to
    roster: list[tuple[int, int]] = field(default_factory=list)  # person, birth year


@dataclass(slots=True)
class Entity:
    id: int
    kind: str
    name: str
    aliases: list[str]
    true: Facts
    fan: Facts | None = None
    twin_of: int | None = None

    @property
    def names(self) -> list[str]:
        return [self.name, *self.aliases]


@dataclass
class Graph:
    entities: list[Entity]
    by_kind: dict[str, list[int]]

    def facts(self, eid: int, fan: bool = False) -> Facts:
        e = self.entities[eid]
        return e.fan if fan and e.fan is not None else e.true


def _counts(size: int) -> dict[str, int]:
    entities = size - round(size * FAN_SHARE)
    counts = {k: max(3, round(entities * SHARES[k])) for k in KINDS}
    counts["person"] += entities - sum(counts.values())
    return counts


def build_graph(seed: int, size: int) -> Graph:
    """The graph of a corpus of about ``size`` documents (a pure function of its arguments)."""
    rng = random.Random(f"research-graph/{seed}/{size}")
    counts = _counts(size)
    namer = names.Namer()
    ents: list[Entity] = []
    by_kind: dict[str, list[int]] = {k: [] for k in KINDS}
    draws: dict[str, Callable[[random.Random], str]] = {
        "region": names.region,
        "city": names.city,
        "person": names.person,
        "org": names.org,
        "work": names.work,
    }

    def add(kind: str, name: str, twin_of: int | None = None) -> Entity:
        e = Entity(len(ents), kind, name, [], Facts(), twin_of=twin_of)
        ents.append(e)
        by_kind[kind].append(e.id)
        return e

    def named(kind: str) -> None:
        pool = by_kind[kind]
        if kind != "region" and pool and rng.random() < TWIN_SHARE:
            orig = ents[rng.choice(pool)]
            if orig.twin_of is None:
                name = namer.unique(lambda: names.twin(rng, kind, orig.name), tries=5)
                if name is not None:
                    add(kind, name, orig.id)
                    return
        name = namer.unique(lambda: draws[kind](rng))
        add(kind, name or f"{draws[kind](rng)} {len(ents)}")

    for kind in ("region", "city", "person", "org", "work"):
        for _ in range(counts[kind]):
            named(kind)

    regions, cities, people = by_kind["region"], by_kind["city"], by_kind["person"]
    for c in cities:
        ents[c].true.rel["region"] = rng.choice(regions)
        ents[c].true.attr["population"] = int(10 ** rng.uniform(3.0, 6.6))
    inside: dict[int, list[int]] = {r: [] for r in regions}
    for c in cities:
        inside[ents[c].true.rel["region"]].append(c)
    for r in regions:
        ents[r].true.rel["capital"] = rng.choice(inside[r] or cities)
        ents[r].true.attr["area"] = rng.randint(800, 90_000)
    for p in people:
        e = ents[p]
        e.true.rel["birthplace"] = rng.choice(cities)
        e.true.attr["birth_year"] = rng.randint(1820, 1995)
        e.true.attr["occupation"] = rng.choice(names.OCCUPATIONS)
        if rng.random() < 0.45:
            last = _last(e.name)
            alias = namer.unique(lambda: f"{rng.choice(names.NICKNAMES)} {last}", 4)  # noqa: B023
            if alias:
                e.aliases.append(alias)
    born = sorted((int(ents[p].true.attr["birth_year"]), p) for p in people)
    years = [y for y, _ in born]

    def born_between(lo: int, hi: int) -> int:
        i, j = bisect.bisect_left(years, lo), bisect.bisect_right(years, hi)
        return born[rng.randrange(i, j)][1] if j > i else rng.choice(people)

    orgs = by_kind["org"]
    for o in orgs:
        e = ents[o]
        founder = born_between(1790, 1965)
        founded = min(NOW - 5, int(ents[founder].true.attr["birth_year"]) + rng.randint(25, 55))
        e.true.rel["founder"], e.true.rel["hq"] = founder, rng.choice(cities)
        e.true.attr["founded"] = founded
        start, who = founded, founder
        while start < NOW - 2:
            end = min(start + rng.randint(6, 20), NOW)
            e.true.directors.append((who, start, end))
            start, who = end, born_between(end - 70, end - 30)
    weights = list(accumulate(rng.paretovariate(1.1) for _ in orgs))
    for p, o in zip(people, rng.choices(orgs, cum_weights=weights, k=len(people)), strict=True):
        ents[p].true.rel["member_of"] = o
        ents[o].true.roster.append((p, int(ents[p].true.attr["birth_year"])))
    by_founding = sorted((int(ents[o].true.attr["founded"]), o) for o in orgs)
    founded_years = [y for y, _ in by_founding]

    def founded_by(year: int) -> int:
        j = bisect.bisect_right(founded_years, year)
        return by_founding[rng.randrange(j)][1] if j else by_founding[0][1]

    for w in by_kind["work"]:
        e = ents[w]
        author = rng.choice(people)
        year = min(NOW - 1, int(ents[author].true.attr["birth_year"]) + rng.randint(22, 70))
        e.true.rel["author"], e.true.rel["publisher"] = author, founded_by(year)
        e.true.attr["year"], e.true.attr["genre"] = year, rng.choice(names.GENRES)
    for _ in range(counts["event"]):
        organiser = rng.choice(orgs)
        year = rng.randint(int(ents[organiser].true.attr["founded"]) + 1, NOW)
        venue = rng.choice(cities)
        name = namer.unique(lambda: names.event(rng, year))  # noqa: B023
        if name is None:
            continue
        e = add("event", name)
        e.true.rel["venue"], e.true.rel["organiser"] = venue, organiser
        day = dt.date(year, 1, 1) + dt.timedelta(days=rng.randrange(365))
        e.true.attr["date"] = day.isoformat()
        e.true.attr["attendance"] = int(10 ** rng.uniform(2.0, 5.3))
    graph = Graph(ents, by_kind)
    fans = [i for k in KINDS if k != "region" for i in by_kind[k]]
    for eid in rng.sample(fans, min(len(fans), size - len(ents))):
        ents[eid].fan = _fan(rng, graph, ents[eid])
    return graph


def _last(name: str) -> str:
    return name.rsplit(" ", 1)[-1]


def _other(rng: random.Random, pool: list[int], not_: int) -> int:
    while True:
        pick = rng.choice(pool)
        if pick != not_:
            return pick


def _shift(rng: random.Random, value: int, lo: int, hi: int) -> int:
    return value + rng.choice((-1, 1)) * rng.randint(lo, hi)


def _fan(rng: random.Random, g: Graph, e: Entity) -> Facts:
    """The facts an unverified fan page gives: every relation and number differs."""
    t = e.true
    rel = {r: _other(rng, g.by_kind[RELATIONS[r][1]], v) for r, v in t.rel.items()}
    attr: dict[str, int | str] = {}
    for key, value in t.attr.items():
        if key == "date":
            day = dt.date.fromisoformat(str(value)) + dt.timedelta(days=_shift(rng, 0, 20, 400))
            attr[key] = day.isoformat()
        elif key in ("population", "attendance", "area"):
            attr[key] = max(1, round(int(value) * rng.choice((0.6, 0.75, 1.3, 1.6))))
        elif isinstance(value, int):
            attr[key] = _shift(rng, value, 1, 9)
        else:
            attr[key] = value
    people = g.by_kind["person"]
    directors = [(_other(rng, people, p), a, b) for p, a, b in t.directors]
    roster = [(p, _shift(rng, y, 1, 6)) for p, y in t.roster]
    return Facts(rel, attr, directors, roster)
