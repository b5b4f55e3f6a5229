"""Drawing tasks for the searches and the adaptive attack: more of an environment's tasks,
spread over its splits and difficulties, within what a finite environment holds."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from itertools import islice

from envfactory.contract.environment import Environment
from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import Split, Task

MAX_FAILS = 50  # consecutive failed draws after which a cell is given up


def draw(
    env: Environment,
    n: int,
    exclude: Collection[str] = (),
    splits: Sequence[Split] | None = None,
    difficulties: Sequence[int] | None = None,
    start: int = 0,
) -> list[Task]:
    """Up to ``n`` tasks not in ``exclude`` (task ids), the cells (split, difficulty) taking
    turns (all of the environment's, or those of ``splits`` and ``difficulties``), indices
    from ``start`` up; a cell ends at its capacity (finite environments) or after
    :data:`MAX_FAILS` draws in a row that failed or were excluded."""
    return list(islice(stream(env, exclude, splits, difficulties, start), n))


def stream(
    env: Environment,
    exclude: Collection[str] = (),
    splits: Sequence[Split] | None = None,
    difficulties: Sequence[int] | None = None,
    start: int = 0,
) -> Iterator[Task]:
    """:func:`draw`'s tasks one at a time, made as they are asked for: the first ``n`` are
    ``draw(env, n, ...)``'s."""
    levels = env.difficulties if difficulties is None else difficulties
    cells = [(s, d) for s in (splits or env.splits) for d in levels]
    index = dict.fromkeys(cells, start)
    fails = dict.fromkeys(cells, 0)
    while live := [c for c in cells if _open(env, c, index[c], fails[c])]:
        for cell in live:
            task = _task(env, cell, index[cell])
            index[cell] += 1
            if task is None or task.task_id in exclude:
                fails[cell] += 1
                continue
            fails[cell] = 0
            yield task


def _open(env: Environment, cell: tuple[Split, int], i: int, fails: int) -> bool:
    size = env.capacity(*cell) if env.finite else None
    return fails < MAX_FAILS and (size is None or i < size)


def _task(env: Environment, cell: tuple[Split, int], i: int) -> Task | None:
    try:
        return env.task(cell[0], cell[1], i)
    except SynthesisError:
        return None
