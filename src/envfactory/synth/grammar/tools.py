"""Tools derived from a world's structure, and the write operations goals are made of.

Every table gets ``get``; a root gets look-ups by code and by name; a child gets its
parent's listing (filtered by status when it has a lifecycle). Writes come from the
structure: a lifecycle's transitions (a tool per verb, or one status setter), updates of
amounts, categories, dates and flags, creating a child under its parent, linking and
unlinking a pair, moving a balance between rows. Each write is an :class:`Op`: its tool,
which rows it applies to, and how a goal calls it; :mod:`.constraints` then binds rules to
the ops.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from envfactory.synth.grammar.shape import Data, Entity, Shape, Transition


def id_param(e: Entity) -> Data:
    return {"description": f"{e.noun.word.capitalize()} id, like {e.prefix}-00001."}


@dataclass
class Op:
    """A write a goal can ask for: ``tool`` (the action's name) on a row of ``entity``.

    ``checks`` are conditions over ``{r}`` (the anchor row, or a row a goal loops over)
    that the write needs (``local``: they read no binding of ``let``); ``args``
    and ``let`` are the plan's arguments and bindings over ``anchor``; ``phrase`` is the
    request, with ``{target}`` for the row's reference."""

    tool: str
    entity: Entity
    kind: str  # transition, update, create, transfer, link, unlink
    args: Data
    phrase: str
    states: tuple[str, ...] = ()  # the anchor's status must be one of these (when not empty)
    let: Data = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)
    pre: list[Data] = field(default_factory=list)  # steps before the write (a rule's look-up)
    writes: tuple[str, ...] = ()
    target_state: str | None = None
    local: bool = True
    constraints: list[str] = field(default_factory=list)

    def step(self, who: str = "anchor") -> Data:
        args = {
            k: v.replace("anchor.", f"{who}.") if isinstance(v, str) else v
            for k, v in self.args.items()
        }
        return {"tool": self.tool, "args": args}

    def conditions(self, who: str) -> list[str]:
        out = [f"{who}.status in {list(self.states)}"] if self.states else []
        return out + [c.replace("{r}", who) for c in self.checks]


@dataclass(frozen=True)
class Budget:
    """A parent's budget over the ``amount`` of its ``live`` children (all, when empty)."""

    parent: Entity
    child: Entity
    amount: str
    live: tuple[str, ...]


@dataclass
class World:
    """The domain data being derived, and the ops its goals draw on."""

    shape: Shape
    entities: Data
    actions: dict[str, Data] = field(default_factory=dict)
    rules: list[Data] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    rule_kinds: dict[str, str] = field(default_factory=dict)  # rule id -> constraint kind
    budgets: list[Budget] = field(default_factory=list)

    def action(self, data: Data) -> str:
        self.actions[data["name"]] = data
        return str(data["name"])

    def rule(self, rule_id: str, text: str, kind: str = "", **extra: Data) -> str:
        self.rules.append({"id": rule_id, "text": text, **extra})
        if kind:
            self.rule_kinds[rule_id] = kind
        return rule_id


def either(states: Iterable[str]) -> str:
    """States as a request words them: ``on_hold or open``."""
    return " or ".join(s.replace("_", " ") for s in states)


def get_tool(e: Entity) -> str:
    return f"get_{e.noun.slug}"


def listing_tool(e: Entity, parent: Entity) -> str:
    return f"list_{parent.noun.slug}_{e.table}"


def derive_tools(shape: Shape, rng: random.Random) -> World:
    """The read tools and write ops of ``shape``; the entities get their references."""
    entities: dict[str, Data] = {
        t: {"label": e.noun.word, "id_prefix": e.prefix, "fields": e.fields}
        for t, e in shape.entities.items()
    }
    world = World(shape, entities)
    for e in shape.entities.values():
        data = entities[e.table]
        if e.parent is None or e.other is not None:
            data["count"] = e.count
        else:
            data["per"] = {"entity": e.parent, "min": e.per[0], "max": e.per[1]}
        if e.parent is not None:
            data["owner"] = shape.entities[e.parent].key
        _reads(world, e, rng)
    for e in shape.entities.values():
        _writes(world, e, rng)
    for e in shape.entities.values():
        if any(op.entity is e and op.kind in ("transition", "update") for op in world.ops):
            add_get(world, e)
    return world


def add_get(w: World, e: Entity) -> None:
    """``get`` for a table whose rows change (a row's fields before a move or an update);
    other tables are read through their look-ups and listings."""
    w.action(
        {
            "name": get_tool(e),
            "kind": "read",
            "description": f"Get a {e.noun.word} by id, with all its fields.",
            "params": {e.key: id_param(e)},
            "load": {"got": f"{e.table}[{e.key}]"},
            "returns": "=got",
        }
    )


def _reads(w: World, e: Entity, rng: random.Random) -> None:
    shape, refs = w.shape, []
    if e.parent is None or rng.random() < 0.4:
        find = w.action(
            {
                "name": f"find_{e.noun.slug}_by_code",
                "kind": "read",
                "description": f"Find a {e.noun.word} by its code.",
                "params": {"code": {"type": "integer", "description": "The code.", "minimum": 0}},
                "load": {"found": {"rows": e.table, "where": {"code": "=code"}, "limit": 1}},
                "require": [
                    {
                        "check": "len(found) == 1",
                        "code": "not_found",
                        "error": f"No {e.noun.word} has the code {{code}}.",
                    }
                ],
                "returns": "=found[0]",
            }
        )
        refs.append(
            {
                "text": f"{e.noun.word} {{row.code}}",
                "unique": ["code"],
                "lookup": [{"tool": find, "args": {"code": "=row.code"}}],
            }
        )
    if "name" in e.fields:
        search = w.action(
            {
                "name": f"search_{e.table}",
                "kind": "read",
                "description": f"Search {e.noun.plural} by name.",
                "params": {"name": {"description": "The full name."}},
                "load": {"found": {"rows": e.table, "where": {"name": "=name"}, "limit": 10}},
                "returns": "=found",
            }
        )
        text = "{row.name}" if e.role in ("party", "staff") else f"the {{row.name}} {e.noun.word}"
        refs.append(
            {
                "text": text,
                "unique": ["name"],
                "lookup": [{"tool": search, "args": {"name": "=row.name"}}],
            }
        )
    if e.parent is not None:
        parent = shape.entities[e.parent]
        params: Data = {parent.key: id_param(parent)}
        where: Data = {parent.key: f"={parent.key}"}
        if e.lifecycle is not None:
            params["status"] = {
                "description": "Only this status.",
                "required": False,
                "enum": list(e.lifecycle.states),
            }
            where["status"] = "=status"
        listing = w.action(
            {
                "name": listing_tool(e, parent),
                "kind": "read",
                "description": f"List the {e.noun.plural} of a {parent.noun.word}"
                + (", optionally of one status." if e.lifecycle else "."),
                "params": params,
                "load": {
                    "owner": f"{parent.table}[{parent.key}]",
                    "found": {"rows": e.table, "where": where, "order_by": "code"},
                },
                "returns": "=found",
            }
        )
        distinct = (e.of("category") or e.of("date") or ["code"])[0]
        shown = {
            "category": f"the {{row.{distinct}}} {e.noun.word} of {{ref:parent}}",
            "date": f"the {e.noun.word} of {{ref:parent}} dated {{pretty_date(row.{distinct})}}",
            "code": f"{e.noun.word} {{row.code}} of {{ref:parent}}",
        }[e.kinds[distinct]]
        refs.append(
            {
                "text": shown,
                "parent": parent.key,
                "unique": [distinct],
                "lookup": [{"tool": listing, "args": {parent.key: f"=row.{parent.key}"}}],
            }
        )
    w.entities[e.table]["refs"] = refs


def _writes(w: World, e: Entity, rng: random.Random) -> None:
    if e.lifecycle is not None:
        _transitions(w, e)
    for name in e.of("category") + e.of("amount") + e.of("date") + e.of("flag"):
        if rng.random() < 0.5:
            _update(w, e, name)
    if e.parent is not None and e.other is None and rng.random() < 0.6:
        _create(w, e)
    if e.other is not None:
        _link(w, e)
    if e.of("balance") and rng.random() < 0.8:
        _transfer(w, e, e.of("balance")[0])


def live_states(e: Entity) -> list[str]:
    """States a row can still leave."""
    lc = e.lifecycle
    return [] if lc is None else [s for s in lc.states if lc.out_of(s)]


def _transitions(w: World, e: Entity) -> None:
    lc = e.lifecycle
    assert lc is not None
    word = e.noun.word
    if any(t.reasons for t in lc.transitions):
        e.fields["reason"] = {"expr": "None"}
    if lc.setter:
        pairs = [[s, t.target] for t in lc.transitions for s in t.sources]
        tool = w.action(
            {
                "name": f"set_{e.noun.slug}_status",
                "kind": "write",
                "description": f"Move a {word} to another status; only some moves are allowed.",
                "params": {
                    e.key: id_param(e),
                    "status": {"description": "The new status.", "enum": list(lc.states[1:])},
                },
                "load": {"got": f"{e.table}[{e.key}]"},
                "require": [
                    {
                        "check": f"[got.status, status] in {pairs}",
                        "rule": w.rule(
                            f"{e.noun.slug}_moves",
                            f"A {word} moves only "
                            + "; ".join(
                                f"from {' or '.join(t.sources)} to {t.target}"
                                for t in lc.transitions
                            )
                            + ".",
                            "lifecycle",
                        ),
                        "error": f"A {word} cannot go from {{got.status}} to {{status}}.",
                    }
                ],
                "effects": [{"update": "got", "set": {"status": "=status"}}],
            }
        )
        for t in lc.transitions:
            w.ops.append(
                Op(
                    tool,
                    e,
                    "transition",
                    {e.key: "=anchor.id", "status": t.target},
                    f"set {{target}} to {t.target.replace('_', ' ')}",
                    t.sources,
                    writes=("status",),
                    target_state=t.target,
                )
            )
        return
    for t in lc.transitions:
        _verb(w, e, t)


def _verb(w: World, e: Entity, t: Transition) -> None:
    word = e.noun.word
    params: Data = {e.key: id_param(e)}
    effect: Data = {"status": t.target}
    args: Data = {e.key: "=anchor.id"}
    let: Data = {}
    phrase = f"{t.verb.replace('_', ' ')} {{target}}"
    if t.reasons:
        params["reason"] = {"description": "Why.", "enum": list(t.reasons)}
        effect["reason"] = "=reason"
        args["reason"] = "=reason"
        let["reason"] = {"choice": list(t.reasons)}
        phrase += " (reason: {human(reason)})"
    tool = w.action(
        {
            "name": f"{t.verb}_{e.noun.slug}",
            "kind": "write",
            "description": f"{t.verb.replace('_', ' ').capitalize()} a {word} that is "
            f"{either(t.sources)}.",
            "params": params,
            "load": {"got": f"{e.table}[{e.key}]"},
            "require": [
                {
                    "check": f"got.status in {list(t.sources)}",
                    "error": f"{word.capitalize()} {{got.id}} is {{got.status}}.",
                }
            ],
            "effects": [{"update": "got", "set": effect}],
        }
    )
    w.ops.append(
        Op(
            tool,
            e,
            "transition",
            args,
            phrase,
            t.sources,
            let,
            writes=tuple(effect),
            target_state=t.target,
        )
    )


def _update(w: World, e: Entity, name: str) -> None:
    kind, spec = e.kinds[name], e.fields[name]
    shown = name.replace("_", " ")
    param: Data = {"description": f"The new {shown}."}
    let: Data
    checks: list[Data] = []
    if kind == "category":
        param["enum"] = spec["choices"]
        let = {"value": {"choice": spec["choices"]}}
    elif kind == "amount":
        param |= {"type": "number", "minimum": 0}
        let = {"value": {"between": [int(spec["min"]), int(spec["max"])]}}
    elif kind == "flag":
        param["type"] = "boolean"
        let = {"value": {"value": f"not anchor.{name}"}}
    else:
        param["format"] = "date"
        checks.append(
            {
                "check": "days_between(today, value) >= 0",
                "code": "invalid_arguments",
                "error": "{value} is in the past.",
            }
        )
        let = {"k": {"between": [1, 40]}, "value": {"value": "add_days(today, k)"}}
    live = live_states(e)
    if live:
        checks.append(
            {
                "check": f"got.status in {live}",
                "error": f"{e.noun.word.capitalize()} {{got.id}} is {{got.status}}: it is final.",
            }
        )
    tool = w.action(
        {
            "name": f"set_{e.noun.slug}_{name}",
            "kind": "write",
            "description": f"Change the {shown} of a {e.noun.word}.",
            "params": {e.key: id_param(e), "value": param},
            "load": {"got": f"{e.table}[{e.key}]"},
            "require": checks,
            "effects": [{"update": "got", "set": {name: "=value"}}],
        }
    )
    said = (
        f"mark {{target}} as {{'' if value else 'not '}}{shown}"
        if kind == "flag"
        else f"change the {shown} of {{target}} to {{value}}"
    )
    op = Op(
        tool,
        e,
        "update",
        {e.key: "=anchor.id", "value": "=value"},
        said,
        tuple(live),
        let,
        [f"value != {{r}}.{name}"],
        writes=(name,),
    )
    w.ops.append(op)


def _create(w: World, e: Entity) -> None:
    parent = w.shape.entities[e.parent or ""]
    values = {
        f: e.kinds[f]
        for f in e.fields
        if e.kinds.get(f) in ("category", "amount", "quantity", "flag")
    }
    params: Data = {parent.key: id_param(parent)}
    sets: Data = {parent.key: "=owner.id", "code": "=(top[0].code + 1) if top else 1"}
    args: Data = {parent.key: "=anchor.id"}
    let: Data = {}
    said = []
    for f, kind in values.items():
        spec = e.fields[f]
        if kind == "category":
            params[f] = {"description": f"The {f}.", "enum": spec["choices"]}
            let[f"new_{f}"] = {"choice": spec["choices"]}
        elif kind == "flag":
            params[f] = {"type": "boolean", "description": f"Whether it is {f.replace('_', ' ')}."}
            let[f"new_{f}"] = {"choice": [True, False]}
        else:
            typ = "number" if kind == "amount" else "integer"
            params[f] = {"type": typ, "description": f"The {f}.", "minimum": 1}
            let[f"new_{f}"] = {"between": [int(spec["min"]) + 1, int(spec["max"])]}
        sets[f] = f"={f}"
        args[f] = f"=new_{f}"
        said.append(f"{f.replace('_', ' ')} {{new_{f}}}")
    sets |= _defaults(e, set(sets))
    tool = w.action(
        {
            "name": f"add_{e.noun.slug}",
            "kind": "write",
            "description": f"Add a new {e.noun.word} to a {parent.noun.word}.",
            "params": params,
            "load": {
                "owner": f"{parent.table}[{parent.key}]",
                "top": {"rows": e.table, "order_by": "-code", "limit": 1},
            },
            "effects": [{"insert": e.table, "name": "made", "set": sets}],
            "returns": "=made",
        }
    )
    phrase = f"add a new {e.noun.word} for {{target}}" + (": " + ", ".join(said) if said else "")
    w.ops.append(Op(tool, parent, "create", args, phrase, (), let, writes=tuple(sets)))


def _defaults(e: Entity, given: set[str]) -> Data:
    """What a new row of ``e`` holds in the fields a call does not give: dated today, no
    amount, one unit, the first category, no flag, no optional reference, the lifecycle's
    first state, no reason."""
    by_kind: Data = {"date": "=today", "amount": 0, "balance": 0, "quantity": 1, "flag": False}
    out: Data = {}
    for f, kind in e.kinds.items():
        if f in given:
            continue
        if kind in by_kind:
            out[f] = by_kind[kind]
        elif kind == "category":
            out[f] = e.fields[f]["choices"][0]
        elif kind in ("optional", "hierarchy"):
            out[f] = None
        elif kind == "status" and e.lifecycle is not None:
            out[f] = e.lifecycle.states[0]
    if "reason" in e.fields and "reason" not in given:
        out["reason"] = None
    return out


def _link(w: World, e: Entity) -> None:
    a, b = w.shape.entities[e.parent or ""], w.shape.entities[e.other or ""]
    rule = w.rule(
        f"one_{e.noun.slug}_per_pair",
        f"A {a.noun.word} and a {b.noun.word} share at most one {e.noun.word}.",
        "unique_pair",
    )
    sets: Data = {
        a.key: "=first.id",
        b.key: "=second.id",
        "code": "=(top[0].code + 1) if top else 1",
    }
    sets |= _defaults(e, set(sets))
    tool = w.action(
        {
            "name": f"add_{e.noun.slug}",
            "kind": "write",
            "description": f"Record a {e.noun.word} between a {a.noun.word} and a {b.noun.word}.",
            "params": {a.key: id_param(a), b.key: id_param(b)},
            "load": {
                "first": f"{a.table}[{a.key}]",
                "second": f"{b.table}[{b.key}]",
                "dup": {
                    "rows": e.table,
                    "where": {a.key: f"={a.key}", b.key: f"={b.key}"},
                    "limit": 1,
                },
                "top": {"rows": e.table, "order_by": "-code", "limit": 1},
            },
            "require": [
                {
                    "check": "len(dup) == 0",
                    "rule": rule,
                    "error": f"{{first.id}} and {{second.id}} already share a {e.noun.word}.",
                }
            ],
            "effects": [{"insert": e.table, "name": "made", "set": sets}],
            "returns": "=made",
        }
    )
    let = {
        "other": {"pick": {"rows": b.table}},
        "dup": {"rows": {"rows": e.table, "where": {a.key: "=anchor.id", b.key: "=other.id"}}},
    }
    w.ops.append(
        Op(
            tool,
            a,
            "link",
            {a.key: "=anchor.id", b.key: "=other.id"},
            f"record a {e.noun.word} between {{target}} and {{ref:other}}",
            (),
            let,
            ["len(dup) == 0"],
            writes=tuple(sets),
        )
    )
    remove = w.action(
        {
            "name": f"remove_{e.noun.slug}",
            "kind": "write",
            "description": f"Delete a {e.noun.word}.",
            "params": {e.key: id_param(e)},
            "load": {"got": f"{e.table}[{e.key}]"},
            "effects": [{"delete": "got"}],
        }
    )
    w.ops.append(
        Op(remove, e, "unlink", {e.key: "=anchor.id"}, "delete {target}", (), writes=("*",))
    )


def _transfer(w: World, e: Entity, name: str) -> None:
    shown = name.replace("_", " ")
    rule = w.rule(
        f"no_negative_{name}",
        f"No {e.noun.word}'s {shown} ever goes below zero.",
        "conservation",
        invariant={"entity": e.table, "check": f"row.{name} >= 0"},
    )
    same = e.parent is not None
    owners = w.shape.entities[e.parent].noun.plural if e.parent else ""
    key = w.shape.entities[e.parent].key if e.parent else ""
    checks: list[Data] = [
        {
            "check": "src.id != dst.id",
            "code": "invalid_arguments",
            "error": f"Moving needs two different {e.noun.plural}.",
        },
        {
            "check": f"src.{name} >= amount",
            "rule": rule,
            "error": f"{{src.id}} holds {{src.{name}}}, less than {{amount}}.",
        },
    ]
    if same:
        checks.append(
            {
                "check": f"src.{key} == dst.{key}",
                "rule": w.rule(
                    f"{name}_stays_within",
                    f"{shown.capitalize()} moves only between {e.noun.plural} of the same "
                    f"{w.shape.entities[e.parent or ''].noun.word}.",
                    "conservation",
                ),
                "error": f"{{src.id}} and {{dst.id}} belong to different {owners}.",
            }
        )
    tool = w.action(
        {
            "name": f"move_{e.noun.slug}_{name}",
            "kind": "write",
            "description": f"Move some {shown} from one {e.noun.word} to another.",
            "params": {
                "from_id": {"description": f"The giving {e.noun.word}'s id."},
                "to_id": {"description": f"The receiving {e.noun.word}'s id."},
                "amount": {"type": "number", "description": "How much.", "minimum": 0.01},
            },
            "load": {"src": f"{e.table}[from_id]", "dst": f"{e.table}[to_id]"},
            "require": checks,
            "effects": [
                {"update": "src", "set": {name: f"=money(src.{name} - amount)"}},
                {"update": "dst", "set": {name: f"=money(dst.{name} + amount)"}},
            ],
        }
    )
    pick: Data = {"rows": e.table, "filter": "row.id != anchor.id"}
    if same:
        pick["where"] = {key: f"=anchor.{key}"}
    let = {
        "k": {"between": [1, 9]},
        "amount": {"value": f"floor(anchor.{name} * k / 10)"},
        "other": {"pick": pick},
    }
    w.ops.append(
        Op(
            tool,
            e,
            "transfer",
            {"from_id": "=anchor.id", "to_id": "=other.id", "amount": "=amount"},
            f"move {{amount}} of {shown} from {{target}} to {{ref:other}}",
            (),
            let,
            ["amount >= 5"],
            writes=(name,),
        )
    )
