"""Two homes for tau2's records, behind one interface the retail tools are written against.

:class:`SqlDocuments` assembles records from an episode's SQLite rows and writes back only the
rows a tool changed (through the store, so hashing and verification see them).
:class:`JsonDocuments` is tau2-bench's own approach: the records are the JSON document itself,
changed in place. The second one exists to compare with (the benchmark) and to cross-check the
first (the tests); the tools' behaviour is written once, in :mod:`.tools`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from envfactory.peers.tau2.documents import (
    Doc,
    Rows,
    order_doc,
    order_rows,
    product_doc,
    user_doc,
    user_rows,
    variant_doc,
)
from envfactory.world.store import Store


class Documents(Protocol):
    """tau2's records by id; a record a tool changes is changed in place."""

    def user(self, user_id: str) -> Doc | None: ...

    def order(self, order_id: str) -> Doc | None: ...

    def product(self, product_id: str) -> Doc | None: ...

    def item(self, item_id: str) -> Doc | None: ...

    def has_product(self, product_id: str) -> bool: ...

    def variant(self, product_id: str, item_id: str) -> Doc | None:
        """The product's variant ``item_id``, or None (the product exists)."""
        ...

    def users(self) -> Iterator[Doc]: ...

    def product_names(self) -> list[tuple[str, str]]: ...


class JsonDocuments:
    """Records inside tau2's JSON database (a dict), as tau2-bench holds them."""

    def __init__(self, db: Doc) -> None:
        self.db = db

    def user(self, user_id: str) -> Doc | None:
        found: Doc | None = self.db["users"].get(user_id)
        return found

    def order(self, order_id: str) -> Doc | None:
        found: Doc | None = self.db["orders"].get(order_id)
        return found

    def product(self, product_id: str) -> Doc | None:
        found: Doc | None = self.db["products"].get(product_id)
        return found

    def item(self, item_id: str) -> Doc | None:
        for product in self.db["products"].values():
            if item_id in product["variants"]:
                found: Doc = product["variants"][item_id]
                return found
        return None

    def has_product(self, product_id: str) -> bool:
        return product_id in self.db["products"]

    def variant(self, product_id: str, item_id: str) -> Doc | None:
        found: Doc | None = self.db["products"][product_id]["variants"].get(item_id)
        return found

    def users(self) -> Iterator[Doc]:
        yield from self.db["users"].values()

    def product_names(self) -> list[tuple[str, str]]:
        return [(p["name"], p["product_id"]) for p in self.db["products"].values()]


class SqlDocuments:
    """Records assembled from an episode's rows. Each record is built once per tool call (so a
    tool sees its own changes, as tau2's in-memory objects do); :meth:`flush` writes back the
    rows that differ from what was read."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._users: dict[str, tuple[Doc, Rows, int]] = {}
        self._orders: dict[str, tuple[Doc, Rows, int]] = {}

    def _children(self, table: str, parent: str, key: str) -> list[dict[str, object]]:
        return self.store.rows(table, {parent: key}, order_by="position")

    def user(self, user_id: str) -> Doc | None:
        if user_id in self._users:
            return self._users[user_id][0]
        row = self.store.get("users", user_id)
        if row is None:
            return None
        methods = self._children("payment_methods", "user_id", user_id)
        orders = self.store.rows("orders", {"user_id": user_id}, order_by="user_position")
        doc = user_doc(row, methods, [o["id"] for o in orders])
        self._users[user_id] = (doc, {"users": [row], "payment_methods": methods}, row["position"])
        return doc

    def order(self, order_id: str) -> Doc | None:
        if order_id in self._orders:
            return self._orders[order_id][0]
        row = self.store.get("orders", order_id)
        if row is None:
            return None
        read: Rows = {
            "orders": [row],
            "order_items": self._children("order_items", "order_id", order_id),
            "fulfillments": self._children("fulfillments", "order_id", order_id),
            "payment_history": self._children("payment_history", "order_id", order_id),
        }
        doc = order_doc(row, read["order_items"], read["fulfillments"], read["payment_history"])
        self._orders[order_id] = (doc, read, row["user_position"])
        return doc

    def product(self, product_id: str) -> Doc | None:
        row = self.store.get("products", product_id)
        if row is None:
            return None
        return product_doc(row, self._children("variants", "product_id", product_id))

    def item(self, item_id: str) -> Doc | None:
        row = self.store.get("variants", item_id)
        return None if row is None else variant_doc(row)

    def has_product(self, product_id: str) -> bool:
        return self.store.get("products", product_id) is not None

    def variant(self, product_id: str, item_id: str) -> Doc | None:
        row = self.store.get("variants", item_id)
        return None if row is None or row["product_id"] != product_id else variant_doc(row)

    def users(self) -> Iterator[Doc]:
        for row in self.store.rows("users", order_by="position"):
            doc = self.user(row["id"])
            assert doc is not None
            yield doc

    def product_names(self) -> list[tuple[str, str]]:
        return [(p["name"], p["id"]) for p in self.store.rows("products", order_by="position")]

    def flush(self) -> None:
        """Write back every row of a record read in this call that now differs."""
        for doc, read, position in self._users.values():
            _write(self.store, read, user_rows(doc, position))
        for doc, read, position in self._orders.values():
            _write(self.store, read, order_rows(doc, position))


def _write(store: Store, read: Rows, now: Rows) -> None:
    for table, rows in now.items():
        before = {r["id"]: r for r in read.get(table, [])}
        for row in rows:
            if before.pop(row["id"], None) != row:
                store.put(table, row["id"], row)
        for key in before:
            store.put(table, key, None)
