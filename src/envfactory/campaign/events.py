"""Scheduled events: at stated minutes the world changes by itself — a new row arrives (an
order, a booking), or a value of a row moves (a price, a stock level, a status). Events fire at
the first request boundary after their time, so a slow operator meets more of them.

An event's content is drawn from a second seeded world of the same domain (realistic values,
no domain-specific code) and applied to the state it meets; one that does not fit that state
(its references gone, a unique value taken) changes nothing."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envfactory.domain.spec import DomainSpec
from envfactory.tasks.seeds import stable_hash
from envfactory.world.tables import Row, Table

State = dict[str, dict[str, tuple[Any, ...]]]  # table -> id -> stored tuple
_NUMBERED = re.compile(r"^([A-Z][A-Z0-9]*)-(\d+)$")
GAP_MINUTES = 8  # the mean time between events at one event per task


@dataclass(frozen=True)
class Event:
    """One event: its minute and its seed (what it does is drawn when it fires)."""

    at: int
    seed: int


def schedule(n: int, horizon: int, *salt: object) -> list[Event]:
    """``n`` events at minutes drawn in ``[1, horizon]``, a pure function of ``salt``."""
    rng = random.Random(stable_hash("campaign-events", *salt))
    times = sorted(rng.randint(1, max(1, horizon)) for _ in range(n))
    return [Event(at=t, seed=stable_hash("campaign-event", *salt, i)) for i, t in enumerate(times)]


class EventSource:
    """Applies events to states of one domain, drawing rows from ``pool`` (another seeded
    world's rows, by table)."""

    def __init__(
        self, spec: DomainSpec, tables: Mapping[str, Table], pool: Mapping[str, Sequence[Row]]
    ) -> None:
        self.tables = tables
        self.pool = {name: list(rows) for name, rows in pool.items() if rows}
        self.unique = {
            name: {c for c in t.indexed if c not in t.refs} for name, t in tables.items()
        }
        #: per table, the values that move by themselves: statuses (choices) and quantities
        self.moving = {
            name: [
                c
                for c, f in entity.fields.items()
                if not (f.ref or f.unique) and (f.choices or f.type in ("integer", "number"))
            ]
            for name, entity in spec.entities.items()
        }

    def fire(self, state: State, event: Event) -> str | None:
        """Apply ``event`` to ``state`` in place; what happened, or None when nothing did."""
        rng = random.Random(event.seed)
        if not self.pool:
            return None
        table = self.tables[rng.choice(sorted(self.pool))]
        source = rng.choice(self.pool[table.name])
        if rng.random() < 0.5:
            return self._arrive(state, table, source, rng)
        return self._change(state, table, source, rng)

    def _arrive(self, state: State, table: Table, source: Row, rng: random.Random) -> str | None:
        rows = state[table.name]
        numbers = [int(m.group(2)) for k in rows if (m := _NUMBERED.match(str(k)))]
        if len(numbers) < len(rows) or not rows:
            return None  # ids of the data's own (an imported world): none to continue
        row = dict(source)
        row["id"] = table.format_id(max(numbers) + 1)
        for field, target in table.refs.items():
            if row.get(field) is not None and row[field] not in state[target]:
                if not state[target]:
                    return None
                row[field] = rng.choice(sorted(state[target]))
        if any(self._taken(state, table, c, row.get(c)) for c in self.unique[table.name]):
            return None
        rows[row["id"]] = table.to_tuple(row)
        return f"a new {table.label} {row['id']} arrived"

    def _change(self, state: State, table: Table, source: Row, rng: random.Random) -> str | None:
        rows = state[table.name]
        columns = [c for c in self.moving[table.name] if source.get(c) is not None]
        if not rows or not columns:
            return None
        key = rng.choice(sorted(rows))
        column = rng.choice(columns)
        at = table.positions[column]
        values = list(rows[key])
        new = table.to_tuple({column: source[column]})[at]
        if values[at] == new:
            return None
        values[at] = new
        rows[key] = tuple(values)
        return f"{table.label} {key}: {column.replace('_', ' ')} is now {source[column]}"

    def _taken(self, state: State, table: Table, column: str, value: Any) -> bool:
        at = table.positions[column]
        return value is not None and any(v[at] == value for v in state[table.name].values())
