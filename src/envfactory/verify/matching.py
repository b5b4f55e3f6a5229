"""Match an episode's changes to a task's target changes, row for row.

A row the target updates or deletes is compared where it stands. A row the target inserts is
matched to a row the agent inserted: new ids depend on call order, so the two states are compared
up to one consistent renaming of new ids. Every reference to a new row must point at the
counterpart of the row the target points at (an order's items belong to *that* order), and no
agent row stands in for two target rows. The largest consistent matching is found by a small
search; if it runs past its budget, the best matching found so far is kept, which can only
undercount.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from envfactory.contract.tasks import TargetChange
from envfactory.world.state import RowChange

SEARCH_BUDGET = 20_000  # search nodes; a real episode needs a handful

# A way to match one target change: the agent's inserted row it would use (None for a row the
# target updates in place), and the renaming of new ids that the match needs.
Option = tuple[tuple[str, str] | None, dict[str, str]]
# How one target change was matched: False when it was not, else the option's row.
Pick = tuple[str, str] | None | Literal[False]


def same_value(a: Any, b: Any) -> bool:
    """Two stored values as the verifier compares them (numbers to within 1e-6)."""
    if isinstance(a, float) or isinstance(b, float):
        try:
            return abs(float(a) - float(b)) <= 1e-6
        except (TypeError, ValueError):
            return False
    return bool(a == b)


def _renaming(
    want: Mapping[str, Any] | None,
    got: Mapping[str, Any] | None,
    target_new: set[str],
    agent_new: set[str],
) -> dict[str, str] | None:
    """The renaming of new ids (target's to agent's) under which ``got`` equals ``want``;
    None when no renaming makes them equal."""
    if want is None or got is None:
        return {} if want is got else None
    if want.keys() != got.keys():
        return None
    needs: dict[str, str] = {}
    for key, w in want.items():
        g = got[key]
        if isinstance(w, str) and w in target_new:
            if not (isinstance(g, str) and g in agent_new) or needs.setdefault(w, g) != g:
                return None
        elif (isinstance(g, str) and g in agent_new) or not same_value(w, g):
            return None
    return needs


@dataclass
class _Search:
    """Depth-first search for the largest set of target changes matched under one renaming."""

    options: list[list[Option]]
    forward: dict[str, str] = field(default_factory=dict)
    backward: dict[str, str] = field(default_factory=dict)
    taken: set[tuple[str, str]] = field(default_factory=set)
    chosen: list[Pick] = field(default_factory=list)
    best: list[Pick] = field(default_factory=list)
    best_count: int = 0
    ceiling: list[int] = field(default_factory=list)
    nodes: int = 0

    def run(self) -> list[Pick]:
        """Per target change: False when unmatched, else the agent's inserted row that matches
        it (None for a row the target changes in place)."""
        self.best = [False] * len(self.options)
        # the most the changes from i on could add: those with a way to match at all
        self.ceiling = [0] * (len(self.options) + 1)
        for i in reversed(range(len(self.options))):
            self.ceiling[i] = self.ceiling[i + 1] + bool(self.options[i])
        self._visit(0, 0)
        return self.best

    def _visit(self, i: int, count: int) -> None:
        n = len(self.options)
        if count + self.ceiling[i] <= self.best_count or self.nodes >= SEARCH_BUDGET:
            return
        self.nodes += 1
        if i == n:
            self.best, self.best_count = list(self.chosen), count
            return
        for row, needs in self.options[i]:
            if row in self.taken:
                continue
            added = self._bind(needs)
            if added is None:
                continue
            if row is not None:
                self.taken.add(row)
            self.chosen.append(row)
            self._visit(i + 1, count + 1)
            self.chosen.pop()
            if row is not None:
                self.taken.discard(row)
            self._unbind(added)
            if self.best_count == count + self.ceiling[i]:
                return
        self.chosen.append(False)
        self._visit(i + 1, count)
        self.chosen.pop()

    def _bind(self, needs: dict[str, str]) -> list[str] | None:
        """Extend the renaming by ``needs``; the target ids newly bound, or None on conflict."""
        added: list[str] = []
        for t, a in needs.items():
            if t in self.forward:
                if self.forward[t] != a:
                    break
            elif a in self.backward:
                break
            else:
                self.forward[t], self.backward[a] = a, t
                added.append(t)
        else:
            return added
        self._unbind(added)
        return None

    def _unbind(self, added: list[str]) -> None:
        for t in added:
            del self.backward[self.forward.pop(t)]


@dataclass(frozen=True)
class RowMatch:
    """One target change and the row of the episode that stands for it: ``change`` is the
    episode's change of that row (None when the row is as the episode started), ``ok`` whether
    it is as required."""

    target: TargetChange
    change: RowChange | None
    ok: bool


@dataclass(frozen=True)
class StateMatch:
    """Every target change with its row, and the changes no target change names."""

    rows: list[RowMatch]
    collateral: list[RowChange]

    @property
    def matched(self) -> int:
        return sum(r.ok for r in self.rows)


def match_rows(target: Sequence[TargetChange], changes: Sequence[RowChange]) -> StateMatch:
    """The largest consistent matching of ``target`` to ``changes``, row by row. A target
    update or delete is paired with its row's change whether or not it matches; a target
    insert that no inserted row matches is paired with nothing."""
    made = {(c.table, c.key): c for c in changes}
    inserted = [c for c in changes if c.before is None]
    target_new = {t.id for t in target if t.before is None}
    agent_new = {c.key for c in inserted}
    options: list[list[Option]] = []
    for t in target:
        if t.before is not None:  # an update or delete: the row where it stands
            c = made.get((t.table, t.id))
            needs = _renaming(t.after, c.after if c else t.before, target_new, agent_new)
            options.append([] if needs is None else [(None, needs)])
            continue
        candidates: list[Option] = []
        for c in inserted:
            if c.table == t.table:
                needs = _renaming(t.after, c.after, target_new, agent_new)
                if needs is not None:
                    candidates.append(((c.table, c.key), {t.id: c.key, **needs}))
        options.append(candidates)
    picks = _Search(options).run()
    rows = []
    for t, pick in zip(target, picks, strict=True):
        where = (t.table, t.id) if t.before is not None else pick or None
        rows.append(RowMatch(t, made.get(where) if where else None, pick is not False))
    used = {p for p in picks if p} | {(t.table, t.id) for t in target if t.before is not None}
    return StateMatch(rows, [c for c in changes if (c.table, c.key) not in used])


def match_state(
    target: Sequence[TargetChange], changes: Sequence[RowChange]
) -> tuple[int, list[str], list[str]]:
    """(target changes matched, the ones missing or wrong, collateral changes)."""
    m = match_rows(target, changes)
    missing = [
        f"{r.target.table} {r.target.id} is not as required"
        if r.target.before is not None
        else f"a required new {r.target.table} row is missing"
        for r in m.rows
        if not r.ok
    ]
    collateral = [f"{c.op} of {c.table} {c.key}" for c in m.collateral]
    return m.matched, missing, collateral
