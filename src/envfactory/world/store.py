"""Per-episode state: an in-memory SQLite database reset from a snapshot.

Tools are the only writers, and they write through :class:`Store`, so the store knows which
rows an episode touched. Hashing and diffing then cost O(touched rows), not O(database).
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from envfactory.world.state import MOD, RowChange, hash_rows, row_digest
from envfactory.world.tables import Row, Table

_UNREAD: Any = object()  # a row not read yet (None is a row known to be absent)
PAGE_SIZE = 1024
QUERY_ROWS = 50_000  # rows of query results over the base state a world keeps
_IDLE_BYTES = 32 << 20  # closed episodes' connections kept per world, by snapshot size
_CLOSED = sqlite3.connect(":memory:", check_same_thread=False)
_CLOSED.close()  # what a closed store holds: any use raises, as on a closed connection


class BaseQueries:
    """Results of queries over a world's base state, shared by its stores: a query over a
    table no write has touched since the base reads the same rows in every episode. Kept
    while they hold at most ``QUERY_ROWS`` rows in all."""

    __slots__ = ("results", "rows")

    def __init__(self) -> None:
        self.results: dict[tuple[Any, ...], list[Row]] = {}
        self.rows = 0

    def run(self, conn: sqlite3.Connection, table: Table, sql: str, params: list[Any]) -> list[Row]:
        """The rows ``sql`` selects, run on ``conn`` (whose ``table`` is the base's) the first
        time. The key holds the parameters' types: SQLite compares 1 and 1.0 to a text column
        differently. The rows are shared: callers copy them."""
        key = (sql, *((type(p), p) for p in params))
        found = self.results.get(key)
        if found is None:
            found = [table.to_row(r) for r in conn.execute(sql, params)]
            if self.rows + len(found) <= QUERY_ROWS:
                self.results[key] = found
                self.rows += len(found)
        return found


@dataclass(frozen=True)
class Base:
    """The immutable initial state of a world, shared by all its episodes."""

    tables: dict[str, Table]
    snapshot: bytes
    rows: dict[str, dict[str, tuple[Any, ...]]]  # table -> id -> stored tuple
    next_ids: dict[str, int]
    hash: int
    # Connections of closed stores, reused (opening and closing one costs more than a step).
    idle: list[sqlite3.Connection] = dataclasses.field(
        default_factory=list, repr=False, compare=False
    )
    queries: BaseQueries = dataclasses.field(default_factory=BaseQueries, repr=False, compare=False)

    @classmethod
    def build(cls, tables: dict[str, Table], data: Mapping[str, Iterable[Row]]) -> Base:
        conn = sqlite3.connect(":memory:")
        # Small pages: every live episode holds a copy of the snapshot, and SQLite copies each
        # page it reads into the connection's cache. 1 KB pages take a third less memory per
        # episode than 4 KB ones and make a cold read cheaper (measured: 10,000 live episodes).
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        rows: dict[str, dict[str, tuple[Any, ...]]] = {}
        for name, table in tables.items():
            for stmt in table.ddl():
                conn.execute(stmt)
            conn.executemany(table.insert, [table.to_tuple(r) for r in data[name]])
            # as SQLite gives them back (a REAL column holds 5 as 5.0): reads may come from here
            stored = conn.execute(f"SELECT {', '.join(table.columns)} FROM {name}").fetchall()
            rows[name] = {t[0]: t for t in stored}
        conn.commit()
        conn.execute("VACUUM")
        snapshot = conn.serialize()
        conn.close()
        next_ids = {name: len(by_id) + 1 for name, by_id in rows.items()}
        return cls(tables, snapshot, rows, next_ids, hash_rows(rows))

    def patched_hash(self, rows: Iterable[tuple[str, str, tuple[Any, ...] | None]]) -> int:
        """The hash of this state with some rows replaced (None: removed)."""
        h = self.hash
        for table, key, values in rows:
            old = self.rows[table].get(key)
            if old is not None:
                h -= row_digest(table, old)
            if values is not None:
                h += row_digest(table, values)
        return h % MOD


class Store:
    """One episode's database, plus the set of rows it has touched since the base state.

    Reads by id and row digests are cached per row and dropped whenever that row is written
    (or a transaction that wrote it rolls back), and the state hash is kept until the next
    write: a step that writes one row re-digests that row alone. A read of a table the store
    has not touched is the base's: a row by id from :attr:`Base.rows`, a query's results from
    :class:`BaseQueries`.

    A write whose result is known without SQLite (the row's value before it is known, and
    SQLite's read-back of what is written is certain: :meth:`Table.read_back`) is kept in
    Python, *pending*, and reaches SQLite only when SQL must see it: a query over its table,
    a write that needs SQLite, :meth:`dump`. An episode whose writes are all read back by id
    (and hashed, and diffed) never writes SQLite, and its reset has nothing to roll back.
    """

    __slots__ = (
        "_digests",
        "_dirty",
        "_hash",
        "_now",
        "_now_digests",
        "_pending",
        "_savepoints",
        "_wild",
        "base",
        "conn",
        "journal",
        "next_ids",
        "start",
        "touched",
    )

    def __init__(self, base: Base) -> None:
        self.base = base
        try:
            self.conn = base.idle.pop()  # at the base state, its transaction open
            fresh = False
        except IndexError:
            self.conn = sqlite3.connect(
                ":memory:", check_same_thread=False, isolation_level=None, cached_statements=256
            )
            fresh = True
        self.touched: dict[str, set[str]] = {}
        self.journal: list[tuple[str, str]] = []  # every write, in order
        # Rows whose value at the episode's start differs from the base (a task's setup).
        self.start: dict[tuple[str, str], tuple[Any, ...] | None] = {}
        self.next_ids: dict[str, int] = {}
        self._digests: dict[tuple[str, str], int] = {}  # base rows' digests
        self._now: dict[tuple[str, str], tuple[Any, ...] | None] = {}  # current rows read
        # Rows written but not yet in SQLite (each also in _now, with the same value).
        self._pending: dict[tuple[str, str], tuple[Any, ...] | None] = {}
        self._savepoints: list[bool] = []  # open transactions: has each its SQL savepoint?
        self._now_digests: dict[tuple[str, str], int] = {}  # current touched rows' digests
        self._hash: int | None = None
        self._dirty = fresh
        self.reset()

    def reset(self) -> None:
        """Back to the base state, unless nothing was written since the last reset.

        The episode's writes live in one open transaction over the base, so going back rolls
        back the pages they changed (microseconds) instead of deserialising the whole snapshot
        (tens to a hundred microseconds for a megabyte); the snapshot is read again only on a
        new connection, or if the transaction was ended some other way."""
        if self._dirty:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            else:
                self.conn.deserialize(self.base.snapshot)
                # Read the schema now: SQLite's pager learns the database's size on its first
                # read, and a savepoint rolled back before that restores an empty database.
                self.conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            self.conn.execute("BEGIN")
            self._dirty = False
        self._pending = {}
        self._now = {}
        self._now_digests = {}
        self._wild = False  # a write had a key that is not text
        self._hash = None
        self.touched = {}
        self.journal = []
        self.start = {}
        self.next_ids = dict(self.base.next_ids)

    def mark_start(self, keys: Iterable[tuple[str, str]] | None = None) -> None:
        """Take these rows' current values (all touched rows by default) as the episode's
        start: diffs are relative to it."""
        if keys is None:
            keys = [(t, k) for t, ks in self.touched.items() for k in ks]
        for table, key in keys:
            self.start[(table, key)] = self.raw(table, key)

    def put(self, table: str, key: str, row: Row | None) -> None:
        """Make a row exactly ``row`` (or absent): how a task's setup is replayed."""
        t = self.base.tables[table]
        values = None if row is None else t.to_tuple({**row, "id": key})
        if not self._defer(t, key, values):
            self._sql_write(table, key)
            self.conn.execute(t.delete, (key,))
            if values is not None:
                self.conn.execute(t.insert, values)
        prefix = f"{t.id_prefix}-"
        if key.startswith(prefix) and key[len(prefix) :].isdigit():
            self.next_ids[table] = max(self.next_ids[table], int(key[len(prefix) :]) + 1)
        self._touch(table, key)

    def fork(self) -> Store:
        """An independent store at this store's state, in O(touched rows): the base is shared
        (it is never written), the touched rows' current values are copied, and the child
        keeps them pending, so its own SQLite (a connection at the base) sees them only when
        SQL must. Between tool calls only (not inside :meth:`transaction`)."""
        if self._savepoints:
            raise RuntimeError("a store cannot be forked inside a transaction")
        if self.conn is _CLOSED:
            raise RuntimeError("a closed store cannot be forked")
        child = Store(self.base)
        now: dict[tuple[str, str], tuple[Any, ...] | None] = {}
        for table, keys in self.touched.items():
            for key in keys:
                if type(key) is str:
                    now[(table, key)] = self.raw(table, key)
        if self._wild:  # a write had a key that is not text: its row may be any row
            for table, by_id in self.dump().items():
                base_rows = self.base.rows[table]
                for key, values in by_id.items():
                    if base_rows.get(key) != values:
                        now[(table, key)] = values
                now.update(((table, k), None) for k in base_rows.keys() - by_id.keys())
        child.touched = {t: set(ks) for t, ks in self.touched.items()}
        child.journal = list(self.journal)
        child.start = dict(self.start)
        child.next_ids = dict(self.next_ids)
        child._now = now
        child._pending = dict(now)
        child._digests = dict(self._digests)
        child._now_digests = dict(self._now_digests)
        child._hash = self._hash
        child._wild = self._wild
        if self._wild:
            child.sync()
        return child

    def close(self) -> None:
        """Give the connection back (to the world's idle ones, or closed); idempotent."""
        conn, self.conn = self.conn, _CLOSED
        self._pending = {}
        if conn is _CLOSED:
            return
        keep = max(8, _IDLE_BYTES // max(1, len(self.base.snapshot)))
        if len(self.base.idle) < keep and conn.in_transaction:
            conn.execute("ROLLBACK")  # back at the base, for the next store
            conn.execute("BEGIN")
            self.base.idle.append(conn)
        else:
            conn.close()

    # -- reads -------------------------------------------------------------------------------

    def get(self, table: str, key: Any) -> Row | None:
        values = self.raw(table, key)
        return None if values is None else self.base.tables[table].to_row(values)

    def row_by_id(self, key: Any) -> Row | None:
        """The row an id names, in whichever table its prefix (``ENR-``) says."""
        if not isinstance(key, str):
            return None
        prefix = key.rpartition("-")[0]
        table = next((n for n, t in self.base.tables.items() if t.id_prefix == prefix), None)
        return None if table is None else self.get(table, key)

    def raw(self, table: str, key: str) -> tuple[Any, ...] | None:
        """A row's stored tuple: the base's while the store has not written it, else read
        once until the row is next written."""
        if self.conn is not _CLOSED:
            known: tuple[Any, ...] | None = self._known(table, key)
            if known is not _UNREAD:
                return known
        t = self.base.tables[table]
        # fetchall, not fetchone: a half-read statement keeps a read transaction open, and a
        # later deserialize() under it leaves the connection with an empty database.
        found = self.conn.execute(t.select_by_id, (key,)).fetchall()
        values = tuple(found[0]) if found else None
        if type(key) is str:
            self._now[(table, key)] = values
        return values

    def rows(
        self,
        table: str,
        where: Mapping[str, Any] | None = None,
        order_by: str | None = None,
        limit: int | None = None,
        select: Callable[[list[Row]], list[Row]] | None = None,
    ) -> list[Row]:
        """Rows whose fields equal ``where`` (strings compared case-insensitively, except ids
        and references); ``select`` picks some of them (given rows it must not change), so
        that only those are copied."""
        t = self.base.tables[table]
        sql = [f"SELECT {', '.join(t.columns)} FROM {table}"]
        params: list[Any] = []
        clauses = []
        for field, value in (where or {}).items():
            if field not in t.types:
                raise KeyError(f"{table} has no field {field!r}")
            nocase = t.types[field] == "string" and field != "id"
            if value is None:
                clauses.append(f"{field} IS NULL")
                continue
            clauses.append(f"{field} = ?" + (" COLLATE NOCASE" if nocase else ""))
            params.append(int(value) if isinstance(value, bool) else value)
        if clauses:
            sql.append("WHERE " + " AND ".join(clauses))
        if order_by:
            desc = order_by.startswith("-")
            col = order_by.lstrip("-")
            if col not in t.types:
                raise KeyError(f"{table} has no field {col!r}")
            sql.append(f"ORDER BY {col} {'DESC' if desc else 'ASC'}, id")
        else:
            sql.append("ORDER BY id")
        if limit is not None:
            sql.append(f"LIMIT {int(limit)}")
        if table in self.touched or self.conn is _CLOSED:  # the table may not be the base's
            self.sync()
            read = [t.to_row(r) for r in self.conn.execute(" ".join(sql), params)]
            return select(read) if select else read
        cached = self.base.queries.run(self.conn, t, " ".join(sql), params)
        return [r.copy() for r in (select(cached) if select else cached)]

    # -- writes ------------------------------------------------------------------------------

    def _writing(self, table: str, key: Any) -> None:
        """Forget what is cached about a row SQL is about to write (before the write: a write
        that fails half-way may still have changed it)."""
        if type(key) is not str:  # SQLite may match it to a string id: forget every row
            self._wild = True
            self._forget()
            return
        self._hash = None
        self._now.pop((table, key), None)
        self._now_digests.pop((table, key), None)

    def _sql_write(self, table: str, key: Any) -> None:
        """Before a write of one row through SQL: the open transactions' savepoints, the
        pending rows, and what is cached about the row forgotten."""
        self._open_savepoints()
        self.sync()
        self._dirty = True
        self._writing(table, key)

    def _open_savepoints(self) -> None:
        for i, opened in enumerate(self._savepoints):
            if not opened:
                self.conn.execute("SAVEPOINT tool")
                self._savepoints[i] = True

    def sync(self) -> None:
        """Write the pending rows to SQLite (they stay cached)."""
        if not self._pending:
            return
        self._open_savepoints()
        self._dirty = True
        tables = self.base.tables
        for (table, key), values in self._pending.items():
            t = tables[table]
            self.conn.execute(t.delete, (key,))
            if values is not None:
                self.conn.execute(t.insert, values)
        self._pending = {}

    def _known(self, table: str, key: Any) -> Any:
        """A row's stored tuple (or None) when known without SQL, else ``_UNREAD``: the
        base's for a row never written (the store knows every row it wrote, unless a write
        had a key that is not text: SQLite matches the number 5 to the id "5"), else the
        cached one."""
        if type(key) is not str:
            return _UNREAD
        written = self.touched.get(table)
        if written is None or (key not in written and not self._wild):
            return self.base.rows[table].get(key)
        return self._now.get((table, key), _UNREAD)

    def _defer(self, t: Table, key: Any, values: tuple[Any, ...] | None) -> bool:
        """Keep a write of ``values`` (None: no row) to row ``key`` pending, where SQLite's
        read-back of it is certain; False when it must go through SQL."""
        if type(key) is not str or self.conn is _CLOSED:
            return False
        back = None if values is None else t.read_back(values)
        if values is not None and back is None:
            return False
        ck = (t.name, key)
        self._hash = None
        self._now_digests.pop(ck, None)
        self._now[ck] = self._pending[ck] = back
        return True

    def _forget(self) -> None:
        self._hash = None
        self._now = dict(self._pending)
        self._now_digests.clear()

    def _touch(self, table: str, key: str) -> None:
        self.touched.setdefault(table, set()).add(key)
        self.journal.append((table, key))

    def insert(self, table: str, values: Mapping[str, Any]) -> Row:
        t = self.base.tables[table]
        n = self.next_ids[table]
        self.next_ids[table] = n + 1
        row: Row = {c: values.get(c) for c in t.columns}
        row["id"] = t.format_id(n)
        stored = t.to_tuple(row)
        # pending only where the id is known to be free (SQLite refuses a taken one)
        if self._known(table, row["id"]) is not None or not self._defer(t, row["id"], stored):
            self._sql_write(table, row["id"])
            self.conn.execute(t.insert, stored)
        self._touch(table, row["id"])
        return t.to_row(stored)

    def update(self, table: str, key: str, changes: Mapping[str, Any]) -> Row:
        """Set these columns of one row, and read it back."""
        self.set_fields(table, key, changes)
        row = self.get(table, key)
        assert row is not None
        return row

    def set_fields(self, table: str, key: str, changes: Mapping[str, Any]) -> None:
        """Set these columns of one row (:meth:`update` without reading it back)."""
        t = self.base.tables[table]
        for c in changes:
            if c not in t.types or c == "id":
                raise KeyError(f"{table} has no writable field {c!r}")
        sets = ", ".join(f"{c} = ?" for c in changes)
        vals = [int(v) if isinstance(v, bool) else v for v in changes.values()]
        old = self._known(table, key)
        if old is None:
            raise KeyError(f"{table} has no row {key!r}")
        if old is not _UNREAD:
            new = list(old)
            for c, v in zip(changes, vals, strict=True):
                new[t.positions[c]] = v
            if self._defer(t, key, tuple(new)):
                self._touch(table, key)
                return
        self._sql_write(table, key)
        cur = self.conn.execute(f"UPDATE {table} SET {sets} WHERE id = ?", (*vals, key))
        if cur.rowcount == 0:
            raise KeyError(f"{table} has no row {key!r}")
        self._touch(table, key)

    def delete(self, table: str, key: str) -> None:
        t = self.base.tables[table]
        if not self._defer(t, key, None):
            self._sql_write(table, key)
            self.conn.execute(t.delete, (key,))
        self._touch(table, key)

    def transaction(self) -> _Transaction:
        """All-or-nothing writes: the database and the touched set roll back together."""
        return _Transaction(self)

    # -- canonical state ---------------------------------------------------------------------

    def _base_digest(self, table: str, key: str) -> int:
        ck = (table, key)
        d = self._digests.get(ck)
        if d is None:
            values = self.base.rows[table].get(key)
            d = 0 if values is None else row_digest(table, values)
            self._digests[ck] = d
        return d

    def state_hash(self) -> int:
        """The canonical content hash of the current state, from the touched rows alone."""
        if self._hash is not None:
            return self._hash
        h = self.base.hash
        digests = self._now_digests
        for table, keys in self.touched.items():
            for key in keys:
                h -= self._base_digest(table, key)
                ck = (table, key)
                d = digests.get(ck)
                if d is None:
                    now = self.raw(table, key)
                    d = 0 if now is None else row_digest(table, now)
                    if type(key) is str:
                        digests[ck] = d
                h += d
        self._hash = h % MOD
        return self._hash

    def start_value(
        self, table: str, key: str, base_rows: dict[str, tuple[Any, ...]] | None = None
    ) -> tuple[Any, ...] | None:
        """A row as the episode started (the base, unless a task's setup changed it)."""
        ck = (table, key)
        if ck in self.start:
            return self.start[ck]
        return (base_rows if base_rows is not None else self.base.rows[table]).get(key)

    def changes(self) -> list[RowChange]:
        """Rows that differ from the episode's start (the base state, or the state a task's
        setup left), in a canonical order."""
        out = []
        for table in sorted(self.touched):
            t = self.base.tables[table]
            base_rows = self.base.rows[table]
            for key in sorted(self.touched[table]):
                before = self.start_value(table, key, base_rows)
                after = self.raw(table, key)
                if before != after:
                    out.append(
                        RowChange(
                            table,
                            key,
                            None if before is None else t.to_row(before),
                            None if after is None else t.to_row(after),
                        )
                    )
        return out

    def dump(self) -> dict[str, dict[str, tuple[Any, ...]]]:
        """Every row of the current state (slow: for tests and full-hash checks)."""
        self.sync()
        out: dict[str, dict[str, tuple[Any, ...]]] = {}
        for name, t in self.base.tables.items():
            cur = self.conn.execute(f"SELECT {', '.join(t.columns)} FROM {name}")
            out[name] = {r[0]: tuple(r) for r in cur}
        return out


class _Transaction:
    """All-or-nothing writes. The SQL savepoint is opened only when a write inside reaches
    SQLite (:meth:`Store._savepoints`): writes kept pending roll back in Python."""

    __slots__ = ("saved", "store")

    def __init__(self, store: Store) -> None:
        self.store = store
        self.saved: tuple[Any, ...] | None = None

    def __enter__(self) -> Store:
        s = self.store
        touched = {k: set(v) for k, v in s.touched.items()}
        self.saved = (touched, dict(s.next_ids), len(s.journal), dict(s.start), dict(s._pending))
        s._savepoints.append(False)
        return s

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        s = self.store
        opened = s._savepoints.pop()
        if exc_type is None:
            if opened:
                s.conn.execute("RELEASE tool")
            return
        if opened:
            s.conn.execute("ROLLBACK TO tool")
            s.conn.execute("RELEASE tool")
        assert self.saved is not None
        s.touched, s.next_ids, mark, s.start, s._pending = self.saved
        del s.journal[mark:]
        s._forget()  # the rollback restored rows, some perhaps never journaled
