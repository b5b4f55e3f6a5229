"""envfactory's SQLite world and tau2-bench's JSON approach agree, call for call: the same
results and errors, and the same records after every sequence of calls.

Each case starts the JSON side from the data with fresh copies of the records its calls can
reach (copying the whole database per case would only make the test slow); a final check shows
the shared rest was never written.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties import budget

from envfactory.peers.tau2.data import load, missing_reason
from envfactory.peers.tau2.environment import Tau2RetailEnvironment
from envfactory.peers.tau2.peer import call, normalise
from envfactory.peers.tau2.stores import SqlDocuments
from envfactory.peers.tau2.tasks import Imported
from envfactory.world.store import Store

Call = tuple[str, dict[str, Any]]


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    if (why := missing_reason()) is not None:  # set up before the conftest's skip
        pytest.skip(why)
    return normalise(load().db)


def _json_start(base: dict[str, Any], calls: Iterable[Call]) -> dict[str, Any]:
    """The JSON database with its own copies of the orders and users ``calls`` name."""
    orders = {a.get("order_id") for _, a in calls} & set(base["orders"])
    users = {a.get("user_id") for _, a in calls} | {base["orders"][o]["user_id"] for o in orders}
    users &= set(base["users"])
    return {
        "products": base["products"],
        "users": {**base["users"], **{u: copy.deepcopy(base["users"][u]) for u in users}},
        "orders": {**base["orders"], **{o: copy.deepcopy(base["orders"][o]) for o in orders}},
    }


def _ours(env: Tau2RetailEnvironment, store: Store, tool: str, args: dict[str, Any]) -> Any:
    result = env.world.tools[tool](store, args)
    return result.data if result.ok else f"Error: {result.error.message if result.error else ''}"


def _same(a: Any, b: Any) -> bool:
    return bool(json.loads(json.dumps(a)) == json.loads(json.dumps(b)))


def _agree(env: Tau2RetailEnvironment, base: dict[str, Any], calls: list[Call]) -> None:
    """Run ``calls`` on both sides; results, errors and every record either side wrote agree."""
    db = _json_start(base, calls)
    store = env.world.new_store()
    for tool, args in calls:
        ours, theirs = _ours(env, store, tool, args), call(db, tool, args)
        assert _same(ours, theirs), (tool, args, ours, theirs)
    docs = SqlDocuments(store)
    orders = {a.get("order_id") for _, a in calls} & set(base["orders"])
    users = {a.get("user_id") for _, a in calls} & set(base["users"])
    for table, keys in store.touched.items():
        if table == "payment_methods":
            users |= {base_user(base, k) for k in keys}
        elif table == "users":
            users |= keys
        else:
            orders |= {k.split("/")[0] for k in keys}
    users |= {base["orders"][o]["user_id"] for o in orders}
    for o in orders:
        assert docs.order(o) == db["orders"][o], o
    for u in users:
        assert docs.user(u) == db["users"][u], u
    store.close()


def base_user(base: dict[str, Any], method_id: str) -> str:
    return next(u for u, rec in base["users"].items() if method_id in rec["payment_methods"])


def test_every_gold_action_agrees(
    tau2: Tau2RetailEnvironment, imported: list[Imported], base: dict[str, Any]
) -> None:
    for m in imported:
        _agree(tau2, base, [(a["name"], a["arguments"]) for a in m.actions])
    assert base == normalise(load().db)  # the shared records were never written


def _calls() -> st.SearchStrategy[list[Call]]:
    """Calls of every tool on real ids of the data, with wrong values mixed in."""
    db = load().db
    orders = sorted(db["orders"])[:300]
    users = sorted(db["users"])[:150]
    items = sorted(v for p in db["products"].values() for v in p["variants"])
    methods = sorted(pm for u in db["users"].values() for pm in u["payment_methods"])
    order = st.sampled_from([*orders, "#W0000000"])
    by_status = {
        status: st.one_of(
            st.sampled_from([o for o in orders if db["orders"][o]["status"] == status]), order
        )
        for status in ("pending", "delivered")
    }
    user = st.sampled_from([*users, "nobody_1"])
    items_all = items
    item = st.sampled_from(items)

    def own(order_id: str) -> tuple[list[dict[str, Any]], list[str]]:
        """An order's items and its user's payment methods (plus some of other users')."""
        rec = db["orders"].get(order_id)
        if rec is None:
            return [], methods[:3]
        return rec["items"], sorted(db["users"][rec["user_id"]]["payment_methods"]) + methods[:2]

    def returns(order_id: str) -> st.SearchStrategy[Call]:
        items, pms = own(order_id)
        return st.fixed_dictionaries(
            {
                "order_id": st.just(order_id),
                "item_ids": st.lists(
                    st.sampled_from([it["item_id"] for it in items] or [items_all[0]]), max_size=3
                ),
                "payment_method_id": st.sampled_from(pms),
            }
        ).map(lambda a: ("return_delivered_order_items", a))

    def swap(name: str, status: str) -> st.SearchStrategy[Call]:
        """Position by position, an item of the order for a variant of its product."""

        def build(order_id: str) -> st.SearchStrategy[Call]:
            items, pms = own(order_id)
            if not items:
                return st.just(
                    (
                        name,
                        {
                            "order_id": order_id,
                            "item_ids": [],
                            "new_item_ids": [],
                            "payment_method_id": pms[0],
                        },
                    )
                )

            def with_new(picked: list[int]) -> st.SearchStrategy[Call]:
                news = [
                    st.sampled_from(sorted(db["products"][items[i]["product_id"]]["variants"]))
                    for i in picked
                ]
                return st.fixed_dictionaries(
                    {
                        "order_id": st.just(order_id),
                        "item_ids": st.just([items[i]["item_id"] for i in picked]),
                        "new_item_ids": st.tuples(*news).map(list),
                        "payment_method_id": st.sampled_from(pms),
                    }
                ).map(lambda a: (name, a))

            picks = st.lists(st.sampled_from(range(len(items))), min_size=1, max_size=3)
            return picks.flatmap(with_new)

        return by_status[status].flatmap(build)

    def switch(order_id: str) -> st.SearchStrategy[Call]:
        _, pms = own(order_id)
        return st.sampled_from(pms).map(
            lambda pm: (
                "modify_pending_order_payment",
                {"order_id": order_id, "payment_method_id": pm},
            )
        )

    address = {
        "address1": st.sampled_from(["1 Main St", "22 Oak Ave"]),
        "address2": st.just(""),
        "city": st.just("Austin"),
        "state": st.just("TX"),
        "country": st.just("USA"),
        "zip": st.sampled_from(["73301", "10001"]),
    }
    call = st.one_of(
        order.map(lambda o: ("get_order_details", {"order_id": o})),
        user.map(lambda u: ("get_user_details", {"user_id": u})),
        item.map(lambda i: ("get_item_details", {"item_id": i})),
        st.tuples(
            by_status["pending"],
            st.sampled_from(["no longer needed", "ordered by mistake", "bored"]),
        ).map(lambda t: ("cancel_pending_order", {"order_id": t[0], "reason": t[1]})),
        by_status["delivered"].flatmap(returns),
        swap("exchange_delivered_order_items", "delivered"),
        swap("modify_pending_order_items", "pending"),
        by_status["pending"].flatmap(switch),
        st.fixed_dictionaries({"order_id": order, **address}).map(
            lambda a: ("modify_pending_order_address", a)
        ),
        st.fixed_dictionaries({"user_id": user, **address}).map(
            lambda a: ("modify_user_address", a)
        ),
        st.sampled_from(["2 + 2", "(10.5 - 3) * 2", "7 // 2", "1 / 0", "2 ** 10", "x"]).map(
            lambda e: ("calculate", {"expression": e})
        ),
        st.just(("list_all_product_types", {})),
        st.sampled_from(sorted(db["products"])).map(
            lambda p: ("get_product_details", {"product_id": p})
        ),
        st.tuples(user, st.booleans()).map(
            lambda t: (
                "find_user_id_by_email",
                {"email": _email(db, t[0], t[1])},
            )
        ),
        st.tuples(user, st.sampled_from(["", "0"])).map(
            lambda t: ("find_user_id_by_name_zip", _name_zip(db, t[0], t[1]))
        ),
        st.just(("think", {"thought": "Which order?"})),
        st.just(("transfer_to_human_agents", {"summary": "The user wants a human."})),
    )
    return st.lists(call, min_size=1, max_size=12)


def _email(db: dict[str, Any], user_id: str, upper: bool) -> str:
    email = str(db["users"].get(user_id, {"email": "nobody@example.com"})["email"])
    return email.upper() if upper else email


def _name_zip(db: dict[str, Any], user_id: str, suffix: str) -> dict[str, str]:
    rec = db["users"].get(user_id)
    if rec is None:
        return {"first_name": "No", "last_name": "Body", "zip": "00000"}
    name = rec["name"]
    return {
        "first_name": name["first_name"].lower(),
        "last_name": name["last_name"],
        "zip": rec["address"]["zip"] + suffix,
    }


@budget(60, fixtures=True)
@given(calls=st.deferred(_calls))
def test_random_calls_agree(
    tau2: Tau2RetailEnvironment, base: dict[str, Any], calls: list[Call]
) -> None:
    _agree(tau2, base, calls)


def test_the_shared_records_stay_untouched(base: dict[str, Any]) -> None:
    assert base == normalise(load().db)
