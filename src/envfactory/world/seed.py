"""Deterministic initial data: realistic values from Faker, drawn in dependency order."""

from __future__ import annotations

import datetime as dt
import random
from graphlib import CycleError, TopologicalSorter
from typing import Any

from faker import Faker

from envfactory.contract.errors import DomainError
from envfactory.domain.expr import compile_expr
from envfactory.domain.spec import DomainSpec, EntitySpec, FieldSpec
from envfactory.world.tables import Row, Table


def entity_order(spec: DomainSpec) -> list[str]:
    """Entities ordered so every entity comes after those it refers to."""
    graph: dict[str, set[str]] = {}
    for name, e in spec.entities.items():
        deps = {f.ref for f in e.fields.values() if f.ref and f.ref != name}
        if e.per:
            deps.add(e.per.entity)
        graph[name] = {d for d in deps if d is not None}
    try:
        return list(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        raise DomainError(f"{spec.id}: entities refer to each other in a cycle: {exc}") from None


class _FieldDrawer:
    """Draws one field's values; remembers earlier values for `unique` and `twin_rate`."""

    def __init__(self, name: str, spec: FieldSpec, fake: Faker, rng: random.Random) -> None:
        self.name, self.spec, self.fake, self.rng = name, spec, fake, rng
        self.seen: list[Any] = []
        self.seen_set: set[Any] = set()
        self.expr = compile_expr(spec.expr) if spec.expr else None

    def _raw(self, today: dt.date, row: Row, index: int) -> Any:
        s, rng = self.spec, self.rng
        if self.expr is not None:
            return self.expr({"row": row, "today": today.isoformat(), "index": index})
        if s.choices is not None:
            return rng.choices(s.choices, weights=s.weights)[0]
        if s.faker:
            return getattr(self.fake, s.faker)(**s.faker_args)
        if s.pattern:
            return self.fake.bothify(s.pattern)
        lo = 0.0 if s.min is None else s.min
        hi = 100.0 if s.max is None else s.max
        if s.type == "integer":
            return rng.randint(int(lo), int(hi))
        if s.type == "number":
            return round(rng.uniform(lo, hi), s.decimals)
        if s.type == "boolean":
            return rng.random() < 0.5
        if s.type == "date":
            return (today + dt.timedelta(days=rng.randint(int(lo), int(hi)))).isoformat()
        raise DomainError(f"field {self.name!r}: no way to generate a {s.type} value")

    def draw(self, today: dt.date, row: Row, index: int) -> Any:
        s = self.spec
        if s.null_rate and self.rng.random() < s.null_rate:
            return None
        if s.twin_rate and self.seen and self.rng.random() < s.twin_rate:
            return self.rng.choice(self.seen)
        value = self._raw(today, row, index)
        if s.unique:
            tries = 0
            while value in self.seen_set:
                tries += 1
                value = self._raw(today, row, index) if tries < 20 else _suffixed(value, tries)
            self.seen_set.add(value)
        if s.twin_rate:
            self.seen.append(value)
        return value


def _sizes(entity: EntitySpec, parents: int, rng: random.Random, scale: float) -> list[int]:
    """How many rows to make: a fixed count, or a number per parent row (drawn in order)."""
    if entity.per is None:
        count = entity.count or 0
        if not entity.scales or not count:
            return [count]
        return [entity.block * max(1, round(count // entity.block * scale))]
    return [rng.randint(entity.per.min, entity.per.max) for _ in range(parents)]


def _slots(
    entity: EntitySpec, rows: dict[str, list[Row]], rng: random.Random, scale: float
) -> list[tuple[str | None, str | None]]:
    """One (link field, parent id) per row to make."""
    if entity.per is None:
        return [(None, None)] * _sizes(entity, 0, rng, scale)[0]
    per = entity.per
    link = next(f for f, s in entity.fields.items() if s.ref == per.entity)
    parents = rows[per.entity]
    sizes = _sizes(entity, len(parents), rng, scale)
    return [(link, p["id"]) for p, n in zip(parents, sizes, strict=True) for _ in range(n)]


def _entity_rng(spec: DomainSpec, name: str, seed: int) -> tuple[random.Random, int]:
    """An entity's random source, and the seed of its Faker (drawn from it first)."""
    rng = random.Random(f"{spec.id}|{name}|{seed}")
    return rng, rng.getrandbits(64)


def row_counts(spec: DomainSpec, seed: int, scale: float) -> dict[str, int]:
    """How many rows :func:`generate` makes of each entity, by the same draws, without making
    them (``envfactory envs`` lists a world's rows without building it)."""
    counts: dict[str, int] = {}
    for name in entity_order(spec):
        entity = spec.entities[name]
        parents = counts[entity.per.entity] if entity.per else 0
        counts[name] = sum(_sizes(entity, parents, _entity_rng(spec, name, seed)[0], scale))
    return {name: counts[name] for name in spec.entities}


def _suffixed(value: Any, n: int) -> Any:
    """A unique variant of a repeated value: ``ann@x.com`` -> ``ann21@x.com``."""
    if isinstance(value, str) and "@" in value:
        user, _, host = value.partition("@")
        return f"{user}{n}@{host}"
    return f"{value} {n}" if isinstance(value, str) else value + n


def _parent_pools(
    entity: EntitySpec, rows: dict[str, list[Row]]
) -> dict[str, dict[tuple[Any, ...], list[str]]]:
    """For each scoped ref field, parents' ids grouped by the scope fields' values."""
    pools: dict[str, dict[tuple[Any, ...], list[str]]] = {}
    for fname, f in entity.fields.items():
        if f.ref and f.scope:
            groups: dict[tuple[Any, ...], list[str]] = {}
            for r in rows[f.ref]:
                groups.setdefault(tuple(r[p] for p in f.scope), []).append(r["id"])
            pools[fname] = groups
    return pools


def generate(
    spec: DomainSpec, tables: dict[str, Table], seed: int, scale: float
) -> dict[str, list[Row]]:
    """All initial rows of a world, keyed by entity, as a pure function of (spec, seed, scale)."""
    rows: dict[str, list[Row]] = {}
    by_id: dict[str, dict[str, Row]] = {}
    for name in entity_order(spec):
        entity = spec.entities[name]
        rng, fake_seed = _entity_rng(spec, name, seed)
        fake = Faker("en_US")
        fake.seed_instance(fake_seed)
        drawers = {f: _FieldDrawer(f, s, fake, rng) for f, s in entity.fields.items()}
        pools = _parent_pools(entity, rows)
        table = tables[name]
        out: list[Row] = []

        for link, parent_id in _slots(entity, rows, rng, scale):
            index = len(out) + 1
            row: Row = {"id": table.format_id(index)}
            for fname, f in entity.fields.items():
                if fname == link:
                    row[fname] = parent_id
                elif f.ref and not f.expr:
                    row[fname] = _draw_ref(fname, f, row, rows, pools, rng)
                elif f.copy_from:
                    src_field, _, attr = f.copy_from.partition(".")
                    src = by_id[entity.fields[src_field].ref or ""].get(row[src_field])
                    row[fname] = None if src is None else src[attr]
                else:
                    row[fname] = drawers[fname].draw(spec.today, row, index)
            out.append(row)
        rows[name] = out
        by_id[name] = {r["id"]: r for r in out}
    return {name: rows[name] for name in spec.entities}


def _draw_ref(
    fname: str,
    f: FieldSpec,
    row: Row,
    rows: dict[str, list[Row]],
    pools: dict[str, dict[tuple[Any, ...], list[str]]],
    rng: random.Random,
) -> str | None:
    if f.null_rate and rng.random() < f.null_rate:
        return None
    if f.scope:
        pool = pools[fname].get(tuple(row[own] for own in f.scope.values()), [])
        return rng.choice(pool) if pool else None
    parents = rows[f.ref or ""]
    return rng.choice(parents)["id"] if parents else None
