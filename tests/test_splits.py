"""Held-out splits stay held out: no validation or test task's work or answer can be reproduced
from train material, in every database world (the twelve built-in domains, tau2-retail-strict
and the procedural tau2 world when tau2-bench's data is present, and two worlds compiled from
OpenAPI documents; tau2-retail keeps tau2's own split, docs/tau2.md).

Each world is measured once (500 tasks per split per difficulty, or all of a fixed task list)
and every property is read off that one measurement (``envfactory.tasks.heldout``)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

import envfactory
from envfactory.contract.tasks import TargetChange
from envfactory.domain.loader import builtin_domain_files
from envfactory.peers.tau2.data import missing_reason
from envfactory.quality.heldout import environment
from envfactory.tasks.heldout import Overlap, change_keys, compare, measure

PER_CELL = 500
SPECS = Path(__file__).parent / "openapi" / "specs"
TAU2 = ["tau2-retail-strict", "tau2-retail-procedural"]  # tau2-retail keeps tau2's own split
WORLDS = [
    *(p.stem for p in builtin_domain_files()),
    *TAU2,
    str(SPECS / "shop-swagger2.json"),
    str(SPECS / "clinic-oas3.yaml"),
]


@cache
def _measured(name: str) -> list[Overlap]:
    if name in TAU2 and (reason := missing_reason()) is not None:
        pytest.skip(reason)
    report = measure(environment(name), PER_CELL)
    for overlap in report:
        assert overlap.changing > 0, f"{name} {overlap.split}: no task changes anything"
    return report


def _label(name: str) -> str:
    return Path(name).name


@pytest.mark.parametrize("name", WORLDS, ids=_label)
def test_no_held_out_target_is_a_train_target(name: str) -> None:
    """Over 500 tasks per split per difficulty: no validation or test task's target (its set
    of row changes) equals the target of any train task, so replaying a train plan never
    solves a held-out task."""
    for overlap in _measured(name):
        assert overlap.same_target == 0, overlap.line()


@pytest.mark.parametrize("name", WORLDS, ids=_label)
def test_no_held_out_task_has_all_its_row_changes_in_train_targets(name: str) -> None:
    """Over 500 tasks per split per difficulty: every validation or test task that changes
    rows makes at least one row change that no train task's target makes."""
    for overlap in _measured(name):
        assert overlap.covered == 0, overlap.line()


@pytest.mark.parametrize("name", WORLDS, ids=_label)
def test_no_held_out_question_has_a_train_answer(name: str) -> None:
    """Over 500 tasks per split per difficulty: no validation or test task asks a question (a
    goal template) that a train task asks with the same answer, so a train task's reply never
    answers a held-out task (retail's delivery dates and helpdesk's plan prices took few
    values: the audit's train-plan replay earned 0.022 on both)."""
    for overlap in _measured(name):
        assert overlap.answered == 0, overlap.line()


def _change(table: str, key: str, before: dict | None, after: dict | None) -> TargetChange:
    return TargetChange(table=table, id=key, before=before, after=after)


def test_change_keys_compare_new_rows_up_to_their_ids() -> None:
    """Two targets that insert the same order (with its item) under other new ids are the same
    work; an update is its row and the fields it changes."""

    def order(new: str, item: str) -> list[TargetChange]:
        return [
            _change("orders", new, None, {"id": new, "customer_id": "CUS-1", "status": "new"}),
            _change("order_items", item, None, {"id": item, "order_id": new, "qty": 2}),
            _change("products", "PRD-1", {"id": "PRD-1", "stock": 5}, {"id": "PRD-1", "stock": 3}),
        ]

    assert change_keys(order("ORD-9", "ITM-9")) == change_keys(order("ORD-7", "ITM-8"))
    fewer = _change("products", "PRD-1", {"id": "PRD-1", "stock": 5}, {"id": "PRD-1", "stock": 4})
    other = [*order("ORD-9", "ITM-9")[:2], fewer]
    assert change_keys(other) != change_keys(order("ORD-9", "ITM-9"))


def test_the_measure_finds_train_work_in_held_out_tasks() -> None:
    """The measure is not blind: train tasks measured against themselves are all covered, and a
    held-out task that is a train task under another split's name counts as reproduced."""
    env = envfactory.make("retail")
    train = env.tasks("train", 3, n=40)
    overlap = compare(train, train, "train")
    assert overlap.changing > 0 and overlap.asking > 0
    assert overlap.same_target == overlap.covered == overlap.changing
    assert overlap.answered == overlap.asking


def test_a_row_belongs_to_the_split_of_its_owner() -> None:
    """Retail orders belong to their customer's split and items to their order's, so one
    customer's tasks (cancel all their pending orders) stay in one split."""
    env = envfactory.make("retail")
    ownership = env.factory.ownership
    rows = env.factory.world.base.rows
    orders = env.factory.world.tables["orders"]
    items = env.factory.world.tables["order_items"]
    for item_id, values in list(rows["order_items"].items())[:50]:
        order_id = values[items.columns.index("order_id")]
        customer_id = rows["orders"][order_id][orders.columns.index("customer_id")]
        assert ownership.split("order_items", item_id) == ownership.split("customers", customer_id)
