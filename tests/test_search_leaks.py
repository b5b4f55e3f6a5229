"""Leak scan: an answer the request states, and a generic listing of the target, are found."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path

from mutants import mutant, tasks_of

import envfactory
from envfactory.quality.search.leaks import AnswerInRequest, ListedTarget, generic_calls

DUE = "When is {ref:anchor} due back?"
# A read tool with no parameters listing lines whose APN no seeded line has: the rows a
# wrong_apn task's setup broke to internet2 or mms.meridian (half its broken values).
ALL_LINES = """  - name: list_every_line
    kind: read
    description: Every line.
    load:
      found: {rows: lines, limit: 50}
    returns: "=found"

"""
ODD_APNS = """  - name: list_odd_apn_lines
    kind: read
    description: Lines with an unusual APN.
    load:
      found: {rows: lines, filter: "row.apn in ['internet2', 'mms.meridian']", limit: 5}
    returns: "=found"

  - name: reset_apn
"""


def test_an_answer_in_the_request_is_found(tmp_path: Path) -> None:
    """A mutant's request states the due date it asks for, as a pretty date: the synthesiser
    now keeps such tasks out (it reads requests with stated_in), and the scan finds the same
    leak in a request written so by hand."""
    env = mutant(tmp_path, "library", DUE, DUE + " I noted {pretty_date(anchor.due_on)}.")
    made = tasks_of(env, "due_date", n=30)
    assert not [t for t in made if "I noted" in t.public.instruction]
    leaky = []
    for t in made[:5]:
        day = dt.date.fromisoformat(str(t.hidden.answers[0]))
        text = f"{t.public.instruction} I noted {day:%B} {day.day}, {day.year}."
        leaky.append(replace(t, public=t.public.model_copy(update={"instruction": text})))
    assert AnswerInRequest().rewards(env, leaky) == [1.0] * len(leaky)
    assert AnswerInRequest().rewards(env, made[:5]) == [0.0] * len(made[:5])


def test_a_sound_request_states_no_answer() -> None:
    for env_id, goal in (("library", "due_date"), ("retail", "order_total")):
        env = envfactory.make(env_id)
        tasks = tasks_of(env, goal)
        assert AnswerInRequest().rewards(env, tasks) == [0.0] * len(tasks)


def test_a_generic_listing_of_the_broken_row_pays(tmp_path: Path) -> None:
    """A listing of every line, called first, does not hide the short one."""
    env = mutant(tmp_path, "helpdesk", "  - name: reset_apn\n", ALL_LINES + ODD_APNS)
    assert any(c.tool == "list_odd_apn_lines" for c in generic_calls(env))
    tasks = tasks_of(env, "wrong_apn", n=12)
    rewards = ListedTarget().rewards(env, tasks)
    odd = [t.hidden.setup[0].after["apn"] in ("internet2", "mms.meridian") for t in tasks]  # type: ignore[index]
    assert any(odd) and not all(odd)
    assert rewards == [1.0 if o else 0.0 for o in odd]


def test_a_listing_that_does_not_single_out_the_target_earns_nothing() -> None:
    env = envfactory.make("helpdesk")
    assert [c.tool for c in generic_calls(env)] == ["list_plans"]
    tasks = tasks_of(env, "wrong_apn")
    assert ListedTarget().rewards(env, tasks) == [0.0] * len(tasks)
