"""Reusable parts of a domain: entity archetypes with their tools, rules and goals.

Each part is a function of a :class:`~envfactory.synth.vocab.Theme` and a few numbers drawn
from the world's seed (limits, deadlines, prices); it returns a :class:`Part`, ordinary domain
data (the same schema as ``src/envfactory/domains/*.yaml``). Every part but ``people`` hangs
off the people archetype's table, and every part brings goals at each of the levels 1 to 4,
so any combination of parts fills the whole difficulty ladder.

The patterns: ``people`` (a registry of clients with contact details and tiers),
``bookings`` (reserve without overlap, deadline-bound cancellation), ``ledger`` (transfer
with balances and a per-transfer limit), ``approvals`` (approve within an approver's limit)
and ``workflow`` (a state machine of tickets).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from envfactory.synth.builders import (
    Data,
    branch_plan,
    find_by,
    for_all_goal,
    id_param,
    owned_listing,
    reason_goal,
)
from envfactory.synth.vocab import Theme


@dataclass
class Part:
    """A slice of a domain: merged with the other parts into one domain."""

    entities: dict[str, Data] = field(default_factory=dict)
    actions: list[Data] = field(default_factory=list)
    rules: list[Data] = field(default_factory=list)
    goals: list[Data] = field(default_factory=list)


def _plural(n: str, word: str, plural: str) -> str:
    """An instruction's "{n} day(s)" as an expression inside a template."""
    return f"{{{n}}} {{'{word}' if {n} == 1 else '{plural}'}}"


def people(t: Theme, rng: random.Random) -> Part:
    """Clients with e-mail, phone, city and a tier; look-ups and contact updates."""
    c = t.client
    table, prefix = c.table, "CL"
    find, search = f"find_{c.slug}_by_email", f"search_{c.table}"
    entity = {
        "label": c.word,
        "id_prefix": prefix,
        "count": rng.randint(80, 120),
        "fields": {
            "name": {"faker": "name", "twin_rate": 0.1},
            "email": {"expr": f"slug(row.name) + '@{t.mail_domain}'", "unique": True},
            "phone": {"pattern": "555-###-####"},
            "city": {"choices": list(t.sites)},
            "tier": {"choices": list(t.tiers), "weights": [5, 3, 2]},
        },
        "refs": [
            {
                "text": "{row.name} (email {row.email})",
                "unique": ["email"],
                "lookup": [{"tool": find, "args": {"email": "=row.email"}}],
                "held": {
                    "text": "my account",
                    "parent_text": "me",
                    "facts": {"email": "=row.email"},
                },
            },
            {
                "text": "{row.name} from {row.city}",
                "unique": ["name", "city"],
                "lookup": [{"tool": search, "args": {"name": "=row.name"}}],
            },
        ],
    }
    cid = {f"{c.slug}_id": id_param(c.word, prefix)}
    actions: list[Data] = [
        {
            "name": find,
            "kind": "read",
            "description": f"Find a {c.word} by e-mail address.",
            "params": {"email": {"description": f"The {c.word}'s e-mail address."}},
            "load": {"found": {"rows": table, "where": {"email": "=email"}, "limit": 1}},
            "require": [
                {
                    "check": "len(found) == 1",
                    "error": f"No {c.word} has the e-mail {{email}}.",
                    "code": "not_found",
                }
            ],
            "returns": "=found[0]",
        },
        {
            "name": search,
            "kind": "read",
            "description": f"Search {c.plural} by full name, optionally in one city.",
            "params": {
                "name": {"description": f"The {c.word}'s full name."},
                "city": {"description": "Their city.", "required": False},
            },
            "load": {
                "found": {"rows": table, "where": {"name": "=name", "city": "=city"}, "limit": 20}
            },
            "returns": "=found",
        },
        {
            "name": f"get_{c.slug}",
            "kind": "read",
            "description": f"Get a {c.word}'s profile by id, including their tier.",
            "params": cid,
            "load": {"person": f"{table}[{c.slug}_id]"},
            "returns": "=person",
        },
        {
            "name": f"update_{c.slug}_phone",
            "kind": "write",
            "description": f"Change a {c.word}'s phone number.",
            "params": {**cid, "phone": {"description": "The new number, like 555-123-4567."}},
            "load": {"person": f"{table}[{c.slug}_id]"},
            "require": [
                {
                    "check": "len(phone) == 12 and phone[3] == '-' and phone[7] == '-'",
                    "error": "Phone numbers look like 555-123-4567.",
                    "code": "invalid_arguments",
                }
            ],
            "effects": [{"update": "person", "set": {"phone": "=phone"}}],
        },
        {
            "name": f"update_{c.slug}_email",
            "kind": "write",
            "description": f"Change a {c.word}'s e-mail address.",
            "params": {**cid, "email": {"description": "The new e-mail address."}},
            "load": {
                "person": f"{table}[{c.slug}_id]",
                "taken": {"rows": table, "where": {"email": "=email"}, "limit": 1},
            },
            "require": [
                {
                    "check": "'@' in email and ' ' not in email and '.' in email",
                    "error": "{email} is not an e-mail address.",
                    "code": "invalid_arguments",
                },
                {
                    "check": "len(taken) == 0 or taken[0].id == person.id",
                    "error": f"Another {c.word} already uses {{email}}.",
                },
            ],
            "effects": [{"update": "person", "set": {"email": "=lower(email)"}}],
        },
    ]
    goals: list[Data] = [
        {
            "id": "update_phone",
            "level": 1,
            "anchor": {"entity": table},
            "let": {
                "a": {"between": [200, 989]},
                "b": {"between": [1000, 9999]},
                "phone": {"value": "'555-' + str(a) + '-' + str(b)"},
            },
            "require": ["phone != anchor.phone"],
            "plan": [
                {
                    "tool": f"update_{c.slug}_phone",
                    "args": {f"{c.slug}_id": "=anchor.id", "phone": "=phone"},
                }
            ],
            "instruction": [
                "Please change the phone number of {ref:anchor} to {phone}.",
                "The new phone number for {ref:anchor} is {phone}; please update it.",
            ],
        },
        {
            "id": "update_email",
            "level": 1,
            "anchor": {"entity": table},
            "let": {
                "email": {"fake": "email"},
                "taken": {"rows": {"rows": table, "where": {"email": "=email"}}},
            },
            "require": ["len(taken) == 0"],
            "plan": [
                {
                    "tool": f"update_{c.slug}_email",
                    "args": {f"{c.slug}_id": "=anchor.id", "email": "=email"},
                }
            ],
            "instruction": [
                "Please change the e-mail address of {ref:anchor} to {email}.",
                "{ref:anchor} has a new e-mail address, {email}. Please update the profile.",
            ],
        },
    ]
    return Part({table: entity}, actions, [], goals)


def bookings(t: Theme, rng: random.Random) -> Part:
    """Resources booked by clients for days: no overlap, premium by tier, a cancellation
    deadline, an availability check before booking."""
    c, r, b = t.client, t.resource, t.booking
    res, bk, cl = r.table, b.table, c.table
    deadline = rng.randint(1, 3)
    base = rng.choice([(40, 95), (60, 150), (25, 70), (90, 220)])
    top = t.top_tier
    live = "row.status in ['booked', 'active']"
    clash = f"{live} and overlaps(row.start, row.days, start, days)"
    rid, bid = f"{r.slug}_id", f"{b.slug}_id"
    check, book = f"check_{r.slug}_availability", f"book_{r.slug}"
    cancel, extend, get = f"cancel_{b.slug}", f"extend_{b.slug}", f"get_{b.slug}"
    listing = f"list_{c.slug}_{b.table}"
    reasons = ["change_of_plans", "no_longer_needed", "booked_by_mistake", "schedule_conflict"]
    entities: dict[str, Data] = {
        res: {
            "label": r.word,
            "id_prefix": "RS",
            "count": rng.randint(20, 32),
            "fields": {
                "number": {"type": "integer", "min": 1, "max": 399, "unique": True},
                "site": {"choices": list(t.sites)},
                "grade": {"choices": ["standard", "premium"], "weights": [3, 1]},
                "rate": {
                    "type": "number",
                    "description": "price per day",
                    "expr": f"money({{'standard': {base[0]}, 'premium': {base[1]}}}[row.grade]"
                    " * (0.8 + ((row.number * 37) % 97) / 242))",
                },
            },
            "refs": [
                {
                    "text": f"{r.word} {{row.number}} at {{row.site}}",
                    "unique": ["number"],
                    "lookup": [{"tool": f"list_{res}", "args": {"site": "=row.site"}}],
                }
            ],
        },
        bk: {
            "label": b.word,
            "id_prefix": "BK",
            "owner": f"{c.slug}_id",
            "count": rng.randint(200, 280),
            "fields": {
                f"{c.slug}_id": {"type": "ref", "ref": cl},
                rid: {"type": "ref", "ref": res},
                "code": {"type": "integer", "min": 100000, "max": 899999, "unique": True},
                "start": {"type": "date", "min": -50, "max": 60},
                "days": {"type": "integer", "min": 1, "max": 4},
                "end": {"type": "date", "expr": "add_days(row.start, row.days)"},
                "status": {
                    "expr": "'cancelled' if row.code % 9 == 0 else ('completed' if row.end <= "
                    "today else ('active' if row.start <= today else 'booked'))"
                },
                "rate": {"type": "number", "copy_from": f"{rid}.rate"},
                "price": {"type": "number", "expr": "money(row.rate * row.days)"},
                "cancel_reason": {
                    "expr": "'change_of_plans' if row.status == 'cancelled' else None"
                },
            },
            "refs": [
                {
                    "text": f"the {b.word} with code {{row.code}}",
                    "unique": ["code"],
                    "lookup": [{"tool": f"find_{b.slug}_by_code", "args": {"code": "=row.code"}}],
                },
                {
                    "text": f"the {b.word} of {{ref:parent}} starting on "
                    "{pretty_date(row.start)}",
                    "parent": f"{c.slug}_id",
                    "unique": ["start"],
                    "lookup": [{"tool": listing, "args": {f"{c.slug}_id": f"=row.{c.slug}_id"}}],
                },
            ],
        },
    }
    rules: list[Data] = [
        {
            "id": "premium_by_tier",
            "text": f"Premium {r.plural} can be booked only for {c.plural} of the {top} tier.",
        },
        {
            "id": "cancellation_deadline",
            "text": f"A {b.word} can be cancelled only up to {deadline} days before it starts.",
        },
        {
            "id": "no_double_booking",
            "text": f"A {r.word} never holds two booked or active {b.plural} whose days overlap.",
        },
        {
            "id": "availability_first",
            "text": f"Before booking a {r.word}, check it is free for exactly those days "
            f"with {check}.",
            "prior_call": {
                "tool": book,
                "needs": check,
                "match": {rid: rid, "start": "start", "days": "days"},
            },
        },
    ]
    span = {
        "start": {"description": "First day, YYYY-MM-DD.", "format": "date"},
        "days": {"type": "integer", "description": "Number of days.", "minimum": 1, "maximum": 14},
    }
    taken = {"rows": bk, "where": {rid: f"={rid}"}, "filter": clash}
    future = {
        "check": "days_between(today, start) >= 0",
        "error": "The start date {start} is in the past.",
        "code": "invalid_arguments",
    }
    actions: list[Data] = [
        {
            "name": f"list_{res}",
            "kind": "read",
            "description": f"List the {r.plural} at a site by number, optionally of one grade, "
            f"with their day rates. Says nothing about availability; use {check} for that.",
            "params": {
                "site": {"description": "The site.", "enum": list(t.sites)},
                "grade": {
                    "description": "Only this grade.",
                    "required": False,
                    "enum": ["standard", "premium"],
                },
            },
            "load": {
                "found": {
                    "rows": res,
                    "where": {"site": "=site", "grade": "=grade"},
                    "order_by": "number",
                }
            },
            "returns": "=found",
        },
        {
            "name": check,
            "kind": "read",
            "description": f"Check whether a {r.word} is free for some days, and what they cost.",
            "params": {rid: id_param(r.word, "RS"), **span},
            "load": {"item": f"{res}[{rid}]", "clashes": taken},
            "require": [future],
            "returns": "={'" + rid + "': item.id, 'start': start, 'days': days, "
            "'available': len(clashes) == 0, 'price': money(item.rate * days)}",
        },
        {
            "name": book,
            "kind": "write",
            "description": f"Book a {r.word} for a {c.word} from a start date for some days.",
            "params": {
                f"{c.slug}_id": id_param(c.word, "CL"),
                rid: id_param(r.word, "RS"),
                **span,
            },
            "load": {"person": f"{cl}[{c.slug}_id]", "item": f"{res}[{rid}]", "clashes": taken},
            "require": [
                future,
                {
                    "check": "len(clashes) == 0",
                    "rule": "no_double_booking",
                    "error": f"{r.word.capitalize()} {{item.number}} is taken on some of those "
                    "days.",
                },
                {
                    "check": f"item.grade != 'premium' or person.tier == '{top}'",
                    "rule": "premium_by_tier",
                    "error": f"Premium {r.plural} are for {top} {c.plural}; {{person.name}} is "
                    "{person.tier}.",
                },
            ],
            "effects": [
                {
                    "insert": bk,
                    "name": "made",
                    "set": {
                        f"{c.slug}_id": "=person.id",
                        rid: "=item.id",
                        "code": "=900000 + (item.number * 400 "
                        "+ days_between(today, start)) % 100000",
                        "start": "=start",
                        "days": "=days",
                        "end": "=add_days(start, days)",
                        "status": "booked",
                        "rate": "=item.rate",
                        "price": "=money(item.rate * days)",
                    },
                }
            ],
            "returns": "=made",
        },
        {
            "name": cancel,
            "kind": "write",
            "description": f"Cancel a booked {b.word} (one not started), at least {deadline} days "
            "before it starts.",
            "params": {
                bid: id_param(b.word, "BK"),
                "reason": {"description": "Why.", "enum": reasons},
            },
            "load": {"got": f"{bk}[{bid}]"},
            "require": [
                {
                    "check": "got.status == 'booked'",
                    "error": f"{b.word.capitalize()} {{got.id}} is {{got.status}}; only booked "
                    f"{b.plural} can be cancelled.",
                },
                {
                    "check": f"days_between(today, got.start) >= {deadline}",
                    "rule": "cancellation_deadline",
                    "error": f"{b.word.capitalize()} {{got.id}} starts on {{got.start}}, less than "
                    f"{deadline} days from now.",
                },
            ],
            "effects": [
                {"update": "got", "set": {"status": "cancelled", "cancel_reason": "=reason"}}
            ],
        },
        {
            "name": extend,
            "kind": "write",
            "description": f"Add days to the end of a booked or active {b.word}; the price "
            "follows.",
            "params": {
                bid: id_param(b.word, "BK"),
                "extra_days": {
                    "type": "integer",
                    "description": "Days to add.",
                    "minimum": 1,
                    "maximum": 7,
                },
            },
            "load": {
                "got": f"{bk}[{bid}]",
                "clashes": {
                    "rows": bk,
                    "where": {rid: f"=got.{rid}"},
                    "filter": f"row.id != got.id and {live} and "
                    "overlaps(row.start, row.days, got.end, extra_days)",
                },
            },
            "require": [
                {
                    "check": "got.status in ['booked', 'active']",
                    "error": f"{b.word.capitalize()} {{got.id}} is {{got.status}}; only booked or "
                    "active ones can be extended.",
                },
                {
                    "check": "len(clashes) == 0",
                    "rule": "no_double_booking",
                    "error": f"The {r.word} is taken on some of the added days.",
                },
            ],
            "effects": [
                {
                    "update": "got",
                    "set": {
                        "days": "=got.days + extra_days",
                        "end": "=add_days(got.end, extra_days)",
                        "price": "=money(got.rate * (got.days + extra_days))",
                    },
                }
            ],
        },
        {
            "name": get,
            "kind": "read",
            "description": f"Get a {b.word} with its {r.word}.",
            "params": {bid: id_param(b.word, "BK")},
            "load": {"got": f"{bk}[{bid}]", "item": f"{res}[got.{rid}]"},
            "returns": "={'" + b.slug + "': got, '" + r.slug + "': item}",
        },
        find_by(b, bk, "code", "six-digit code", "The code, like 482913."),
        owned_listing(
            listing,
            c,
            bk,
            f"List a {c.word}'s {b.plural}, latest start first, optionally with one status "
            "(booked = not started, active = under way).",
            "-start",
            ["booked", "active", "completed", "cancelled"],
        ),
    ]
    busy = {"rows": {"rows": bk, "where": {rid: "=anchor.id"}, "filter": live}}
    others = {  # the other live bookings of the anchor's resource
        "rows": {
            "rows": bk,
            "where": {rid: f"=anchor.{rid}"},
            "filter": f"row.id != anchor.id and {live}",
        }
    }
    days = _plural("n", "day", "days")
    goals: list[Data] = [
        reason_goal(
            cancel,
            bk,
            "row.status == 'booked'",
            bid,
            reasons,
            [
                "Please cancel {ref:anchor}. The reason: {human(reason)}.",
                "I need to cancel {ref:anchor} ({human(reason)}).",
            ],
            [f"days_between(today, anchor.start) >= {deadline}"],
        ),
        {
            "id": f"{b.slug}_price",
            "level": 1,
            "anchor": {"entity": bk, "where": "row.status == 'completed'"},
            "plan": [{"tool": get, "args": {bid: "=anchor.id"}}],
            "instruction": [
                "How much did {ref:anchor} cost?",
                "What was the price of {ref:anchor}?",
            ],
            "answer": "anchor.price",
        },
        {
            "id": f"book_{r.slug}",
            "level": 2,
            "anchor": {"entity": res},
            "let": {
                "person": {
                    "pick": {
                        "rows": cl,
                        "filter": f"anchor.grade != 'premium' or row.tier == '{top}'",
                    }
                },
                "lead": {"between": [3, 70]},
                "n": {"between": [1, 4]},
                "active": busy,
                "wanted": {"value": "add_days(today, lead)"},
                "start": {
                    "value": "wanted if not any(overlaps(x.start, x.days, wanted, n) for x "
                    "in active) else add_days(max(pluck(active, 'end')), 1 + lead % 9)"
                },
                "clashes": {
                    "rows": {
                        "rows": bk,
                        "where": {rid: "=anchor.id"},
                        "filter": f"{live} and overlaps(row.start, row.days, start, n)",
                    }
                },
            },
            "require": ["len(clashes) == 0"],
            "plan": [
                {"tool": check, "args": {rid: "=anchor.id", "start": "=start", "days": "=n"}},
                {
                    "tool": book,
                    "args": {
                        f"{c.slug}_id": "=person.id",
                        rid: "=anchor.id",
                        "start": "=start",
                        "days": "=n",
                    },
                },
            ],
            "instruction": [
                f"Please book {{ref:anchor}} for {{ref:person}} from "
                f"{{pretty_date(start)}}, {days}.",
                f"A {b.word}, please: {{ref:anchor}} for {{ref:person}}, starting "
                f"{{pretty_date(start)}}, for {days}.",
            ],
        },
        {
            "id": f"extend_{b.slug}",
            "level": 2,
            "anchor": {"entity": bk, "where": "row.status in ['booked', 'active']"},
            "let": {
                "n": {"between": [1, 3]},
                "others": others,
            },
            "require": ["not any(overlaps(x.start, x.days, anchor.end, n) for x in others)"],
            "plan": [
                {"tool": get, "args": {bid: "=anchor.id"}},
                {"tool": extend, "args": {bid: "=anchor.id", "extra_days": "=n"}},
            ],
            "instruction": [
                f"Please extend {{ref:anchor}} by {days}.",
                f"I'd like {{ref:anchor}} to run {days} longer. Please add them.",
            ],
        },
        {
            "id": f"extend_or_cancel_{b.slug}",
            "level": 3,
            "anchor": {"entity": bk, "where": "row.status == 'booked'"},
            "let": {
                "n": {"between": [1, 3]},
                "others": others,
                "new_price": {"value": "money(anchor.rate * (anchor.days + n))"},
                "over": {"between": [0, 1]},
                "budget": {"value": "int(new_price // 50) * 50 + (50 if over == 0 else 0)"},
            },
            "require": [
                "not any(overlaps(x.start, x.days, anchor.end, n) for x in others)",
                f"days_between(today, anchor.start) >= {deadline}",
            ],
            "plan": branch_plan(
                {"tool": get, "args": {bid: "=anchor.id"}},
                {"tool": extend, "args": {bid: "=anchor.id", "extra_days": "=n"}},
                "new_price <= budget",
                {"tool": cancel, "args": {bid: "=anchor.id", "reason": "no_longer_needed"}},
                "new_price > budget",
            ),
            "instruction": [
                f"Please extend {{ref:anchor}} by {days} if its whole price then stays at "
                "{budget} or less. If it would cost more, cancel it instead (reason: no longer "
                "needed).",
                f"About {{ref:anchor}}: add {days} if the longer {b.word} costs no more than "
                "{budget} in all; otherwise cancel it, as no longer needed.",
            ],
        },
        for_all_goal(
            f"cancel_all_{b.table}",
            c,
            bk,
            "booked",
            "upcoming",
            listing,
            {"tool": cancel, "args": {bid: "=item.id", "reason": "=reason"}},
            [
                f"Please cancel every {b.word} of {{ref:anchor}} that has not started yet. "
                "The reason: {human(reason)}.",
                f"{{ref:anchor}} can't make it. Cancel all of their booked {b.plural}; reason: "
                "{human(reason)}.",
            ],
            let={"reason": {"choice": ["change_of_plans", "schedule_conflict"]}},
            require=[f"all(days_between(today, x.start) >= {deadline} for x in upcoming)"],
        ),
        {
            "id": f"past_{b.slug}_spend",
            "level": 4,
            "anchor": {"entity": cl},
            "let": {
                "done": {
                    "rows": {
                        "rows": bk,
                        "where": {f"{c.slug}_id": "=anchor.id", "status": "completed"},
                    }
                }
            },
            "require": ["len(done) >= 2"],
            "plan": [
                {"tool": listing, "args": {f"{c.slug}_id": "=anchor.id", "status": "completed"}},
                {"tool": get, "args": {bid: "=item.id"}, "for_each": "done"},
            ],
            "instruction": [
                f"How much have the completed {b.plural} of {{ref:anchor}} cost in all?",
                f"Please add up the prices of every completed {b.word} of {{ref:anchor}}. "
                "What is the total?",
            ],
            "answer": "money(sum(x.price for x in done))",
        },
    ]
    return Part(entities, actions, rules, goals)


def ledger(t: Theme, rng: random.Random) -> Part:
    """Accounts with balances, moved by transfers: no overdraft, a per-transfer limit above
    which only the top tier may go, frozen accounts neither send nor receive."""
    c, a, m = t.client, t.account, t.transfer
    acc, mv, cl = a.table, m.table, c.table
    limit = rng.choice([500, 750, 1000, 1500, 2000])
    top = t.top_tier
    aid = f"{a.slug}_id"
    get, transfer, freeze = f"get_{a.slug}", f"make_{m.slug}", f"freeze_{a.slug}"
    listing, history = f"list_{c.slug}_{acc}", f"list_{a.slug}_{mv}"
    kinds = rng.choice([("everyday", "savings"), ("main", "reserve"), ("operating", "project")])
    reasons = ["reported_lost", "suspected_fraud", "customer_request", "dormant"]
    entities: dict[str, Data] = {
        acc: {
            "label": a.word,
            "id_prefix": "AC",
            "owner": f"{c.slug}_id",
            "per": {"entity": cl, "min": 1, "max": 3},
            "fields": {
                f"{c.slug}_id": {"type": "ref", "ref": cl},
                "number": {"type": "integer", "min": 10000000, "max": 99999999, "unique": True},
                "kind": {"choices": list(kinds)},
                "balance": {"type": "number", "min": 0, "max": 4000, "decimals": 2},
                "status": {"expr": "'frozen' if row.number % 13 == 0 else 'open'"},
                "freeze_reason": {"expr": "'dormant' if row.status == 'frozen' else None"},
            },
            "refs": [
                {
                    "text": f"the {a.word} numbered {{row.number}}",
                    "unique": ["number"],
                    "lookup": [
                        {"tool": f"find_{a.slug}_by_number", "args": {"number": "=row.number"}}
                    ],
                },
                {
                    "text": f"the {{row.kind}} {a.word} of {{ref:parent}}",
                    "parent": f"{c.slug}_id",
                    "unique": ["kind"],
                    "lookup": [{"tool": listing, "args": {f"{c.slug}_id": f"=row.{c.slug}_id"}}],
                },
            ],
        },
        mv: {
            "label": m.word,
            "id_prefix": "MV",
            "owner": "from_id",
            "per": {"entity": acc, "min": 0, "max": 3},
            "fields": {
                "from_id": {"type": "ref", "ref": acc},
                "to_id": {"type": "ref", "ref": acc},
                "amount": {"type": "number", "min": 5, "max": 400, "decimals": 2},
                "made_on": {"type": "date", "min": -90, "max": -1},
            },
        },
    }
    rules: list[Data] = [
        {
            "id": "no_overdraft",
            "text": f"A {m.word} never takes an {a.word} below zero."
            if a.word[0] in "aeiou"
            else f"A {m.word} never takes a {a.word} below zero.",
        },
        {
            "id": "transfer_limit",
            "text": f"One {m.word} may move at most {limit}, unless the sender is a "
            f"{top} {c.word}.",
        },
        {
            "id": "frozen_accounts",
            "text": f"Frozen {a.plural} can neither send nor receive {m.plural}.",
        },
        {
            "id": "look_before_moving",
            "text": f"Before a {m.word}, look at the sending {a.word} with {get}.",
            "prior_call": {"tool": transfer, "needs": get, "match": {"from_id": aid}},
        },
    ]
    one = {aid: id_param(a.word, "AC")}
    actions: list[Data] = [
        owned_listing(
            listing, c, acc, f"List a {c.word}'s {a.plural} with their balances.", "number"
        ),
        {
            "name": get,
            "kind": "read",
            "description": f"Get an {a.word} by id: balance, kind, status."
            if a.word[0] in "aeiou"
            else f"Get a {a.word} by id: balance, kind, status.",
            "params": one,
            "load": {"got": f"{acc}[{aid}]"},
            "returns": "=got",
        },
        find_by(a, acc, "number", "eight-digit number"),
        {
            "name": history,
            "kind": "read",
            "description": f"List the {m.plural} a {a.word} has sent, latest first.",
            "params": one,
            "load": {
                "got": f"{acc}[{aid}]",
                "found": {"rows": mv, "where": {"from_id": f"={aid}"}, "order_by": "-made_on"},
            },
            "returns": "=found",
        },
        {
            "name": transfer,
            "kind": "write",
            "description": f"Move an amount from one {a.word} to another.",
            "params": {
                "from_id": {"description": f"The sending {a.word}'s id, like AC-00001."},
                "to_id": {"description": f"The receiving {a.word}'s id, like AC-00002."},
                "amount": {"type": "number", "description": "The amount.", "minimum": 0.01},
            },
            "load": {
                "src": f"{acc}[from_id]",
                "dst": f"{acc}[to_id]",
                "owner": f"{cl}[src.{c.slug}_id]",
            },
            "require": [
                {
                    "check": "src.id != dst.id",
                    "error": f"A {m.word} needs two different {a.plural}.",
                    "code": "invalid_arguments",
                },
                {
                    "check": "src.status == 'open' and dst.status == 'open'",
                    "rule": "frozen_accounts",
                    "error": f"Both {a.plural} must be open; {{src.id}} is {{src.status}} and "
                    "{dst.id} "
                    "is {dst.status}.",
                },
                {
                    "check": "src.balance >= amount",
                    "rule": "no_overdraft",
                    "error": "{src.id} holds {src.balance}, less than {amount}.",
                },
                {
                    "check": f"amount <= {limit} or owner.tier == '{top}'",
                    "rule": "transfer_limit",
                    "error": f"{{amount}} is over the {limit} limit for {{owner.tier}} {c.plural}.",
                },
            ],
            "effects": [
                {"update": "src", "set": {"balance": "=money(src.balance - amount)"}},
                {"update": "dst", "set": {"balance": "=money(dst.balance + amount)"}},
                {
                    "insert": mv,
                    "name": "made",
                    "set": {
                        "from_id": "=src.id",
                        "to_id": "=dst.id",
                        "amount": "=money(amount)",
                        "made_on": "=today",
                    },
                },
            ],
            "returns": "=made",
        },
        {
            "name": freeze,
            "kind": "write",
            "description": f"Freeze an open {a.word}, with a reason.",
            "params": {**one, "reason": {"description": "Why.", "enum": reasons}},
            "load": {"got": f"{acc}[{aid}]"},
            "require": [
                {
                    "check": "got.status == 'open'",
                    "error": f"{a.word.capitalize()} {{got.id}} is already frozen.",
                }
            ],
            "effects": [{"update": "got", "set": {"status": "frozen", "freeze_reason": "=reason"}}],
        },
    ]
    target = {"pick": {"rows": acc, "filter": "row.status == 'open' and row.id != anchor.id"}}
    goals: list[Data] = [
        reason_goal(
            freeze,
            acc,
            "row.status == 'open'",
            aid,
            reasons,
            [
                "Please freeze {ref:anchor}; the reason: {human(reason)}.",
                "{ref:anchor} has to be frozen ({human(reason)}).",
            ],
        ),
        {
            "id": transfer,
            "level": 2,
            "anchor": {"entity": acc, "where": "row.status == 'open' and row.balance >= 30"},
            "let": {
                "k": {"between": [1, 9]},
                "amount": {"value": f"min({limit}, floor(anchor.balance * k / 10))"},
                "target": target,
            },
            "require": ["amount >= 10"],
            "plan": [
                {"tool": get, "args": {aid: "=anchor.id"}},
                {
                    "tool": transfer,
                    "args": {"from_id": "=anchor.id", "to_id": "=target.id", "amount": "=amount"},
                },
            ],
            "instruction": [
                "Please move {amount} from {ref:anchor} to {ref:target}.",
                f"I'd like a {m.word} of {{amount}} from {{ref:anchor}} into {{ref:target}}.",
            ],
        },
        {
            "id": f"{m.slug}_or_freeze",
            "level": 3,
            "anchor": {"entity": acc, "where": "row.status == 'open' and row.balance >= 60"},
            "let": {
                "over": {"between": [0, 1]},
                "amount": {
                    "value": "floor(anchor.balance) + 25 if over == 1 "
                    "else floor(anchor.balance) - 25"
                },
                "target": target,
            },
            "require": [f"amount <= {limit}"],
            "plan": branch_plan(
                {"tool": get, "args": {aid: "=anchor.id"}},
                {
                    "tool": transfer,
                    "args": {"from_id": "=anchor.id", "to_id": "=target.id", "amount": "=amount"},
                },
                "anchor.balance >= amount",
                {"tool": freeze, "args": {aid: "=anchor.id", "reason": "customer_request"}},
                "anchor.balance < amount",
            ),
            "instruction": [
                "If {ref:anchor} holds at least {amount}, move {amount} from it to {ref:target}. "
                "If it holds less, freeze it instead, at the customer's request.",
                "Please check {ref:anchor}: with {amount} or more in it, send {amount} to "
                "{ref:target}; with less, freeze it (reason: customer request).",
            ],
        },
        for_all_goal(
            f"freeze_all_{acc}",
            c,
            acc,
            "open",
            "open",
            listing,
            {"tool": freeze, "args": {aid: "=item.id", "reason": "=reason"}},
            [
                f"Please freeze every open {a.word} of {{ref:anchor}}; reason: {{human(reason)}}.",
                f"All of {{ref:anchor}}'s open {a.plural} must be frozen ({{human(reason)}}).",
            ],
            listed_by_status=False,
            let={"reason": {"choice": ["reported_lost", "suspected_fraud"]}},
        ),
        {
            "id": f"{m.slug}_total",
            "level": 4,
            "description": "Only movements before today, which no tool can change.",
            "anchor": {"entity": cl},
            "let": {
                "mine": {"rows": {"rows": acc, "where": {f"{c.slug}_id": "=anchor.id"}}},
                "ids": {"value": "pluck(mine, 'id')"},
                "sent": {
                    "rows": {"rows": mv, "filter": "row.from_id in ids and row.made_on < today"}
                },
            },
            "require": ["len(mine) >= 2", "len(sent) >= 2"],
            "plan": [
                {"tool": listing, "args": {f"{c.slug}_id": "=anchor.id"}},
                {"tool": history, "args": {aid: "=item.id"}, "for_each": "mine"},
            ],
            "instruction": [
                f"What is the total of the {m.plural} sent from all of {{ref:anchor}}'s "
                f"{a.plural} before today?",
                f"Please add up every {m.word} that {{ref:anchor}}'s {a.plural} sent before "
                "today. How much is it?",
            ],
            "answer": "money(sum(x.amount for x in sent))",
        },
    ]
    return Part(entities, actions, rules, goals)


def approvals(t: Theme, rng: random.Random) -> Part:
    """Requests decided by staff: only pending ones, each approver within their limit, a
    look at the request before approving it."""
    c, q, s = t.client, t.request, t.staff
    req, st, cl = q.table, s.table, c.table
    qid = f"{q.slug}_id"
    get, approve, reject = f"get_{q.slug}", f"approve_{q.slug}", f"reject_{q.slug}"
    listing, staff = f"list_{c.slug}_{req}", f"list_{st}"
    reasons = ["over_budget", "missing_receipts", "not_eligible", "duplicate"]
    limits = sorted(rng.sample([250, 500, 750, 1000, 1500, 2500, 4000], 4))
    entities: dict[str, Data] = {
        st: {
            "label": s.word,
            "id_prefix": "ST",
            "count": rng.randint(8, 14),
            "fields": {
                "name": {"faker": "name", "unique": True},
                "approval_limit": {"type": "integer", "choices": limits},
            },
            "refs": [
                {
                    "text": f"{{row.name}}, our {s.word}",
                    "unique": ["name"],
                    "lookup": [{"tool": staff, "args": {}}],
                }
            ],
        },
        req: {
            "label": q.word,
            "id_prefix": "RQ",
            "owner": f"{c.slug}_id",
            "count": rng.randint(180, 260),
            "fields": {
                f"{c.slug}_id": {"type": "ref", "ref": cl},
                "number": {"type": "integer", "min": 10000, "max": 99999, "unique": True},
                "category": {"choices": list(t.categories)},
                "amount": {"type": "number", "min": 20, "max": max(limits) - 10, "decimals": 2},
                "filed_on": {"type": "date", "min": -60, "max": -1},
                "status": {
                    "expr": "'approved' if row.number % 5 == 0 else ('rejected' if "
                    "row.number % 7 == 0 else 'pending')"
                },
                "decided_by": {"expr": "None"},
                "reason": {"expr": "'not_eligible' if row.status == 'rejected' else None"},
            },
            "refs": [
                {
                    "text": f"{q.word} number {{row.number}}",
                    "unique": ["number"],
                    "lookup": [
                        {"tool": f"find_{q.slug}_by_number", "args": {"number": "=row.number"}}
                    ],
                },
                {
                    "text": f"the {{row.category}} {q.word} {{ref:parent}} filed on "
                    "{pretty_date(row.filed_on)}",
                    "parent": f"{c.slug}_id",
                    "unique": ["category", "filed_on"],
                    "lookup": [{"tool": listing, "args": {f"{c.slug}_id": f"=row.{c.slug}_id"}}],
                },
            ],
        },
    }
    rules: list[Data] = [
        {
            "id": "approval_limit",
            "text": f"A {s.word} may approve a {q.word} only up to their approval limit.",
        },
        {"id": "pending_only", "text": f"Only pending {q.plural} can be approved or rejected."},
        {
            "id": "read_before_approving",
            "text": f"Before approving a {q.word}, read it with {get}.",
            "prior_call": {"tool": approve, "needs": get, "match": {qid: qid}},
        },
    ]
    one = {qid: id_param(q.word, "RQ")}
    pending = {
        "check": "got.status == 'pending'",
        "rule": "pending_only",
        "error": f"{q.word.capitalize()} {{got.id}} is already {{got.status}}.",
    }
    actions: list[Data] = [
        {
            "name": staff,
            "kind": "read",
            "description": f"List the {s.plural} who decide {q.plural}, with their approval "
            "limits.",
            "params": {},
            "load": {"found": {"rows": st, "order_by": "name"}},
            "returns": "=found",
        },
        owned_listing(
            listing,
            c,
            req,
            f"List a {c.word}'s {q.plural}, newest first, optionally by status.",
            "-filed_on",
            ["pending", "approved", "rejected"],
        ),
        {
            "name": get,
            "kind": "read",
            "description": f"Get a {q.word} by id.",
            "params": one,
            "load": {"got": f"{req}[{qid}]"},
            "returns": "=got",
        },
        find_by(q, req, "number", "five-digit number"),
        {
            "name": approve,
            "kind": "write",
            "description": f"Approve a pending {q.word} in the name of a {s.word}.",
            "params": {**one, "approver_id": id_param(s.word, "ST")},
            "load": {"got": f"{req}[{qid}]", "who": f"{st}[approver_id]"},
            "require": [
                pending,
                {
                    "check": "got.amount <= who.approval_limit",
                    "rule": "approval_limit",
                    "error": f"{{who.name}} may approve up to {{who.approval_limit}}; "
                    f"{q.word} {{got.id}} is for {{got.amount}}.",
                },
            ],
            "effects": [{"update": "got", "set": {"status": "approved", "decided_by": "=who.id"}}],
        },
        {
            "name": reject,
            "kind": "write",
            "description": f"Reject a pending {q.word}, with a reason.",
            "params": {**one, "reason": {"description": "Why.", "enum": reasons}},
            "load": {"got": f"{req}[{qid}]"},
            "require": [pending],
            "effects": [{"update": "got", "set": {"status": "rejected", "reason": "=reason"}}],
        },
    ]
    approver = {"pick": {"rows": st, "filter": "row.approval_limit >= anchor.amount"}}
    goals: list[Data] = [
        reason_goal(
            reject,
            req,
            "row.status == 'pending'",
            qid,
            reasons,
            [
                "Please reject {ref:anchor}; the reason: {human(reason)}.",
                "{ref:anchor} is to be rejected ({human(reason)}).",
            ],
        ),
        {
            "id": approve,
            "level": 2,
            "anchor": {"entity": req, "where": "row.status == 'pending'"},
            "let": {"approver": approver},
            "plan": [
                {"tool": get, "args": {qid: "=anchor.id"}},
                {"tool": approve, "args": {qid: "=anchor.id", "approver_id": "=approver.id"}},
            ],
            "instruction": [
                "Please approve {ref:anchor} in the name of {ref:approver}.",
                "{ref:approver} signs off {ref:anchor}; please record the approval.",
            ],
        },
        {
            "id": f"approve_or_reject_{q.slug}",
            "level": 3,
            "anchor": {"entity": req, "where": "row.status == 'pending'"},
            "let": {
                "approver": approver,
                "over": {"between": [0, 1]},
                "cap": {"value": "int(anchor.amount // 50) * 50 + (50 if over == 0 else 0)"},
            },
            "plan": branch_plan(
                {"tool": get, "args": {qid: "=anchor.id"}},
                {"tool": approve, "args": {qid: "=anchor.id", "approver_id": "=approver.id"}},
                "anchor.amount <= cap",
                {"tool": reject, "args": {qid: "=anchor.id", "reason": "over_budget"}},
                "anchor.amount > cap",
            ),
            "instruction": [
                "If {ref:anchor} is for {cap} or less, approve it in the name of {ref:approver}; "
                "if it is for more, reject it as over budget.",
                "About {ref:anchor}: up to {cap}, {ref:approver} approves it. Above {cap}, "
                "reject it (over budget).",
            ],
        },
        for_all_goal(
            f"reject_all_{req}",
            c,
            req,
            "pending",
            "open",
            listing,
            {"tool": reject, "args": {qid: "=item.id", "reason": "=reason"}},
            [
                f"Please reject every pending {q.word} of {{ref:anchor}}; reason: "
                "{human(reason)}.",
                f"None of {{ref:anchor}}'s pending {q.plural} can go ahead. Reject them all "
                "({human(reason)}).",
            ],
            let={"reason": {"choice": ["not_eligible", "duplicate"]}},
        ),
    ]
    return Part(entities, actions, rules, goals)


def workflow(t: Theme, rng: random.Random) -> Part:
    """Tickets moved through a state machine: open -> in_progress -> resolved -> closed, with
    on_hold beside in_progress; each move only from its states."""
    c, k = t.client, t.ticket
    tk, cl = k.table, c.table
    kid = f"{k.slug}_id"
    get, start, hold = f"get_{k.slug}", f"start_{k.slug}", f"hold_{k.slug}"
    resolve, close, prioritise = f"resolve_{k.slug}", f"close_{k.slug}", f"set_{k.slug}_priority"
    listing = f"list_{c.slug}_{tk}"
    priorities = ["low", "normal", "high", "urgent"]
    outcomes = ["fixed", "workaround", "duplicate", "not_reproducible"]
    entities: dict[str, Data] = {
        tk: {
            "label": k.word,
            "id_prefix": "TK",
            "owner": f"{c.slug}_id",
            "count": rng.randint(180, 260),
            "fields": {
                f"{c.slug}_id": {"type": "ref", "ref": cl},
                "code": {"type": "integer", "min": 1000, "max": 99999, "unique": True},
                "subject": {"choices": list(t.subjects)},
                "priority": {"choices": priorities, "weights": [3, 4, 2, 1]},
                "status": {
                    "choices": ["open", "in_progress", "on_hold", "resolved", "closed"],
                    "weights": [3, 3, 1, 2, 3],
                },
                "opened_on": {"type": "date", "min": -60, "max": -1},
                "outcome": {"expr": "'fixed' if row.status in ['resolved', 'closed'] else None"},
            },
            "refs": [
                {
                    "text": f"{k.word} #{{row.code}}",
                    "unique": ["code"],
                    "lookup": [{"tool": f"find_{k.slug}_by_code", "args": {"code": "=row.code"}}],
                },
                {
                    "text": f"the {{row.subject}} {k.word} of {{ref:parent}}",
                    "parent": f"{c.slug}_id",
                    "unique": ["subject"],
                    "lookup": [{"tool": listing, "args": {f"{c.slug}_id": f"=row.{c.slug}_id"}}],
                },
            ],
        },
    }
    rules: list[Data] = [
        {
            "id": "ticket_states",
            "text": f"A {k.word} moves open or on_hold -> in_progress (start), in_progress -> "
            "on_hold (hold), in_progress -> resolved (resolve), resolved -> closed (close); no "
            "other moves.",
        },
    ]
    one = {kid: id_param(k.word, "TK")}

    def move(name: str, verb: str, frm: list[str], to: str, extra: Data | None = None) -> Data:
        extra = extra or {}
        return {
            "name": name,
            "kind": "write",
            "description": f"{verb.capitalize()} a {k.word} that is {' or '.join(frm)}.",
            "params": {**one, **extra},
            "load": {"got": f"{tk}[{kid}]"},
            "require": [
                {
                    "check": f"got.status in {frm!r}",
                    "rule": "ticket_states",
                    "error": f"{k.word.capitalize()} {{got.id}} is {{got.status}}; only "
                    f"{' or '.join(frm)} ones can be moved to {to}.",
                }
            ],
            "effects": [{"update": "got", "set": {"status": to, **{p: f"={p}" for p in extra}}}],
        }

    actions: list[Data] = [
        owned_listing(
            listing,
            c,
            tk,
            f"List a {c.word}'s {k.plural}, newest first, optionally by status.",
            "-opened_on",
            ["open", "in_progress", "on_hold", "resolved", "closed"],
        ),
        {
            "name": get,
            "kind": "read",
            "description": f"Get a {k.word} by id.",
            "params": one,
            "load": {"got": f"{tk}[{kid}]"},
            "returns": "=got",
        },
        find_by(k, tk, "code", "code"),
        move(start, "start work on", ["open", "on_hold"], "in_progress"),
        move(hold, "put on hold", ["in_progress"], "on_hold"),
        move(
            resolve,
            "resolve",
            ["in_progress"],
            "resolved",
            {"outcome": {"description": "How it ended.", "enum": outcomes}},
        ),
        move(close, "close", ["resolved"], "closed"),
        {
            "name": prioritise,
            "kind": "write",
            "description": f"Set the priority of a {k.word} that is not closed.",
            "params": {**one, "priority": {"description": "The new priority.", "enum": priorities}},
            "load": {"got": f"{tk}[{kid}]"},
            "require": [
                {
                    "check": "got.status != 'closed'",
                    "error": f"{k.word.capitalize()} {{got.id}} is closed.",
                }
            ],
            "effects": [{"update": "got", "set": {"priority": "=priority"}}],
        },
    ]
    goals: list[Data] = [
        {
            "id": close,
            "level": 1,
            "anchor": {"entity": tk, "where": "row.status == 'resolved'"},
            "plan": [{"tool": close, "args": {kid: "=anchor.id"}}],
            "instruction": ["Please close {ref:anchor}.", "{ref:anchor} can be closed now."],
        },
        {
            "id": prioritise,
            "level": 1,
            "anchor": {"entity": tk, "where": "row.status != 'closed'"},
            "let": {"priority": {"choice": priorities}},
            "require": ["priority != anchor.priority"],
            "plan": [{"tool": prioritise, "args": {kid: "=anchor.id", "priority": "=priority"}}],
            "instruction": [
                "Please set the priority of {ref:anchor} to {priority}.",
                "{ref:anchor} should have {priority} priority.",
            ],
        },
        {
            "id": f"work_{k.slug}",
            "level": 2,
            "anchor": {"entity": tk, "where": "row.status in ['open', 'on_hold']"},
            "let": {"outcome": {"choice": outcomes}},
            "plan": [
                {"tool": get, "args": {kid: "=anchor.id"}},
                {"tool": start, "args": {kid: "=anchor.id"}},
                {"tool": resolve, "args": {kid: "=anchor.id", "outcome": "=outcome"}},
            ],
            "instruction": [
                "Please take up {ref:anchor} and resolve it; outcome: {human(outcome)}.",
                "{ref:anchor} is done with (outcome: {human(outcome)}). Start it if needed and "
                "mark it resolved.",
            ],
        },
        {
            "id": f"triage_{k.slug}",
            "level": 3,
            "anchor": {"entity": tk, "where": "row.status == 'open'"},
            "plan": branch_plan(
                {"tool": get, "args": {kid: "=anchor.id"}},
                {"tool": start, "args": {kid: "=anchor.id"}},
                "anchor.priority == 'urgent'",
                {"tool": prioritise, "args": {kid: "=anchor.id", "priority": "urgent"}},
                "anchor.priority != 'urgent'",
            ),
            "instruction": [
                "Please look at {ref:anchor}: if it is urgent, start work on it; if not, raise "
                "its priority to urgent.",
                "About {ref:anchor}: urgent ones get started right away; anything else goes up "
                "to urgent priority.",
            ],
        },
        for_all_goal(
            f"close_all_{tk}",
            c,
            tk,
            "resolved",
            "done",
            listing,
            {"tool": close, "args": {kid: "=item.id"}},
            [
                f"Please close every resolved {k.word} of {{ref:anchor}}.",
                f"All of {{ref:anchor}}'s resolved {k.plural} can be closed. Please do it.",
            ],
        ),
        for_all_goal(
            f"pause_all_{tk}",
            c,
            tk,
            "in_progress",
            "busy",
            listing,
            {"tool": hold, "args": {kid: "=item.id"}},
            [
                f"Please put every {k.word} of {{ref:anchor}} that is in progress on hold.",
                f"{{ref:anchor}} asked us to pause: hold all of their in-progress {k.plural}.",
            ],
        ),
    ]
    return Part(entities, actions, rules, goals)
