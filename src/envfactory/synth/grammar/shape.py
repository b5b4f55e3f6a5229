"""The structure of a world, drawn from the grammar: an entity graph, its fields and lifecycles.

A world has two to seven tables. The first is a root (a party, a unit or a pool of assets);
each further table is drawn as one of the graph's productions:

- ``child``: one-to-many under an existing table (its rows belong to a parent row);
- ``link``: many-to-many, a table of pairs with two required references;
- ``root``: another independent table (staff who sign off, a second catalogue);

and may gain an optional reference to a third table or, for a root, a hierarchy (a
reference to a row of its own table). Fields are drawn from archetypes (a category, an
amount, a quantity, a date, a flag, a balance, a tier); names come from ``words.yaml``.
A lifecycle is a state machine drawn from a grammar (a chain of states, exits to a terminal
state from some of them, a hold loop, a skip), not one fixed workflow.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from envfactory.synth.vocab import Noun

Data = dict[str, Any]


@functools.cache
def words() -> Data:
    """The grammar's word lists (``words.yaml``)."""
    text = resources.files("envfactory.synth.grammar").joinpath("words.yaml").read_text()
    data: Data = yaml.safe_load(text)
    return data


def noun(text: str) -> Noun:
    """A noun of ``words.yaml``: ``word`` or ``word/plural``."""
    word, _, plural = text.partition("/")
    if not plural:
        if word.endswith(("s", "x", "ch", "sh")):
            plural = word + "es"
        elif word.endswith("y") and word[-2:-1] not in ("a", "e", "o", "u"):
            plural = word[:-1] + "ies"
        else:
            plural = word + "s"
    return Noun(word, plural)


@dataclass(frozen=True)
class Transition:
    """A move of a lifecycle: its verb, the states it leaves, the state it enters."""

    verb: str
    sources: tuple[str, ...]
    target: str
    reasons: tuple[str, ...] = ()  # a call gives one of these when it is an exit that asks why


@dataclass(frozen=True)
class Lifecycle:
    """A state machine over a ``status`` field."""

    states: tuple[str, ...]
    weights: tuple[int, ...]
    transitions: tuple[Transition, ...]
    setter: bool  # one tool moves a row to any allowed state, instead of a tool per verb

    def out_of(self, state: str) -> list[Transition]:
        return [t for t in self.transitions if state in t.sources]


@dataclass
class Entity:
    """One table of the world."""

    table: str
    noun: Noun
    role: str
    prefix: str
    fields: Data = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)  # field -> archetype
    parent: str | None = None  # the owning table (one-to-many, or a link's first side)
    other: str | None = None  # a link's second side
    optional: str | None = None  # an optional reference to a third table
    hierarchy: bool = False  # rows may belong to another row of the same table
    lifecycle: Lifecycle | None = None
    count: int = 0
    per: tuple[int, int] = (0, 0)

    @property
    def key(self) -> str:
        """The name of a reference to this table (and of its id parameter)."""
        return f"{self.noun.slug}_id"

    def of(self, kind: str) -> list[str]:
        """This table's fields of archetype ``kind``."""
        return [f for f, k in self.kinds.items() if k == kind]


@dataclass
class Shape:
    """A world's structure, before tools and goals are derived from it."""

    entities: dict[str, Entity]
    tiers: tuple[str, ...]

    def children(self, table: str) -> list[Entity]:
        return [e for e in self.entities.values() if e.parent == table]


def _new_noun(rng: random.Random, role: str, used: set[str]) -> Noun:
    pool = [w for w in words()["nouns"][role] if noun(w).table not in used]
    made = noun(rng.choice(pool))
    used.add(made.table)
    return made


def _prefix(n: Noun, taken: set[str]) -> str:
    letters = [c for c in n.word.upper() if c.isalpha()]
    for a in range(len(letters)):
        for b in range(a + 1, len(letters)):
            p = letters[0] + letters[b] if a == 0 else letters[a] + letters[b]
            if p not in taken:
                taken.add(p)
                return p
    p = f"X{len(taken)}"
    taken.add(p)
    return p


def draw_shape(rng: random.Random) -> Shape:
    """A world's tables, references, fields and lifecycles, drawn from ``rng``."""
    w = words()
    used: set[str] = set()
    prefixes: set[str] = set()
    tiers = tuple(rng.choice(w["tiers"]))
    size = rng.randint(2, 7)
    first_role = rng.choice(["party", "party", "unit", "asset"])
    entities: dict[str, Entity] = {}

    def add(role: str, **kw: Any) -> Entity:
        n = _new_noun(rng, role, used)
        e = Entity(n.table, n, role, _prefix(n, prefixes), **kw)
        entities[e.table] = e
        return e

    add(first_role, count=rng.randint(40, 90))
    while len(entities) < size:
        owners = [e for e in entities.values() if e.other is None and _depth(e, entities) < 2]
        production = (
            rng.choices(["child", "link", "root"], [6, 2, 2])[0] if len(entities) > 1 else "child"
        )
        if production == "link" and len(entities) >= 2:
            a, b = rng.sample(sorted(entities.values(), key=lambda e: e.table), 2)
            if a.other is None and b.other is None:
                add("record", parent=a.table, other=b.table, count=rng.randint(60, 140))
                continue
        if production == "root":
            add(rng.choice(["staff", "staff", "unit", "asset"]), count=rng.randint(8, 30))
            continue
        parent = rng.choice(sorted(owners, key=lambda e: e.table))
        role = "item" if parent.role in ("record", "item") else rng.choice(["record", "asset"])
        add(role, parent=parent.table, per=(rng.randint(0, 1), rng.randint(2, 4)))
    tables = sorted(entities)
    for e in entities.values():
        if rng.random() < 0.25:
            others = [t for t in tables if t not in (e.table, e.parent, e.other)]
            others = [t for t in others if not _reaches(entities, t, e.table)]
            if others:
                e.optional = rng.choice(others)
        if e.parent is None and e.role in ("unit", "staff") and rng.random() < 0.4:
            e.hierarchy = True
    for e in entities.values():
        _draw_fields(e, entities, tiers, rng)
    _draw_lifecycles(list(entities.values()), rng)
    return Shape(entities, tiers)


def _depth(e: Entity, entities: dict[str, Entity]) -> int:
    return 0 if e.parent is None else 1 + _depth(entities[e.parent], entities)


def _reaches(entities: dict[str, Entity], start: str, goal: str) -> bool:
    """Whether rows of ``start`` refer, through required or optional references, to ``goal``
    (an optional reference back would make the tables' order circular)."""
    e = entities[start]
    nexts = [t for t in (e.parent, e.other, e.optional) if t]
    return goal in nexts or any(_reaches(entities, t, goal) for t in nexts)


def _draw_fields(
    e: Entity, entities: dict[str, Entity], tiers: tuple[str, ...], rng: random.Random
) -> None:
    names = words()["fields"]
    f, kinds = e.fields, e.kinds
    for table, kind in ((e.parent, "ref"), (e.other, "ref"), (e.optional, "optional")):
        if table:
            key = entities[table].key
            f[key] = {"type": "ref", "ref": table}
            if kind == "optional":
                f[key]["null_rate"] = 0.3
            kinds[key] = kind
    if e.hierarchy:
        top = rng.randint(3, 6)
        f["parent_id"] = {
            "type": "ref",
            "ref": e.table,
            "expr": f"None if index <= {top} else '{e.prefix}-0000' + str(1 + index % {top})",
        }
        kinds["parent_id"] = "hierarchy"
    digits = rng.randint(4, 6)
    f["code"] = {
        "type": "integer",
        "min": 10 ** (digits - 1),
        "max": 10**digits - 1,
        "unique": True,
    }
    kinds["code"] = "code"
    if e.role in ("party", "staff", "unit"):
        provider = {"party": "name", "staff": "name", "unit": "city"}[e.role]
        f["name"] = {"faker": provider, "unique": True}
        kinds["name"] = "name"
    if e.role == "party" and rng.random() < 0.7:
        f["tier"] = {"choices": list(tiers), "weights": [5, 3, 2]}
        kinds["tier"] = "tier"
    if e.role == "staff":
        limits = sorted(rng.sample([200, 300, 500, 750, 1000, 1500, 2500], 3))
        f["approval_limit"] = {"type": "integer", "choices": limits}
        kinds["approval_limit"] = "limit"
    extras = rng.sample(
        ["category", "amount", "quantity", "date", "flag", "balance"], rng.randint(1, 4)
    )
    names_used: set[str] = set(f)
    for kind in sorted(extras):
        name = rng.choice([n for n in names[kind] if n not in names_used])
        names_used.add(name)
        f[name], kinds[name] = _field(kind, rng), kind


def _field(kind: str, rng: random.Random) -> Data:
    if kind == "category":
        return {"choices": sorted(rng.sample(words()["values"], rng.randint(3, 5)))}
    if kind == "amount":
        top = rng.choice([400, 900, 1800, 3000])
        return {"type": "number", "min": 10, "max": top, "decimals": 2}
    if kind == "quantity":
        return {"type": "integer", "min": 1, "max": rng.choice([9, 20, 50])}
    if kind == "balance":
        return {"type": "number", "min": 0, "max": rng.choice([500, 2000, 5000]), "decimals": 2}
    if kind == "flag":
        return {"type": "boolean", "choices": [True, False], "weights": [1, 2]}
    low = rng.choice([-60, -30, -10])
    return {"type": "date", "min": low, "max": low + rng.choice([60, 90, 120])}


def _draw_lifecycles(entities: list[Entity], rng: random.Random) -> None:
    candidates = [e for e in entities if e.role in ("record", "item", "asset")] or entities
    for e in rng.sample(candidates, min(len(candidates), rng.randint(1, 2))):
        e.lifecycle = draw_lifecycle(rng)
        e.fields["status"] = {
            "choices": list(e.lifecycle.states),
            "weights": list(e.lifecycle.weights),
        }
        e.kinds["status"] = "status"
        if not any(k in ("amount", "quantity", "balance") for k in e.kinds.values()):
            kind = rng.choice(["amount", "amount", "quantity"])
            name = rng.choice([n for n in words()["fields"][kind] if n not in e.fields])
            e.fields[name], e.kinds[name] = _field(kind, rng), kind


def draw_lifecycle(rng: random.Random) -> Lifecycle:
    """A state machine: a chain of two to four states, an exit into a terminal state from
    some of them, maybe a hold loop beside one and a skip over one."""
    w = words()
    verbs = {s["state"]: s["verb"] for s in w["states"] + w["exits"]}
    chain = [s["state"] for s in rng.sample(w["states"], rng.randint(2, 4) + 1)]
    *chain, hold = chain
    sources: dict[str, set[str]] = {chain[i + 1]: {chain[i]} for i in range(len(chain) - 1)}
    states = list(chain)
    if len(chain) >= 3 and rng.random() < 0.4:
        j = rng.randrange(1, len(chain) - 1)
        sources[hold] = {chain[j]}
        sources[chain[j]].add(hold)
        sources.setdefault(chain[j + 1], set()).add(hold)
        states.append(hold)
    if len(chain) >= 3 and rng.random() < 0.3:
        sources[chain[2]].add(chain[0])
    exits = rng.sample(w["exits"], rng.choice([1, 1, 2]))
    reasons: dict[str, tuple[str, ...]] = {}
    for i, ex in enumerate(exits):
        live = [s for s in states if s != chain[-1]]
        picked = {chain[0]} if i == 0 else set()
        picked |= {s for s in live if rng.random() < 0.5}
        sources[ex["state"]] = picked or {live[-1]}
        states.append(ex["state"])
        if rng.random() < 0.6:
            reasons[ex["state"]] = tuple(sorted(rng.sample(w["reasons"], 3)))
    transitions = tuple(
        Transition(
            verbs[target], tuple(s for s in states if s in srcs), target, reasons.get(target, ())
        )
        for target, srcs in sorted(sources.items(), key=lambda kv: states.index(kv[0]))
    )
    weights = tuple(rng.randint(2, 6) if s != chain[-1] else rng.randint(1, 3) for s in states)
    setter = rng.random() < 0.3 and not reasons
    return Lifecycle(tuple(states), weights, transitions, setter)
