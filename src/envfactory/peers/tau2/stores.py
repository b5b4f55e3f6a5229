"""Two homes for tau2's records, behind one interface the retail tools are written against.

:class:`SqlDocuments` assembles records from an episode's SQLite rows and writes back only the
rows a tool changed (through the store, so hashing and verification see them).
:class:`JsonDocuments` is tau2-bench's own approach: the records are the JSON document itself,
changed in place. The second one exists to compare with (the benchmark) and to cross-check the
first (the tests); the tools' behaviour is written once, in :mod:`.tools`.

:class:`CachedDocuments` is :class:`SqlDocuments` with a world-wide cache
(:class:`BaseDocuments`): a record none of whose rows the episode has touched is the base
state's, so it is assembled and serialised once per world and handed out as a fresh copy
(``marshal``), with its JSON text; a record the episode has touched is read from its rows.
"""

from __future__ import annotations

import json
import marshal
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from envfactory.peers.tau2.documents import (
    ORDER_PARTS,
    USER_PARTS,
    Doc,
    Parts,
    Rows,
    elements,
    order_doc,
    order_rows,
    part_rows,
    product_doc,
    user_doc,
    user_rows,
    variant_doc,
)
from envfactory.world.store import Base, Store

# A tool result as the episode sends it (DatabaseEpisode's serialisation).
RESULT_JSON = json.JSONEncoder(default=str, separators=(",", ":"), check_circular=False)  # trees


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
    """Make the rows of ``now``'s tables what ``now`` holds, where they differ from ``read``:
    a row on both sides has its changed columns updated (its indexes stay as they are)."""
    for table, rows in now.items():
        before = {r["id"]: r for r in read.get(table, [])}
        for row in rows:
            old = before.pop(row["id"], None)
            if old == row:
                continue
            if old is None or old.keys() != row.keys():
                store.put(table, row["id"], row)
            else:
                changes = {c: v for c, v in row.items() if v != old[c]}
                store.set_fields(table, row["id"], changes)
        for key in before:
            store.put(table, key, None)


# -- the base state's records, cached per world --------------------------------------------------


@dataclass(frozen=True, slots=True)
class Record:
    """A record of the base state: the document (marshalled: loading it is a fresh deep
    copy), its JSON text as a tool result, the rows it was read from (by table, in position
    order; never changed), its place in its list, and the document itself, never handed out
    (to tell a changed copy)."""

    frozen: bytes
    text: str
    rows: Rows
    position: int
    pristine: Doc

    def doc(self) -> Doc:
        loaded: Doc = marshal.loads(self.frozen)
        return loaded


def _record(doc: Doc, rows: Rows, position: int) -> Record:
    """``doc`` becomes the record's pristine copy: the caller hands it out no more."""
    return Record(marshal.dumps(doc), RESULT_JSON.encode(doc), rows, position, doc)


class BaseDocuments:
    """The records of a world's base state, shared by every episode of the world. A record is
    assembled the first time an episode that has not touched it asks for it (from that
    episode's rows, which are then the base's), and kept.

    It holds the base's tables and rows, not the base, so that it goes with the world."""

    def __init__(self, base: Base) -> None:
        self.rows = base.rows
        self.tables = base.tables
        self.users: dict[str, Record | None] = {}
        self.orders: dict[str, Record | None] = {}
        self.products: dict[str, Record | None] = {}
        self.variants: dict[str, Record | None] = {}
        self.names: list[tuple[str, str]] | None = None
        self._variant_product = self.tables["variants"].columns.index("product_id")
        columns = self.tables["orders"].columns
        self.order_place = (columns.index("user_id"), columns.index("user_position"))

    def variant_product(self, item_id: str) -> str | None:
        """The product a base variant belongs to."""
        row = self.rows["variants"].get(item_id)
        return None if row is None else str(row[self._variant_product])

    def owner(self, table: str, key: str, field: str, now: tuple[Any, ...] | None) -> set[Any]:
        """The values of a row's ``field`` in the base and ``now``: the records it belongs
        (or belonged) to."""
        i = self.tables[table].columns.index(field)
        before = self.rows[table].get(key)
        return {r[i] for r in (before, now) if r is not None}


_BASES: dict[int, BaseDocuments] = {}


def base_documents(base: Base) -> BaseDocuments:
    """The record cache of a world's base state (one per :class:`Base`, dropped with it)."""
    found = _BASES.get(id(base))
    if found is None or found.rows is not base.rows:
        found = _BASES[id(base)] = BaseDocuments(base)
        weakref.finalize(base, _BASES.pop, id(base), None)
    return found


_CHILDREN = ("order_items", "fulfillments", "payment_history")


class CachedDocuments(SqlDocuments):
    """:class:`SqlDocuments` that takes the records the episode has not touched from the
    world's :class:`BaseDocuments`: a fresh copy of each, and its JSON text for a tool that
    returns it unchanged (:meth:`text_of`). Touched records are read from the rows."""

    def __init__(self, store: Store, base: BaseDocuments) -> None:
        super().__init__(store)
        self.base = base
        self._clean: list[tuple[Doc, Record]] = []  # clean records of users and orders read
        self._texts: dict[int, tuple[Doc, str]] = {}
        touched = store.touched
        self._dirty_users: set[str] = set()
        self._dirty_orders: set[str] = set()
        self._all_users = False
        self._products = "products" in touched or "variants" in touched
        if touched:
            self._find_dirty(touched)

    def _find_dirty(self, touched: dict[str, set[str]]) -> None:
        """The users and orders a touched row belongs (or belonged) to; every user when an
        order moved, appeared or went (a user's order list would change)."""
        raw = self.store.raw
        self._dirty_users |= touched.get("users", set())
        self._dirty_orders |= touched.get("orders", set())
        for key in touched.get("payment_methods", ()):
            now = raw("payment_methods", key)
            self._dirty_users |= self.base.owner("payment_methods", key, "user_id", now)
        for table in _CHILDREN:
            for key in touched.get(table, ()):
                self._dirty_orders |= self.base.owner(table, key, "order_id", raw(table, key))
        orders, place = self.base.rows["orders"], self.base.order_place
        for key in touched.get("orders", ()):
            before, now = orders.get(key), raw("orders", key)
            if before is None or now is None or any(before[i] != now[i] for i in place):
                self._all_users = True

    def _cached(
        self,
        key: str,
        held: dict[str, tuple[Doc, Rows, int]],
        cache: dict[str, Record | None],
        assemble: Callable[[str], Doc | None],
    ) -> Doc | None:
        """A copy of the world's clean record ``key`` (``held``: this episode's documents of
        that kind), assembled from the rows the first time any episode asks for it."""
        if key not in cache:  # assembled from this episode's rows: the base's here
            doc = assemble(key)
            cache[key] = None if doc is None else _record(doc, *held.pop(key)[1:])
        record = cache[key]
        if record is None:
            return None
        doc = self._hand_out(record)
        held[key] = (doc, {}, record.position)
        self._clean.append((doc, record))
        return doc

    def _hand_out(self, record: Record) -> Doc:
        doc = record.doc()
        self._texts[id(doc)] = (doc, record.text)
        return doc

    def text_of(self, result: Any) -> str | None:
        """The JSON text of ``result`` when it is a clean record handed out by this call
        (valid while the tool did not change it: a read)."""
        held = self._texts.get(id(result))
        return held[1] if held is not None and held[0] is result else None

    def user(self, user_id: str) -> Doc | None:
        if user_id in self._users:
            return self._users[user_id][0]
        if self._all_users or user_id in self._dirty_users:
            return super().user(user_id)
        return self._cached(user_id, self._users, self.base.users, super().user)

    def order(self, order_id: str) -> Doc | None:
        if order_id in self._orders:
            return self._orders[order_id][0]
        if order_id in self._dirty_orders:
            return super().order(order_id)
        return self._cached(order_id, self._orders, self.base.orders, super().order)

    def product(self, product_id: str) -> Doc | None:
        if self._products:
            return super().product(product_id)
        cache = self.base.products
        if product_id not in cache:
            doc = super().product(product_id)
            cache[product_id] = None if doc is None else _record(doc, {}, -1)
        record = cache[product_id]
        return None if record is None else self._hand_out(record)

    def item(self, item_id: str) -> Doc | None:
        if self._products:
            return super().item(item_id)
        return self._variant(item_id)

    def _variant(self, item_id: str) -> Doc | None:
        cache = self.base.variants
        if item_id not in cache:
            doc = super().item(item_id)
            cache[item_id] = None if doc is None else _record(doc, {}, -1)
        record = cache[item_id]
        return None if record is None else self._hand_out(record)

    def has_product(self, product_id: str) -> bool:
        if self._products:
            return super().has_product(product_id)
        return product_id in self.base.rows["products"]

    def variant(self, product_id: str, item_id: str) -> Doc | None:
        if self._products:
            return super().variant(product_id, item_id)
        if self.base.variant_product(item_id) != product_id:
            return None
        return self._variant(item_id)

    def product_names(self) -> list[tuple[str, str]]:
        if self._products:
            return super().product_names()
        if self.base.names is None:
            self.base.names = super().product_names()
        return list(self.base.names)

    def flush(self) -> None:
        """Write back the rows that differ, of the records read in this call that changed
        (a clean record the tool left as it was is skipped without building its rows)."""
        clean = {id(doc): record for doc, record in self._clean}
        for doc, read, position in self._users.values():
            record = clean.get(id(doc))
            if record is None:
                _write(self.store, read, user_rows(doc, position))
            elif doc != record.pristine:
                own = user_rows(doc, position, ("users",))
                _write(self.store, *_changed(doc, record, "user_id", own, USER_PARTS))
        for doc, read, position in self._orders.values():
            record = clean.get(id(doc))
            if record is None:
                _write(self.store, read, order_rows(doc, position))
            elif doc != record.pristine:
                own = order_rows(doc, position, ("orders",))
                _write(self.store, *_changed(doc, record, "order_id", own, ORDER_PARTS))


def _changed(doc: Doc, record: Record, key: str, own: Rows, parts: Parts) -> tuple[Rows, Rows]:
    """The rows a changed clean record was read from and the rows it needs now, for its own
    row (``own``, built) and the elements of its lists that moved, changed, came or went;
    every row when its id (``key``) changed."""
    pristine, parent = record.pristine, doc[key]
    if parent != pristine[key]:
        return record.rows, own | part_rows(parent, doc, parts)
    read, now = {t: record.rows[t] for t in own}, dict(own)
    for table, (field, row) in parts.items():
        if doc[field] == pristine[field]:
            continue
        old, new, rows = elements(pristine[field]), elements(doc[field]), record.rows[table]
        differ = [
            i
            for i in range(max(len(old), len(new)))
            if i >= len(old) or i >= len(new) or old[i] != new[i]
        ]
        read[table] = [rows[i] for i in differ if i < len(old)]
        now[table] = [row(parent, i, new[i]) for i in differ if i < len(new)]
    return read, now
