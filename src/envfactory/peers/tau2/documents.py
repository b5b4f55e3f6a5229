"""tau2's nested records (users, products, orders) as relational rows, and back.

tau2-bench keeps its retail database as one JSON document: users with payment methods,
products with variants, orders with item lists, fulfillments and payment histories. Here each
record becomes rows of SQLite tables; the functions below are the whole mapping, both ways, and
round-trip exactly (a test checks every record of the data). Lists keep their order through a
``position`` column; lists of ids and option maps are stored as JSON text.

Child rows have ids made from their parent's id and their position (``#W2378156/item0``), so
the same state has the same rows whatever order the tools ran in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from envfactory.world.tables import Row

Doc = dict[str, Any]
Rows = dict[str, list[Row]]

ADDRESS = ("address1", "address2", "city", "country", "state", "zip")
ORDER_OPTIONAL = (
    "cancel_reason",
    "exchange_items",
    "exchange_new_items",
    "exchange_payment_method_id",
    "exchange_price_difference",
    "return_items",
    "return_payment_method_id",
)
_ID_LISTS = ("exchange_items", "exchange_new_items", "return_items")
PAYMENT_KEYS = {
    "credit_card": ("source", "id", "brand", "last_four"),
    "gift_card": ("source", "id", "balance"),
    "paypal": ("source", "id"),
}


class DocumentError(ValueError):
    """A record of the data does not have the shape tau2's data model gives it."""


_COMPACT = json.JSONEncoder(separators=(",", ":"), check_circular=False)  # trees only


def _text(value: Any) -> str | None:
    return None if value is None else _COMPACT.encode(value)


def _parse(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def child_id(parent: str, kind: str, position: int) -> str:
    return f"{parent}/{kind}{position}"


def _order_child(oid: str, kind: str, position: int) -> Row:
    """The columns every row of an order's lists starts with."""
    return {"id": child_id(oid, kind, position), "order_id": oid, "position": position}


def summary(options: dict[str, str]) -> str:
    """Options as words: ``{'color': 'red', 'size': 'M'}`` -> ``color red, size M``."""
    return ", ".join(f"{k} {v}" for k, v in options.items())


# -- records to rows ---------------------------------------------------------------------------


USER_TABLES = ("users", "payment_methods")
ORDER_TABLES = ("orders", "order_items", "fulfillments", "payment_history")


def user_rows(user: Doc, position: int, tables: tuple[str, ...] = USER_TABLES) -> Rows:
    """A user and its payment methods (its order list lives on the orders' rows); only the
    ``tables`` named."""
    uid = user["user_id"]
    out: Rows = {}
    if "users" in tables:
        row: Row = {
            "id": uid,
            "position": position,
            "first_name": user["name"]["first_name"],
            "last_name": user["name"]["last_name"],
            "email": user["email"],
            **{k: user["address"][k] for k in ADDRESS},
        }
        out["users"] = [row]
    out |= part_rows(uid, user, USER_PARTS, tables)
    return out


def payment_method_row(uid: str, i: int, entry: tuple[str, Doc]) -> Row:
    key, pm = entry
    source = pm.get("source")
    if source not in PAYMENT_KEYS or set(pm) != set(PAYMENT_KEYS[source]) or pm["id"] != key:
        raise DocumentError(f"user {uid}: payment method {key!r} has an unknown shape")
    return {
        "id": key,
        "user_id": uid,
        "position": i,
        "source": source,
        "brand": pm.get("brand"),
        "last_four": pm.get("last_four"),
        "balance": None if pm.get("balance") is None else float(pm["balance"]),
    }


def product_rows(product: Doc, position: int) -> Rows:
    pid = product["product_id"]
    variants = []
    for i, (key, v) in enumerate(product["variants"].items()):
        if v["item_id"] != key:
            raise DocumentError(f"product {pid}: variant {key!r} has item id {v['item_id']!r}")
        variants.append(
            {
                "id": key,
                "product_id": pid,
                "position": i,
                "options": _text(v["options"]),
                "summary": summary(v["options"]),
                "available": bool(v["available"]),
                "price": float(v["price"]),
            }
        )
    return {
        "products": [{"id": pid, "position": position, "name": product["name"]}],
        "variants": variants,
    }


def order_rows(order: Doc, user_position: int, tables: tuple[str, ...] = ORDER_TABLES) -> Rows:
    """An order, its items, fulfillments and payment history; only the ``tables`` named."""
    oid = order["order_id"]
    out: Rows = {}
    if "orders" in tables:
        row: Row = {"id": oid, "user_id": order["user_id"], "user_position": user_position}
        row |= {k: order["address"][k] for k in ADDRESS}
        row["status"] = order["status"]
        for key in ORDER_OPTIONAL:
            value = order.get(key)
            row[key] = _text(value) if key in _ID_LISTS else value
        if row["exchange_price_difference"] is not None:
            row["exchange_price_difference"] = float(row["exchange_price_difference"])
        out["orders"] = [row]
    out |= part_rows(oid, order, ORDER_PARTS, tables)
    return out


def item_row(oid: str, i: int, it: Doc) -> Row:
    return {
        **_order_child(oid, "item", i),
        "name": it["name"],
        "product_id": it["product_id"],
        "item_id": it["item_id"],
        "price": float(it["price"]),
        "options": _text(it["options"]),
    }


def fulfillment_row(oid: str, i: int, f: Doc) -> Row:
    return {
        **_order_child(oid, "fulfillment", i),
        "tracking_ids": _text(f["tracking_id"]),
        "item_ids": _text(f["item_ids"]),
    }


def payment_row(oid: str, i: int, p: Doc) -> Row:
    return {
        **_order_child(oid, "payment", i),
        "transaction_type": p["transaction_type"],
        "amount": float(p["amount"]),
        "payment_method_id": p["payment_method_id"],
    }


# A record's lists kept as child rows: table -> (the record's field, one element's row, made
# from the record's id, the element's position and the element).
Parts = dict[str, tuple[str, Callable[[str, int, Any], Row]]]
USER_PARTS: Parts = {"payment_methods": ("payment_methods", payment_method_row)}
ORDER_PARTS: Parts = {
    "order_items": ("items", item_row),
    "fulfillments": ("fulfillments", fulfillment_row),
    "payment_history": ("payment_history", payment_row),
}


def elements(value: list[Any] | Doc) -> list[Any]:
    """A record's list as its rows hold it, in order: a dict's (key, value) pairs."""
    return list(value.items()) if isinstance(value, dict) else value


def part_rows(parent: str, doc: Doc, parts: Parts, tables: Iterable[str] | None = None) -> Rows:
    """The rows of record ``doc``'s lists (``parent``: its id), of the ``tables`` named (all
    of ``parts`` by default)."""
    return {
        table: [row(parent, i, e) for i, e in enumerate(elements(doc[field]))]
        for table, (field, row) in parts.items()
        if tables is None or table in tables
    }


def database_rows(db: Doc) -> Rows:
    """Every row of tau2's retail database, by table."""
    out: Rows = {
        t: []
        for t in (
            "users",
            "payment_methods",
            "products",
            "variants",
            "orders",
            "order_items",
            "fulfillments",
            "payment_history",
        )
    }
    placed: dict[str, tuple[str, int]] = {}
    for i, user in enumerate(db["users"].values()):
        _extend(out, user_rows(user, i))
        for j, oid in enumerate(user["orders"]):
            placed[oid] = (user["user_id"], j)
    for i, product in enumerate(db["products"].values()):
        _extend(out, product_rows(product, i))
    for oid, order in db["orders"].items():
        owner, position = placed.get(oid, (None, -1))
        if owner != order["user_id"] or oid != order["order_id"]:
            raise DocumentError(f"order {oid} is not in its user's order list")
        _extend(out, order_rows(order, position))
    if len(placed) != len(db["orders"]):
        raise DocumentError("a user's order list names an order that does not exist")
    return out


def _extend(out: Rows, rows: Rows) -> None:
    for table, found in rows.items():
        out[table].extend(found)


# -- rows to records ---------------------------------------------------------------------------


def address(row: Row) -> Doc:
    return {k: row[k] for k in ADDRESS}


def payment_method(row: Row) -> Doc:
    return {k: row[k] for k in PAYMENT_KEYS[row["source"]]}


def user_doc(row: Row, methods: list[Row], orders: list[str]) -> Doc:
    return {
        "user_id": row["id"],
        "name": {"first_name": row["first_name"], "last_name": row["last_name"]},
        "address": address(row),
        "email": row["email"],
        "payment_methods": {m["id"]: payment_method(m) for m in methods},
        "orders": list(orders),
    }


def variant_doc(row: Row) -> Doc:
    return {
        "item_id": row["id"],
        "options": _parse(row["options"]),
        "available": row["available"],
        "price": row["price"],
    }


def product_doc(row: Row, variants: list[Row]) -> Doc:
    return {
        "name": row["name"],
        "product_id": row["id"],
        "variants": {v["id"]: variant_doc(v) for v in variants},
    }


def order_doc(row: Row, items: list[Row], fulfillments: list[Row], payments: list[Row]) -> Doc:
    doc: Doc = {
        "order_id": row["id"],
        "user_id": row["user_id"],
        "address": address(row),
        "items": [
            {
                "name": it["name"],
                "product_id": it["product_id"],
                "item_id": it["item_id"],
                "price": it["price"],
                "options": _parse(it["options"]),
            }
            for it in items
        ],
        "status": row["status"],
        "fulfillments": [
            {"tracking_id": _parse(f["tracking_ids"]), "item_ids": _parse(f["item_ids"])}
            for f in fulfillments
        ],
        "payment_history": [
            {
                "transaction_type": p["transaction_type"],
                "amount": p["amount"],
                "payment_method_id": p["payment_method_id"],
            }
            for p in payments
        ],
    }
    for key in ORDER_OPTIONAL:
        doc[key] = _parse(row[key]) if key in _ID_LISTS else row[key]
    return doc
