"""The baselines ``check`` and ``audit`` play: a world's own (``Environment.random_policy`` and
``noisy_oracle``), or the generic random caller and noisy oracle when it has none."""

from __future__ import annotations

from envfactory.contract.environment import Environment
from envfactory.contract.policy import Policy
from envfactory.policies.scripted import NoisyOracle, RandomPolicy


def random_baseline(env: Environment, seed: int = 0) -> Policy:
    """Random schema-valid tool calls, or the world's own random actor."""
    return env.random_policy(seed) or RandomPolicy(seed=seed)


def noisy_baseline(env: Environment, skill: float = 0.8, seed: int = 0) -> Policy:
    """The oracle slipping on each tool call with probability 1 - skill, or the world's own."""
    return env.noisy_oracle(skill, seed) or NoisyOracle(skill=skill, seed=seed)
