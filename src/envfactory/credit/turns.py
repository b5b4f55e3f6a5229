"""Episodes as turns: the state each model call acted from and the state its actions reached.

A turn is one model call (one decision, possibly several tool calls). Its anchor is the
canonical hash of the state it acted from: the state after the previous turn's last step, or
the task's initial state for the first turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from envfactory.trajectory.record import EpisodeRecord


@dataclass(frozen=True, slots=True)
class Turn:
    """Call ``call`` of episode ``episode`` moved the world from ``before`` to ``after`` and
    earned ``reward`` on the way (a dense step reward; 0 when there is none)."""

    episode: int
    call: int
    before: str
    after: str
    reward: float = 0.0


def turns(record: EpisodeRecord, episode: int, initial: str) -> list[Turn]:
    """The turns of ``record``, starting from the state ``initial``."""
    after: dict[int, str] = {}
    reward: dict[int, float] = {}
    for step in record.steps:
        after[step.call_index] = step.state_hash
        reward[step.call_index] = reward.get(step.call_index, 0.0) + (step.reward or 0.0)
    out, state = [], initial
    for call in record.calls:
        reached = after.get(call.index, state)
        out.append(Turn(episode, call.index, state, reached, reward.get(call.index, 0.0)))
        state = reached
    return out
