"""A campaign's difficulty levels, each a setting of its knobs: the underlying task level of each
request (their number is K), how many events per request, and how tight the deadlines are."""

from __future__ import annotations

from dataclasses import dataclass

#: The model calls the oracle's whole campaign may take: the harness's default ``max_turns``
#: (tests/campaign checks they agree), so a campaign runs whole under the default harness.
CALLS = 30


@dataclass(frozen=True)
class CampaignLevel:
    """The knobs of one campaign level. ``task_levels`` holds the underlying task level of each
    request (a campaign takes them in an order of its own); ``slack`` is a deadline's budget as
    a multiple of the time the gold plan takes (None: no deadlines); ``events`` is events per
    request."""

    task_levels: tuple[int, ...]
    events: float
    slack: float | None

    @property
    def tasks(self) -> int:
        """K, the requests of a campaign."""
        return len(self.task_levels)

    @property
    def task_level(self) -> int:
        """The highest task level a request is drawn at."""
        return max(self.task_levels)

    @property
    def calls(self) -> int:
        """The most model calls one request's gold plan (its calls and questions to the user)
        may take: an equal share of :data:`CALLS`, less a close (or the final reply) each."""
        return (CALLS - self.tasks) // self.tasks


#: Campaign level -> knobs. Level 0, the starter (two starter tasks: one call each, ids given,
#: no events, no deadlines), exists where the underlying world has a starter level. Each level
#: mixes task levels so that a split's campaigns use every tool a gold plan of the world uses
#: (retail's levels 1-2 never place an order); a request whose plan exceeds ``calls`` is drawn
#: again, so the oracle's campaign fits :data:`CALLS`.
LADDER: dict[int, CampaignLevel] = {
    0: CampaignLevel(task_levels=(0, 0), events=0.0, slack=None),
    1: CampaignLevel(task_levels=(1, 1), events=0.5, slack=None),
    2: CampaignLevel(task_levels=(1, 1, 2), events=1.0, slack=3.0),
    3: CampaignLevel(task_levels=(1, 2, 3), events=1.5, slack=2.0),
    4: CampaignLevel(task_levels=(2, 2, 3, 3), events=2.0, slack=1.5),
}


def ladder(task_levels: list[int]) -> dict[int, CampaignLevel]:
    """The campaign levels over a world whose task levels are ``task_levels``: each request's
    level capped at the world's top one, and the starter only where the world has one."""
    top = max(task_levels)
    return {
        d: CampaignLevel(tuple(min(t, top) for t in lv.task_levels), lv.events, lv.slack)
        for d, lv in LADDER.items()
        if d > 0 or 0 in task_levels
    }
