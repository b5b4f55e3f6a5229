"""Naming rows without their ids: references, their look-ups, and look-alike distractors.

An instruction says "the order Dana Ruiz (dana@example.com) placed on March 4" instead of
"ORD-00042". Each such reference comes with the read calls that resolve it, which become the
first steps of the gold plan. Indirection is the number of hops; a reference is only used when
it singles its row out, and look-alike rows (same name, different city) make distractors.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from envfactory.contract.errors import DomainError
from envfactory.domain.expr import Template, Value
from envfactory.domain.spec import DomainSpec, RefSpec
from envfactory.world.store import Base
from envfactory.world.tables import Row

Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class _Held:
    text: Template
    parent_text: Template
    facts: dict[str, Value]


@dataclass(frozen=True, slots=True)
class _Ref:
    spec: RefSpec
    text: Template
    lookup: tuple[tuple[str, dict[str, Value]], ...]
    parent_entity: str | None
    held: _Held | None


@dataclass(frozen=True, slots=True)
class Rendered:
    """A reference's words, the look-ups that resolve it, and the facts the user kept."""

    text: str
    lookups: tuple[Call, ...]
    hops: int
    lookalikes: int
    facts: dict[str, Any] = field(default_factory=dict)


class References:
    """Renders references to rows of a world's base state."""

    def __init__(self, spec: DomainSpec, base: Base) -> None:
        self.base = base
        self.refs: dict[str, list[_Ref]] = {}
        for name, entity in spec.entities.items():
            compiled = []
            for r in entity.refs:
                parent_entity = None
                if r.parent is not None:
                    field = entity.fields.get(r.parent)
                    if field is None or field.ref is None:
                        raise DomainError(f"{name}: ref parent {r.parent!r} is not a ref field")
                    parent_entity = field.ref
                for f in r.unique:
                    if f not in entity.fields and f != "id":
                        raise DomainError(f"{name}: ref unique field {f!r} does not exist")
                lookup = tuple((s.tool, {k: Value(v) for k, v in s.args.items()}) for s in r.lookup)
                held = None
                if r.held is not None:
                    asked_by = {str(v) for step in r.lookup for v in step.args.values()}
                    for fact, value in r.held.facts.items():
                        if str(value) not in asked_by:
                            raise DomainError(
                                f"{name}: held fact {fact!r} ({value}) is not an argument of the "
                                "reference's look-ups, so asking for it would not help"
                            )
                    held = _Held(
                        Template(r.held.text),
                        Template(r.held.parent_text or r.held.text),
                        {k: Value(v) for k, v in r.held.facts.items()},
                    )
                compiled.append(_Ref(r, Template(r.text), lookup, parent_entity, held))
            self.refs[name] = compiled
        self._counts: dict[tuple[str, tuple[str, ...]], Counter[tuple[Any, ...]]] = {}

    def row(self, entity: str, key: str) -> Row | None:
        values = self.base.rows[entity].get(key)
        return None if values is None else self.base.tables[entity].to_row(values)

    def _count(self, entity: str, fields: tuple[str, ...], row: Row) -> int:
        ck = (entity, fields)
        counter = self._counts.get(ck)
        if counter is None:
            table = self.base.tables[entity]
            pos = [table.columns.index(f) for f in fields]
            counter = Counter(
                tuple(_norm(values[p]) for p in pos) for values in self.base.rows[entity].values()
            )
            self._counts[ck] = counter
        return counter[tuple(_norm(row[f]) for f in fields)]

    def render(
        self,
        entity: str,
        row: Row,
        hops: int,
        distractors: int,
        rng: random.Random,
        held_back: float = 0.0,
        nested: bool = False,
    ) -> Rendered:
        """A reference to ``row`` needing about ``hops`` look-ups; with ``distractors``,
        prefer references that look-alike rows share the first words of; with ``held_back``,
        the chance that the user keeps the reference's facts until asked."""
        label = self.base.tables[entity].label
        if hops <= 0 or not self.refs.get(entity):
            return Rendered(f"{label} {row['id']}", (), 0, 0)
        options: list[tuple[int, int, _Ref]] = []
        for ref in self.refs[entity]:
            scope = (ref.spec.parent,) if ref.spec.parent else ()
            unique = scope + tuple(ref.spec.unique)
            if unique and self._count(entity, unique, row) != 1:
                continue
            if ref.spec.parent and row.get(ref.spec.parent) is None:
                continue
            first = scope + tuple(ref.spec.unique[:1])
            lookalikes = self._count(entity, first, row) - 1 if first else 0
            depth = 2 if ref.parent_entity else 1
            fit = abs(min(hops, 2) - depth) * 2 + (
                0 if (lookalikes > 0) == (distractors > 0) else 1
            )
            options.append((fit, lookalikes, ref))
        if not options:
            return Rendered(f"{label} {row['id']}", (), 0, 0)
        best = min(o[0] for o in options)
        _, lookalikes, ref = rng.choice([o for o in options if o[0] == best])
        scope_vals: dict[str, Any] = {"row": row}
        parent_text, parent_hops = "", 0
        lookups: tuple[Call, ...] = ()
        if ref.parent_entity is not None and ref.spec.parent is not None:
            parent = self.row(ref.parent_entity, row[ref.spec.parent])
            if parent is None:
                return Rendered(f"{label} {row['id']}", (), 0, 0)
            scope_vals["parent"] = parent
            p = self.render(
                ref.parent_entity, parent, hops - 1, distractors, rng, held_back, nested=True
            )
            parent_text, lookups, parent_hops = p.text, p.lookups, p.hops
            lookalikes += p.lookalikes
            facts = dict(p.facts)
        else:
            facts = {}
        own = tuple(
            (tool, {k: v(scope_vals) for k, v in args.items()}) for tool, args in ref.lookup
        )
        if ref.held is not None and held_back > 0 and rng.random() < held_back:
            words = ref.held.parent_text if nested else ref.held.text
            text = words.render(scope_vals)
            facts.update({k: v(scope_vals) for k, v in ref.held.facts.items()})
        else:
            text = ref.text.render(scope_vals, refs=lambda _name: parent_text)
        return Rendered(text, lookups + own, parent_hops + 1, lookalikes, facts)


def _norm(v: Any) -> Any:
    return v.lower() if isinstance(v, str) else v
