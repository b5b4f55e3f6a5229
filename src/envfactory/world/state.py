"""Canonical state: an order-independent content hash and row-level diffs.

The hash of a state is the sum, modulo 2**128, of one keyed BLAKE2 digest per row. A sum does
not depend on the order rows were written or on SQLite's page layout, and it can be updated
from the rows a tool touched alone, so the hash of an episode's state costs O(changes).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from envfactory.world.tables import Row

MOD = 1 << 128


def row_digest(table: str, values: tuple[Any, ...]) -> int:
    """The digest of one stored row; ``repr`` of a tuple of str/int/float/None is canonical."""
    data = repr((table, values)).encode()
    return int.from_bytes(hashlib.blake2b(data, digest_size=16).digest(), "big")


def hash_rows(rows: dict[str, dict[str, tuple[Any, ...]]]) -> int:
    """The canonical hash of a whole state given as {table: {id: stored tuple}}."""
    total = 0
    for table, by_id in rows.items():
        for values in by_id.values():
            total += row_digest(table, values)
    return total % MOD


def hex_hash(h: int) -> str:
    return f"{h:032x}"


@dataclass(frozen=True, slots=True)
class RowChange:
    """One row that differs between two states; ``before``/``after`` is None when absent."""

    table: str
    key: str
    before: Row | None
    after: Row | None

    @property
    def op(self) -> str:
        if self.before is None:
            return "insert"
        return "delete" if self.after is None else "update"

    def changed_fields(self) -> list[str]:
        if self.before is None or self.after is None:
            return sorted((self.after or self.before or {}).keys())
        return sorted(k for k in self.after if self.after[k] != self.before.get(k))

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "id": self.key, "before": self.before, "after": self.after}
