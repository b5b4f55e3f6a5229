"""An OpenAPI document compiled into an envfactory domain (plain data the engine validates).

document -> operations -> resource graph -> world model -> domain data: entities with
generated fields and references, actions with REST semantics, rules the spec states, goal
templates from the resource graph, and a difficulty ladder fitted to the goals that have
rows to work on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envfactory.domain.loader import parse_domain
from envfactory.domain.spec import DomainSpec
from envfactory.openapi.actions import action, children
from envfactory.openapi.document import Document, load_document
from envfactory.openapi.entities import build_model
from envfactory.openapi.goals import GoalBuilder, build_goals, one_page
from envfactory.openapi.model import ROW_BUDGET, UNLISTED_COUNT, Entity, Model, NoWorld
from envfactory.openapi.names import article, words, world_id
from envfactory.openapi.resources import build_graph

TODAY = "2026-06-01"
# More sub-goals at every rung (1, 2, 3, 5, 7: a scripted agent that slips now and then must
# fail clearly more often as tasks grow), look-ups from the second rung, look-alike
# distractors from the third.
# Goal levels accumulate, so a rung never loses the goals of the one below: a level no row
# can serve simply adds nothing.
LADDER = [
    {"width": 1, "indirection": 0, "goal_levels": [1]},
    {"width": 2, "indirection": 1, "goal_levels": [1, 2]},
    {"width": 3, "indirection": 1, "distractors": 1, "goal_levels": [1, 2, 3]},
    {"width": 5, "indirection": 2, "distractors": 1, "goal_levels": [1, 2, 3, 4]},
    {"width": 7, "indirection": 2, "distractors": 2, "goal_levels": [1, 2, 3, 4]},
]


def compile_document(
    data: Mapping[str, Any], source: str, env_id: str | None = None
) -> dict[str, Any]:
    """Domain data for a document (raises ``SpecError`` or ``NoWorld`` with a reason)."""
    doc = load_document(data, source)
    return domain_data(doc, env_id or world_id(source))


def domain_data(doc: Document, env_id: str) -> dict[str, Any]:
    graph = build_graph(doc)
    model = build_model(doc, graph, env_id)
    goals = build_goals(model)
    if not goals:
        what = ", ".join(e.labels for e in model.entities.values())
        raise NoWorld(
            "no_tasks",
            f"no task can be written over its {what}: no field to ask about or to set "
            "(only ids, names, metadata or free words) and no row to create or delete",
        )
    _prune(model, goals)
    used = _used_tools(model, goals)
    _widen(model, used)
    actions = [action(t, model) for t in model.tools if t.name in used]
    return {
        "id": env_id,
        "name": _trim(doc.title, 80),
        "description": _describe(doc, model),
        "persona": _persona(doc, model),
        "today": TODAY,
        "entities": {e.key: _entity(e, model) for e in model.entities.values()},
        "actions": actions,
        "rules": _rules(model),
        "goals": goals,
        "ladder": LADDER,
        # no starter level yet: showing only the gold tool of a generated API lets write
        # spraying and answer enumeration earn part of the reward (0.02-0.05 on the sample)
        "starter": None,
    }


def _trim(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3].rstrip() + "..."


def _describe(doc: Document, model: Model) -> str:
    what = ", ".join(f"{e.labels}" for e in model.entities.values())
    own = _trim(doc.description, 300)
    return f"{own} World compiled from the OpenAPI document: {what}.".strip()


def _persona(doc: Document, model: Model) -> str:
    text = (
        f"You operate the {_trim(doc.title, 80)} API for a user, through tools that are its "
        f"operations. Today is {TODAY}."
    )
    if model.constants:
        fixed = ", ".join(f"{k} = {v!r}" for k, v in model.constants.items())
        text += f" Calls that need them take these fixed values: {fixed}."
    return text


def _entity(e: Entity, model: Model) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, f in e.fields.items():
        spec = dict(f.spec)
        if f.ref:
            spec = {"type": "ref", "ref": f.ref}
            if name != e.parent_field:
                spec["null_rate"] = 0.1
        if f.prop is not None and f.prop.description:
            spec["description"] = _trim(f.prop.description, 160)
        if name == e.naming_field and "faker" in spec and spec["faker"] != "email":
            spec["twin_rate"] = 0.08
        if "faker" in spec and spec["faker"] in ("email", "uuid4", "user_name"):
            spec["unique"] = True
        fields[name] = spec
    out: dict[str, Any] = {
        "label": e.label,
        "id_prefix": e.prefix,
        "description": _trim(e.description, 200),
        "fields": fields,
        "refs": _refs(e, model),
    }
    if e.parent and e.parent_field:
        out["per"] = {"entity": e.parent, "min": e.per[0], "max": e.per[1]}
    else:
        out["count"] = e.count
    return out


def _refs(e: Entity, model: Model) -> list[dict[str, Any]]:
    """How instructions name a row: by its naming field, found by a search, by its parent's
    list of children, or by the whole list when one page holds it."""
    nf = e.naming_field
    tool = e.tools.get("list")
    if nf is None or tool is None:
        return []
    email = "email" in words(e.fields[nf].api) or e.fields[nf].spec.get("faker") == "email"
    shown = f"{{row.{nf}}}" if email else f"'{{row.{nf}}}'"
    by = "with e-mail " if email else ""
    out = []
    size = {tool.paging.size: tool.paging.max_size} if tool.paging and tool.paging.size else {}
    parent_required = tool.parent_required
    filter_param = tool.search or next((p for p, f in tool.fields.items() if f == nf), None)
    if filter_param and not parent_required:
        lookup = GoalBuilder.call(tool, {filter_param: f"=row.{nf}"})
        for text in (f"the {e.label} {by}{shown}", f"the {e.label} called {shown}"):
            out.append({"text": text, "unique": [nf], "lookup": [lookup]})
    if tool.parent_param and e.parent_field and e.parent:
        lookup = GoalBuilder.call(tool, {tool.parent_param: f"=row.{e.parent_field}", **size})
        for text in (
            f"the {e.label} {by}{shown} of {{ref:parent}}",
            f"the {e.label} {by}{shown} under {{ref:parent}}",
        ):
            out.append({"text": text, "parent": e.parent_field, "unique": [nf], "lookup": [lookup]})
    elif not filter_param and not parent_required and one_page(e):
        lookup = GoalBuilder.call(tool, dict(size))
        out.append({"text": f"the {e.label} {by}{shown}", "unique": [nf], "lookup": [lookup]})
    return out


def _rules(model: Model) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    parents = [e for e in model.entities.values() if "delete" in e.tools and children(model, e)]
    if parents:
        what = "; ".join(
            article(p.label) + " with " + " or ".join(f"{c.labels}" for c in children(model, p))
            for p in parents
        )
        rules.append(
            {
                "id": "keep_children",
                "text": f"A row that still has rows under it cannot be deleted ({what}); "
                "delete those first.",
            }
        )
    for e in model.entities.values():
        create = e.tools.get("create")
        if create is None:
            continue
        needed = [
            p
            for p, spec in create.params.items()
            if spec.get("required", True) and p not in create.constants
        ]
        if needed:
            rules.append(
                {
                    "id": f"required_{e.key}".lower(),
                    "text": f"Creating {article(e.label)} requires: {', '.join(needed)}.",
                }
            )
    return rules


def _goal_entities(model: Model, goal: dict[str, Any]) -> set[str]:
    """Entities a goal's anchor, bindings and plan touch."""
    tools = {t.name: t.entity for t in model.tools}
    out = {goal["anchor"]["entity"]} | {tools[s["tool"]] for s in goal["plan"]}
    for b in goal.get("let", {}).values():
        if isinstance(b, str):
            out.add(b.split("[")[0])
        elif "pick" in b or "rows" in b:
            out.add((b.get("pick") or b.get("rows"))["rows"])
    return out


def _prune(model: Model, goals: list[dict[str, Any]]) -> None:
    """Drop entities no goal is about (with their tools), keeping every entity a kept one
    refers to: a world holds what its tasks use."""
    keep: set[str] = set()
    todo = [e for g in goals for e in _goal_entities(model, g)]
    while todo:
        key = todo.pop()
        if key in keep:
            continue
        keep.add(key)
        todo += [f.ref for f in model.entities[key].fields.values() if f.ref]
    model.entities = {k: e for k, e in model.entities.items() if k in keep}


def _widen(model: Model, used: set[str]) -> None:
    """More rows for a top-level entity that no exposed list shows (up to UNLISTED_COUNT,
    within the world's row budget): the usual cap keeps every row on one page of a list, and
    without one, held-out tasks get more rows of their own (a one-resource world's validation
    split holds about a tenth of its rows)."""
    share = ROW_BUDGET // max(1, len(model.entities))
    for e in model.entities.values():
        listing = e.tools.get("list")
        if e.parent is None and (listing is None or listing.name not in used):
            e.count = max(e.count, min(UNLISTED_COUNT, share))


def _used_tools(model: Model, goals: list[dict[str, Any]]) -> set[str]:
    """Tools some goal or reference calls: the world exposes only operations it has tasks
    for (an unexercised tool would be a tool no task ever checks)."""
    used = {step["tool"] for g in goals for step in g["plan"]}
    for e in model.entities.values():
        for ref in _refs(e, model):
            used |= {s["tool"] for s in ref["lookup"]}
    return used


def compile_spec(data: Mapping[str, Any], source: str, env_id: str | None = None) -> DomainSpec:
    """A validated domain for a document."""
    return parse_domain(compile_document(data, source, env_id), source)
