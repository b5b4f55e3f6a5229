"""Which tasks a run covers: n tasks per environment, spread over splits and difficulties."""

from __future__ import annotations

from collections.abc import Sequence

from envfactory.contract.tasks import Split
from envfactory.registry import make
from envfactory.rollout.types import TaskRef


def plan_tasks(
    env_ids: Sequence[str],
    n_tasks: int,
    splits: Sequence[Split] = ("train",),
    difficulties: Sequence[int] | None = None,
    tag: str = "",
) -> list[TaskRef]:
    """``n_tasks`` per environment: splits in turn, then difficulties in turn, then indices."""
    refs = []
    for env_id in env_ids:
        levels = list(difficulties or make(env_id).difficulties)
        cells = len(splits) * len(levels)
        for i in range(n_tasks):
            split = splits[i % len(splits)]
            difficulty = levels[(i // len(splits)) % len(levels)]
            refs.append(TaskRef(env_id, split, difficulty, i // cells, tag))
    return refs
