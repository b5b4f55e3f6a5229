"""The constraint algebra: rules bound to the write ops a world's structure offers.

Each constraint kind applies where the structure allows it (a deadline needs a date, a
capacity a parent, a sign-off a table of staff with limits) and does three things at once:
it states a rule the agent reads, adds the check that enforces it to the tool (a failed
check is a structured error naming the rule), and adds the same condition to the op, so
every goal that asks for the write asks only where it can succeed. Several constraints can
bind one op; together they are the world's rules.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from envfactory.synth.grammar.shape import Entity
from envfactory.synth.grammar.tools import (
    Budget,
    Op,
    World,
    add_get,
    either,
    get_tool,
    live_states,
)

Constraint = Callable[[World, Op, random.Random], bool]


def _check(w: World, op: Op, check: str, rule: str, error: str) -> None:
    w.actions[op.tool].setdefault("require", []).append(
        {"check": check, "rule": rule, "error": error}
    )


def _created(w: World, op: Op) -> Entity:
    """The table a create op adds rows to (the op's anchor is the parent)."""
    return next(c for c in w.shape.children(op.entity.table) if op.tool == f"add_{c.noun.slug}")


def _own_tool(w: World, op: Op) -> bool:
    """Whether no other op shares ``op``'s tool (a status setter serves many)."""
    return sum(o.tool == op.tool for o in w.ops) == 1


def _dated(w: World, op: Op, rule_id: str, when: str, check: str, error: str) -> bool:
    """Bind a move to its row's date: ``check`` (over ``got``) with ``{d}`` for the date
    field; ``when`` words the rule ("only up to 3 days before"). A move takes one date rule."""
    e = op.entity
    dated = {"deadline", "window"} & set(op.constraints)
    if op.kind != "transition" or not e.of("date") or not _own_tool(w, op) or dated:
        return False
    d = e.of("date")[0]
    shown = d.replace("_", " ")
    moved = (op.target_state or "").replace("_", " ")
    rule = w.rule(rule_id, f"A {e.noun.word} can be {moved} {when} its {shown}.")
    _check(w, op, check.format(d=d), rule, error.format(d=d, shown=shown))
    op.checks.append(check.format(d=d).replace("got.", "{r}."))
    return True


def deadline(w: World, op: Op, rng: random.Random) -> bool:
    """A move allowed only some days before the row's date."""
    days = rng.randint(1, 5)
    return _dated(
        w,
        op,
        f"{op.tool}_deadline",
        f"only up to {days} days before",
        f"days_between(today, got.{{d}}) >= {days}",
        f"{{{{got.id}}}}'s {{shown}} is {{{{got.{{d}}}}}}, less than {days} days away.",
    )


def window(w: World, op: Op, rng: random.Random) -> bool:
    """A move allowed only within some days after the row's date."""
    days = rng.choice([14, 21, 30, 45])
    return _dated(
        w,
        op,
        f"{op.tool}_window",
        f"only within {days} days after",
        f"days_between(got.{{d}}, today) >= 0 and days_between(got.{{d}}, today) <= {days}",
        f"{{{{got.id}}}}'s {{shown}} is {{{{got.{{d}}}}}}, outside the {days}-day window.",
    )


def prerequisite(w: World, op: Op, rng: random.Random) -> bool:
    """A child's move allowed only while its parent is in some states."""
    e = op.entity
    if op.kind != "transition" or e.parent is None or not _own_tool(w, op):
        return False
    parent = w.shape.entities[e.parent]
    if parent.lifecycle is None:
        return False
    states = sorted(
        rng.sample(list(parent.lifecycle.states), max(1, len(parent.lifecycle.states) // 2))
    )
    rule = w.rule(
        f"{op.tool}_needs_{parent.noun.slug}",
        f"A {e.noun.word} can be {(op.target_state or '').replace('_', ' ')} only while its "
        f"{parent.noun.word} is {either(states)}.",
    )
    w.actions[op.tool]["load"]["up"] = f"{parent.table}[got.{parent.key}]"
    _check(
        w, op, f"up.status in {states}", rule, f"Its {parent.noun.word} {{up.id}} is {{up.status}}."
    )
    op.let["up"] = f"{parent.table}[anchor.{parent.key}]"
    op.checks.append(f"up.status in {states}")
    op.local = False
    return True


def children_done(w: World, op: Op, rng: random.Random) -> bool:
    """A parent's move allowed only when none of its children is still live."""
    e = op.entity
    if op.kind != "transition" or not _own_tool(w, op):
        return False
    kids = [c for c in w.shape.children(e.table) if c.lifecycle is not None and c.other is None]
    if not kids:
        return False
    c = rng.choice(kids)
    live = live_states(c)
    rule = w.rule(
        f"{op.tool}_when_{c.table}_done",
        f"A {e.noun.word} can be {(op.target_state or '').replace('_', ' ')} only when none "
        f"of its {c.noun.plural} is {either(live)}.",
    )
    w.actions[op.tool]["load"]["open_kids"] = {
        "rows": c.table,
        "where": {e.key: "=got.id"},
        "filter": f"row.status in {live}",
    }
    _check(w, op, "len(open_kids) == 0", rule, f"{{got.id}} still has open {c.noun.plural}.")
    op.let["open_kids"] = {
        "rows": {"rows": c.table, "where": {e.key: "=anchor.id"}, "filter": f"row.status in {live}"}
    }
    op.checks.append("len(open_kids) == 0")
    op.local = False
    return True


def _owner_tier(w: World, e: Entity) -> Entity | None:
    parent = w.shape.entities.get(e.parent or "")
    return parent if parent is not None and "tier" in parent.fields else None


def tier_limit(w: World, op: Op, rng: random.Random) -> bool:
    """A new row's amount capped by its owner's tier."""
    if op.kind != "create" or "tier" not in op.entity.fields:
        return False
    child = _created(w, op)
    if not child.of("amount"):
        return False
    amt = child.of("amount")[0]
    top = int(child.fields[amt]["max"])
    limits = dict(
        zip(
            w.shape.tiers,
            sorted(rng.sample(range(top // 5, top, max(1, top // 20)), 3)),
            strict=True,
        )
    )
    rule = w.rule(
        f"{amt}_limit_by_tier",
        f"A new {child.noun.word}'s {amt.replace('_', ' ')} is at most "
        + ", ".join(f"{v} for the {k} tier" for k, v in limits.items())
        + ".",
    )
    _check(
        w,
        op,
        f"{amt} <= {limits}[owner.tier]",
        rule,
        f"{{{amt}}} is over the limit for the {{owner.tier}} tier.",
    )
    op.checks.append(f"new_{amt} <= {limits}[{{r}}.tier]")
    return True


def capacity(w: World, op: Op, rng: random.Random) -> bool:
    """At most ``capacity`` live children per parent."""
    if op.kind != "create" or "capacity" in op.entity.fields:
        return False
    child = _created(w, op)
    op.entity.fields["capacity"] = {"type": "integer", "min": 1, "max": rng.randint(3, 6)}
    op.entity.kinds["capacity"] = "capacity"
    live = live_states(child)
    where = f"row.status in {live}" if live else None
    rule = w.rule(
        f"{child.noun.slug}_capacity",
        f"A {op.entity.noun.word} holds at most its capacity of "
        + (f"{either(live)} " if live else "")
        + f"{child.noun.plural}.",
    )
    query = {"rows": child.table, "where": {op.entity.key: "=owner.id"}}
    w.actions[op.tool]["load"]["held"] = {**query, **({"filter": where} if where else {})}
    _check(w, op, "len(held) < owner.capacity", rule, "{owner.id} is full ({owner.capacity}).")
    mine = {"rows": child.table, "where": {op.entity.key: "=anchor.id"}}
    op.let["held"] = {"rows": {**mine, **({"filter": where} if where else {})}}
    op.checks.append("len(held) < {r}.capacity")
    op.local = False
    return True


def budget(w: World, op: Op, rng: random.Random) -> bool:
    """A new child only while the amounts of the parent's live children, the new one's
    included, total at most the parent's budget: a derived total, summed from the rows at
    each call (never stored, so never stale)."""
    if op.kind != "create" or "budget" in op.entity.fields:
        return False
    child = _created(w, op)
    if not child.of("amount"):
        return False
    parent, amt = op.entity, child.of("amount")[0]
    top = int(child.fields[amt]["max"])
    parent.fields["budget"] = {"type": "integer", "min": top, "max": rng.randint(2, 4) * top}
    parent.kinds["budget"] = "budget"
    live = live_states(child)
    shown = amt.replace("_", " ")
    rule = w.rule(
        f"{child.noun.slug}_{amt}_budget",
        f"A new {child.noun.word} is added only if the {shown} of the {parent.noun.word}'s "
        + (f"{either(live)} " if live else "")
        + f"{child.noun.plural}, the new one's included, totals at most the "
        f"{parent.noun.word}'s budget.",
    )
    rows = {"rows": child.table, "where": {parent.key: "=owner.id"}}
    w.actions[op.tool]["load"]["spent"] = {
        **rows,
        **({"filter": f"row.status in {live}"} if live else {}),
    }
    total = f"money(sum(pluck(spent, '{amt}')) + {{new}})"
    _check(
        w,
        op,
        f"{total.format(new=amt)} <= owner.budget",
        rule,
        f"{{owner.id}} has {{money(owner.budget - sum(pluck(spent, '{amt}')))}} of its "
        "budget left.",
    )
    mine = {"rows": child.table, "where": {parent.key: "=anchor.id"}}
    op.let["spent"] = {"rows": {**mine, **({"filter": f"row.status in {live}"} if live else {})}}
    op.checks.append(f"{total.format(new=f'new_{amt}')} <= {{r}}.budget")
    op.local = False
    if get_tool(parent) not in w.actions:
        add_get(w, parent)
    w.budgets.append(Budget(parent, child, amt, tuple(live)))
    return True


def exclusive(w: World, op: Op, rng: random.Random) -> bool:
    """At most one live child per parent."""
    if op.kind != "create" or "held" in op.let:
        return False
    child = _created(w, op)
    live = live_states(child)
    if not live:
        return False
    rule = w.rule(
        f"one_live_{child.noun.slug}",
        f"A {op.entity.noun.word} has at most one {child.noun.word} that is {either(live)}.",
    )
    w.actions[op.tool]["load"]["held"] = {
        "rows": child.table,
        "where": {op.entity.key: "=owner.id"},
        "filter": f"row.status in {live}",
    }
    _check(w, op, "len(held) == 0", rule, f"{{owner.id}} already has a live {child.noun.word}.")
    op.let["held"] = {
        "rows": {
            "rows": child.table,
            "where": {op.entity.key: "=anchor.id"},
            "filter": f"row.status in {live}",
        }
    }
    op.checks.append("len(held) == 0")
    op.local = False
    return True


def sign_off(w: World, op: Op, rng: random.Random) -> bool:
    """A move signed off by a member of staff whose limit covers the row's amount."""
    e = op.entity
    staff = [s for s in w.shape.entities.values() if "approval_limit" in s.fields]
    if op.kind != "transition" or not e.of("amount") or not staff or not _own_tool(w, op):
        return False
    s, amt = staff[0], e.of("amount")[0]
    action = w.actions[op.tool]
    if s.key in action["params"]:
        return False  # a step of an approval chain already
    e.fields["signed_by"] = {"expr": "None"}
    action["params"][s.key] = {"description": f"The signing {s.noun.word}'s id."}
    action["load"]["signer"] = f"{s.table}[{s.key}]"
    action["effects"][0]["set"]["signed_by"] = "=signer.id"
    rule = w.rule(
        f"{op.tool}_sign_off",
        f"Whoever signs off a {e.noun.word} must have an approval limit "
        f"of at least its {amt.replace('_', ' ')}.",
    )
    _check(
        w,
        op,
        f"signer.approval_limit >= got.{amt}",
        rule,
        f"{{signer.name}}'s limit {{signer.approval_limit}} is below {{got.{amt}}}.",
    )
    op.args[s.key] = "=signer.id"
    op.let["signer"] = {"pick": {"rows": s.table, "filter": f"row.approval_limit >= anchor.{amt}"}}
    op.phrase += ", signed off by {ref:signer}"
    op.local = False
    return True


def approval_chain(w: World, op: Op, rng: random.Random) -> bool:
    """Two steps, four eyes: the move before this one records who checked the row, and this
    move is approved only by another member of staff, whose limit covers the row's amount.
    A goal's checker is drawn from those whose limit falls short of the amount and its
    approver from those whose limit covers it, so the two differ by construction."""
    e = op.entity
    staff = [s for s in w.shape.entities.values() if "approval_limit" in s.fields]
    if op.kind != "transition" or not e.of("amount") or not staff or not _own_tool(w, op):
        return False
    s, amt = staff[0], e.of("amount")[0]
    firsts = [
        a
        for a in w.ops
        if a.entity is e
        and a is not op
        and a.kind == "transition"
        and a.target_state in op.states
        and _own_tool(w, a)
        and len(a.constraints) < 2
        and s.key not in w.actions[a.tool]["params"]
    ]
    if not firsts or "checked_by" in e.fields or s.key in w.actions[op.tool]["params"]:
        return False
    first = rng.choice(firsts)
    checked, moved = ((x.target_state or "").replace("_", " ") for x in (first, op))
    rule = w.rule(
        f"{op.tool}_four_eyes",
        f"A {e.noun.word} is {checked} by one {s.noun.word} and can then be {moved} only by "
        f"another, whose approval limit is at least its {amt.replace('_', ' ')}.",
    )
    e.fields["checked_by"] = {"expr": "None"}
    e.fields["approved_by"] = {"expr": "None"}
    for step, who, field, role in ((first, "checker", "checked_by", "checking"),
                                   (op, "approver", "approved_by", "approving")):  # fmt: skip
        action = w.actions[step.tool]
        action["params"][s.key] = {"description": f"The {role} {s.noun.word}'s id."}
        action["load"][who] = f"{s.table}[{s.key}]"
        action["effects"][0]["set"][field] = f"={who}.id"
        step.args[s.key] = f"={who}.id"
        step.phrase += f", {'checked' if who == 'checker' else 'approved'} by {{ref:{who}}}"
        step.local = False
    _check(w, op, "approver.id != got.checked_by", rule, "{approver.name} checked {got.id}.")
    _check(
        w,
        op,
        f"approver.approval_limit >= got.{amt}",
        rule,
        f"{{approver.name}}'s limit {{approver.approval_limit}} is below {{got.{amt}}}.",
    )
    first.let["checker"] = {
        "pick": {"rows": s.table, "filter": f"row.approval_limit < anchor.{amt}"}
    }
    op.let["approver"] = {
        "pick": {
            "rows": s.table,
            "filter": f"row.approval_limit >= anchor.{amt} and row.id != anchor.checked_by",
        }
    }
    first.constraints.append("approval_chain")
    return True


def look_first(w: World, op: Op, rng: random.Random) -> bool:
    """A look at the row (with ``get``) before the write: a rule checked on the call log."""
    e = op.entity
    if op.kind not in ("transition", "update") or not _own_tool(w, op) or op.pre:
        return False
    get = get_tool(e)
    w.rule(
        f"look_before_{op.tool}",
        f"Before calling {op.tool}, look at the {e.noun.word} with {get}.",
        prior_call={"tool": op.tool, "needs": get, "match": {e.key: e.key}},
    )
    op.pre.append({"tool": get, "args": {e.key: "=anchor.id"}})
    return True


def quota(w: World, op: Op, rng: random.Random) -> bool:
    """At most a few new children per parent in the last days."""
    if op.kind != "create":
        return False
    child = _created(w, op)
    if not child.of("date") or {"held", "clash"} & set(op.let):
        return False
    d, n, days = child.of("date")[0], rng.randint(1, 3), rng.choice([7, 14, 30])
    rule = w.rule(
        f"{child.noun.slug}_quota",
        f"A {op.entity.noun.word} gets at most {n} new "
        f"{child.noun.plural if n > 1 else child.noun.word} in any {days} days (by "
        f"{d.replace('_', ' ')}).",
    )
    recent = f"days_between(row.{d}, today) >= 0 and days_between(row.{d}, today) < {days}"
    w.actions[op.tool]["load"]["held"] = {
        "rows": child.table,
        "where": {op.entity.key: "=owner.id"},
        "filter": recent,
    }
    _check(w, op, f"len(held) < {n}", rule, f"{{owner.id}} has had {n} in the last {days} days.")
    op.let["held"] = {
        "rows": {"rows": child.table, "where": {op.entity.key: "=anchor.id"}, "filter": recent}
    }
    op.checks.append(f"len(held) < {n}")
    op.local = False
    return True


def no_overlap(w: World, op: Op, rng: random.Random) -> bool:
    """A new child is a span (a start date and a number of days) that overlaps no live
    sibling's span: a resource booked without double-booking."""
    if op.kind != "create" or {"held", "clash"} & set(op.let):
        return False
    child = _created(w, op)
    if not child.of("date") or "days" in child.fields:
        return False
    d, n, longest = child.of("date")[0], "days", rng.choice([3, 5, 7])
    child.fields[n] = {"type": "integer", "min": 1, "max": longest}
    child.kinds[n] = "span"
    live = live_states(child)
    overlap = f"overlaps(row.{d}, row.{n}, {{start}}, {{days}})"
    if live:
        overlap = f"row.status in {live} and {overlap}"
    action = w.actions[op.tool]
    action["params"][d] = {"description": "The first day, YYYY-MM-DD.", "format": "date"}
    action["params"][n] = {
        "type": "integer",
        "description": "How many days.",
        "minimum": 1,
        "maximum": longest,
    }
    action["effects"][0]["set"] |= {d: f"={d}", n: f"={n}"}
    action["load"]["clash"] = {
        "rows": child.table,
        "where": {op.entity.key: "=owner.id"},
        "filter": overlap.format(start=d, days=n),
    }
    action.setdefault("require", []).append(
        {
            "check": f"days_between(today, {d}) >= 0",
            "code": "invalid_arguments",
            "error": f"{{{d}}} is in the past.",
        }
    )
    rule = w.rule(
        f"{child.noun.slug}_no_overlap",
        f"The {child.noun.plural} of a {op.entity.noun.word} never overlap: each runs "
        f"{n.replace('_', ' ')} days from its {d.replace('_', ' ')}"
        + (f", counting those {either(live)}." if live else "."),
    )
    _check(w, op, "len(clash) == 0", rule, f"{{owner.id}} already has a {child.noun.word} then.")
    op.args |= {d: f"=new_{d}", n: f"=new_{n}"}
    op.let[f"lead_{d}"] = {"between": [1, 45]}
    op.let[f"new_{d}"] = {"value": f"add_days(today, lead_{d})"}
    op.let[f"new_{n}"] = {"between": [1, longest]}
    op.let["clash"] = {
        "rows": {
            "rows": child.table,
            "where": {op.entity.key: "=anchor.id"},
            "filter": overlap.format(start=f"new_{d}", days=f"new_{n}"),
        }
    }
    op.checks.append("len(clash) == 0")
    op.phrase += (
        f", from {{pretty_date(new_{d})}} for {{new_{n}}} {{'day' if new_{n} == 1 else 'days'}}"
    )
    op.local = False
    return True


KINDS: dict[str, Constraint] = {
    "deadline": deadline,
    "window": window,
    "prerequisite": prerequisite,
    "children_done": children_done,
    "tier_limit": tier_limit,
    "capacity": capacity,
    "budget": budget,
    "exclusive": exclusive,
    "quota": quota,
    "no_overlap": no_overlap,
    "sign_off": sign_off,
    "approval_chain": approval_chain,
    "look_first": look_first,
}


def bind_constraints(w: World, rng: random.Random) -> list[str]:
    """Draw constraints onto the world's ops; the kinds bound (with repeats), in order."""
    bound: list[str] = []
    for op in w.ops:
        names = sorted(KINDS)
        rng.shuffle(names)
        for name in names:
            if len(op.constraints) >= 2:
                break
            before = len(w.rules)
            if rng.random() < 0.35 and KINDS[name](w, op, rng):
                w.rule_kinds.update((r["id"], name) for r in w.rules[before:])
                op.constraints.append(name)
                bound.append(name)
    for op in w.ops:
        if op.kind == "transfer":
            bound.append("conservation")
        if op.kind == "link":
            bound.append("unique_pair")
    return bound
