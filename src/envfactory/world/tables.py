"""SQLite tables from entity specs: DDL, column codecs and prepared SQL."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from envfactory.domain.spec import DomainSpec, EntitySpec

_SQL_TYPES = {
    "string": "TEXT",
    "integer": "INTEGER",
    "number": "REAL",
    "boolean": "INTEGER",
    "date": "TEXT",
    "ref": "TEXT",
}

# The Python type SQLite gives back from a column of each SQL type.
_READ_AS = {"TEXT": str, "INTEGER": int, "REAL": float}
UNSURE: Any = object()  # a value whose read-back only SQLite can tell

Row = dict[str, Any]


def read_back(kind: type, value: Any) -> Any:
    """What SQLite gives back for ``value`` stored in a column read as ``kind``, or
    :data:`UNSURE` where its type affinity converts in ways not worth predicting (text in a
    number column, a number in a text one, a float in an integer one, NaN, infinities).
    A whole number in a REAL column comes back a float, and -0.0 as 0.0."""
    if value is None:
        return None
    if type(value) is kind:
        if type(value) is float:
            return value + 0.0 if math.isfinite(value) else UNSURE
        return value
    if kind is float and type(value) is int and -(2**53) <= value <= 2**53:
        return float(value)
    return UNSURE


@dataclass(frozen=True, slots=True)
class Table:
    """One entity as a table: its columns (``id`` first) and the SQL to reach it."""

    name: str
    label: str
    id_prefix: str
    columns: tuple[str, ...]
    types: dict[str, str]
    bool_positions: tuple[int, ...]
    refs: dict[str, str]  # ref field -> entity
    indexed: tuple[str, ...]
    positions: dict[str, int] = field(init=False)  # column -> its place in a stored tuple
    read_as: tuple[type, ...] = field(init=False)  # each column's Python type read back
    select_by_id: str = field(init=False)
    insert: str = field(init=False)
    delete: str = field(init=False)

    def __post_init__(self) -> None:
        cols = ", ".join(self.columns)
        marks = ", ".join("?" for _ in self.columns)
        object.__setattr__(self, "select_by_id", f"SELECT {cols} FROM {self.name} WHERE id = ?")
        object.__setattr__(self, "insert", f"INSERT INTO {self.name} ({cols}) VALUES ({marks})")
        object.__setattr__(self, "delete", f"DELETE FROM {self.name} WHERE id = ?")
        object.__setattr__(self, "positions", {c: i for i, c in enumerate(self.columns)})
        object.__setattr__(
            self, "read_as", tuple(_READ_AS[_SQL_TYPES[self.types[c]]] for c in self.columns)
        )

    @classmethod
    def from_entity(cls, name: str, entity: EntitySpec) -> Table:
        columns = ("id", *entity.fields)
        types = {"id": "string"} | {f: spec.type for f, spec in entity.fields.items()}
        refs = {f: spec.ref for f, spec in entity.fields.items() if spec.ref}
        indexed = tuple(f for f, spec in entity.fields.items() if spec.ref or spec.unique)
        return cls(
            name=name,
            label=entity.label or name.rstrip("s").replace("_", " "),
            id_prefix=entity.id_prefix,
            columns=columns,
            types=types,
            bool_positions=tuple(i for i, c in enumerate(columns) if types[c] == "boolean"),
            refs=refs,
            indexed=indexed,
        )

    def ddl(self) -> list[str]:
        cols = ", ".join(
            f"{c} {_SQL_TYPES[self.types[c]]}" + (" PRIMARY KEY" if c == "id" else "")
            for c in self.columns
        )
        out = [f"CREATE TABLE {self.name} ({cols})"]
        out += [f"CREATE INDEX ix_{self.name}_{c} ON {self.name} ({c})" for c in self.indexed]
        return out

    def to_row(self, values: Sequence[Any]) -> Row:
        """A stored tuple as a dict, booleans restored."""
        row = dict(zip(self.columns, values, strict=True))
        for i in self.bool_positions:
            v = values[i]
            if v is not None:
                row[self.columns[i]] = bool(v)
        return row

    def to_tuple(self, row: Row) -> tuple[Any, ...]:
        """A row dict as the tuple stored (missing fields are NULL, booleans as 0/1)."""
        out = []
        for c in self.columns:
            v = row.get(c)
            out.append(int(v) if isinstance(v, bool) else v)
        return tuple(out)

    def read_back(self, values: Sequence[Any]) -> tuple[Any, ...] | None:
        """A stored tuple as SQLite gives it back, or None where that needs SQLite
        (:func:`read_back`)."""
        out = tuple(map(read_back, self.read_as, values))
        return None if UNSURE in out else out

    def format_id(self, n: int) -> str:
        return f"{self.id_prefix}-{n:05d}"


def tables_for(spec: DomainSpec) -> dict[str, Table]:
    return {name: Table.from_entity(name, e) for name, e in spec.entities.items()}
