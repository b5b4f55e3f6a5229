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
from typing import Any

from envfactory.tasks.types import TargetChange
from envfactory.world.state import RowChange

SEARCH_BUDGET = 20_000  # search nodes; a real episode needs a handful

# A way to match one target change: the agent's inserted row it would use (None for a row the
# target updates in place), and the renaming of new ids that the match needs.
Option = tuple[tuple[str, str] | None, dict[str, str]]


def _same(a: Any, b: Any) -> bool:
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
        elif (isinstance(g, str) and g in agent_new) or not _same(w, g):
            return None
    return needs


@dataclass
class _Search:
    """Depth-first search for the largest set of target changes matched under one renaming."""

    options: list[list[Option]]
    forward: dict[str, str] = field(default_factory=dict)
    backward: dict[str, str] = field(default_factory=dict)
    taken: set[tuple[str, str]] = field(default_factory=set)
    chosen: list[bool] = field(default_factory=list)
    best: list[bool] = field(default_factory=list)
    best_rows: set[tuple[str, str]] = field(default_factory=set)
    best_count: int = 0
    ceiling: list[int] = field(default_factory=list)
    nodes: int = 0

    def run(self) -> tuple[list[bool], set[tuple[str, str]]]:
        """Which target changes are matched, and the agent's inserted rows that match them."""
        self.best = [False] * len(self.options)
        # the most the changes from i on could add: those with a way to match at all
        self.ceiling = [0] * (len(self.options) + 1)
        for i in reversed(range(len(self.options))):
            self.ceiling[i] = self.ceiling[i + 1] + bool(self.options[i])
        self._visit(0, 0)
        return self.best, self.best_rows

    def _visit(self, i: int, count: int) -> None:
        n = len(self.options)
        if count + self.ceiling[i] <= self.best_count or self.nodes >= SEARCH_BUDGET:
            return
        self.nodes += 1
        if i == n:
            self.best, self.best_rows, self.best_count = list(self.chosen), set(self.taken), count
            return
        for row, needs in self.options[i]:
            if row in self.taken:
                continue
            added = self._bind(needs)
            if added is None:
                continue
            if row is not None:
                self.taken.add(row)
            self.chosen.append(True)
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


def match_state(
    target: Sequence[TargetChange], changes: Sequence[RowChange]
) -> tuple[int, list[str], list[str]]:
    """(target changes matched, the ones missing or wrong, collateral changes)."""
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
    found, rows = _Search(options).run()
    missing = [
        f"{t.table} {t.id} is not as required"
        if t.before is not None
        else f"a required new {t.table} row is missing"
        for t, ok in zip(target, found, strict=True)
        if not ok
    ]
    used = rows | {(t.table, t.id) for t in target if t.before is not None}
    collateral = [f"{c.op} of {c.table} {c.key}" for c in changes if (c.table, c.key) not in used]
    return sum(found), missing, collateral
