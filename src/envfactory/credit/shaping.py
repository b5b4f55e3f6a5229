"""Progress shaping: dense step rewards from the fraction of the target diff achieved.

The potential of a state is Φ(s) = (target changes matched − collateral changes) / |target|,
a function of the state alone (the changes relative to the task's start). The shaped reward of
a step is F = γΦ(s') − Φ(s). Along any path the sum telescopes to γ-weighted Φ(end) − Φ(start),
so it cannot be farmed: undoing and redoing a change returns to the same potential, and a
wrong write lowers Φ until it is undone.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import Environment
from envfactory.contract.episode import Episode
from envfactory.contract.tasks import TargetChange
from envfactory.db.episode import DatabaseEpisode
from envfactory.rollout.types import TaskRef
from envfactory.trajectory.record import EpisodeRecord
from envfactory.verify.matching import match_state
from envfactory.world.state import RowChange


def potential(target: Sequence[TargetChange], changes: Sequence[RowChange]) -> float:
    """Φ: the fraction of the target matched, less one share per collateral change."""
    matched, _, collateral = match_state(target, changes)
    return (matched - len(collateral)) / max(len(target), 1)


def progress(ep: Episode) -> float | None:
    """Φ of a live episode's current state; None for worlds without a target diff."""
    if isinstance(ep, DatabaseEpisode) and ep.task is not None:
        return potential(ep.task.hidden.target, ep.store.changes())
    return None


def shaped(potentials: Sequence[float], gamma: float = 1.0) -> list[float]:
    """F_t = γΦ(s_{t+1}) − Φ(s_t) for the potentials [Φ(s_0), ..., Φ(s_T)]."""
    return [gamma * b - a for a, b in pairwise(potentials)]


def replay_potentials(
    env: Environment, record: EpisodeRecord, config: EpisodeConfig | None = None
) -> list[float] | None:
    """[Φ(s_0), Φ after each step] by replaying the record's actions in a fresh episode; None
    when the world has no target diff or the replay does not reach the recorded states (a
    different episode configuration, a user simulated by a model)."""
    ref = TaskRef.parse(record.task_id)
    ep = env.episode(config)
    try:
        ep.reset(env.task(ref.split, ref.difficulty, ref.index))
        first = progress(ep)
        if first is None:
            return None
        out = [first]
        for step in record.steps:
            ep.step(step.action)
            if ep.state_hash() != step.state_hash:
                return None
            phi = progress(ep)
            assert phi is not None
            out.append(phi)
        return out
    finally:
        ep.close()
