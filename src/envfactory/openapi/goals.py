"""Goal templates from the resource graph, the same for every API.

Level 1: ask a field of a row, change a field, create a row (under a parent), delete a row.
Level 2: the top child or the total of a parent's children, ask about a row's parent (two
reads), the sum of a number over two rows (two reads), copy a field from one row to another,
link a row to another one.
Level 3: a conditional update (or delete) that turns on the row's current state.
Level 4: update every child that matches a condition; delete a row with all its children.

Rows are named in instructions by the references the compiler gives each entity, so the
engine adds look-ups (search by name, list a parent's children) as difficulty rises.
"""

from __future__ import annotations

from typing import Any

from envfactory.db.tasks import GUESS_SHARE
from envfactory.openapi.actions import children
from envfactory.openapi.fields import NO_ARGS
from envfactory.openapi.model import Entity, Field, Model, Tool, original
from envfactory.openapi.names import article, human, words
from envfactory.policies.scripted import Guess, answer_text

MAX_ASKED = 4
MAX_UPDATED = 3
MAX_BULK = 6
# What the do-nothing baselines say: an answer inside these words would be guessed.
_BASELINE_TEXT = " ".join(
    [f"Done. The answer is {g}." for g in Guess.GUESSES]
    + [answer_text([]), "I'm sorry, I can't help with that.", "All done:"]
    + ["Done! Everything you asked for has been taken care of."]
).lower()

Goal = dict[str, Any]


def safe_answer(expr: str) -> str:
    """A require expression: the answer exists and no baseline says it by accident."""
    return (
        f"{expr} is not None and str({expr}) not in ['True', 'False', '42', '100', '100.0'] "
        f"and str({expr}) != today and lower(str({expr})) not in {_BASELINE_TEXT!r}"
    )


def _said(f: Field, expr: str) -> str:
    """How an instruction states a value of ``f``."""
    if f.type == "string" and not f.enum:
        return f"'{{{expr}}}'"
    if f.type == "boolean":
        return f"{{lower(str({expr}))}}"
    return f"{{{expr}}}"


def fresh(f: Field, name: str, current: str | None) -> tuple[dict[str, Any], list[str]] | None:
    """Bindings that draw a new value for ``f`` into ``name`` (different from the
    expression ``current``, when given), and the requirements that go with them."""
    spec = f.spec
    if f.enum:
        options = [c for c in f.enum if not isinstance(c, bool)]
        if len(options) < 2:
            return None
        if current is None:
            return {name: {"choice": options}}, []
        pick = f"[c for c in {options!r} if c != {current}]"
        return {
            f"{name}_k": {"between": [0, 9999]},
            name: {"value": f"{pick}[{name}_k % len({pick})]"},
        }, []
    differ = [f"{name} != {current}"] if current else []
    kind = f.type
    if kind == "boolean":
        if current is None:
            return {name: {"choice": [True, False]}}, []
        return {name: {"value": f"not {current}"}}, []
    if kind == "integer":
        lo, hi = int(spec.get("min", 0)), int(spec.get("max", 100))
        return ({name: {"between": [lo, hi]}}, differ) if hi - lo >= 3 else None
    if kind == "number":
        lo, hi = int(spec.get("min", 0)), int(spec.get("max", 100))
        if hi - lo < 3:
            return None
        return {f"{name}_k": {"between": [lo, hi]}, name: {"value": f"float({name}_k)"}}, differ
    if kind == "date":
        lo, hi = int(spec.get("min", -30)), int(spec.get("max", 30))
        return {
            f"{name}_k": {"between": [lo, hi]},
            name: {"value": f"add_days(today, {name}_k)"},
        }, differ
    provider = spec.get("faker")
    if kind == "string" and (provider in NO_ARGS or provider in ("catch_phrase", "sentence")):
        return {name: {"fake": provider}}, differ
    return None


def one_page(entity: Entity) -> bool:
    """Whether a list call can show every row of a top-level entity at once."""
    tool = entity.tools.get("list")
    if tool is None:
        return False
    paging = tool.paging
    return (
        paging is None
        or paging.style is None
        or (paging.size is not None and paging.max_size >= entity.count)
    )


# Properties that describe the record, not the thing: no user asks for them.
_METADATA = "etag kind type self href link links resource resource_type object odata_type"
METADATA = frozenset(_METADATA.split())


def meaningful(f: Field) -> bool:
    """Whether a field is about the thing itself (an enum ``type`` is; an ``etag`` is not)."""
    return bool(f.enum) or "_".join(words(f.api)) not in METADATA


def rank(f: Field) -> int:
    """Enums, numbers and dates first, then values Faker knows, plain words last."""
    if f.enum:
        return 0
    if f.type in ("integer", "number", "date"):
        return 1
    if f.spec.get("faker") == "word" or "pattern" in f.spec:
        return 3
    return 2


class GoalBuilder:
    """Writes the goal templates of a world model."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.goals: list[Goal] = []
        self.ids: set[str] = set()

    # -- calls -------------------------------------------------------------------------------

    @staticmethod
    def call(tool: Tool, args: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {"tool": tool.name, "args": {**tool.constants, **args}, **extra}

    def item(self, tool: Tool, entity: Entity, row: str, **args: Any) -> dict[str, Any]:
        """A get/update/delete call on the row bound as ``row``."""
        base: dict[str, Any] = {tool.id_param or "id": f"={row}.id"}
        if tool.parent_param and entity.parent_field:
            base[tool.parent_param] = f"={row}.{entity.parent_field}"
        return self.call(tool, {**base, **args})

    def listing(self, entity: Entity, parent_id: str | None) -> dict[str, Any] | None:
        """A list call that shows every row under the parent whose id is the expression
        ``parent_id`` (or every row, when None)."""
        tool = entity.tools.get("list")
        if tool is None:
            return None
        args: dict[str, Any] = {}
        if parent_id is not None:
            if not tool.parent_param:
                return None
            args[tool.parent_param] = f"={parent_id}"
        elif tool.parent_required:
            return None
        if tool.paging and tool.paging.size:
            args[tool.paging.size] = tool.paging.max_size
        return self.call(tool, args)

    def read(self, entity: Entity, row: str) -> dict[str, Any] | None:
        """A call that shows the row: get it, list its parent's children, or list every row
        when one page holds them all."""
        get = entity.tools.get("get")
        if get is not None:
            return self.item(get, entity, row)
        if entity.parent_field:
            return self.listing(entity, f"{row}.{entity.parent_field}")
        if one_page(entity):
            return self.listing(entity, None)
        return None

    def add(self, goal: Goal) -> None:
        gid, n = goal["id"], 2
        while goal["id"] in self.ids:
            goal["id"] = f"{gid}_{n}"
            n += 1
        self.ids.add(goal["id"])
        self.goals.append(goal)

    # -- field choices -----------------------------------------------------------------------

    @staticmethod
    def askable(entity: Entity) -> list[Field]:
        """Fields worth a question, most telling first (no ids, names or metadata; no field
        of plain dictionary words: such an answer cannot be told from the words of the reply
        around it, so it cannot be graded as one committed value; no boolean and no enum of
        fewer than ``1 / GUESS_SHARE`` values: a blind guess would be right too often, and the
        task factory does not ask such a question; no digits around a colon, ``+49:77``,
        ``12:34:56``: ``verify.answers.gives`` does not credit a reply that states them)."""
        naming = entity.naming_field
        fields = [
            f
            for n, f in entity.fields.items()
            if n != naming
            and not f.ref
            and f.spec.get("faker") != "word"
            and "#:#" not in str(f.spec.get("pattern", ""))
            and (not f.enum or len(f.enum) * GUESS_SHARE >= 1)
        ]
        return sorted((f for f in fields if f.type != "boolean" and meaningful(f)), key=rank)[
            :MAX_ASKED
        ]

    @staticmethod
    def settable(entity: Entity, tool: Tool | None) -> list[tuple[str, Field]]:
        """(parameter, field) pairs a create or update tool sets, references left out, most
        telling first."""
        if tool is None:
            return []
        pairs = [(p, entity.fields[f]) for p, f in tool.fields.items()]
        return sorted(
            ((p, f) for p, f in pairs if not f.ref and meaningful(f)), key=lambda pf: rank(pf[1])
        )

    # -- level 1 -----------------------------------------------------------------------------

    def ask(self, e: Entity) -> None:
        for f in self.askable(e):
            step = self.read(e, "anchor")
            if step is None:
                return
            phrase = human(f.api)
            self.add(
                {
                    "id": f"ask_{e.key}_{f.name}".lower(),
                    "level": 1,
                    "anchor": {"entity": e.key},
                    "require": [safe_answer(f"anchor.{f.name}")],
                    "plan": [step],
                    "instruction": [
                        f"What is the {phrase} of {{ref:anchor}}?",
                        f"Could you look up {{ref:anchor}} and tell me its {phrase}?",
                        f"I need the {phrase} of {{ref:anchor}}.",
                    ],
                    "answer": f"anchor.{f.name}",
                }
            )

    def update(self, e: Entity) -> None:
        tool = e.tools.get("update")
        for pname, f in self.settable(e, tool)[:MAX_UPDATED]:
            assert tool is not None
            drawn = fresh(f, "new", f"anchor.{f.name}")
            if drawn is None:
                continue
            let, req = drawn
            phrase, said = human(f.api), _said(f, "new")
            self.add(
                {
                    "id": f"update_{e.key}_{f.name}".lower(),
                    "level": 1,
                    "anchor": {"entity": e.key},
                    "let": let,
                    "require": req,
                    "plan": [self.item(tool, e, "anchor", **{pname: "=new"})],
                    "instruction": [
                        f"Please change the {phrase} of {{ref:anchor}} to {said}.",
                        f"For {{ref:anchor}}, set the {phrase} to {said}.",
                        f"Update {{ref:anchor}}: its {phrase} should now be {said}.",
                    ],
                }
            )

    def _values(
        self, e: Entity, tool: Tool
    ) -> tuple[dict[str, Any], list[str], dict[str, Any], list[str]] | None:
        """Bindings, requirements, arguments and words for a new row's values: every
        required field, and up to two optional ones."""
        let: dict[str, Any] = {}
        req: list[str] = []
        args: dict[str, Any] = {}
        words: list[str] = []
        optional = 0
        for i, (pname, fname) in enumerate(tool.fields.items()):
            f = e.fields[fname]
            required = tool.params[pname].get("required", True)
            if not required and optional >= 2:
                continue
            name = f"v{i}"
            if f.ref:
                target = self.model.entities[f.ref]
                # a row found by its reference: a level-2 goal; the row an action acts on
                # (a capture's original payment) is named by its id: one hop
                name = f"on{i}" if original(f.api) else f"link{i}"
                let[name] = {"pick": {"rows": f.ref}}
                args[pname] = f"={name}.id"
                words.append(
                    f"{human(f.api)} {{ref:{name}}}"
                    if not target.naming_field
                    else f"{{ref:{name}}} as its {human(f.api)}"
                )
            else:
                drawn = fresh(f, name, None)
                if drawn is None:
                    if not required:
                        continue
                    let[f"{name}_from"] = {
                        "pick": {"rows": e.key, "filter": f"row.{fname} is not None"}
                    }
                    let[name] = {"value": f"{name}_from.{fname}"}
                else:
                    let.update(drawn[0])
                    req += drawn[1]
                args[pname] = f"={name}"
                words.append(f"{human(f.api)} {_said(f, name)}")
            optional += not required
        if not words:
            return None
        return let, req, args, words

    def create(self, e: Entity) -> None:
        tool = e.tools.get("create")
        if tool is None:
            return
        values = self._values(e, tool)
        if values is None:
            return
        let, req, args, said = values
        listed = ", ".join(said[:-1]) + (" and " if len(said) > 1 else "") + said[-1]
        label = e.label
        if tool.parent_param and e.parent:
            parent = self.model.entities[e.parent]
            args[tool.parent_param] = "=anchor.id"
            anchor = {"entity": parent.key}
            texts = [
                f"Please add a new {label} to {{ref:anchor}} with {listed}.",
                f"Create {article(label)} under {{ref:anchor}}: {listed}.",
                f"Please set up a new {label} for {{ref:anchor}}, with {listed}.",
            ]
        else:
            anchor = {"entity": e.key}
            texts = [
                f"Please create a new {label} with {listed}.",
                f"Add {article(label)}: {listed}.",
                f"I'd like a new {label} set up with {listed}.",
            ]
        self.add(
            {
                "id": f"create_{e.key}".lower(),
                "level": 2 if any(n.startswith("link") for n in let) else 1,
                "anchor": anchor,
                "let": let,
                "require": req,
                "plan": [self.call(tool, args)],
                "instruction": texts,
            }
        )

    def _no_children(self, e: Entity, row: str, let: dict[str, Any]) -> list[str]:
        req = []
        for c in children(self.model, e):
            name = f"kids_{c.key}".lower()
            let[name] = {"rows": {"rows": c.key, "where": {c.parent_field: f"={row}.id"}}}
            req.append(f"len({name}) == 0")
        return req

    def delete(self, e: Entity) -> None:
        tool = e.tools.get("delete")
        if tool is None:
            return
        let: dict[str, Any] = {}
        req = self._no_children(e, "anchor", let)
        self.add(
            {
                "id": f"delete_{e.key}".lower(),
                "level": 1,
                "anchor": {"entity": e.key},
                "let": let,
                "require": req,
                "plan": [self.item(tool, e, "anchor")],
                "instruction": [
                    "Please delete {ref:anchor}.",
                    "Remove {ref:anchor}; it is no longer needed.",
                    "Please get rid of {ref:anchor}.",
                ],
            }
        )

    # -- level 2 -----------------------------------------------------------------------------

    def children_facts(self, p: Entity) -> None:
        """Questions over a parent's children that one listing answers: which child has the
        highest (or latest) value of a field, and the total of a numeric field. Counts are not
        asked: a parent holds a few children, so a blind guess of a count is often right."""
        for c in children(self.model, p):
            step = self.listing(c, "anchor.id")
            if step is None:
                continue
            let = {"kids": {"rows": {"rows": c.key, "where": {c.parent_field: "=anchor.id"}}}}
            self._top_child(p, c, step, let)
            for f in [f for f in c.fields.values() if f.type == "number" and not f.enum][:1]:
                self.add(
                    {
                        "id": f"total_{c.key}_{f.name}_of_{p.key}".lower(),
                        "level": 2,
                        "anchor": {"entity": p.key},
                        "let": let,
                        "require": [
                            "len(kids) >= 2",
                            f"all(x.{f.name} is not None for x in kids)",
                            safe_answer(f"money(sum(x.{f.name} for x in kids))"),
                        ],
                        "plan": [step],
                        "instruction": [
                            f"What is the total {human(f.api)} over all the {c.labels} of "
                            "{ref:anchor}?",
                            f"Add up the {human(f.api)} of every {c.label} of {{ref:anchor}}. "
                            "What do you get?",
                        ],
                        "answer": f"money(sum(x.{f.name} for x in kids))",
                    }
                )

    def _top_child(self, p: Entity, c: Entity, step: dict[str, Any], let: Goal) -> None:
        """Which child has the highest (latest) value of its first number or date field, named
        by its name (or id): a row of the world, not one of a few values."""
        ordered = [
            f for f in c.fields.values() if f.type in ("integer", "number", "date") and not f.ref
        ]
        if not ordered or ordered[0].enum:
            return
        f, named = ordered[0], c.naming_field or "id"
        most = "latest" if f.type == "date" else "highest"
        said = "name" if c.naming_field else "ID"
        top = f"[x for x in kids if x.{f.name} == best]"
        self.add(
            {
                "id": f"top_{c.key}_{f.name}_of_{p.key}".lower(),
                "level": 2,
                "anchor": {"entity": p.key},
                "let": {**let, "best": {"value": f"max(x.{f.name} for x in kids)"}},
                "require": [
                    "len(kids) >= 2",
                    f"all(x.{f.name} is not None for x in kids)",
                    f"len({top}) == 1",
                    safe_answer(f"{top}[0].{named}"),
                ],
                "plan": [step],
                "instruction": [
                    f"Which {c.label} of {{ref:anchor}} has the {most} {human(f.api)}? "
                    f"Tell me its {said}.",
                    f"Among the {c.labels} of {{ref:anchor}}, find the one with the {most} "
                    f"{human(f.api)} and give me its {said}.",
                ],
                "answer": f"{top}[0].{named}",
            }
        )

    def combined(self, e: Entity) -> None:
        """Two reads: the sum of a number over two rows ("the combined fee of A and B"), over
        the number of widest range (held-out tasks need sums no train task asks)."""
        fields = [f for f in self.askable(e) if f.type in ("integer", "number") and not f.enum]
        first, second = self.read(e, "anchor"), self.read(e, "other")
        if not fields or first is None or second is None:
            return
        f = max(fields, key=lambda f: float(f.spec.get("max", 100)) - float(f.spec.get("min", 0)))
        total = f"anchor.{f.name} + other.{f.name}"
        answer = f"money({total})" if f.type == "number" else total
        phrase = human(f.api)
        self.add(
            {
                "id": f"sum_{e.key}_{f.name}".lower(),
                "level": 2,
                "anchor": {"entity": e.key, "where": f"row.{f.name} is not None"},
                "let": {
                    "other": {
                        "pick": {
                            "rows": e.key,
                            "filter": f"row.id != anchor.id and row.{f.name} is not None",
                        }
                    }
                },
                "require": [safe_answer(answer)],
                "plan": [first, second],
                "instruction": [
                    f"What is the combined {phrase} of {{ref:anchor}} and {{ref:other}}?",
                    f"Add the {phrase} of {{ref:anchor}} to that of {{ref:other}}: what is "
                    "the sum?",
                ],
                "answer": answer,
            }
        )

    def ask_parent(self, c: Entity) -> None:
        """Two reads: the row, then the row it belongs to (or refers to)."""
        get = c.tools.get("get")
        if get is None:
            return
        links = [(n, f) for n, f in c.fields.items() if f.ref]
        for fname, link in links[:2]:
            target = self.model.entities[link.ref or ""]
            target_get = target.tools.get("get")
            if target_get is None:
                continue
            for f in self.askable(target)[:2]:
                phrase = human(f.api)
                self.add(
                    {
                        "id": f"ask_{target.key}_{f.name}_via_{c.key}".lower(),
                        "level": 2,
                        "anchor": {"entity": c.key, "where": f"row.{fname} is not None"},
                        "let": {"up": f"{target.key}[anchor.{fname}]"},
                        "require": [safe_answer(f"up.{f.name}")],
                        "plan": [self.item(get, c, "anchor"), self.item(target_get, target, "up")],
                        "instruction": [
                            f"What is the {phrase} of the {target.label} that {{ref:anchor}} "
                            "belongs to?",
                            f"Look at {{ref:anchor}} and tell me the {phrase} of its "
                            f"{target.label}.",
                        ],
                        "answer": f"up.{f.name}",
                    }
                )

    def copy_field(self, e: Entity) -> None:
        tool, get = e.tools.get("update"), e.tools.get("get")
        if tool is None or get is None:
            return
        for pname, f in self.settable(e, tool)[:1]:
            if f.name == e.naming_field:
                continue
            self.add(
                {
                    "id": f"copy_{e.key}_{f.name}".lower(),
                    "level": 2,
                    "anchor": {"entity": e.key},
                    "let": {
                        "other": {
                            "pick": {
                                "rows": e.key,
                                "filter": f"row.id != anchor.id and row.{f.name} is not None "
                                f"and row.{f.name} != anchor.{f.name}",
                            }
                        }
                    },
                    "plan": [
                        self.item(get, e, "other"),
                        self.item(tool, e, "anchor", **{pname: f"=other.{f.name}"}),
                    ],
                    "instruction": [
                        f"Give {{ref:anchor}} the same {human(f.api)} as {{ref:other}}.",
                        f"Copy the {human(f.api)} of {{ref:other}} over to {{ref:anchor}}.",
                    ],
                }
            )

    def relink(self, e: Entity) -> None:
        tool = e.tools.get("update")
        if tool is None:
            return
        for pname, fname in tool.fields.items():
            f = e.fields[fname]
            if not f.ref:
                continue
            target = self.model.entities[f.ref]
            self.add(
                {
                    "id": f"relink_{e.key}_{fname}".lower(),
                    "level": 2,
                    "anchor": {"entity": e.key},
                    "let": {
                        "other": {"pick": {"rows": f.ref, "filter": f"row.id != anchor.{fname}"}}
                    },
                    "plan": [self.item(tool, e, "anchor", **{pname: "=other.id"})],
                    "instruction": [
                        f"Please link {{ref:anchor}} to {{ref:other}} ({human(f.api)}).",
                        f"Change the {target.label} of {{ref:anchor}} to {{ref:other}}.",
                    ],
                }
            )

    # -- level 3 -----------------------------------------------------------------------------

    def conditional(self, e: Entity) -> None:
        """If the row's state is X, update it one way; otherwise another way, or delete it."""
        tool = e.tools.get("update")
        read = self.read(e, "anchor")
        conds = [f for f in e.fields.values() if f.enum and not f.ref and len(f.enum) >= 2]
        if tool is None or read is None or not conds:
            return
        cond = conds[0]
        delete = e.tools.get("delete")
        can_delete = delete is not None and not children(self.model, e)
        for pname, f in [(p, f) for p, f in self.settable(e, tool) if f.name != cond.name][:2]:
            drawn_a, drawn_b = fresh(f, "a", f"anchor.{f.name}"), fresh(f, "b", f"anchor.{f.name}")
            if drawn_a is None or drawn_b is None:
                continue
            test = f"anchor.{cond.name} == v"
            phrase, state = human(f.api), human(cond.api)
            then = self.item(tool, e, "anchor", **{pname: "=a"}) | {"when": test}
            branches = [
                (
                    "update",
                    self.item(tool, e, "anchor", **{pname: "=b"}) | {"when": f"not ({test})"},
                    f"set it to {_said(f, 'b')}",
                    {**drawn_b[0]},
                    [*drawn_b[1], "a != b"],
                )
            ]
            if can_delete and delete is not None:
                branches.append(
                    (
                        "delete",
                        self.item(delete, e, "anchor") | {"when": f"not ({test})"},
                        "delete it instead",
                        {},
                        [],
                    )
                )
            for kind, otherwise, said, extra_let, extra_req in branches:
                self.add(
                    {
                        "id": f"if_{e.key}_{cond.name}_{f.name}_else_{kind}".lower(),
                        "level": 3,
                        "anchor": {"entity": e.key},
                        "let": {"v": {"choice": list(cond.enum or [])}, **drawn_a[0], **extra_let},
                        "require": drawn_a[1] + extra_req,
                        "plan": [read, then, otherwise],
                        "instruction": [
                            f"Check {{ref:anchor}}: if its {state} is '{{v}}', set its {phrase} "
                            f"to {_said(f, 'a')}; otherwise {said}.",
                            f"If {{ref:anchor}} has {state} '{{v}}', change its {phrase} to "
                            f"{_said(f, 'a')}. If not, {said}.",
                        ],
                    }
                )

    # -- level 4 -----------------------------------------------------------------------------

    def bulk_update(self, p: Entity) -> None:
        for c in children(self.model, p):
            tool, step = c.tools.get("update"), self.listing(c, "anchor.id")
            if tool is None or step is None:
                continue
            conds = [f for f in c.fields.values() if f.enum and not f.ref]
            for pname, f in self.settable(c, tool)[:2]:
                drawn = fresh(f, "new", None)
                if drawn is None or not conds:
                    continue
                cond = conds[0]
                let = {
                    "all_kids": {"rows": {"rows": c.key, "where": {c.parent_field: "=anchor.id"}}},
                    "k": {"between": [0, 9999]},
                    "v": {
                        "value": f"all_kids[k % len(all_kids)].{cond.name} if all_kids else None"
                    },
                    **drawn[0],
                    "sel": {
                        "rows": {
                            "rows": c.key,
                            "where": {c.parent_field: "=anchor.id", cond.name: "=v"},
                            "filter": f"row.{f.name} != new",
                        }
                    },
                }
                self.add(
                    {
                        "id": f"bulk_{c.key}_{f.name}_of_{p.key}".lower(),
                        "level": 4,
                        "anchor": {"entity": p.key},
                        "let": let,
                        "require": ["v is not None", f"2 <= len(sel) <= {MAX_BULK}"],
                        "plan": [
                            step,
                            self.item(tool, c, "item", **{pname: "=new"}) | {"for_each": "sel"},
                        ],
                        "instruction": [
                            f"For every {c.label} of {{ref:anchor}} whose {human(cond.api)} is "
                            f"'{{v}}', set the {human(f.api)} to {_said(f, 'new')}.",
                            f"Go through the {c.labels} of {{ref:anchor}}: each one with "
                            f"{human(cond.api)} '{{v}}' should get {human(f.api)} "
                            f"{_said(f, 'new')}.",
                        ],
                    }
                )

    def delete_tree(self, p: Entity) -> None:
        delete = p.tools.get("delete")
        kids = children(self.model, p)
        if delete is None or not kids:
            return
        let: dict[str, Any] = {}
        plan: list[dict[str, Any]] = []
        req: list[str] = []
        for c in kids:
            step, cdel = self.listing(c, "anchor.id"), c.tools.get("delete")
            if step is None or cdel is None or children(self.model, c):
                return
            name = f"kids_{c.key}".lower()
            let[name] = {"rows": {"rows": c.key, "where": {c.parent_field: "=anchor.id"}}}
            req.append(f"len({name}) <= {MAX_BULK}")
            plan += [step, self.item(cdel, c, "item") | {"for_each": name}]
        req.append(" or ".join(f"len(kids_{c.key}) > 0".lower() for c in kids))
        what = " and ".join(f"{c.labels}" for c in kids)
        self.add(
            {
                "id": f"delete_{p.key}_tree".lower(),
                "level": 4,
                "anchor": {"entity": p.key},
                "let": let,
                "require": req,
                "plan": [*plan, self.item(delete, p, "anchor")],
                "instruction": [
                    f"Delete {{ref:anchor}} together with all of its {what}.",
                    f"Remove {{ref:anchor}} completely: first its {what}, then the "
                    f"{p.label} itself.",
                ],
            }
        )


def build_goals(model: Model) -> list[Goal]:
    """Every goal template the world's tools support."""
    b = GoalBuilder(model)
    for e in model.entities.values():
        b.ask(e)
        b.update(e)
        b.create(e)
        b.delete(e)
        b.children_facts(e)
        b.ask_parent(e)
        b.combined(e)
        b.copy_field(e)
        b.relink(e)
        b.conditional(e)
        b.bulk_update(e)
        b.delete_tree(e)
    return b.goals
