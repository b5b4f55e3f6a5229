"""The retail tools behave as tau2-bench's: results, error messages, the rules they enforce,
and the quirks a replay depends on."""

from __future__ import annotations

import json
from typing import Any

import pytest

from envfactory.contract.actions import ToolCall
from envfactory.contract.results import ToolResult
from envfactory.peers.tau2.data import load
from envfactory.peers.tau2.environment import Tau2RetailEnvironment
from envfactory.world.store import Store

PENDING = "#W5918442"  # sofia_rossi_8776, two items of products with other variants
DELIVERED = "#W4817420"  # ava_moore_2033, paid with gift_card_8168843
PROCESSED = "#W2611340"


@pytest.fixture
def store(tau2: Tau2RetailEnvironment) -> Store:
    return tau2.world.new_store()


def call(env: Tau2RetailEnvironment, store: Store, tool: str, **args: Any) -> ToolResult:
    return env.world.tools[tool](store, args)


def test_reads_return_tau2s_records(tau2: Tau2RetailEnvironment, store: Store) -> None:
    db = load().db
    order = call(tau2, store, "get_order_details", order_id=DELIVERED).data
    assert list(order)[:7] == list(db["orders"][DELIVERED])
    assert order["cancel_reason"] is None and order["return_items"] is None
    user = call(tau2, store, "get_user_details", user_id="ava_moore_2033").data
    assert user == db["users"]["ava_moore_2033"]
    types = json.loads(call(tau2, store, "list_all_product_types").data)
    assert len(types) == 50 and list(types) == sorted(types)
    item = call(tau2, store, "get_item_details", item_id=order["items"][0]["item_id"]).data
    assert set(item) == {"item_id", "options", "available", "price"}
    assert call(tau2, store, "think", thought="hm").data == ""
    assert call(tau2, store, "transfer_to_human_agents", summary="x").data == "Transfer successful"


def test_user_look_ups(tau2: Tau2RetailEnvironment, store: Store) -> None:
    found = call(
        tau2, store, "find_user_id_by_name_zip", first_name="AVA", last_name="moore", zip="78234"
    )
    assert found.data == "ava_moore_2033"
    wrong_zip = call(
        tau2, store, "find_user_id_by_name_zip", first_name="Ava", last_name="Moore", zip="7823"
    )
    assert wrong_zip.error is not None and wrong_zip.error.message == "User not found"
    email = load().db["users"]["ava_moore_2033"]["email"]
    assert call(tau2, store, "find_user_id_by_email", email=email.upper()).data == "ava_moore_2033"


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("2 + 2", "4.0"),
        ("(10.5 - 3) * 2", "15.0"),
        ("10 / 4", "2.5"),
        ("7 // 2", "3.0"),
        ("2 ** 10", "1024.0"),
    ],
)
def test_calculate(tau2: Tau2RetailEnvironment, store: Store, expression: str, result: str) -> None:
    assert call(tau2, store, "calculate", expression=expression).data == result


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("import os", "Invalid characters in expression"),
        ("1 / 0", "division by zero"),
        ("2 +", "Invalid expression"),
        ("9 ** 9 ** 9", "Exponent too large"),
    ],
)
def test_calculate_refuses(
    tau2: Tau2RetailEnvironment, store: Store, expression: str, message: str
) -> None:
    error = call(tau2, store, "calculate", expression=expression).error
    assert error is not None and error.message == message


ADDRESS = {"address1": "a", "address2": "", "city": "c", "state": "s", "country": "USA", "zip": "1"}
CARD = "credit_card_5051208"
REFUSED = [
    ("cancel_pending_order", {"order_id": PROCESSED, "reason": "no longer needed"},
     "Non-pending order cannot be cancelled", "cancel_pending_order"),
    ("cancel_pending_order", {"order_id": PENDING, "reason": "too slow"},
     "Invalid reason", "cancel_pending_order"),
    ("cancel_pending_order", {"order_id": "#W0", "reason": "no longer needed"},
     "Order not found", None),
    ("return_delivered_order_items",
     {"order_id": PENDING, "item_ids": [], "payment_method_id": "x"},
     "Non-delivered order cannot be returned", "return_delivered_order"),
    ("exchange_delivered_order_items",
     {"order_id": DELIVERED, "item_ids": ["6777246137"], "new_item_ids": [],
      "payment_method_id": "gift_card_8168843"},
     "The number of items to be exchanged should match.", None),
    ("modify_pending_order_payment", {"order_id": PENDING, "payment_method_id": CARD},
     "The new payment method should be different from the current one", "modify_payment"),
    ("modify_pending_order_items",
     {"order_id": PENDING, "item_ids": ["1725100896"], "new_item_ids": ["1725100896"],
      "payment_method_id": CARD},
     "The new item id should be different from the old item id", "modify_items"),
    ("modify_pending_order_address", {"order_id": DELIVERED, **ADDRESS},
     "Non-pending order cannot be modified", "modify_pending_order"),
]  # fmt: skip


@pytest.mark.parametrize(("tool", "args", "message", "rule"), REFUSED)
def test_errors_carry_tau2s_messages_and_the_rule(
    tau2: Tau2RetailEnvironment,
    store: Store,
    tool: str,
    args: dict[str, Any],
    message: str,
    rule: str | None,
) -> None:
    result = tau2.world.tools[tool](store, args)
    assert result.error is not None and result.error.message == message
    assert result.error.rule == rule
    if rule is not None:
        assert result.error.code == "rule_violation"
    assert not store.changes()


def test_modifying_two_items_gives_both_the_last_ones_price(
    tau2: Tau2RetailEnvironment, store: Store
) -> None:
    """tau2's quirk: every modified item takes the price and options of the last new item; the
    payment difference is still the sum of the two differences."""
    order = call(tau2, store, "get_order_details", order_id=PENDING).data
    old = {it["item_id"]: it["price"] for it in order["items"]}
    swaps = [("1725100896", "9007697085", 318.96), ("5312063289", "6843647669", 180.1)]
    result = call(
        tau2,
        store,
        "modify_pending_order_items",
        order_id=PENDING,
        item_ids=[a for a, _, _ in swaps],
        new_item_ids=[b for _, b, _ in swaps],
        payment_method_id="credit_card_5051208",
    ).data
    prices = {it["item_id"]: it["price"] for it in result["items"]}
    assert prices["9007697085"] == prices["6843647669"] == 180.1
    diff = sum(new - old[a] for a, _, new in swaps)
    assert result["payment_history"][-1]["amount"] == pytest.approx(abs(diff))
    assert result["status"] == "pending (item modified)"
    again = call(
        tau2, store, "modify_pending_order_items", order_id=PENDING, item_ids=["9007697085"],
        new_item_ids=["1725100896"], payment_method_id="credit_card_5051208",
    )  # fmt: skip
    assert again.error is not None and again.error.rule == "modify_items"  # only once


def test_a_cancel_refunds_a_gift_card_at_once(tau2: Tau2RetailEnvironment, store: Store) -> None:
    db = load().db
    order = next(
        o
        for o in db["orders"].values()
        if o["status"] == "pending"
        and o["payment_history"][0]["payment_method_id"].startswith("gift")
    )
    pm = order["payment_history"][0]["payment_method_id"]
    before = db["users"][order["user_id"]]["payment_methods"][pm]["balance"]
    done = call(
        tau2, store, "cancel_pending_order", order_id=order["order_id"], reason="ordered by mistake"
    )
    assert done.data["status"] == "cancelled" and done.data["cancel_reason"] == "ordered by mistake"
    assert done.data["payment_history"][-1]["transaction_type"] == "refund"
    user = call(tau2, store, "get_user_details", user_id=order["user_id"]).data
    amount = order["payment_history"][0]["amount"]
    assert user["payment_methods"][pm]["balance"] == round(before + amount, 2)


def test_list_arguments_are_checked(tau2: Tau2RetailEnvironment) -> None:
    ep = tau2.episode()
    ep.reset(tau2.task("train", 1, 0))
    obs = ep.step(
        ToolCall(
            tool="return_delivered_order_items",
            arguments={"order_id": DELIVERED, "item_ids": "6777246137", "payment_method_id": "x"},
        )
    )
    assert obs.error is not None and obs.error.code == "invalid_arguments"
    assert "'item_ids' must be a list" in obs.error.message
    obs = ep.step(
        ToolCall(
            tool="return_delivered_order_items",
            arguments={"order_id": DELIVERED, "item_ids": [1], "payment_method_id": "x"},
        )
    )
    assert obs.error is not None and "'item_ids[0]' must be a string" in obs.error.message
