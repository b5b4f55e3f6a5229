"""Inserted rows match up to one consistent renaming of new ids, and only so."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties import budget

from envfactory.contract.tasks import TargetChange
from envfactory.verify import matching
from envfactory.verify.matching import match_state
from envfactory.world.state import RowChange

Row = dict[str, Any]


def _target(orders: list[Row], items: list[Row]) -> list[TargetChange]:
    return [
        *(TargetChange(table="orders", id=r["id"], before=None, after=r) for r in orders),
        *(TargetChange(table="items", id=r["id"], before=None, after=r) for r in items),
    ]


def _made(target: list[TargetChange], rename: dict[str, str]) -> list[RowChange]:
    """The target's inserts as an agent would make them: every new id renamed."""

    def renamed(row: Row) -> Row:
        return {k: rename.get(v, v) if isinstance(v, str) else v for k, v in row.items()}

    return [RowChange(t.table, rename[t.id], None, renamed(t.after or {})) for t in target]


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[Row], list[Row], random.Random]:
    """Orders for distinct customers, each with items of distinct products (so exactly one
    renaming maps the target onto a faithful copy)."""
    n_orders = draw(st.integers(1, 5))
    per_order = draw(st.lists(st.integers(0, 3), min_size=n_orders, max_size=n_orders))
    orders = [{"id": f"ORD-{100 + i}", "customer": f"CUS-{i}"} for i in range(n_orders)]
    lines = [(o["id"], k) for o, count in zip(orders, per_order, strict=True) for k in range(count)]
    items = [
        {"id": f"ITM-{n}", "order_id": order, "product": f"PRD-{order}-{k}"}
        for n, (order, k) in enumerate(lines)
    ]
    return orders, items, draw(st.randoms(use_true_random=False))


def _renaming(target: list[TargetChange], rnd: random.Random) -> dict[str, str]:
    ids = [t.id for t in target]
    fresh = [f"NEW-{n}" for n in range(len(ids) + 3)]
    rnd.shuffle(fresh)
    return dict(zip(ids, fresh, strict=False))


@given(worlds())
@budget(150)
def test_a_faithful_copy_matches_under_any_renaming(
    world: tuple[list[Row], list[Row], random.Random],
) -> None:
    orders, items, rnd = world
    target = _target(orders, items)
    made = _made(target, _renaming(target, rnd))
    rnd.shuffle(made)  # the agent's call order is its own
    assert match_state(target, made) == (len(target), [], [])


@given(worlds())
@budget(150)
def test_an_item_on_the_wrong_order_does_not_match(
    world: tuple[list[Row], list[Row], random.Random],
) -> None:
    orders, items, rnd = world
    if len(orders) < 2 or not items:
        return
    target = _target(orders, items)
    rename = _renaming(target, rnd)
    made = _made(target, rename)
    victim = rnd.choice([c for c in made if c.table == "items"])
    assert victim.after is not None
    others = [rename[o["id"]] for o in orders if rename[o["id"]] != victim.after["order_id"]]
    victim.after["order_id"] = rnd.choice(others)  # the same product, another customer's order
    matched, missing, collateral = match_state(target, made)
    assert matched < len(target) and missing and collateral


def test_products_swapped_between_two_new_orders_do_not_match() -> None:
    """Reorder X for Ann and Y for Bob; the agent orders Y for Ann and X for Bob. Every row has
    a twin somewhere, but no renaming makes the two states equal."""
    orders = [{"id": "ORD-1", "customer": "ann"}, {"id": "ORD-2", "customer": "bob"}]
    items = [
        {"id": "ITM-1", "order_id": "ORD-1", "product": "X"},
        {"id": "ITM-2", "order_id": "ORD-2", "product": "Y"},
    ]
    target = _target(orders, items)
    made = _made(target, {"ORD-1": "ORD-1", "ORD-2": "ORD-2", "ITM-1": "ITM-1", "ITM-2": "ITM-2"})
    made[2].after["product"], made[3].after["product"] = "Y", "X"  # type: ignore[index]
    matched, missing, collateral = match_state(target, made)
    assert matched == 2 and len(missing) == 2 and len(collateral) == 2


def test_updates_that_point_at_a_new_row_follow_the_renaming() -> None:
    order = {"id": "ORD-9", "customer": "ann"}
    before = {"id": "CUS-1", "last_order": None}
    target = [
        TargetChange(table="orders", id="ORD-9", before=None, after=order),
        TargetChange(
            table="customers", id="CUS-1", before=before, after={**before, "last_order": "ORD-9"}
        ),
    ]
    ok = [
        RowChange("orders", "ORD-7", None, {**order, "id": "ORD-7"}),
        RowChange("customers", "CUS-1", before, {**before, "last_order": "ORD-7"}),
    ]
    assert match_state(target, ok) == (2, [], [])
    stale = [ok[0], RowChange("customers", "CUS-1", before, {**before, "last_order": "ORD-9"})]
    assert match_state(target, stale)[0] < 2


def test_a_search_cut_short_undercounts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its budget the search keeps the best it found: never a match that is not there."""
    orders = [{"id": f"ORD-{i}", "customer": f"c{i}"} for i in range(4)]
    target = _target(orders, [])
    made = _made(target, {o["id"]: f"NEW-{o['id']}" for o in orders})
    assert match_state(target, made)[0] == 4
    monkeypatch.setattr(matching, "SEARCH_BUDGET", 3)
    matched, missing, collateral = match_state(target, made)
    assert matched < 4 and len(missing) == 4 - matched and len(collateral) == 4 - matched
