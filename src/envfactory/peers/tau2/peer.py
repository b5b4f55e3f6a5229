"""tau2-bench's approach, reimplemented plainly, to compare with and to cross-check against.

tau2-bench holds the retail database as one JSON document (its pydantic models), makes a fresh
copy for every episode, runs tools on the records in place, and judges an episode by replaying
the gold actions on another fresh copy and comparing hashes of the whole database. This module
does the same with the same tool behaviour (:mod:`.tools`) and a deep copy of the JSON, and
:func:`export` turns an envfactory episode's rows back into that JSON, so the two can be
compared record for record.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from envfactory.contract.results import ToolFailure
from envfactory.peers.tau2.documents import ORDER_OPTIONAL, Doc
from envfactory.peers.tau2.stores import JsonDocuments, SqlDocuments
from envfactory.peers.tau2.tools import TOOLS
from envfactory.world.store import Store


def normalise(db: Doc) -> Doc:
    """The JSON as tau2's data model reads it: absent optional order fields are None, prices
    and amounts are floats."""
    out = copy.deepcopy(db)
    for user in out["users"].values():
        for pm in user["payment_methods"].values():
            if "balance" in pm:
                pm["balance"] = float(pm["balance"])
    for product in out["products"].values():
        for v in product["variants"].values():
            v["price"] = float(v["price"])
    for order in out["orders"].values():
        for key in ORDER_OPTIONAL:
            order.setdefault(key, None)
        for it in order["items"]:
            it["price"] = float(it["price"])
        for p in order["payment_history"]:
            p["amount"] = float(p["amount"])
    return out


def db_hash(db: Doc) -> str:
    """tau2's database hash: SHA-256 of the whole database as sorted JSON."""
    return hashlib.sha256(json.dumps(db, sort_keys=True, default=str).encode()).hexdigest()


def call(db: Doc, tool: str, arguments: dict[str, Any]) -> Any:
    """Run one tool on the JSON database; a failure answers ``Error: ...`` as tau2 does."""
    fn = TOOLS.get(tool)
    if fn is None:
        return f"Error: Tool '{tool}' not found."
    try:
        return fn(JsonDocuments(db), **arguments)
    except ToolFailure as exc:
        return f"Error: {exc.message}"
    except TypeError as exc:
        return f"Error: {exc}"


class PeerRetail:
    """An episode the way tau2-bench runs one: deep-copied JSON, whole-database hashes."""

    def __init__(self, db: Doc) -> None:
        self.initial = normalise(db)
        self.db = copy.deepcopy(self.initial)

    def reset(self) -> None:
        self.db = copy.deepcopy(self.initial)

    def step(self, tool: str, arguments: dict[str, Any]) -> Any:
        return call(self.db, tool, arguments)

    def replay(self, actions: Sequence[dict[str, Any]]) -> Doc:
        """The database the gold actions reach from a fresh copy."""
        gold = copy.deepcopy(self.initial)
        for a in actions:
            call(gold, a["name"], a["arguments"])
        return gold

    def reward(self, actions: Sequence[dict[str, Any]]) -> float:
        """tau2's database check: replay the gold actions, compare whole-database hashes."""
        return float(db_hash(self.db) == db_hash(self.replay(actions)))


def export(store: Store) -> Doc:
    """An episode's state as tau2's JSON database."""
    docs = SqlDocuments(store)
    users = {u["id"]: docs.user(u["id"]) for u in store.rows("users", order_by="position")}
    products = {p["id"]: docs.product(p["id"]) for p in store.rows("products", order_by="position")}
    orders = {o["id"]: docs.order(o["id"]) for o in store.rows("orders")}
    return {"products": products, "users": users, "orders": orders}
