"""Helpers of the multi-agent tests: the registered multi-agent worlds, scripted seats."""

from __future__ import annotations

import envfactory
from envfactory.episode.seats import SeatPolicy
from envfactory.multiagent.environment import MultiAgentEnvironment

MULTI = [e for e in envfactory.list_envs() if envfactory.make(e).kind == "multiagent"]


def world(env_id: str) -> MultiAgentEnvironment:
    env = envfactory.make(env_id)
    assert isinstance(env, MultiAgentEnvironment)
    return env


def seats(env: MultiAgentEnvironment, level: int) -> dict[str, SeatPolicy]:
    """Every seat scripted at ``level``."""
    return {s: env.scripted(s, level) for s in env.agents}
