"""World state: reset from a snapshot, a canonical hash, and row-level diffs."""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties import budget

from envfactory.db.environment import DatabaseEnvironment as Environment
from envfactory.world.state import hash_rows, hex_hash
from envfactory.world.store import Base, Store


def test_reset_restores_the_base_state(retail: Environment) -> None:
    store = retail.world.new_store()
    store.update("orders", "ORD-00001", {"status": "cancelled"})
    store.insert("returns", {"reason": "x", "status": "requested"})
    assert store.state_hash() != retail.world.base.hash
    store.reset()
    assert store.state_hash() == retail.world.base.hash
    assert store.changes() == []
    assert hash_rows(store.dump()) == retail.world.base.hash


def test_hash_ignores_operation_order(retail: Environment) -> None:
    a, b = retail.world.new_store(), retail.world.new_store()
    a.update("orders", "ORD-00001", {"status": "cancelled"})
    a.update("customers", "CUS-00002", {"phone": "555-000-0000"})
    b.update("customers", "CUS-00002", {"phone": "555-000-0000"})
    b.update("orders", "ORD-00001", {"status": "shipped"})
    b.update("orders", "ORD-00001", {"status": "cancelled"})
    assert a.state_hash() == b.state_hash()
    assert hash_rows(a.dump()) == hash_rows(b.dump()) == a.state_hash()


def test_hash_ignores_page_layout(retail: Environment) -> None:
    """The same rows written in another order into another database hash the same."""
    base = retail.world.base
    data = {
        name: [t.to_row(v) for v in reversed(list(base.rows[name].values()))]
        for name, t in base.tables.items()
    }
    other = Base.build(base.tables, data)
    assert other.snapshot != base.snapshot
    assert other.hash == base.hash


def test_insert_then_delete_is_no_change(retail: Environment) -> None:
    store = retail.world.new_store()
    row = store.insert("returns", {"reason": "x", "status": "requested"})
    store.delete("returns", row["id"])
    assert store.changes() == []
    assert store.state_hash() == retail.world.base.hash


def test_diff_lists_rows_with_before_and_after(retail: Environment) -> None:
    store = retail.world.new_store()
    before = store.get("orders", "ORD-00003")
    assert before is not None
    store.update("orders", "ORD-00003", {"ship_city": "Springfield"})
    new = store.insert("returns", {"reason": "r", "status": "requested"})
    store.delete("order_items", "ITM-00001")
    changes = {(c.table, c.key): c for c in store.changes()}
    assert changes[("orders", "ORD-00003")].op == "update"
    assert changes[("orders", "ORD-00003")].changed_fields() == ["ship_city"]
    assert changes[("orders", "ORD-00003")].before == before
    assert changes[("returns", new["id"])].op == "insert"
    assert changes[("order_items", "ITM-00001")].op == "delete"


def test_transactions_roll_back_rows_and_tracking(retail: Environment) -> None:
    store = retail.world.new_store()
    try:
        with store.transaction():
            store.update("orders", "ORD-00001", {"status": "cancelled"})
            raise sqlite3.Error("boom")
    except sqlite3.Error:
        pass
    assert store.changes() == []
    assert store.touched == {}


@budget(40, fixtures=True)
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["update", "insert", "delete"]), st.integers(1, 200)),
        max_size=25,
    )
)
def test_incremental_hash_equals_full_hash(retail: Environment, ops: list[tuple[str, int]]) -> None:
    store = retail.world.new_store()
    for op, n in ops:
        key = f"CUS-{(n % 90) + 1:05d}"
        exists = store.get("customers", key) is not None
        if op == "update" and exists:
            store.update("customers", key, {"phone": f"555-{n:03d}-0000"})
        elif op == "insert":
            store.insert("returns", {"reason": str(n), "status": "requested"})
        elif op == "delete" and exists:
            store.delete("customers", key)
    assert hex_hash(store.state_hash()) == hex_hash(hash_rows(store.dump()))


def _sql_row(store: Store, table: str, key: str) -> tuple[Any, ...] | None:
    """A row read straight from SQLite, past the store's caches (its pending writes made)."""
    store.sync()
    t = store.base.tables[table]
    found = store.conn.execute(t.select_by_id, (key,)).fetchall()
    return tuple(found[0]) if found else None


_WRITE = st.tuples(
    st.sampled_from(["update", "restore", "delete", "reinsert", "put", "insert", "rollback"]),
    st.integers(1, 12),
)


@budget(60, fixtures=True)
@given(ops=st.lists(st.one_of(_WRITE, st.just(("reset", 1))), max_size=30))
def test_cached_hash_and_reads_follow_every_write(
    retail: Environment, ops: list[tuple[str, int]]
) -> None:
    """The store caches reads, row digests, the hash and (with the world) queries over
    untouched tables; after any sequence of writes (some putting a row back as it was, deletes
    and re-inserts, rolled-back transactions, resets), each is what SQLite and a full canonical
    hash of the whole state say."""
    base = retail.world.base
    store = retail.world.new_store()
    for op, n in ops:
        key = f"CUS-{n:05d}"
        original = base.tables["customers"].to_row(base.rows["customers"][key])
        store.state_hash()  # warm the caches before the write, so they must be dropped
        store.get("customers", key)
        store.rows("customers", {"tier": "gold"})
        if op == "reset":
            store.reset()
        elif op == "update" and store.get("customers", key) is not None:
            store.update("customers", key, {"phone": f"555-{n:03d}-1111", "tier": "gold"})
        elif op == "restore":
            store.put("customers", key, original)
        elif op == "delete" and store.get("customers", key) is not None:
            store.delete("customers", key)
        elif op == "reinsert":
            store.put("customers", key, None)
            store.state_hash()
            store.put("customers", key, original)
        elif op == "put":
            store.put("customers", key, {**original, "city": f"City {n}"})
        elif op == "insert":
            store.insert("returns", {"reason": str(n), "status": "requested"})
        elif op == "rollback":
            with contextlib.suppress(sqlite3.Error), store.transaction():
                store.put("customers", key, {**original, "name": "Rolled Back"})
                assert store.get("customers", key)["name"] == "Rolled Back"  # type: ignore[index]
                store.state_hash()
                raise sqlite3.Error("boom")
        dump = store.dump()
        assert store.state_hash() == hash_rows(dump)
        for k in (key, f"CUS-{n % 12 + 1:05d}"):
            assert store.raw("customers", k) == _sql_row(store, "customers", k)
        for table, k in (("products", "PRD-00001"), ("returns", "RET-00001")):  # untouched
            assert store.raw(table, k) == _sql_row(store, table, k)
        gold = "SELECT * FROM customers WHERE tier = 'gold' ORDER BY id"
        store.sync()
        assert [tuple(r.values()) for r in store.rows("customers", {"tier": "gold"})] == [
            tuple(r) for r in store.conn.execute(gold)
        ]
        changed = {(c.table, c.key) for c in store.changes()}
        assert changed == {
            (t, k)
            for t, rows in base.rows.items()
            for k in set(rows) | set(dump[t])
            if rows.get(k) != dump[t].get(k)
        }
    store.close()
    again = retail.world.new_store()  # may reuse the closed store's connection
    assert again.state_hash() == hash_rows(again.dump()) == base.hash
    again.close()


def _exact(values: tuple[Any, ...] | None) -> Any:
    """A row compared by value and type (1 is not 1.0, -0.0 is not 0.0)."""
    return values if values is None else [(type(v), repr(v)) for v in values]


# Values of every kind a tool might write, into text, REAL and INTEGER columns alike.
_ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 2.0**53, 2.0**53 + 2, 1e300, 5.0]),
    st.text(max_size=8),
    st.sampled_from(["5", "5.0", " 7", "1e3", "-0", "0x10", "nan"]),
)


@budget(60, fixtures=True)
@given(
    writes=st.lists(
        st.tuples(
            st.sampled_from(["set_fields", "put", "insert"]),
            st.sampled_from(["name", "price", "stock"]),
            _ANY_VALUE,
        ),
        min_size=1,
        max_size=12,
    )
)
def test_a_written_row_reads_back_as_sqlite_stores_it(
    retail: Environment, writes: list[tuple[str, str, Any]]
) -> None:
    """A write the store keeps in Python (pending) reads back as SQLite would have stored it:
    whatever was written (text in a number column, a whole float in an integer one, NaN,
    -0.0), a read is exactly what a plain SQLite table given the same statements returns,
    before and after the pending rows reach the store's own database."""
    store = retail.world.new_store()
    t = store.base.tables["products"]
    plain = sqlite3.connect(":memory:")
    for stmt in t.ddl():
        plain.execute(stmt)
    key = "PRD-00001"
    original = store.get("products", key)
    assert original is not None
    plain.execute(t.insert, t.to_tuple(original))
    for op, column, value in writes:
        stored = int(value) if isinstance(value, bool) else value
        if op == "set_fields":
            store.set_fields("products", key, {column: value})
            plain.execute(f"UPDATE products SET {column} = ? WHERE id = ?", (stored, key))
        elif op == "put":
            store.put("products", key, {**original, column: value})
            plain.execute(t.delete, (key,))
            plain.execute(t.insert, t.to_tuple({**original, column: value, "id": key}))
        else:
            key = store.insert("products", {**original, column: value})["id"]
            plain.execute(t.insert, t.to_tuple({**original, column: value, "id": key}))
        want = _exact(plain.execute(t.select_by_id, (key,)).fetchone())
        assert _exact(store.raw("products", key)) == want
        assert _exact(_sql_row(store, "products", key)) == want
    store.close()


def test_writes_read_back_by_id_never_reach_sqlite(retail: Environment) -> None:
    """Writes whose read-back is certain stay in Python until SQL must see them: reads,
    the hash and the diff do not write SQLite; a query over the table does."""
    store = retail.world.new_store()
    before = store.conn.total_changes
    store.update("customers", "CUS-00001", {"tier": "gold"})
    store.insert("returns", {"reason": "late", "status": "requested"})
    store.delete("customers", "CUS-00002")
    assert store.get("customers", "CUS-00001")["tier"] == "gold"  # type: ignore[index]
    assert store.get("customers", "CUS-00002") is None
    assert {(c.table, c.key) for c in store.changes()} == {
        ("customers", "CUS-00001"),
        ("customers", "CUS-00002"),
        ("returns", f"RET-{len(store.base.rows['returns']) + 1:05d}"),
    }
    store.state_hash()
    assert store.conn.total_changes == before
    gold = {r["id"] for r in store.rows("customers", {"tier": "gold"})}
    assert "CUS-00001" in gold and store.conn.total_changes > before
    assert store.state_hash() == hash_rows(store.dump())
    store.close()


def test_a_rolled_back_transaction_keeps_the_writes_made_before_it(
    retail: Environment,
) -> None:
    """Pending writes made before a transaction survive its rollback, even when a query
    inside it wrote them to SQLite; the transaction's own writes (a nested one's too) are
    gone, whether read by id or by a query."""
    store = retail.world.new_store()
    store.update("customers", "CUS-00001", {"tier": "rolled-back-test"})
    with contextlib.suppress(sqlite3.Error), store.transaction():
        store.update("customers", "CUS-00003", {"tier": "rolled-back-test"})
        with store.transaction():
            store.update("customers", "CUS-00004", {"city": "Inner"})
        store.rows("customers", {"tier": "rolled-back-test"})  # pending rows reach SQLite
        raise sqlite3.Error("boom")
    keys = ("CUS-00001", "CUS-00003", "CUS-00004")
    t, base = store.base.tables["customers"], store.base.rows["customers"]
    want = {k: t.to_row(base[k]) for k in keys}
    want["CUS-00001"]["tier"] = "rolled-back-test"
    assert {k: store.get("customers", k) for k in keys} == want
    assert {r["id"]: r for r in store.rows("customers") if r["id"] in keys} == want
    assert store.state_hash() == hash_rows(store.dump())
    assert {(c.table, c.key) for c in store.changes()} == {("customers", "CUS-00001")}
    store.close()


def test_queries_over_untouched_tables_share_the_base_results(retail: Environment) -> None:
    """A query over a table no write touched is run once per world; each caller gets its own
    rows, a write makes the writer's queries read SQLite again, and a parameter's type stays
    part of the query (SQLite compares 1 and 1.0 to a text column differently)."""
    a, b = retail.world.new_store(), retail.world.new_store()
    first = a.rows("customers", {"tier": "gold"})
    first[0]["name"] = "Changed By A Caller"
    assert b.rows("customers", {"tier": "gold"}) == a.rows("customers", {"tier": "gold"})
    assert b.rows("customers", {"tier": "gold"})[0]["name"] != "Changed By A Caller"
    key = first[0]["id"]
    a.update("customers", key, {"tier": "standard"})
    assert key not in {r["id"] for r in a.rows("customers", {"tier": "gold"})}
    assert key in {r["id"] for r in b.rows("customers", {"tier": "gold"})}
    a.reset()
    assert key in {r["id"] for r in a.rows("customers", {"tier": "gold"})}
    a.close()
    b.close()
    base = retail.world.base
    data = {n: [t.to_row(v) for v in base.rows[n].values()] for n, t in base.tables.items()}
    data["customers"][0]["phone"] = "1"
    store = Store(Base.build(base.tables, data))
    assert [r["phone"] for r in store.rows("customers", {"phone": 1})] == ["1"]
    assert store.rows("customers", {"phone": 1.0}) == []
    store.close()


def test_reads_of_untouched_tables_are_what_sqlite_stores(retail: Environment) -> None:
    """A read of a table the store has not written comes from the base's rows, which hold
    what SQLite gives back (a whole number in a REAL column is a float), not what was put."""
    base = retail.world.base
    data = {n: [t.to_row(v) for v in base.rows[n].values()] for n, t in base.tables.items()}
    data["products"][0]["price"] = 40
    store = Store(Base.build(base.tables, data))
    key = data["products"][0]["id"]
    row = store.raw("products", key)
    assert row == _sql_row(store, "products", key)
    assert row is not None and type(row[base.tables["products"].columns.index("price")]) is float
    assert store.raw("products", "PRD-99999") is None
    store.close()


def test_a_closed_store_cannot_be_used(retail: Environment) -> None:
    store = retail.world.new_store()
    store.close()
    store.close()
    other = retail.world.new_store()  # takes the connection back
    with pytest.raises(sqlite3.ProgrammingError):
        store.raw("orders", "ORD-00002")
    with pytest.raises(sqlite3.ProgrammingError):
        store.rows("orders")
    assert other.raw("orders", "ORD-00002") == base_row(retail, "orders", "ORD-00002")


def base_row(env: Environment, table: str, key: str) -> tuple[Any, ...] | None:
    return env.world.base.rows[table].get(key)
