"""The tool and goal shapes the action patterns share: a look-up by a numbered field, a
client's rows by status, one write with a reason, and the same write over all of a client's
rows in some status. Each returns ordinary domain data."""

from __future__ import annotations

from typing import Any

from envfactory.synth.vocab import Noun

Data = dict[str, Any]


def id_param(noun: str, prefix: str) -> Data:
    return {"description": f"{noun.capitalize()} id, like {prefix}-00001."}


def find_by(noun: Noun, table: str, field: str, what: str, hint: str | None = None) -> Data:
    """``find_<noun>_by_<field>``: the one row whose integer ``field`` is given."""
    hint = hint or f"The {field}."
    return {
        "name": f"find_{noun.slug}_by_{field}",
        "kind": "read",
        "description": f"Find a {noun.word} by its {what}.",
        "params": {field: {"type": "integer", "description": hint, "minimum": 0}},
        "load": {"found": {"rows": table, "where": {field: f"={field}"}, "limit": 1}},
        "require": [
            {
                "check": "len(found) == 1",
                "code": "not_found",
                "error": f"No {noun.word} has {field} {{{field}}}.",
            }
        ],
        "returns": "=found[0]",
    }


def owned_listing(
    name: str,
    client: Noun,
    table: str,
    description: str,
    order_by: str,
    statuses: list[str] | None = None,
) -> Data:
    """A client's rows of ``table`` (optionally of one status), ordered by ``order_by``."""
    key = f"{client.slug}_id"
    params: Data = {key: id_param(client.word, "CL")}
    where = {key: f"={key}"}
    if statuses:
        params["status"] = {"description": "Only this status.", "required": False}
        params["status"]["enum"] = statuses
        where["status"] = "=status"
    return {
        "name": name,
        "kind": "read",
        "description": description,
        "params": params,
        "load": {
            "person": f"{client.table}[{key}]",
            "found": {"rows": table, "where": where, "order_by": order_by},
        },
        "returns": "=found",
    }


def branch_plan(read: Data, then: Data, when: str, otherwise: Data, unless: str) -> list[Data]:
    """Level 3's plan: a read, then ``then`` when ``when`` holds on the initial state, or
    ``otherwise`` when ``unless`` (its negation, as the instruction words it) holds."""
    return [read, {**then, "when": when}, {**otherwise, "when": unless}]


def reason_goal(
    tool: str,
    table: str,
    where: str,
    key: str,
    reasons: list[str],
    phrasings: list[str],
    require: list[str] | None = None,
) -> Data:
    """Level 1: one write on an ``anchor`` row, with a reason the user gives."""
    goal: Data = {
        "id": tool,
        "level": 1,
        "anchor": {"entity": table, "where": where},
        "let": {"reason": {"choice": reasons}},
        "plan": [{"tool": tool, "args": {key: "=anchor.id", "reason": "=reason"}}],
        "instruction": phrasings,
    }
    if require:
        goal["require"] = require
    return goal


def for_all_goal(
    goal_id: str,
    client: Noun,
    table: str,
    status: str,
    binding: str,
    listing: str,
    step: Data,
    phrasings: list[str],
    *,
    listed_by_status: bool = True,
    let: Data | None = None,
    require: list[str] | None = None,
) -> Data:
    """Level 4: ``step`` (a plan step over ``item``) for every row of ``table`` (bound as
    ``binding``, at least two) that a client holds in ``status``, after ``listing`` (the
    client's rows, of that status when ``listed_by_status``) finds them."""
    key = f"{client.slug}_id"
    listed = {key: "=anchor.id", **({"status": status} if listed_by_status else {})}
    rows = {"rows": {"rows": table, "where": {key: "=anchor.id", "status": status}}}
    return {
        "id": goal_id,
        "level": 4,
        "anchor": {"entity": client.table},
        "let": {binding: rows, **(let or {})},
        "require": [f"len({binding}) >= 2", *(require or [])],
        "plan": [{"tool": listing, "args": listed}, {**step, "for_each": binding}],
        "instruction": phrasings,
    }
