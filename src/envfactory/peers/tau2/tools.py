"""The seventeen retail tools of tau2-bench, written from their documented behaviour.

Names, arguments, results, error messages and what each call writes follow tau2-bench's
retail toolkit, including two of its quirks that decide what a replay ends in:

- ``modify_pending_order_items`` gives every modified item the price and options of the *last*
  new item in the list (tau2 reuses its loop variable); the payment difference is computed per
  item, unrounded.
- ``think`` is commented out in tau2-bench's current toolkit; it is kept here as a no-op.

One difference: tau2 changes its in-memory records as it goes, so a call that fails half-way
(only possible on inconsistent data) keeps its first changes; here every call is a transaction.

Each tool takes a :class:`~.stores.Documents` and keyword arguments and returns what tau2
returns; failures raise :class:`ToolFailure` with tau2's message.
"""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable
from typing import Any

from envfactory.contract.results import ToolFailure
from envfactory.peers.tau2.documents import Doc
from envfactory.peers.tau2.stores import Documents

Tau2Tool = Callable[..., Any]

CANCEL_REASONS = ("no longer needed", "ordered by mistake")


def _fail(message: str, rule: str | None = None) -> ToolFailure:
    if rule is None:
        return ToolFailure("precondition_failed", message)
    return ToolFailure("rule_violation", message, rule=rule)


def _missing(message: str) -> ToolFailure:
    return ToolFailure("not_found", message)


def _order(db: Documents, order_id: str) -> Doc:
    order = db.order(order_id)
    if order is None:
        raise _missing("Order not found")
    return order


def _user(db: Documents, user_id: str) -> Doc:
    user = db.user(user_id)
    if user is None:
        raise _missing("User not found")
    return user


def _product(db: Documents, product_id: str) -> Doc:
    product = db.product(product_id)
    if product is None:
        raise _missing("Product not found")
    return product


def _variant(db: Documents, product_id: str, item_id: str) -> Doc:
    if not db.has_product(product_id):
        raise _missing("Product not found")
    variant = db.variant(product_id, item_id)
    if variant is None:
        raise _missing("Variant not found")
    return variant


def _payment_method(db: Documents, user_id: str, payment_method_id: str) -> Doc:
    method: Doc | None = _user(db, user_id)["payment_methods"].get(payment_method_id)
    if method is None:
        raise _missing("Payment method not found")
    return method


def _is_gift_card(method: Doc) -> bool:
    return bool(method["source"] == "gift_card")


def _too_many(order: Doc, item_ids: list[str]) -> str | None:
    """An id asked for more often than the order holds it (duplicates are allowed)."""
    held = [it["item_id"] for it in order["items"]]
    return next((i for i in item_ids if item_ids.count(i) > held.count(i)), None)


def _first_item(order: Doc, item_id: str) -> Doc:
    item: Doc | None = next((it for it in order["items"] if it["item_id"] == item_id), None)
    if item is None:
        raise _missing(f"Item {item_id} not found")
    return item


# -- reads -------------------------------------------------------------------------------------


def find_user_id_by_email(db: Documents, email: str) -> str:
    for user in db.users():
        if user["email"].lower() == email.lower():
            return str(user["user_id"])
    raise _missing("User not found")


def find_user_id_by_name_zip(db: Documents, first_name: str, last_name: str, zip: str) -> str:
    for user in db.users():
        if (
            user["name"]["first_name"].lower() == first_name.lower()
            and user["name"]["last_name"].lower() == last_name.lower()
            and user["address"]["zip"] == zip
        ):
            return str(user["user_id"])
    raise _missing("User not found")


def get_user_details(db: Documents, user_id: str) -> Doc:
    return _user(db, user_id)


def get_order_details(db: Documents, order_id: str) -> Doc:
    return _order(db, order_id)


def get_product_details(db: Documents, product_id: str) -> Doc:
    return _product(db, product_id)


def get_item_details(db: Documents, item_id: str) -> Doc:
    item = db.item(item_id)
    if item is None:
        raise _missing("Item not found")
    return item


def list_all_product_types(db: Documents) -> str:
    return json.dumps(dict(db.product_names()), sort_keys=True)


_OPS: dict[type[ast.AST], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}


def _arith(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)  # the characters allowed leave no room for True or False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _arith(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _arith(node.left), _arith(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise _fail("Exponent too large")
        return float(_OPS[type(node.op)](left, right))
    raise _fail("Invalid expression")


def calculate(db: Documents, expression: str) -> str:
    """Arithmetic on numbers with + - * / and parentheses, rounded to cents (without eval)."""
    if not all(ch in "0123456789+-*/(). " for ch in expression):
        raise _fail("Invalid characters in expression")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
        value = _arith(tree.body)
    except SyntaxError:
        raise _fail("Invalid expression") from None
    except ZeroDivisionError:
        raise _fail("division by zero") from None
    except OverflowError:
        raise _fail("Result too large") from None
    return str(round(value, 2))


def think(db: Documents, thought: str) -> str:
    return ""


def transfer_to_human_agents(db: Documents, summary: str) -> str:
    return "Transfer successful"


# -- writes ------------------------------------------------------------------------------------


def cancel_pending_order(db: Documents, order_id: str, reason: str) -> Doc:
    order = _order(db, order_id)
    if order["status"] != "pending":
        raise _fail("Non-pending order cannot be cancelled", "cancel_pending_order")
    if reason not in CANCEL_REASONS:
        raise _fail("Invalid reason", "cancel_pending_order")
    refunds = []
    for payment in order["payment_history"]:
        pid = payment["payment_method_id"]
        refunds.append(
            {"transaction_type": "refund", "amount": payment["amount"], "payment_method_id": pid}
        )
        method = _payment_method(db, order["user_id"], pid)
        if _is_gift_card(method):  # refunded to a gift card at once
            method["balance"] = round(method["balance"] + payment["amount"], 2)
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    return order


def _price_difference(
    db: Documents, order: Doc, item_ids: list[str], new_item_ids: list[str], rule: str
) -> tuple[float, Doc | None]:
    """The summed price difference of swapping items (per position), and the last new variant.
    A pending order's items must change (``modify_items``); an exchange may keep one."""
    diff: float = 0
    variant: Doc | None = None
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        if rule == "modify_items" and item_id == new_item_id:
            raise _fail("The new item id should be different from the old item id", rule)
        item = _first_item(order, item_id)
        variant = _variant(db, item["product_id"], new_item_id)
        if not variant["available"]:
            raise _fail(f"New item {new_item_id} not found or available", rule)
        diff += variant["price"] - item["price"]
    return diff, variant


# tau2's messages when a swap is refused: wrong status, an item not held, lists of two lengths.
_EXCHANGE = (
    "Non-delivered order cannot be exchanged",
    "Number of {} not found.",
    "The number of items to be exchanged should match.",
)
_MODIFY = (
    "Non-pending order cannot be modified",
    "{} not found",
    "The number of items to be exchanged should match",
)


def _swap(
    db: Documents,
    order_id: str,
    item_ids: list[str],
    new_item_ids: list[str],
    status: str,
    rule: str,
    messages: tuple[str, str, str],
) -> tuple[Doc, float, Doc | None]:
    """The checks an exchange and an item change share; the order, the price difference and
    the last new variant."""
    order = _order(db, order_id)
    if order["status"] != status:
        raise _fail(messages[0], rule)
    missing = _too_many(order, item_ids)
    if missing is not None:
        raise _missing(messages[1].format(missing))
    if len(item_ids) != len(new_item_ids):
        raise ToolFailure("invalid_arguments", messages[2])
    diff, last = _price_difference(db, order, item_ids, new_item_ids, rule)
    return order, diff, last


def exchange_delivered_order_items(
    db: Documents,
    order_id: str,
    item_ids: list[str],
    new_item_ids: list[str],
    payment_method_id: str,
) -> Doc:
    rule = "exchange_delivered_order"
    order, diff, _ = _swap(db, order_id, item_ids, new_item_ids, "delivered", rule, _EXCHANGE)
    diff = round(diff, 2)
    method = _payment_method(db, order["user_id"], payment_method_id)
    if _is_gift_card(method) and method["balance"] < diff:
        raise _fail("Insufficient gift card balance to pay for the price difference", rule)
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = diff
    return order


def _address(
    address1: str, address2: str, city: str, state: str, country: str, zip: str
) -> dict[str, str]:
    return {
        "address1": address1,
        "address2": address2,
        "city": city,
        "country": country,
        "state": state,
        "zip": zip,
    }


def modify_pending_order_address(
    db: Documents,
    order_id: str,
    address1: str,
    address2: str,
    city: str,
    state: str,
    country: str,
    zip: str,
) -> Doc:
    order = _order(db, order_id)
    if "pending" not in order["status"]:
        raise _fail("Non-pending order cannot be modified", "modify_pending_order")
    order["address"] = _address(address1, address2, city, state, country, zip)
    return order


def modify_pending_order_items(
    db: Documents,
    order_id: str,
    item_ids: list[str],
    new_item_ids: list[str],
    payment_method_id: str,
) -> Doc:
    order, diff, last = _swap(
        db, order_id, item_ids, new_item_ids, "pending", "modify_items", _MODIFY
    )
    method = _payment_method(db, order["user_id"], payment_method_id)
    if _is_gift_card(method) and method["balance"] < diff:
        raise _fail("Insufficient gift card balance to pay for the new item", "modify_items")
    order["payment_history"].append(
        {
            "transaction_type": "payment" if diff > 0 else "refund",
            "amount": abs(diff),
            "payment_method_id": payment_method_id,
        }
    )
    if _is_gift_card(method):
        method["balance"] = round(method["balance"] - diff, 2)
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        item = _first_item(order, item_id)
        item["item_id"] = new_item_id
        if last is not None:  # tau2's quirk: the last new variant's price and options
            item["price"] = last["price"]
            item["options"] = dict(last["options"])
    order["status"] = "pending (item modified)"
    return order


def modify_pending_order_payment(db: Documents, order_id: str, payment_method_id: str) -> Doc:
    order = _order(db, order_id)
    if "pending" not in order["status"]:
        raise _fail("Non-pending order cannot be modified", "modify_pending_order")
    method = _payment_method(db, order["user_id"], payment_method_id)
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise _fail("There should be exactly one payment for a pending order", "modify_payment")
    if history[0]["payment_method_id"] == payment_method_id:
        raise _fail(
            "The new payment method should be different from the current one", "modify_payment"
        )
    amount = history[0]["amount"]
    if _is_gift_card(method) and method["balance"] < amount:
        raise _fail("Insufficient gift card balance to pay for the order", "modify_payment")
    old_id = history[0]["payment_method_id"]
    history.extend(
        [
            {
                "transaction_type": "payment",
                "amount": amount,
                "payment_method_id": payment_method_id,
            },
            {"transaction_type": "refund", "amount": amount, "payment_method_id": old_id},
        ]
    )
    if _is_gift_card(method):
        method["balance"] = round(method["balance"] - amount, 2)
    old = _payment_method(db, order["user_id"], old_id)
    if _is_gift_card(old):
        old["balance"] = round(old["balance"] + amount, 2)
    return order


def modify_user_address(
    db: Documents,
    user_id: str,
    address1: str,
    address2: str,
    city: str,
    state: str,
    country: str,
    zip: str,
) -> Doc:
    user = _user(db, user_id)
    user["address"] = _address(address1, address2, city, state, country, zip)
    return user


def return_delivered_order_items(
    db: Documents, order_id: str, item_ids: list[str], payment_method_id: str
) -> Doc:
    order = _order(db, order_id)
    if order["status"] != "delivered":
        raise _fail("Non-delivered order cannot be returned", "return_delivered_order")
    method = _payment_method(db, _user(db, order["user_id"])["user_id"], payment_method_id)
    if (
        not _is_gift_card(method)
        and payment_method_id != order["payment_history"][0]["payment_method_id"]
    ):
        raise _fail(
            "Payment method should be the original payment method", "return_delivered_order"
        )
    if _too_many(order, item_ids) is not None:
        raise _missing("Some item not found")
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    return order


TOOLS: dict[str, Tau2Tool] = {
    "calculate": calculate,
    "cancel_pending_order": cancel_pending_order,
    "exchange_delivered_order_items": exchange_delivered_order_items,
    "find_user_id_by_name_zip": find_user_id_by_name_zip,
    "find_user_id_by_email": find_user_id_by_email,
    "get_order_details": get_order_details,
    "get_product_details": get_product_details,
    "get_item_details": get_item_details,
    "get_user_details": get_user_details,
    "list_all_product_types": list_all_product_types,
    "modify_pending_order_address": modify_pending_order_address,
    "modify_pending_order_items": modify_pending_order_items,
    "modify_pending_order_payment": modify_pending_order_payment,
    "modify_user_address": modify_user_address,
    "return_delivered_order_items": return_delivered_order_items,
    "think": think,
    "transfer_to_human_agents": transfer_to_human_agents,
}
WRITES = frozenset(
    {
        "cancel_pending_order",
        "exchange_delivered_order_items",
        "modify_pending_order_address",
        "modify_pending_order_items",
        "modify_pending_order_payment",
        "modify_user_address",
        "return_delivered_order_items",
    }
)
ENFORCED_RULES = (
    "cancel_pending_order",
    "modify_pending_order",
    "modify_payment",
    "modify_items",
    "return_delivered_order",
    "exchange_delivered_order",
)
