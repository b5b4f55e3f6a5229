"""A campaign's difficulty levels, each a setting of its knobs: how many tasks (K), how many
events per task, how tight the deadlines are, and the level of the underlying tasks."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CampaignLevel:
    """The knobs of one campaign level. ``slack`` is a deadline's budget as a multiple of the
    time the gold plan takes (None: no deadlines); ``events`` is events per task."""

    tasks: int
    events: float
    slack: float | None
    task_level: int


#: Campaign level -> knobs; the task level is capped at the underlying world's top level.
LADDER: dict[int, CampaignLevel] = {
    1: CampaignLevel(tasks=2, events=0.5, slack=None, task_level=1),
    2: CampaignLevel(tasks=3, events=1.0, slack=3.0, task_level=1),
    3: CampaignLevel(tasks=3, events=1.5, slack=2.0, task_level=2),
    4: CampaignLevel(tasks=4, events=2.0, slack=1.5, task_level=2),
}
#: Kept so that the oracle's whole campaign fits the harness's default 30 model calls; longer
#: runs over harder tasks are a matter of raising the knobs (and ``--max-turns``).


def ladder(task_levels: list[int]) -> dict[int, CampaignLevel]:
    """The campaign levels over a world whose task levels are ``task_levels`` (levels below
    1, a starter, are not used: a campaign starts at two ordinary tasks)."""
    top = max(task_levels)
    return {
        d: CampaignLevel(lv.tasks, lv.events, lv.slack, min(lv.task_level, top))
        for d, lv in LADDER.items()
    }
