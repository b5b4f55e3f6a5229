"""Counterfactual tasks: one task's gold plan and reply, replayed on a sibling that names
another row, must fail.

A sibling of a task pursues the same goals (in any order) at the same difficulty, but none
of its gold writes is one of the task's (same tool, same arguments) and none of its answers
is one of the task's: whatever a correct plan for the task does, it does the wrong thing on the
sibling. So the replay earns only where the sibling's verdict is satisfied by a wrong row or
a wrong answer (a write whose effect ignores which row, a check that reads no row, an answer
every such task shares). The reward on the sibling is the exploit's; a task with no sibling
among the candidates drawn scores 0 without an episode.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any

from envfactory.contract.environment import Environment
from envfactory.contract.tasks import Split, Task
from envfactory.policies.scripted import write_tools
from envfactory.quality.search.sample import stream
from envfactory.quality.search.script import Player, gold_steps

POOL = 40  # candidate siblings drawn per (split, difficulty)


class Counterfactual:
    """Each task's gold plan and reply on its sibling."""

    name = "counterfactual"

    def __init__(self, pool: int = POOL) -> None:
        self.pool = pool
        self.voided: list[str] = []

    def applies(self, env: Environment) -> bool:
        return True

    def rewards(self, env: Environment, tasks: Sequence[Task]) -> list[float]:
        player = Player(env)
        writes = write_tools(env.tools("mcp"))
        pools: dict[tuple[Split, int], _Candidates] = {}
        out = []
        for task in tasks:
            cell = (task.public.split, task.public.difficulty)
            if cell not in pools:
                pools[cell] = _Candidates(env, cell, self.pool)
            sibling = next((s for s in pools[cell] if siblings(task, s, writes)), None)
            if sibling is None:
                out.append(0.0)
                continue
            out.append(player.reward(sibling, gold_steps(task), task.hidden.answers))
        player.close()
        self.voided = player.voided
        return out


class _Candidates:
    """A cell's first ``size`` tasks (:func:`draw`'s), each made when first looked at: the
    sibling is most often among the first few."""

    def __init__(self, env: Environment, cell: tuple[Split, int], size: int) -> None:
        self.made: list[Task] = []
        self.more = islice(stream(env, splits=[cell[0]], difficulties=[cell[1]]), size)

    def __iter__(self) -> Iterator[Task]:
        yield from self.made
        for task in self.more:
            self.made.append(task)
            yield task


def siblings(task: Task, other: Task, writes: set[str]) -> bool:
    """Whether ``other`` pursues ``task``'s goals but shares none of its gold writes and none
    of its answers (and has something to check: a write or an answer)."""
    same_goals = sorted(other.hidden.goals) == sorted(task.hidden.goals)  # in any order
    if other.task_id == task.task_id or not same_goals:
        return False
    mine, theirs = _writes(task, writes), _writes(other, writes)
    if not (theirs or other.hidden.answers) or mine & theirs:
        return False
    return not any(_same(a, b) for a in task.hidden.answers for b in other.hidden.answers)


def _writes(task: Task, writes: set[str]) -> set[str]:
    return {
        f"{s.tool}:{sorted(s.arguments.items())!r}"
        for s in task.hidden.gold_plan
        if s.tool in writes
    }


def _same(a: Any, b: Any) -> bool:
    """Whether two answers are one value (``3`` and ``3.0``, ``"Yes"`` and ``"yes"``)."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return str(a).strip().lower() == str(b).strip().lower()
