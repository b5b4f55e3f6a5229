"""Credit assignment: advantages (GRPO, Dr. GRPO, per-environment, per-agent-turn) and dense
credit from canonical states (progress shaping, anchor-state step advantages, reward
propagated over the state graph), written into episode records."""

from envfactory.credit.advantages import METHODS, STEP_CREDITS, CreditConfig, CreditResult, assign
from envfactory.credit.gigpo import anchor_advantages, gigpo_step_advantages, returns
from envfactory.credit.rewardflow import StateGraph, bfs_values, ppr_values, state_values
from envfactory.credit.shaping import potential, progress, replay_potentials, shaped
from envfactory.credit.stats import normalise
from envfactory.credit.turns import Turn, turns

__all__ = [
    "METHODS",
    "STEP_CREDITS",
    "CreditConfig",
    "CreditResult",
    "StateGraph",
    "Turn",
    "anchor_advantages",
    "assign",
    "bfs_values",
    "gigpo_step_advantages",
    "normalise",
    "potential",
    "ppr_values",
    "progress",
    "replay_potentials",
    "returns",
    "shaped",
    "state_values",
    "turns",
]
