"""Rule bypass: a rule a world lets the agent skip pays, a rule it enforces does not."""

from __future__ import annotations

from pathlib import Path

import pytest
from mutants import mutant, tasks_of

import envfactory
from envfactory.contract.errors import DomainError
from envfactory.quality.search.rule_bypass import RuleBypass, demands, neighbour

PRIOR = "prior_call: {tool: cancel_order, needs: get_order, match: {order_id: order_id}}"


def test_an_enforced_look_up_rule_cannot_be_skipped_or_misdirected() -> None:
    env = envfactory.make("retail")
    tasks = tasks_of(env, "cancel_order")
    for mode in ("skip", "mismatch"):
        search = RuleBypass(mode)
        assert search.applies(env)
        assert all(search.plan(env, t) is not None for t in tasks)  # the rule is in play
        assert search.rewards(env, tasks) == [0.0] * len(tasks)


def test_a_rule_stated_but_not_checked_is_skipped(tmp_path: Path) -> None:
    """The rule's words still name get_order, but nothing checks it: skipping pays."""
    env = mutant(tmp_path, "retail", PRIOR, "")
    assert not any(d.write for d in demands(env) if d.needs == "get_order")
    tasks = tasks_of(env, "cancel_order")
    assert RuleBypass("skip").rewards(env, tasks) == [1.0] * len(tasks)


def test_a_look_up_of_any_row_satisfies_a_rule_without_its_match(tmp_path: Path) -> None:
    env = mutant(tmp_path, "retail", "match: {order_id: order_id}}", "match: {}}")
    tasks = tasks_of(env, "cancel_order")
    assert RuleBypass("mismatch").rewards(env, tasks) == [1.0] * len(tasks)
    assert RuleBypass("skip").rewards(env, tasks) == [0.0] * len(tasks)


def test_tasks_with_no_rule_in_play_are_not_played() -> None:
    env = envfactory.make("retail")
    questions = tasks_of(env, "order_total")  # a look-up, but no write after it
    assert all(RuleBypass("skip").plan(env, t) is None for t in questions)


def test_neighbour_is_one_off() -> None:
    assert neighbour("ORD-00124") == "ORD-00123"
    assert neighbour("ORD-00001") == "ORD-00002"
    assert (neighbour(4), neighbour(1), neighbour(2.5)) == (3, 2, 1.5)
    assert neighbour("2026-06-30") == "2026-07-01"
    assert neighbour("no_longer_needed") == "no_longer_needed"
    assert neighbour(True) is True


def test_a_check_of_another_day_satisfies_a_rule_without_its_match(tmp_path: Path) -> None:
    """Restaurant's booking rule demands a check of that date, time and party size; with its
    match emptied, a check of the next day and one guest fewer lets the booking through."""
    whole = "match: {date: date, time: time, party_size: party_size}"
    env = mutant(tmp_path, "restaurant", whole, "match: {}")
    tasks = tasks_of(env, "book_table", difficulty=2)
    assert RuleBypass("mismatch").rewards(env, tasks) == [1.0] * len(tasks)
    sound = envfactory.make("restaurant")
    tasks = tasks_of(sound, "book_table", difficulty=2)
    assert RuleBypass("mismatch").rewards(sound, tasks) == [0.0] * len(tasks)


CLOSE_ORDER = """  - name: close_order
    kind: write
    description: Close an order.
    params:
      order_id: {description: "Order id, like ORD-00001."}
      reason: {description: Why., enum: [no_longer_needed, ordered_by_mistake, found_better_price]}
    load: {order: "orders[order_id]"}
    effects:
      - update: order
        set: {status: cancelled, cancel_reason: "=reason"}

  - name: update_shipping_city
"""


def test_a_second_write_to_the_guarded_fields_detours_round_the_rule(tmp_path: Path) -> None:
    """close_order sets what cancel_order sets, and no rule demands a look-up before it."""
    env = mutant(tmp_path, "retail", "  - name: update_shipping_city\n", CLOSE_ORDER)
    tasks = tasks_of(env, "cancel_order")
    search = RuleBypass("detour")
    plan = search.plan(env, tasks[0])
    assert plan is not None and [s.tool for _, s in plan[0]] == ["close_order"]
    assert search.rewards(env, tasks) == [1.0] * len(tasks)


def test_a_sound_world_has_no_detour() -> None:
    env = envfactory.make("retail")
    tasks = tasks_of(env, "cancel_order")
    assert all(RuleBypass("detour").plan(env, t) is None for t in tasks)


def test_a_rule_matched_through_the_row_an_argument_names_holds(tmp_path: Path) -> None:
    """university's look-up rules match a field of the row a write names (the dropped
    enrollment's student, the new section's course): another student's schedule or another
    course's sections no longer let the write through, as they did when the rules had no
    match."""
    env = envfactory.make("university")
    dropped = tasks_of(env, "drop_enrolled")
    swapped = tasks_of(env, "swap_to_other_section", difficulty=2)
    for tasks in (dropped, swapped):
        assert RuleBypass("mismatch").rewards(env, tasks) == [0.0] * len(tasks)
    match = "match: {enrollment_id.student_id: student_id}}"
    loose = mutant(tmp_path, "university", match, "match: {}}")
    assert sum(RuleBypass("mismatch").rewards(loose, tasks_of(loose, "drop_enrolled"))) > 0


def test_a_match_naming_what_a_tool_lacks_is_refused_at_load(tmp_path: Path) -> None:
    """A match key the guarded tool lacks compares None with None, so every look-up agreed:
    the synthesised ledger's transfer rule matched that way, and rule_mismatch earned 0.14 to
    0.27 on its worlds. The loader now refuses such a rule."""
    with pytest.raises(DomainError, match="not a parameter of both"):
        mutant(tmp_path, "retail", "match: {order_id: order_id}}", "match: {id: order_id}}")
