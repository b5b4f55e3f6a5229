"""Play one multi-agent episode to the end with in-process seats (scripted policies)."""

from __future__ import annotations

from collections.abc import Mapping

from envfactory.contract.tasks import Task
from envfactory.multiagent.environment import MultiAgentEnvironment, SeatPolicy
from envfactory.multiagent.episode import MultiAgentEpisode, MultiVerdict


def play_match(
    env: MultiAgentEnvironment,
    task: Task,
    seats: Mapping[str, SeatPolicy],
    episode: MultiAgentEpisode | None = None,
) -> tuple[MultiVerdict, MultiAgentEpisode]:
    """Reset, let each seat act on its own observation until the episode is done, and judge
    it. Returns the verdict and the episode (for its audit or its log); a given ``episode``
    is reused, not closed."""
    ep = episode or env.episode()
    ep.reset(task)
    for seat, policy in seats.items():
        policy.start(task, seat)
    while not ep.done:
        for seat in ep.current_actors():
            ep.step(seats[seat].act(ep.observe(seat)), seat=seat)
            if ep.done:
                break
    return ep.evaluate(), ep
