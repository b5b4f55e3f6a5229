"""Goals derived from a world's ops, at every level of the ladder.

- level 1: one write on a named row (each op), and questions about a row's fields;
- level 2: the row singled out by a property among its siblings ("the one with the highest
  amount") before the write, two moves of one lifecycle in a row, and what is left of a
  parent's budget (a derived total);
- level 3: a branch stated in the request (if a field passes a threshold, one write,
  otherwise another);
- level 4: the same move for every child of a parent in some state, and totals over a
  parent's children.

Each goal's conditions are the ops' own (see :mod:`.constraints`), so its plan succeeds on
every row it is drawn for.
"""

from __future__ import annotations

import itertools

from envfactory.synth.grammar.shape import Data, Entity
from envfactory.synth.grammar.tools import Budget, Op, World, get_tool, listing_tool

NUMERIC = ("amount", "quantity", "balance")


def _say(phrase: str, target: str) -> str:
    return phrase.replace("{target}", target)


def _ask(text: str) -> list[str]:
    return [f"Please {text}.", f"{text[0].upper()}{text[1:]}, please."]


def _where(op: Op, row: str = "row") -> str | None:
    return f"{row}.status in {list(op.states)}" if op.states else None


def _checks(op: Op) -> list[str]:
    return [c.replace("{r}", "anchor") for c in op.checks]


def _written(w: World) -> set[tuple[str, str]]:
    return {(op.entity.table, f) for op in w.ops for f in op.writes} | {
        (t, "*") for op in w.ops if op.kind == "unlink" for t in [op.entity.table]
    }


def _goal(gid: str, level: int, e: Entity, where: str | None, **rest: object) -> Data:
    anchor: Data = {"entity": e.table}
    if where:
        anchor["where"] = where
    return {"id": gid, "level": level, "anchor": anchor, **{k: v for k, v in rest.items() if v}}


def derive_goals(w: World) -> list[Data]:
    """Every goal the world's ops and fields allow."""
    goals: list[Data] = []
    names: set[str] = set()

    def add(goal: Data | None) -> None:
        if goal is not None and goal["id"] not in names:
            names.add(goal["id"])
            goals.append(goal)

    for op in w.ops:
        add(_single(op))
    for g in _questions(w):
        add(g)
    for op in w.ops:
        add(_rank(w, op))
        add(_each(w, op))
        add(_guarded(w, op))
    for a, b in itertools.permutations(w.ops, 2):
        add(_chain(a, b))
        add(_branch(a, b))
    for g in _totals(w):
        add(g)
    for budget in w.budgets:
        add(_headroom(w, budget))
    return goals


def _gid(op: Op) -> str:
    return op.tool if op.target_state is None else f"{op.tool}_{op.target_state}"


def _single(op: Op) -> Data:
    return _goal(
        _gid(op),
        1,
        op.entity,
        _where(op),
        let=dict(op.let),
        require=_checks(op),
        plan=[*op.pre, op.step()],
        instruction=_ask(_say(op.phrase, "{ref:anchor}")),
    )


ASKED = ("category", "amount", "quantity", "date", "balance", "tier", "status", "flag", "ref")


def _questions(w: World) -> list[Data]:
    """Level 1: a field of a row, read with ``get``."""
    out = []
    for e in w.shape.entities.values():
        if get_tool(e) not in w.actions:
            continue
        asked = sorted((ASKED.index(k), f) for f, k in e.kinds.items() if k in ASKED)
        if not asked:
            continue
        f = asked[0][1]
        shown = "status" if f == "status" else f.replace("_id", "").replace("_", " ")
        out.append(
            _goal(
                f"{e.noun.slug}_{f}",
                1,
                e,
                None,
                plan=[{"tool": get_tool(e), "args": {e.key: "=anchor.id"}}],
                instruction=[
                    f"What is the {shown} of {{ref:anchor}}?",
                    f"Could you tell me the {shown} of {{ref:anchor}}?",
                ],
                answer=f"anchor.{f}",
            )
        )
    return out


def _numeric(e: Entity, op: Op) -> str | None:
    fields = [f for f, k in e.kinds.items() if k in NUMERIC and f not in op.writes]
    return fields[0] if fields else None


def _rank(w: World, op: Op) -> Data | None:
    """Level 2: the op on the child of a parent with the highest value of a field."""
    e = op.entity
    f = _numeric(e, op)
    if (
        op.kind not in ("transition", "update")
        or e.parent is None
        or e.other is not None
        or f is None
    ):
        return None
    parent = w.shape.entities[e.parent]
    shown = f.replace("_", " ")
    let: Data = {
        "parent": f"{parent.table}[anchor.{parent.key}]",
        "sibs": {"rows": {"rows": e.table, "where": {parent.key: f"=anchor.{parent.key}"}}},
        **op.let,
    }
    require = [
        "len(sibs) >= 2",
        f"anchor.{f} == max(pluck(sibs, '{f}'))",
        f"len([x for x in sibs if x.{f} == anchor.{f}]) == 1",
        *_checks(op),
    ]
    target = f"the {e.noun.word} of {{ref:parent}} with the highest {shown}"
    return _goal(
        f"{_gid(op)}_top_{f}",
        2,
        e,
        _where(op),
        let=let,
        require=require,
        plan=[
            {"tool": listing_tool(e, parent), "args": {parent.key: "=parent.id"}},
            *op.pre,
            op.step(),
        ],
        instruction=_ask(_say(op.phrase, target)),
    )


def _chain(a: Op, b: Op) -> Data | None:
    """Level 2: two moves of one row's lifecycle, one after the other."""
    if a.kind != "transition" or b.kind != "transition" or a.entity is not b.entity:
        return None
    if a.target_state not in b.states or set(a.let) & set(b.let):
        return None
    require = _checks(a) + _checks(b)
    text = f"{_say(a.phrase, '{ref:anchor}')}, and then {_say(b.phrase, 'it')}"
    return _goal(
        f"{_gid(a)}_then_{_gid(b)}",
        2,
        a.entity,
        _where(a),
        let={**a.let, **b.let},
        require=require,
        plan=[*a.pre, a.step(), *b.pre, b.step()],
        instruction=_ask(text),
    )


def _branch(a: Op, b: Op) -> Data | None:
    """Level 3: one of two writes on a row, by a threshold on one of its fields."""
    e = a.entity
    if (
        b.entity is not e
        or a.kind not in ("transition", "update")
        or b.kind not in ("transition", "update")
    ):
        return None
    if a.tool == b.tool or not (
        set(a.states) & set(b.states) if a.states and b.states else a.states or b.states
    ):
        return None
    if set(a.let) & set(b.let) or a.pre or b.pre:
        return None
    f = _numeric(e, a)
    if f is None or f in b.writes:
        return None
    states = (
        sorted(set(a.states) & set(b.states))
        if a.states and b.states
        else list(a.states or b.states)
    )
    shown = f.replace("_", " ")
    let: Data = {
        "over": {"between": [0, 1]},
        "bar": {"value": f"floor(anchor.{f}) + 1 if over == 1 else floor(anchor.{f})"},
        **a.let,
        **b.let,
    }
    text = (
        f"if {{ref:anchor}} has a {shown} of at least {{bar}}, {_say(a.phrase, 'it')}; "
        f"otherwise {_say(b.phrase, 'it')}"
    )
    read = {"tool": get_tool(e), "args": {e.key: "=anchor.id"}}
    plan = [
        read,
        {**a.step(), "when": f"anchor.{f} >= bar"},
        {**b.step(), "when": f"anchor.{f} < bar"},
    ]
    return _goal(
        f"{_gid(a)}_or_{_gid(b)}",
        3,
        e,
        f"row.status in {states}",
        let=let,
        require=_checks(a) + _checks(b),
        plan=plan,
        instruction=[f"Please check: {text}.", f"{text[0].upper()}{text[1:]}."],
    )


def _guarded(w: World, op: Op) -> Data | None:
    """Level 3: a write only if a field of the row passes a threshold (else nothing)."""
    e = op.entity
    fields = [f for f, k in e.kinds.items() if k in NUMERIC]
    if get_tool(e) not in w.actions or not fields or op.pre or set(op.let) & {"over", "bar"}:
        return None
    f = fields[0]
    shown = f.replace("_", " ")
    let: Data = {
        "over": {"between": [0, 1]},
        "bar": {"value": f"floor(anchor.{f}) + 1 if over == 1 else floor(anchor.{f})"},
        **op.let,
    }
    text = f"{_say(op.phrase, '{ref:anchor}')}, but only if its {shown} is at least {{bar}}"
    plan = [
        {"tool": get_tool(e), "args": {e.key: "=anchor.id"}},
        {**op.step(), "when": f"anchor.{f} >= bar"},
    ]
    return _goal(
        f"{_gid(op)}_if_{f}",
        3,
        e,
        _where(op),
        let=let,
        require=_checks(op),
        plan=plan,
        instruction=[
            f"Please {text}; otherwise leave it as it is.",
            f"{text[0].upper()}{text[1:]}. If it is lower, change nothing.",
        ],
    )


def _each(w: World, op: Op) -> Data | None:
    """Level 4: the same write for every child of a parent (in one state, if it has states)."""
    e = op.entity
    if op.kind not in ("transition", "update") or not op.local or op.pre:
        return None
    if e.parent is None or e.other is not None or set(op.let) - {"reason", "value", "k"}:
        return None
    if "anchor." in str(op.let):
        return None
    parent = w.shape.entities[e.parent]
    where: Data = {parent.key: "=anchor.id"}
    listed: Data = {parent.key: "=anchor.id"}
    target = f"every {e.noun.word} of {{ref:anchor}}"
    if op.states:
        where["status"] = listed["status"] = op.states[0]
        target += f" that is {op.states[0].replace('_', ' ')}"
    checks = [c.replace("{r}", "x") for c in op.checks]
    let: Data = {"items": {"rows": {"rows": e.table, "where": where}}, **op.let}
    require = ["len(items) >= 2"] + (
        [f"all({' and '.join(checks)} for x in items)"] if checks else []
    )
    plan = [
        {"tool": listing_tool(e, parent), "args": listed},
        {**op.step("item"), "for_each": "items"},
    ]
    return _goal(
        f"{_gid(op)}_all",
        4,
        parent,
        None,
        let=let,
        require=require,
        plan=plan,
        instruction=_ask(_say(op.phrase, target)),
    )


def _totals(w: World) -> list[Data]:
    """Totals of a field over a parent's children (level 2: one listing) and over its
    grandchildren (level 4: a listing per child), and counts of children in a state."""
    written = _written(w)
    out = []
    for e in w.shape.entities.values():
        if e.parent is None or e.other is not None or (e.table, "*") in written:
            continue
        parent = w.shape.entities[e.parent]
        listing = listing_tool(e, parent)
        fields = [f for f, k in e.kinds.items() if k in NUMERIC and (e.table, f) not in written]
        for f in fields[:1]:
            shown = f.replace("_", " ")
            total = f"sum(x.{f} for x in kids)"
            if e.kinds[f] != "quantity":
                total = f"money({total})"
            kids = {"rows": {"rows": e.table, "where": {parent.key: "=anchor.id"}}}
            out.append(
                _goal(
                    f"total_{f}_of_{e.table}",
                    2,
                    parent,
                    None,
                    let={"kids": kids},
                    require=["len(kids) >= 2"],
                    plan=[{"tool": listing, "args": {parent.key: "=anchor.id"}}],
                    instruction=[
                        f"What is the total {shown} of all the {e.noun.plural} of {{ref:anchor}}?",
                        f"Please add up the {shown} over every {e.noun.word} of {{ref:anchor}}.",
                    ],
                    answer=total,
                )
            )
            top = w.shape.entities.get(parent.parent or "")
            if top is None or parent.other is not None:
                continue
            mid = {"rows": {"rows": parent.table, "where": {top.key: "=anchor.id"}}}
            deep = {"rows": {"rows": e.table, "filter": f"row.{parent.key} in mids"}}
            out.append(
                _goal(
                    f"total_{f}_of_{e.table}_by_{top.table}",
                    4,
                    top,
                    None,
                    let={"middle": mid, "mids": {"value": "pluck(middle, 'id')"}, "kids": deep},
                    require=["len(middle) >= 2", "len(kids) >= 2"],
                    plan=[
                        {"tool": listing_tool(parent, top), "args": {top.key: "=anchor.id"}},
                        {"tool": listing, "args": {parent.key: "=item.id"}, "for_each": "middle"},
                    ],
                    instruction=[
                        f"What is the total {shown} of the {e.noun.plural} of all of "
                        f"{{ref:anchor}}'s {parent.noun.plural}?",
                        f"Please add up the {shown} of every {e.noun.word} under every "
                        f"{parent.noun.word} of {{ref:anchor}}.",
                    ],
                    answer=total,
                )
            )
        if e.lifecycle is None:
            kids = {"rows": {"rows": e.table, "where": {parent.key: "=anchor.id"}}}
            out.append(
                _goal(
                    f"count_{e.table}",
                    2,
                    parent,
                    None,
                    let={"kids": kids},
                    require=["len(kids) >= 1"],
                    plan=[{"tool": listing, "args": {parent.key: "=anchor.id"}}],
                    instruction=[
                        f"How many {e.noun.plural} does {{ref:anchor}} have?",
                        f"Please count the {e.noun.plural} of {{ref:anchor}}.",
                    ],
                    answer="len(kids)",
                )
            )
        else:
            state = e.lifecycle.states[0]
            said = state.replace("_", " ")
            rows = {"rows": {"rows": e.table, "where": {parent.key: "=anchor.id", "status": state}}}
            out.append(
                _goal(
                    f"count_{state}_{e.table}",
                    2,
                    parent,
                    None,
                    let={"rows": rows},
                    plan=[{"tool": listing, "args": {parent.key: "=anchor.id", "status": state}}],
                    instruction=[
                        f"How many of the {e.noun.plural} of {{ref:anchor}} are {said}?",
                        f"Please count {{ref:anchor}}'s {e.noun.plural} that are {said}.",
                    ],
                    answer="len(rows)",
                )
            )
    return out


def _headroom(w: World, b: Budget) -> Data:
    """Level 2: what is left of a parent's budget: the budget (read with ``get``) less the
    amounts of its live children (read from their listing)."""
    p, c = b.parent, b.child
    rows: Data = {"rows": c.table, "where": {p.key: "=anchor.id"}}
    if b.live:
        rows["filter"] = f"row.status in {list(b.live)}"
    spent = f"sum(pluck(spent, '{b.amount}'))"
    return _goal(
        f"{c.noun.slug}_budget_left",
        2,
        p,
        None,
        let={"spent": {"rows": rows}},
        require=["len(spent) >= 1", f"{spent} <= anchor.budget"],
        plan=[
            {"tool": get_tool(p), "args": {p.key: "=anchor.id"}},
            {"tool": listing_tool(c, w.shape.entities[p.table]), "args": {p.key: "=anchor.id"}},
        ],
        instruction=[
            f"How much of {{ref:anchor}}'s budget is left for new {c.noun.plural}?",
            f"Please work out what remains of {{ref:anchor}}'s budget for {c.noun.plural}.",
        ],
        answer=f"money(anchor.budget - {spent})",
    )
